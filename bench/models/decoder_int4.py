#!/usr/bin/python3
"""Greedy generation with a Llama-style int4 decoder, weft against ONNX
Runtime, in the form onnxruntime-genai's model builder writes for CPU:

    bench/models/decoder_int4.py [--layers 8] [--hidden 1024] [--inter 2816]
        [--heads 16] [--kv-heads 4] [--vocab 8192] [--prompt 32]
        [--steps 32] [--rounds 3] [--work DIR]

The model (random weights): token embedding; per layer RMS normalization
(SimplifiedLayerNormalization, then SkipSimplifiedLayerNormalization
carrying the residual), the packed Q, K and V projection, the output
projection and the SiLU-gated MLP as com.microsoft MatMulNBits (4-bit
codes in blocks of 32), GroupQueryAttention with rotary embedding over a
key/value cache fed back each step; seqlens_k and total_sequence_length
from the attention mask, as the builder computes them; logits through a
4-bit head. A prompt of `prompt` tokens on an empty cache, then `steps`
single-token steps, each on the argmax of the last logits.

Per round, each side at intra 1 and 2 (one inter-op thread, ONNX Runtime
sequential), in a fresh session: the first prompt's milliseconds (the
session's first Run, with what each runtime prepares then), then a second
generation from a prompt one token longer, its prompt's milliseconds and
its median step's (a session that has served before). Prints the rounds,
the ratios weft / ONNX Runtime of each side's best, whether the first
generations' tokens are the same, and the largest difference in their
prompts' last logits. weft through its Python package (build/python on PYTHONPATH),
ONNX Runtime 1.30 through onnxruntime-node (bench/models/ort_generate.js;
run.sh installs it in build/bench-models/ort).
"""
import argparse
import json
import os
import statistics
import subprocess
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import weft

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MS = "com.microsoft"
BLOCK = 32


