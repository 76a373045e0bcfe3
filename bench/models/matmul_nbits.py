#!/usr/bin/python3
"""weft against ONNX Runtime on ONNX Runtime's weight-only quantized form
(com.microsoft MatMulNBits), the form its MatMul4BitsQuantizer writes for
transformer weights:

    bench/models/matmul_nbits.py [--k 4096] [--layers 4] [--rows 1,64]
                                 [--rounds 3] [--repeat 30] [--work DIR]

A chain of `layers` MatMulNBits of K x K weights (4-bit codes in blocks of
32, packed zero points), fed `rows` rows of A: one row is a decoding step
of a language model (every weight read once), 64 a short prompt. Per
round, weft's median at (inter 1, intra 1) and (1, 2) and ONNX Runtime
1.30's at each (inter, intra) in {1, 2}^2 (bench/models/ort_bench.js),
each side's best; prints the rounds and the median ratio weft / ONNX
Runtime. Needs build/bin/weft (or $WEFT) and onnxruntime-node (run.sh
installs it in build/bench-models/ort).
"""
import argparse
import json
import os
import re
import statistics
import subprocess

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BLOCK = 32


def pack_low_first(codes):
    """4-bit codes [..., 2m] as bytes [..., m], even codes in the low half."""
    return (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)


def write_model(path, k, rows, layers, rng):
    blocks = k // BLOCK
    nodes, inits, x = [], [], "A"
    for layer in range(layers):
        codes = rng.integers(0, 16, (k, blocks, BLOCK))
        zeros = rng.integers(0, 16, (k, blocks))
        inits += [
            numpy_helper.from_array(pack_low_first(codes), f"B{layer}"),
            numpy_helper.from_array(
                (rng.random((k, blocks)) * 0.01).astype(np.float32),
                f"scales{layer}"),
            numpy_helper.from_array(pack_low_first(zeros).reshape(-1),
                                    f"zeros{layer}")]
        y = "Y" if layer == layers - 1 else f"Y{layer}"
        nodes.append(helper.make_node(
            "MatMulNBits", [x, f"B{layer}", f"scales{layer}", f"zeros{layer}"],
            [y], domain="com.microsoft", K=k, N=k, bits=4, block_size=BLOCK))
        x = y
    graph = helper.make_graph(
        nodes, "matmul_nbits",
        [helper.make_tensor_value_info("A", TensorProto.FLOAT, [rows, k])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [rows, k])],
        inits)
    onnx.save(helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 18), helper.make_opsetid("com.microsoft", 1)]),
        path)


def weft_best(weft, model, feed, repeat):
    times = []
    for intra in (1, 2):
        out = subprocess.run(
            [weft, "run", model, "--feed", f"A={feed}", "--inter", "1",
             "--intra", str(intra), "--repeat", str(repeat)],
            capture_output=True, text=True, check=True)
        times.append(float(re.search(r"median ([0-9.]+) ms",
                                     out.stdout + out.stderr).group(1)))
    return min(times)


def ort_best(ort_dir, model, feed, repeat):
    out = subprocess.run(
        ["node", os.path.join(HERE, "ort_bench.js"), model, str(repeat),
         f"A={feed}"], capture_output=True, text=True, check=True,
        env=dict(os.environ,
                 NODE_PATH=os.path.join(ort_dir, "node_modules")))
    return min(json.loads(out.stdout.strip().splitlines()[-1]).values())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--k", type=int, default=4096)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--rows", default="1,64")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--work", default=os.path.join(ROOT, "build",
                                                  "bench-models"))
    args = p.parse_args()
    weft = os.environ.get("WEFT", os.path.join(ROOT, "build", "bin", "weft"))
    rng = np.random.default_rng(5)
    for rows in (int(r) for r in args.rows.split(",")):
        model = os.path.join(args.work, f"matmul_nbits_{args.k}_{rows}.onnx")
        feed = model.replace(".onnx", ".A.npy")
        write_model(model, args.k, rows, args.layers, rng)
        np.save(feed, rng.standard_normal((rows, args.k)).astype(np.float32))
        ratios = []
        for round_ in range(args.rounds):
            w = weft_best(weft, model, feed, args.repeat)
            o = ort_best(os.path.join(args.work, "ort"), model, feed,
                         args.repeat)
            ratios.append(w / o)
            print(f"rows {rows}, round {round_ + 1}: weft {w:.2f} ms, "
                  f"ONNX Runtime {o:.2f} ms, ratio {w / o:.3f}", flush=True)
        print(f"rows {rows}: median weft / ONNX Runtime "
              f"{statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
