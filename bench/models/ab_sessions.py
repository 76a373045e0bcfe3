#!/usr/bin/python3
"""Two session settings on one model, in one process, Run by Run:

    PYTHONPATH=build/python bench/models/ab_sessions.py [--runs N]
        [--intra-a T] [--intra-b T] [--disable-a PASS] [--disable-b PASS]
        [--env-b NAME=VALUE] MODEL NAME=FEED.npy ...

Sessions A and B (one inter-op thread each, their own pools) take turns,
one Run each, alternating which goes first, for N Runs each (default 150)
after three untimed ones. On a host whose speed drifts over seconds (the
KVM guests this project measures on), that drift reaches both alike, where
separate processes or rounds of `weft bench` see different stretches of it.
Prints each side's median and 25th percentile and B / A for both.
--disable-X names a graph pass to switch off (repeatable), so a pass is
measured against its absence on the same binary. --env-b sets an
environment variable (repeatable) while session B is made and runs its
untimed Runs (kernels are built at the first Run of a shape) and puts the
value before back after, for a switch that a kernel reads when it is
built.
"""
import argparse
import os
import time

import numpy as np

import weft


def make_session(model, intra, disabled):
    options = weft.SessionOptions()
    options.inter_op_num_threads = 1
    options.intra_op_num_threads = intra
    options.use_per_session_threads = True
    return weft.InferenceSession(model, sess_options=options,
                                 disabled_optimizers=disabled or None)


def quantile(sorted_times, fraction):
    return sorted_times[int(fraction * (len(sorted_times) - 1))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=150)
    parser.add_argument("--intra-a", type=int, default=1)
    parser.add_argument("--intra-b", type=int, default=1)
    parser.add_argument("--disable-a", action="append", default=[])
    parser.add_argument("--disable-b", action="append", default=[])
    parser.add_argument("--env-b", action="append", default=[],
                        help="NAME=VALUE")
    parser.add_argument("model")
    parser.add_argument("feeds", nargs="+", help="NAME=FILE.npy")
    args = parser.parse_args()
    feeds = {}
    for feed in args.feeds:
        name, sep, path = feed.partition("=")
        if not sep:
            raise SystemExit(f"a feed is NAME=FILE.npy, got {feed!r}")
        feeds[name] = np.load(path)
    session_a = make_session(args.model, args.intra_a, args.disable_a)
    env_b = dict(setting.partition("=")[::2] for setting in args.env_b)
    saved = {name: os.environ.get(name) for name in env_b}
    os.environ.update(env_b)
    session_b = make_session(args.model, args.intra_b, args.disable_b)
    for _ in range(3):
        session_b.run(None, feeds)
    for name, value in saved.items():
        if value is None:
            del os.environ[name]
        else:
            os.environ[name] = value
    for _ in range(3):
        session_a.run(None, feeds)
    sides = [("A", session_a, []), ("B", session_b, [])]
    for i in range(args.runs):
        for _, session, times in (sides if i % 2 == 0 else sides[::-1]):
            start = time.perf_counter()
            session.run(None, feeds)
            times.append((time.perf_counter() - start) * 1e3)
    summary = {}
    for name, _, times in sides:
        times.sort()
        summary[name] = (quantile(times, 0.5), quantile(times, 0.25))
        print(f"{name}: median {summary[name][0]:.3f} ms, 25th percentile "
              f"{summary[name][1]:.3f} ms")
    print(f"B / A: median {summary['B'][0] / summary['A'][0]:.3f}, "
          f"25th percentile {summary['B'][1] / summary['A'][1]:.3f}")


if __name__ == "__main__":
    main()
