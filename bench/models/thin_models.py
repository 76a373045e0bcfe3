#!/usr/bin/env python3
"""Carries the benchmark models to a host that cannot export them (a lent
host whose working-tree copy is size-limited): `thin` keeps each model's
graph and small tensors and replaces every large initializer by a note of
its statistics; `fill` draws the values back from those statistics with a
fixed seed. The timed work is the same graph on the same shapes and
types; the values are new draws (float: normal with the tensor's mean and
standard deviation; integer: uniform over its range), so outputs are
compared only between runtimes on the filled model, never with the
original's.

    thin_models.py thin SRC_DIR DST_DIR NAME...   # NAME.onnx and its feeds
    thin_models.py fill SRC_DIR DST_DIR           # every *.onnx, feeds copied
"""
import glob
import json
import os
import shutil
import sys
import zlib

import numpy as np
import onnx
from onnx import numpy_helper

MARK = "weft-thin:"
# Scales, zero points, shapes and biases stay as given: a per-channel scale
# drawn from a normal could come out negative or zero, which changes what
# a runtime may fuse (MobileNetV2's 1,280 channels need the margin).
KEEP_ELEMENTS = 4096


def thin(src, dst, names):
    os.makedirs(dst, exist_ok=True)
    for name in names:
        model = onnx.load(os.path.join(src, name + ".onnx"))
        for tensor in model.graph.initializer:
            values = numpy_helper.to_array(tensor)
            if values.size <= KEEP_ELEMENTS or values.dtype == object:
                continue
            if np.issubdtype(values.dtype, np.floating):
                note = {"mean": float(values.mean()), "std": float(values.std())}
            else:
                note = {"min": int(values.min()), "max": int(values.max())}
            note["dtype"] = values.dtype.str
            for field in ("raw_data", "float_data", "int32_data", "int64_data",
                          "double_data", "uint64_data"):
                tensor.ClearField(field)
            tensor.doc_string = MARK + json.dumps(note)
        onnx.save(model, os.path.join(dst, name + ".onnx"))
        for feed in glob.glob(os.path.join(src, name + ".*.npy")):
            if feed.endswith(".reference.npy"):
                continue
            target = os.path.join(dst, os.path.basename(feed))
            if os.path.islink(feed):  # quantize_models.py links int8 feeds
                if os.path.lexists(target):
                    os.remove(target)
                os.symlink(os.readlink(feed), target)
            else:
                shutil.copyfile(feed, target)


def fill(src, dst):
    os.makedirs(dst, exist_ok=True)
    for path in sorted(glob.glob(os.path.join(src, "*.onnx"))):
        model = onnx.load(path)
        for tensor in model.graph.initializer:
            if not tensor.doc_string.startswith(MARK):
                continue
            note = json.loads(tensor.doc_string[len(MARK):])
            rng = np.random.default_rng(zlib.crc32(tensor.name.encode()))
            shape = tuple(tensor.dims)
            dtype = np.dtype(note["dtype"])
            if "std" in note:
                values = rng.normal(note["mean"], note["std"], shape)
            else:
                values = rng.integers(note["min"], note["max"], shape,
                                      endpoint=True)
            tensor.raw_data = values.astype(dtype).tobytes()
            tensor.doc_string = ""
        onnx.save(model, os.path.join(dst, os.path.basename(path)))
    for feed in glob.glob(os.path.join(src, "*.npy")):  # links resolved
        shutil.copyfile(feed, os.path.join(dst, os.path.basename(feed)))


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "thin":
        thin(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif len(sys.argv) == 4 and sys.argv[1] == "fill":
        fill(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
