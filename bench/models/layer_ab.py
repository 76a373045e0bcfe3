#!/usr/bin/env python3
"""Per-node A/B of a kernel switch on one model: which nodes a setting
speeds up or slows down.

    layer_ab.py WEFT WORK MODEL VARIABLE [--intra N]

Runs `WEFT run WORK/MODEL.onnx --repeat 30 --trace` (inter 1, intra N,
feeds WORK/MODEL.<input>.npy) five times with VARIABLE=0 and five with
VARIABLE=1, alternated, and takes each node's median over the five traces
(each of one process's 30th Run: no first-Run costs). Prints the sum of
the nodes' medians both ways and the 25 nodes that differ most, then the
oneDNN primitives one Run with VARIABLE=1 executes (DNNL_VERBOSE).
How docs/kernels.md's "AMX-INT8 through oneDNN" was measured
(WEFT_DNNL_INT8, on the lent Xeon).
"""
import argparse
import collections
import json
import os
import statistics
import subprocess


def node_durations(trace):
    """{(node, op): [microseconds]} of a Chrome trace's node events."""
    with open(trace) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    durations = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "node":
            durations[(e["name"], e["args"].get("op", ""))].append(e["dur"])
    return durations


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("weft")
    parser.add_argument("work")
    parser.add_argument("model")
    parser.add_argument("variable")
    parser.add_argument("--intra", type=int, default=2)
    args = parser.parse_args()
    prefix = args.model + "."
    flags = []
    for name in sorted(os.listdir(args.work)):
        if (name.startswith(prefix) and name.endswith(".npy") and
                "reference" not in name and "output" not in name):
            flags += ["--feed",
                      f"{name[len(prefix):-4]}={args.work}/{name}"]
    model = f"{args.work}/{args.model}.onnx"
    per_node = {}
    for value in ("0", "1") * 5:
        trace = f"/tmp/layer_ab_{args.model}_{value}.json"
        subprocess.run(
            [args.weft, "run", model, *flags, "--repeat", "30",
             "--set", "inter_op_parallelism_threads=1",
             "--set", f"intra_op_parallelism_threads={args.intra}",
             "--trace", trace],
            env=dict(os.environ, **{args.variable: value}),
            stdout=subprocess.DEVNULL, check=True)
        for key, durations in node_durations(trace).items():
            per_node.setdefault(key, {}).setdefault(value, []).extend(
                durations)
    rows = []
    for (name, op), by_value in per_node.items():
        off = statistics.median(by_value.get("0", [0]))
        on = statistics.median(by_value.get("1", [0]))
        rows.append((name, op, off, on))
    print(f"{args.model}: sum of node medians with {args.variable}=0 "
          f"{sum(r[2] for r in rows):.0f} us, =1 "
          f"{sum(r[3] for r in rows):.0f} us")
    for name, op, off, on in sorted(rows, key=lambda r: -abs(r[2] - r[3]))[:25]:
        ratio = on / off if off else 0
        print(f"  {op:22s} {off:8.1f} {on:8.1f} {ratio:5.2f}  {name[:60]}")
    verbose = subprocess.run(
        [args.weft, "run", model, *flags],
        env=dict(os.environ, **{args.variable: "1", "DNNL_VERBOSE": "1"}),
        capture_output=True, text=True, check=False).stdout
    executed = collections.Counter(
        ",".join(line.split(",")[3:5]) for line in verbose.splitlines()
        if line.startswith("onednn_verbose,exec"))
    print("  oneDNN exec:", dict(executed))


if __name__ == "__main__":
    main()