class Builder:
    """The graph's nodes and initializers, named as it grows."""

    def __init__(self, rng):
        self.rng, self.nodes, self.inits = rng, [], []

    def init(self, name, value):
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def node(self, op, inputs, outputs, domain="", **attrs):
        self.nodes.append(helper.make_node(op, inputs, outputs,
                                           domain=domain, **attrs))
        return outputs[0]

    def int4(self, name, x, k, n):
        """x [.., k] times a random k x n weight in 4-bit codes, scaled so
        that the product keeps x's magnitude; zero points the default 8."""
        codes = self.rng.integers(0, 16, (n, k // BLOCK, BLOCK))
        packed = (codes[..., 0::2] | (codes[..., 1::2] << 4)).astype(np.uint8)
        scales = (self.rng.uniform(0.5, 1.5, (n, k // BLOCK)) /
                  (4.6 * np.sqrt(k))).astype(np.float32)
        return self.node("MatMulNBits",
                         [x, self.init(f"{name}.b", packed),
                          self.init(f"{name}.scales", scales)],
                         [name], domain=MS, K=k, N=n, bits=4,
                         block_size=BLOCK)

    def gamma(self, name, size):
        return self.init(name, self.rng.uniform(0.8, 1.2, size).astype(
            np.float32))


def write_model(path, a, rng):
    b = Builder(rng)
    d, size = a.hidden, a.hidden // a.heads
    half = size // 2
    angles = np.outer(np.arange(4096),
                      1.0 / (10000 ** (np.arange(half) / half)))
    cos = b.init("cos_cache", np.cos(angles).astype(np.float32))
    sin = b.init("sin_cache", np.sin(angles).astype(np.float32))
    # seqlens_k = ones in the mask - 1; total_sequence_length = its width.
    lengths = b.node("ReduceSum", ["attention_mask", b.init(
        "axis1", np.array([1], np.int64))], ["mask_sum"], keepdims=0)
    b.node("Cast", [b.node("Sub", [lengths, b.init(
        "one", np.array(1, np.int64))], ["past_len"])], ["seqlens_k"],
        to=TensorProto.INT32)
    b.node("Cast", [b.node("Gather", [b.node(
        "Shape", ["attention_mask"], ["mask_shape"]), "one"], ["width"],
        axis=0)], ["total_sequence_length"], to=TensorProto.INT32)
    residual = b.node("Gather", [b.init("embed", (rng.standard_normal(
        (a.vocab, d)) * 0.5).astype(np.float32)), "input_ids"], ["embedded"],
        axis=0)
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64,
                                            [1, "sequence"]),
              helper.make_tensor_value_info("attention_mask",
                                            TensorProto.INT64, [1, "total"])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                             [1, "sequence", a.vocab])]
    normed = b.node("SimplifiedLayerNormalization",
                    [residual, b.gamma("norm0", d)], ["normed0"],
                    epsilon=1e-5)
    for layer in range(a.layers):
        p = f"layers.{layer}"
        qkv = b.int4(f"{p}.qkv", normed, d, (a.heads + 2 * a.kv_heads) * size)
        cache = [f"past_key_values.{layer}.{kind}" for kind in ("key", "value")]
        present = [f"present.{layer}.{kind}" for kind in ("key", "value")]
        for name in cache:
            inputs.append(helper.make_tensor_value_info(
                name, TensorProto.FLOAT, [1, a.kv_heads, "past", size]))
        for name in present:
            outputs.append(helper.make_tensor_value_info(
                name, TensorProto.FLOAT, [1, a.kv_heads, "total", size]))
        attended = b.node("GroupQueryAttention",
                          [qkv, "", "", *cache, "seqlens_k",
                           "total_sequence_length", cos, sin],
                          [f"{p}.attn", *present], domain=MS,
                          num_heads=a.heads, kv_num_heads=a.kv_heads,
                          do_rotary=1)
        projected = b.int4(f"{p}.o", attended, d, d)
        normed = b.node("SkipSimplifiedLayerNormalization",
                        [projected, residual, b.gamma(f"{p}.norm2", d)],
                        [f"{p}.normed2", "", "", f"{p}.residual2"],
                        domain=MS, epsilon=1e-5)
        residual = f"{p}.residual2"
        gate_up = b.int4(f"{p}.gate_up", normed, d, 2 * a.inter)
        gate, up = f"{p}.gate", f"{p}.up"
        b.nodes.append(helper.make_node(
            "Split", [gate_up, b.init(f"{p}.split", np.array(
                [a.inter, a.inter], np.int64))], [gate, up], axis=-1))
        silu = b.node("Mul", [gate, b.node("Sigmoid", [gate],
                                           [f"{p}.sigmoid"])], [f"{p}.silu"])
        mixed = b.node("Mul", [silu, up], [f"{p}.mixed"])
        down = b.int4(f"{p}.down", mixed, a.inter, d)
        last = layer == a.layers - 1
        normed = b.node("SkipSimplifiedLayerNormalization",
                        [down, residual, b.gamma(f"{p}.norm_next", d)],
                        [f"{p}.normed_next", "", "", f"{p}.residual_next"],
                        domain=MS, epsilon=1e-5)
        residual = f"{p}.residual_next"
        if last:
            b.int4("logits", normed, d, a.vocab)
    graph = helper.make_graph(b.nodes, "decoder_int4", inputs, outputs,
                              b.inits)
    onnx.save(helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]), path)


