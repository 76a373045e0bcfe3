#!/usr/bin/python3
"""weft against ONNX Runtime node by node (issue 15's profile):

    bench/models/layers.py [--runs N] [--intra T] MODEL NAME=FEED.npy ...

Both run one inter-op thread and T intra-op threads (default 1), ONNX
Runtime in its sequential mode.

Times each node of weft's run (`weft run --trace`, the fastest of N traced
runs) and ONNX Runtime's per-node profile (ort_profile.js, medians over N
runs), matched by output name, and prints a row per node with the
convolution's shape, then totals by kind of layer. Nodes that one runtime
fused and the other did not (weft's Conv + Add, for one) have no partner
and count for their side only. Needs build/bin/weft (or $WEFT) and
onnxruntime-node installed by run.sh in build/bench-models/ort.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

import onnx
from onnx import shape_inference

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def weft_node_times(weft, model, feeds, runs, intra):
    """Fastest time per node (us) over `runs` traced runs."""
    best = {}
    order = []
    feed_flags = [flag for feed in feeds for flag in ("--feed", feed)]
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "trace.json")
        for _ in range(runs):
            subprocess.run([weft, "run", model, *feed_flags, "--inter", "1", "--intra", str(intra),
                            "--repeat", "3", "--trace", trace],
                           check=True, capture_output=True)
            with open(trace) as f:
                events = json.load(f)["traceEvents"]
            for e in events:
                if e.get("cat") != "node":
                    continue
                # The nhwc-layout pass names a node's channels-last twin
                # after it: the same layer.
                name = e["name"].removesuffix("/nhwc")
                if name not in best:
                    order.append((name, e["args"].get("op", "?")))
                best[name] = min(best.get(name, float("inf")), e["dur"])
    return order, best


def ort_node_times(model, feeds, runs, intra):
    env = dict(os.environ, NODE_PATH=os.path.join(ROOT, "build/bench-models/ort/node_modules"))
    done = subprocess.run(["node", os.path.join(HERE, "ort_profile.js"), model, str(runs), str(intra),
                           *feeds],
                          check=True, capture_output=True, text=True, env=env)
    return json.loads(done.stdout)


# Ops weft fuses into the Conv before them (FusedConv), walked back over.
FUSED_AFTER_CONV = {"Relu", "Clip", "LeakyRelu", "HardSwish", "Gelu", "Add"}


def conv_shapes(graph, traced):
    """Output name of each node -> a description of the Conv it ends, found
    by walking back over the activations and residual Adds fused into it;
    an input that is itself a traced node's output is the residual, not the
    Conv's path."""
    dims = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
            for v in list(graph.value_info) + list(graph.output)}
    weights = {i.name: list(i.dims) for i in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}

    def describe(conv):
        attrs = {a.name: a for a in conv.attribute}
        group = attrs["group"].i if "group" in attrs else 1
        stride = attrs["strides"].ints[0] if "strides" in attrs else 1
        w = weights.get(conv.input[1])
        y = dims.get(conv.output[0])
        if w is None or not y:
            return None
        kind = "depthwise" if group > 1 and w[1] == 1 else (
            "1x1" if w[2] == 1 and w[3] == 1 else f"{w[2]}x{w[3]}")
        kind += f" s{stride}"
        flops = 2 * y[1] * y[2] * y[3] * w[1] * w[2] * w[3]
        return kind, f"{w[1] * group}->{w[0]} @{y[2]}x{y[3]}", flops

    shapes = {}
    for node in graph.node:
        step = node
        for _ in range(3):  # Conv <- Clip/Relu <- Add: at most a few steps.
            if step.op_type == "Conv":
                found = describe(step)
                if found:
                    shapes[node.output[0]] = found
                break
            if step.op_type not in FUSED_AFTER_CONV:
                break
            inner = [producer[i] for i in step.input if i in producer and i not in traced
                     and producer[i].op_type != "Constant"]
            if len(inner) != 1:
                break
            step = inner[0]
    return shapes


def by_output_name(graph, ort_us):
    """ONNX Runtime names a node it kept by the node's name and one it
    rewrote by its output; weft's trace names nodes by output."""
    output_of = {node.name: node.output[0] for node in graph.node if node.name}
    return {output_of.get(name, name): us for name, us in ort_us.items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--intra", type=int, default=1)
    parser.add_argument("model")
    parser.add_argument("feeds", nargs="+")
    args = parser.parse_args()
    weft = os.environ.get("WEFT", os.path.join(ROOT, "build/bin/weft"))
    order, weft_us = weft_node_times(weft, args.model, args.feeds, args.runs,
                                     args.intra)
    graph = shape_inference.infer_shapes(onnx.load(args.model)).graph
    ort_us = by_output_name(graph, ort_node_times(args.model, args.feeds, args.runs,
                                                    args.intra))
    shapes = conv_shapes(graph, set(weft_us))
    totals = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    print(f"{'node':44s} {'weft us':>8s} {'ORT us':>8s} {'ratio':>6s}  layer")
    for name, op in order:
        kind, desc, flops = shapes.get(name, (op, "", 0))
        mine, theirs = weft_us[name], ort_us.get(name)
        ratio = f"{mine / theirs:6.2f}" if theirs else "     -"
        print(f"{name[-44:]:44s} {mine:8.0f} {theirs or 0:8.0f} {ratio}  {kind} {desc}")
        totals[kind][0] += mine
        totals[kind][1] += theirs or 0
        totals[kind][2] += flops
    print(f"\n{'kind':14s} {'weft us':>8s} {'ORT us':>8s} {'weft GFLOP/s':>13s}")
    for kind, (mine, theirs, flops) in sorted(totals.items(), key=lambda kv: -kv[1][0]):
        rate = f"{flops / mine / 1e3:13.1f}" if flops else " " * 13
        print(f"{kind:14s} {mine:8.0f} {theirs:8.0f} {rate}")
    unmatched = sorted(set(ort_us) - set(weft_us))
    print(f"\nweft total {sum(weft_us.values()):.0f} us, ONNX Runtime total "
          f"{sum(ort_us.values()):.0f} us ({len(unmatched)} of its nodes without a partner "
          f"in weft's trace, counted in its total only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
