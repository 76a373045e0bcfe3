#!/usr/bin/python3
"""Quantizes the exported side-by-side models with weft.quantize.
    quantize_models.py WORK_DIR [NAME...]
For each NAME (default: resnet18 resnet18_b8 mobilenet_v2 bert_encoder),
reads WORK_DIR/NAME.onnx and its feeds (export_models.py) and writes
WORK_DIR/NAME_int8.onnx with the same feeds linked as NAME_int8.*.npy:
the CNNs in the QDQ form of static quantization (uint8 activations
calibrated on the feed and 7 perturbed copies of it, int8 weights per
channel), the encoder as dynamic quantization (DynamicQuantizeLinear +
MatMulInteger), as ONNX Runtime's quantize_static / quantize_dynamic write
them. Prints each model's accuracy against its float model.
Needs weft's Python package on PYTHONPATH (build/python)."""
import glob
import os
import sys

import numpy as np

import weft

DYNAMIC = {"bert_encoder"}


def feeds_of(work, name):
    feed = {}
    for path in glob.glob(os.path.join(work, name + ".*.npy")):
        key = os.path.basename(path)[len(name) + 1:-4]
        if key != "reference":
            feed[key] = path
    return feed


def main():
    work = sys.argv[1]
    names = sys.argv[2:] or ["resnet18", "resnet18_b8", "mobilenet_v2",
                             "bert_encoder"]
    rng = np.random.default_rng(20261127)
    for name in names:
        paths = feeds_of(work, name)
        feed = {k: np.load(p) for k, p in paths.items()}
        calibration = [feed]
        if name not in DYNAMIC:
            for _ in range(7):
                calibration.append({
                    k: (v + 0.1 * rng.standard_normal(v.shape)).astype(v.dtype)
                    for k, v in feed.items()})
        out = os.path.join(work, name + "_int8.onnx")
        result = weft.quantize(os.path.join(work, name + ".onnx"), out,
                               calibration, dynamic=name in DYNAMIC)
        for key, path in paths.items():
            link = os.path.join(work, f"{name}_int8.{key}.npy")
            if os.path.lexists(link):
                os.remove(link)
            os.symlink(os.path.basename(path), link)
        print(f"{name}_int8: {len(result.quantized_nodes)} nodes quantized, "
              f"accuracy against float: {result.accuracy}")


if __name__ == "__main__":
    main()
