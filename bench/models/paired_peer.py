#!/usr/bin/python3
"""weft against ONNX Runtime on one model, in turns:

    PYTHONPATH=build/python bench/models/paired_peer.py --work DIR
        [--turns N] [--screen S] [--block K] [--quiet-ms MS] MODEL...

DIR is bench/models/run.sh's work directory (DIR/MODEL.onnx, its feeds as
DIR/MODEL.NAME.npy or DIR/MODEL.input.npy, onnxruntime-node under
DIR/ort). Each side gets a session at every (inter, intra) in {1, 2}^2
(each in ONNX Runtime's parallel mode when inter is 2, as ort_bench.js;
before 2026-12-03 weft's stayed sequential there, one node at a time),
weft's in this process, ONNX Runtime's in a node process each
(ort_runs.js). A turn is K Runs back to back (default 5), after MS of
quiet (default 150); a turn's figure is the median of its Runs. S turns
(default 5; 3 before 2026-12-03) of every setting on each side, weft's
and ONNX Runtime's alternating, pick each side's best setting; then the
two best take N turns each (default 20), alternating which goes first.

Why turns: on a host whose speed drifts over seconds (this project's KVM
guests), rounds of separate benchmarks catch different stretches of the
drift, and one model's weft/ONNX Runtime ratio moved by 20% between
`int8.sh` runs; turns a fraction of a second long see the same stretch.
Why the quiet: ONNX Runtime's intra-op threads spin on after a Run, and
weft's Runs 20 ms after one of its Runs took 1.6x as long as after one of
weft's own; 100 ms after, no longer.

Prints, per model: each side's best setting, the median of its turns, and
the median of the paired ratios weft / ONNX Runtime (one pair per turn);
and, from the distance between the first two CPUs measured before each
pair (bench/cpu_pair.py), the median among pairs taken with them near and
among those with them apart, where both occurred (two-thread Runs slow
down when the host places the two vCPUs apart).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import weft

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
from cpu_pair import pair_latency_ns  # noqa: E402

SETTINGS = [(1, 1), (1, 2), (2, 1), (2, 2)]
HERE = os.path.dirname(os.path.abspath(__file__))


def feeds_of(work, model, session):
    feeds, files = {}, []
    for arg in session.get_inputs():
        path = os.path.join(work, f"{model}.{arg.name}.npy")
        if not os.path.exists(path):
            path = os.path.join(work, f"{model}.input.npy")
        feeds[arg.name] = np.load(path)
        files.append(f"{arg.name}={path}")
    return feeds, files


class OrtRuns:
    """An ort_runs.js process at one setting."""

    def __init__(self, work, model, setting, files):
        env = dict(os.environ,
                   NODE_PATH=os.path.join(work, "ort", "node_modules"))
        self.proc = subprocess.Popen(
            ["node", os.path.join(HERE, "ort_runs.js"),
             os.path.join(work, model + ".onnx"), str(setting[0]),
             str(setting[1])] + files,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        if self.proc.stdout.readline().strip() != "ready":
            raise RuntimeError(f"ort_runs.js did not start for {model}")

    def turn(self, runs):
        self.proc.stdin.write(f"run {runs}\n")
        self.proc.stdin.flush()
        return statistics.median(map(float, self.proc.stdout.readline().split()))

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


class WeftRuns:
    """A weft session at one setting, with its own pools; in ONNX Runtime's
    parallel execution mode when inter is 2, as ort_runs.js makes its
    session (weft's ONNX Runtime API, like ONNX Runtime's, runs one node at
    a time in the default sequential mode whatever inter_op_num_threads
    says)."""

    def __init__(self, work, model, setting):
        options = weft.SessionOptions()
        options.inter_op_num_threads, options.intra_op_num_threads = setting
        if setting[0] > 1:
            options.execution_mode = weft.ExecutionMode.ORT_PARALLEL
        options.use_per_session_threads = True
        self.session = weft.InferenceSession(
            os.path.join(work, model + ".onnx"), sess_options=options)
        self.feeds, self.files = feeds_of(work, model, self.session)
        for _ in range(3):
            self.session.run(None, self.feeds)

    def turn(self, runs):
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            self.session.run(None, self.feeds)
            times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)


def take_turns(ours, theirs, turns, runs, quiet_s):
    """Turns of each side, alternating which goes first: (ours, theirs,
    the two CPUs' distance before each pair of turns)."""
    mine, peer, distances = [], [], []
    for i in range(turns):
        order = [(ours, mine), (theirs, peer)]
        if i % 2:
            order.reverse()
        distances.append(pair_latency_ns())
        for side, figures in order:
            time.sleep(quiet_s)
            figures.append(side.turn(runs))
    return mine, peer, distances


def ratios_by_distance(ratios, distances, far_ns):
    """The paired ratios' median among pairs taken with the two CPUs near
    (a round trip under far_ns) and apart, where both occurred."""
    near = [r for r, ns in zip(ratios, distances)
            if ns is not None and ns < far_ns]
    apart = [r for r, ns in zip(ratios, distances)
             if ns is not None and ns >= far_ns]
    if not near or not apart:
        known = [ns for ns in distances if ns is not None]
        return (f"; CPUs {statistics.median(known)} ns apart"
                if known else "")
    return (f"; CPUs near: {statistics.median(near):.3f} over {len(near)}, "
            f"apart: {statistics.median(apart):.3f} over {len(apart)}")


def compare(work, model, args):
    ours = {s: WeftRuns(work, model, s) for s in SETTINGS}
    files = ours[(1, 1)].files
    theirs = {s: OrtRuns(work, model, s, files) for s in SETTINGS}
    quiet = args.quiet_ms / 1e3
    try:
        screened = {s: take_turns(ours[s], theirs[s], args.screen, args.block,
                                   quiet)[:2]
                    for s in SETTINGS}
        best_ours = min(SETTINGS,
                        key=lambda s: statistics.median(screened[s][0]))
        best_theirs = min(SETTINGS,
                          key=lambda s: statistics.median(screened[s][1]))
        mine, peer, distances = take_turns(ours[best_ours],
                                           theirs[best_theirs], args.turns,
                                           args.block, quiet)
    finally:
        for side in theirs.values():
            side.close()
    ratios = [a / b for a, b in zip(mine, peer)]
    print(f"{model:20s} weft {best_ours} {statistics.median(mine):8.2f} ms"
          f"  ORT {best_theirs} {statistics.median(peer):8.2f} ms"
          f"  weft/ORT paired {statistics.median(ratios):.3f}"
          f" (quartiles {np.percentile(ratios, 25):.3f}-"
          f"{np.percentile(ratios, 75):.3f})"
          f"{ratios_by_distance(ratios, distances, args.far_ns)}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", required=True)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument(
        "--screen", type=int, default=5,
        help="turns of each setting that choose each side's best (three "
             "chose the two towers' setting differently in each of three "
             "runs, 2026-12-03)")
    parser.add_argument("--block", type=int, default=5)
    parser.add_argument("--quiet-ms", type=float, default=150)
    parser.add_argument(
        "--far-ns", type=float, default=150,
        help="a round trip between the first two CPUs from which they count "
             "as apart (bench/cpu_pair.py: about 50 and 340 ns on the Zen 4 "
             "guest, 2026-12-05)")
    parser.add_argument("models", nargs="+")
    args = parser.parse_args()
    for model in args.models:
        compare(args.work, model, args)


if __name__ == "__main__":
    main()
