#!/usr/bin/python3
"""Differential test of weft's ONNX operators: one random node per model,
with random shapes, attributes, data types and values, run in weft and
(with --ort) in ONNX Runtime.

    PYTHONPATH=build/python tests/onnx/ops_against_ort/ops_against_ort.py
        [--seeds FIRST:LAST] [--ort NODE_MODULES] [--save DIR]
        [--only OP[,OP...]] [--save-all DIR] [--trace] [--verbose]

The ONNX node suite gives each operator a handful of fixed cases, often
with every weight one value or every attribute at its default; a kernel
can pass all of them and still be wrong where real models go (GRU's
reset gate was). Each seed picks one operator (about 150: opset 17's,
newer ones at opsets 18 to 21, recurrent layers with every activation,
and ONNX Runtime's com.microsoft operators that weft reads) and draws
what the suite leaves out: broadcast shapes, negative axes, every
attribute's values, integer and double types, constant or fed operands,
values at the edges (NaN, infinities, signed zeros) where the operator
defines them.

What must hold, per model:
- weft either runs it or refuses it with an error (Python exception),
  never a crash;
- the outputs at (inter, intra) = (1, 2) and (2, 2) are bitwise those at
  (1, 1) (docs/DESIGN.md, determinism);
- for RoiAlign, STFT and AffineGrid, the outputs equal the NumPy
  references of references.py (ONNX Runtime differs from ONNX on them);
- with --ort: where ONNX Runtime (graph optimizations off) runs the model,
  weft runs it too and gives the same types, shapes and values (integers
  and booleans exactly, quantized outputs of com.microsoft operators
  within one step; floats within 1e-5 of the output's scale plus 1e-5
  relative; NaN where ONNX Runtime has NaN). Where the values differ in a
  way docs/onnx.md lists ("Where ONNX Runtime differs", each checked
  against ONNX's definition), the model counts as "differ as
  documented". Where ONNX Runtime refuses a model, weft's verdict is
  printed with --verbose, not judged: ONNX Runtime refuses some valid
  models (double kernels it lacks) and accepts some invalid ones.

Without --ort (as ctest runs it), a model weft refuses is counted, not
failed, unless weft refuses every model (five or more) of an operator. Exits 1 on any failure; --save writes each failing model and its
feeds.
"""
import argparse
import os
import sys

import numpy as np
from onnx import helper

import weft
from case import Case, constant_value
from differences import documented_difference
from operators import OPERATORS
from references import REFERENCES

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from differential import (first_difference, not_bitwise,  # noqa: E402
                          run_in_onnx_runtime)

def case_of(seed, only=None):
    rng = np.random.default_rng(seed)
    names = sorted(only or OPERATORS)
    op_type = names[int(rng.integers(len(names)))]
    c = Case(rng)
    OPERATORS[op_type](c)
    return op_type, c


def run(model_bytes, feeds, inter=1, intra=1):
    options = weft.SessionOptions()
    options.inter_op_num_threads = inter
    options.intra_op_num_threads = intra
    if inter > 1:
        options.execution_mode = weft.ExecutionMode.ORT_PARALLEL
    try:
        session = weft.InferenceSession(model_bytes, options)
        return session.run(None, feeds), None
    except Exception as error:  # noqa: BLE001 -- weft's errors, reported
        return None, f"{type(error).__name__}: {error}"


def disagreement(expected, got, int_tolerance=0):
    """None when got matches expected, else what differs."""
    if len(expected) != len(got):
        return f"{len(got)} outputs, expected {len(expected)}"
    for index, (ref, out) in enumerate(zip(expected, got)):
        out = np.asarray(out)
        if ref.dtype != out.dtype:
            return f"output {index}: type {out.dtype}, expected {ref.dtype}"
        if ref.shape != out.shape:
            return f"output {index}: shape {out.shape}, expected {ref.shape}"
        if ref.size == 0:
            continue
        if not np.issubdtype(ref.dtype, np.floating):
            bad = np.abs(ref.astype(np.int64) - out.astype(np.int64)) > \
                int_tolerance if int_tolerance else ref != out
        else:
            ref64 = ref.astype(np.float64)
            out64 = out.astype(np.float64)
            finite = np.abs(ref64[np.isfinite(ref64)])
            scale = max(float(finite.max()) if finite.size else 0.0, 0.1)
            tolerance = 1e-5 * scale + 1e-5 * np.abs(ref64)
            if ref.dtype == np.float16:
                tolerance = tolerance * 100
            same_special = (np.isnan(ref64) & np.isnan(out64)) | (
                ref64 == out64)
            with np.errstate(invalid="ignore"):  # inf - inf
                bad = ~same_special & ~(np.abs(ref64 - out64) <= tolerance)
        if bad.any():
            return first_difference(index, bad, ref, out)
    return None


def reference_outputs(op_type, c):
    """The NumPy reference's outputs (references.py), in weft's types, or
    None where there is none for the operator."""
    reference = REFERENCES.get(op_type)
    if reference is None:
        return None
    node = c.nodes[0]
    operands = [constant_value(c, name) if name else None
                for name in node.input]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return reference(operands, attrs)


