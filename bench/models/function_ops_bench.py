#!/usr/bin/python3
"""The ops weft added for opsets 19 and 23, side by side with ONNX Runtime
1.30 (npm onnxruntime-node) in the same run: Attention (BERT-base heads,
with and without a boolean mask; grouped-query heads with is_causal),
RMSNormalization, RotaryEmbedding and DeformConv, each a one-node model
with random inputs written into WORK.

    function_ops_bench.py WEFT WORK NODE_MODULES [ROUNDS]

Per round: `weft bench --in-turns` at (1, 1) and (1, 2), then
ort_bench.js at ONNX Runtime's four settings. Prints per model the
medians over rounds of each side's best setting and their ratio.
"""
import json
import os
import statistics
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(5)


def floats(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def write(work, name, node, inputs, constants, opset):
    """A one-node model WORK/name.onnx and its feeds WORK/name.INPUT.npy."""
    def info(key, value):
        element = TensorProto.BOOL if value.dtype == np.bool_ else TensorProto.FLOAT
        return helper.make_tensor_value_info(key, element, list(value.shape))
    graph = helper.make_graph(
        [node], name, [info(k, v) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(v, k) for k, v in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    onnx.save(model, os.path.join(work, f"{name}.onnx"))
    for key, value in inputs.items():
        np.save(os.path.join(work, f"{name}.{key}.npy"), value)


def write_models(work):
    heads = {"q_num_heads": 12, "kv_num_heads": 12}
    qkv = {"q": floats(1, 128, 768), "k": floats(1, 128, 768), "v": floats(1, 128, 768)}
    write(work, "attention_bert", helper.make_node("Attention", ["q", "k", "v"], ["y"], **heads),
          qkv, {}, 23)
    # Padding: the last 28 of 128 keys hidden from every query (ONNX
    # Runtime wants the mask's query axis whole).
    mask = np.zeros((1, 1, 128, 128), np.bool_)
    mask[..., :100] = True
    write(work, "attention_bert_mask",
          helper.make_node("Attention", ["q", "k", "v", "m"], ["y"], **heads),
          {**qkv, "m": mask}, {}, 23)
    write(work, "attention_gqa_causal",
          helper.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1),
          {"q": floats(1, 32, 128, 64), "k": floats(1, 8, 128, 64),
           "v": floats(1, 8, 128, 64)}, {}, 23)
    write(work, "rms_normalization", helper.make_node("RMSNormalization", ["x", "s"], ["y"]),
          {"x": floats(1, 512, 4096)}, {"s": floats(4096)}, 23)
    angles = RNG.uniform(-1, 1, (1, 128, 32)).astype(np.float32)
    write(work, "rotary_embedding", helper.make_node("RotaryEmbedding", ["x", "c", "s"], ["y"]),
          {"x": floats(1, 32, 128, 64)}, {"c": np.cos(angles), "s": np.sin(angles)}, 23)
    write(work, "deform_conv",
          helper.make_node("DeformConv", ["x", "w", "o", "b", "m"], ["y"], pads=[1, 1, 1, 1]),
          {"x": floats(1, 64, 56, 56), "o": floats(1, 18, 56, 56),
           "m": RNG.uniform(0, 1, (1, 9, 56, 56)).astype(np.float32)},
          {"w": floats(64, 64, 3, 3) * 0.05, "b": floats(64)}, 19)
    return ["attention_bert", "attention_bert_mask", "attention_gqa_causal",
            "rms_normalization", "rotary_embedding", "deform_conv"]


def feeds(work, name):
    prefix = f"{name}."
    return [f"{f[len(prefix):-4]}={os.path.join(work, f)}" for f in sorted(os.listdir(work))
            if f.startswith(prefix) and f.endswith(".npy")]


def one_round(weft, work, node_modules, name):
    model = os.path.join(work, f"{name}.onnx")
    flags = [a for feed in feeds(work, name) for a in ("--feed", feed)]
    bench = json.loads(subprocess.run(
        [weft, "bench", model, *flags, "--inter", "1", "--intra", "1,2", "--repeat", "20",
         "--in-turns", "--json"], capture_output=True, text=True, check=True).stdout)
    ort = json.loads(subprocess.run(
        ["node", os.path.join(HERE, "ort_bench.js"), model, "20", *feeds(work, name)],
        capture_output=True, text=True, check=True,
        env={**os.environ, "NODE_PATH": node_modules}).stdout)
    return min(r["median_ms"] for r in bench["rows"]), min(ort.values())


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    weft, work, node_modules = argv[1:4]
    rounds = int(argv[4]) if len(argv) > 4 else 3
    os.makedirs(work, exist_ok=True)
    print("| model | weft best (ms) | ONNX Runtime best (ms) | weft / ORT |")
    print("|---|---|---|---|")
    for name in write_models(work):
        results = [one_round(weft, work, node_modules, name) for _ in range(rounds)]
        mine = statistics.median(r[0] for r in results)
        theirs = statistics.median(r[1] for r in results)
        print(f"| {name} | {mine:.3f} | {theirs:.3f} | {mine / theirs:.2f} |", flush=True)


if __name__ == "__main__":
    main(sys.argv)
