#!/usr/bin/python3
"""Two builds of weft on one model, taking turns (for a noisy host):

    bench/models/ab_builds.py [--rounds N] [--intra 1,2] BASE_WEFT NEW_WEFT MODEL [FLAGS...]

Each round runs `weft bench MODEL --inter 1 --intra ... --repeat 10
--warmup 2 FLAGS` with both binaries, alternating which goes first, and
prints per setting the medians over rounds of each build's median, their
ratio (new / base), the range of the per-round ratios, and each build's
fastest single run. FLAGS go to both (e.g. --feed input=x.npy).
"""
import argparse
import json
import statistics
import subprocess
import sys


def bench(weft, model, intra, flags):
    done = subprocess.run([weft, "bench", model, "--json", "--inter", "1", "--intra", intra,
                           "--repeat", "10", "--warmup", "2", *flags],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{weft} bench failed:\n{done.stderr}")
    return {(r["inter"], r["intra"]): (r["median_ms"], r["min_ms"])
            for r in json.loads(done.stdout)["rows"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--intra", default="1,2")
    parser.add_argument("base")
    parser.add_argument("new")
    parser.add_argument("model")
    args, flags = parser.parse_known_args()
    builds = {"base": args.base, "new": args.new}
    medians = {name: {} for name in builds}
    fastest = {name: {} for name in builds}
    for round_index in range(args.rounds):
        order = list(builds) if round_index % 2 == 0 else list(reversed(builds))
        for name in order:
            for setting, (median, minimum) in bench(builds[name], args.model, args.intra,
                                                    flags).items():
                medians[name].setdefault(setting, []).append(median)
                fastest[name][setting] = min(fastest[name].get(setting, minimum), minimum)
    for setting in medians["base"]:
        base, new = medians["base"][setting], medians["new"][setting]
        ratios = sorted(n / b for n, b in zip(new, base))
        print(f"{setting}: base {statistics.median(base):.2f} ms, new "
              f"{statistics.median(new):.2f} ms, new / base "
              f"{statistics.median(new) / statistics.median(base):.3f} "
              f"(rounds {ratios[0]:.2f}-{ratios[-1]:.2f}); fastest run base "
              f"{fastest['base'][setting]:.2f}, new {fastest['new'][setting]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