def weft_generation(session, a, prompt):
    """Milliseconds of each Run, the ids and the prompt's last logits."""
    size = a.hidden // a.heads
    cache = {f"past_key_values.{layer}.{kind}":
             np.zeros((1, a.kv_heads, 0, size), np.float32)
             for layer in range(a.layers) for kind in ("key", "value")}
    names = [o.name for o in session.get_outputs()]
    ids, total = np.array([prompt], np.int64), len(prompt)
    times, generated, prompt_logits = [], [], None
    for step in range(a.steps + 1):
        feeds = dict(cache, input_ids=ids,
                     attention_mask=np.ones((1, total), np.int64))
        start = time.perf_counter()
        out = dict(zip(names, session.run(None, feeds)))
        times.append((time.perf_counter() - start) * 1e3)
        last = out["logits"][0, -1]
        if step == 0:
            prompt_logits = last.copy()
        generated.append(int(np.argmax(last)))
        for name in cache:
            cache[name] = out[name.replace("past_key_values", "present")]
        ids, total = np.array([[generated[-1]]], np.int64), total + 1
    return times, generated, prompt_logits


def weft_generate(path, a, intra, prompt):
    """As ort_generate.js: the first prompt's milliseconds, the second
    generation's Runs (its prompt one token longer), the first's ids and
    prompt logits."""
    options = weft.SessionOptions()
    options.intra_op_num_threads = intra
    options.inter_op_num_threads = 1
    session = weft.InferenceSession(path, options)
    first = weft_generation(session, a, prompt)
    second = weft_generation(session, a, prompt + prompt[:1])
    return first[0][0], second[0], first[1], first[2]


def ort_generate(path, a, intra, prompt):
    env = dict(os.environ, NODE_PATH=os.path.join(
        ROOT, "build/bench-models/ort/node_modules"))
    out = subprocess.run(
        ["node", os.path.join(HERE, "ort_generate.js"), path, str(intra),
         str(a.layers), str(a.kv_heads), str(a.hidden // a.heads),
         str(a.steps), *map(str, prompt)],
        capture_output=True, text=True, check=True, env=env)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return (result["first_prompt_ms"], result["times"], result["generated"],
            np.array(result["prompt_logits"], np.float32))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name, default in (("layers", 8), ("hidden", 1024), ("inter", 2816),
                          ("heads", 16), ("kv-heads", 4), ("vocab", 8192),
                          ("prompt", 32), ("steps", 32), ("rounds", 3)):
        parser.add_argument(f"--{name}", type=int, default=default)
    parser.add_argument("--work", default=os.path.join(ROOT,
                                                       "build/bench-models"))
    a = parser.parse_args()
    os.makedirs(a.work, exist_ok=True)
    rng = np.random.default_rng(7)
    path = os.path.join(a.work, f"decoder_int4_{a.layers}x{a.hidden}.onnx")
    write_model(path, a, rng)
    prompt = [int(t) for t in rng.integers(0, a.vocab, a.prompt)]
    best = {"weft": [], "ort": []}
    for r in range(a.rounds):
        rows = {}
        for side, run in (("weft", weft_generate), ("ort", ort_generate)):
            for intra in (1, 2):
                first, times, generated, logits = run(path, a, intra, prompt)
                rows[(side, intra)] = (first, times[0],
                                       statistics.median(times[1:]),
                                       generated, logits)
        for side in ("weft", "ort"):
            best[side].append(tuple(
                min(rows[(side, i)][k] for i in (1, 2)) for k in range(3)))
            print(f"round {r + 1} {side:4s}: " + ", ".join(
                f"{what} " + " / ".join(
                    f"{rows[(side, i)][k]:.1f}" for i in (1, 2)) + " ms"
                for k, what in enumerate(("first prompt", "prompt", "step")))
                + " (intra 1 / 2)")
        same = rows[("weft", 2)][3] == rows[("ort", 2)][3]
        gap = float(np.max(np.abs(rows[("weft", 2)][4] - rows[("ort", 2)][4])))
        print(f"round {r + 1}: same tokens {same} "
              f"({len(rows[('weft', 2)][3])} generated), prompt logits within "
              f"{gap:.2e}")
    for k, what in enumerate(("first prompt", "prompt", "step")):
        ratios = [w[k] / o[k] for w, o in zip(best["weft"], best["ort"])]
        print(f"{what}: weft / ONNX Runtime per round " +
              ", ".join(f"{x:.3f}" for x in ratios) +
              f"; median {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