def check_alone(op_type, c):
    """weft on its own: runs or refuses, bitwise across thread settings,
    and equal to the NumPy reference where there is one. Returns (outputs
    or None, refusal or None, failure or None)."""
    model_bytes = c.proto().SerializeToString()
    outputs, error = run(model_bytes, c.feeds)
    if error:
        return None, error, None
    expected = reference_outputs(op_type, c)
    if expected is not None:
        wrong = disagreement([e.astype(o.dtype) for e, o in
                              zip(expected, outputs)], outputs)
        if wrong:
            return outputs, None, f"against the NumPy reference: {wrong}"
    for inter, intra in ((1, 2), (2, 2)):
        threaded, threaded_error = run(model_bytes, c.feeds, inter, intra)
        differs = threaded_error or not_bitwise(outputs, threaded)
        if differs:
            return outputs, None, f"at ({inter}, {intra}): {differs}"
    return outputs, None, None


def onnx_runtime(cases, node_modules):
    """Each case in ONNX Runtime: seed -> (outputs, None) or (None, error)."""
    return run_in_onnx_runtime({seed: (c.proto().SerializeToString(), c.feeds)
                                for seed, (_, c) in cases.items()},
                               node_modules)


def save(directory, seed, op_type, c):
    folder = os.path.join(directory, f"seed{seed}_{op_type}")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "model.onnx"), "wb") as f:
        f.write(c.proto().SerializeToString())
    for name, value in c.feeds.items():
        np.save(os.path.join(folder, f"in_{name}.npy"), value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="0:500",
                        help="FIRST:LAST, LAST excluded (default 0:500)")
    parser.add_argument("--ort", metavar="NODE_MODULES",
                        help="also compare with ONNX Runtime (npm "
                        "onnxruntime-node installed under NODE_MODULES)")
    parser.add_argument("--only", help="comma-separated operators to draw")
    parser.add_argument("--save", help="write each failing case here")
    parser.add_argument("--save-all", metavar="DIR",
                        help="write every case here (model.onnx and "
                        "in_NAME.npy), e.g. to run them with a sanitizer "
                        "build's `weft run`")
    parser.add_argument("--trace", action="store_true",
                        help="print each seed before running it")
    parser.add_argument("--verbose", action="store_true",
                        help="also print refusals and what ONNX Runtime "
                        "refuses")
    args = parser.parse_args()
    first, last = (int(v) for v in args.seeds.split(":"))
    only = args.only.split(",") if args.only else None
    cases = {seed: case_of(seed, only) for seed in range(first, last)}
    if args.save_all:
        for seed, (op_type, c) in cases.items():
            save(args.save_all, seed, op_type, c)
    expected = onnx_runtime(cases, args.ort) if args.ort else {}
    drawn, refused = {}, {}  # per operator
    counts = {"agree": 0, "differ as documented": 0, "refused by both": 0,
              "refused by ONNX Runtime": 0, "refused by weft": 0, "failed": 0}
    for seed, (op_type, c) in cases.items():
        if args.trace:
            print(f"seed {seed}: {op_type}", flush=True)
        outputs, refusal, failure = check_alone(op_type, c)
        drawn[op_type] = drawn.get(op_type, 0) + 1
        refused[op_type] = refused.get(op_type, 0) + bool(refusal)
        ort_outputs, ort_error = expected.get(seed, (None, None))
        verdict = "agree"
        if failure:
            verdict = "failed"
        elif args.ort and ort_error:
            verdict = "refused by both" if refusal else \
                "refused by ONNX Runtime"
            if args.verbose:
                print(f"seed {seed}: {op_type}: ONNX Runtime refuses "
                      f"({ort_error[:200]}); weft "
                      f"{'refuses: ' + refusal[:200] if refusal else 'runs'}")
        elif refusal:
            verdict = "failed" if args.ort else "refused by weft"
            failure = f"weft refuses: {refusal}"
        elif args.ort:
            failure = disagreement(ort_outputs, outputs, c.int_tolerance)
            if failure:
                known = documented_difference(op_type, c)
                verdict = "differ as documented" if known else "failed"
                failure = f"{failure} ({known})" if known else failure
        counts[verdict] += 1
        if failure and (verdict == "failed" or args.verbose):
            print(f"seed {seed}: {op_type}: {failure}", flush=True)
        if verdict == "failed" and args.save:
            save(args.save, seed, op_type, c)
    print(f"{last - first} models: " + ", ".join(
        f"{count} {what}" for what, count in counts.items()))
    # A generator whose every model weft refuses tests nothing: an operator
    # weft lost, or a generator that only draws invalid nodes.
    never_ran = sorted(op for op, count in drawn.items()
                       if count >= 5 and refused[op] == count)
    if never_ran:
        print("weft refused every model of: " + ", ".join(never_ran))
    return 1 if counts["failed"] or never_ran else 0


if __name__ == "__main__":
    sys.exit(main())
