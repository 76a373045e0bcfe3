#!/usr/bin/python3
"""Whether a runtime's int8 convolution saturates a pair sum: one
QLinearConv of C input channels, every input byte 255 and every weight 127,
output scale 1000, so the exact output is round(C * 255 * 127 / 1000). On
CPUs without VNNI, AVX2's byte product vpmaddubsw adds two products into a
saturating int16 (255 * 127 * 2 = 64,770 > 32,767): a kernel built on it
gives round(C / 2 * 32,767 / 1000) instead. weft sums in int32 and must
give the exact value on every CPU.
    pair_saturation.py WORK_DIR [WEFT_BINARY]
Needs the ONNX Runtime peer in WORK_DIR/ort (rounds.sh install_ort_peer).
Prints each runtime's output and the exact one; exit 1 if weft's differs."""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

CHANNELS = 2


def build(path):
    def const(name, value, dtype):
        return numpy_helper.from_array(np.array(value, dtype), name)

    inits = [
        const("xs", 1.0, np.float32), const("xz", 0, np.uint8),
        const("w", np.full((1, CHANNELS, 1, 1), 127), np.int8),
        const("ws", [1.0], np.float32), const("wz", [0], np.int8),
        const("ys", 1000.0, np.float32), const("yz", 0, np.uint8),
    ]
    # Float in and out (QuantizeLinear, DequantizeLinear) so that both
    # runtimes' runners feed and read it as they read the benchmark models.
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
        helper.make_node("QLinearConv",
                         ["xq", "xs", "xz", "w", "ws", "wz", "ys", "yz"],
                         ["yq"]),
        helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "pair_saturation",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                       [1, CHANNELS, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4])],
        inits)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)


def main():
    work = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    weft = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        here, "..", "..", "build", "bin", "weft")
    model = os.path.join(work, "pair_saturation.onnx")
    feed = os.path.join(work, "pair_saturation.x.npy")
    build(model)
    np.save(feed, np.full((1, CHANNELS, 4, 4), 255, np.float32))
    exact = round(CHANNELS * 255 * 127 / 1000) * 1000.0

    ort_out = os.path.join(work, "pair_saturation.ort.npy")
    subprocess.run(["node", os.path.join(here, "ort_run.js"), model, ort_out,
                    f"x={feed}"], check=True,
                   env=dict(os.environ,
                            NODE_PATH=os.path.join(work, "ort",
                                                   "node_modules")))
    weft_dir = os.path.join(work, "pair_saturation.weft")
    subprocess.run([weft, "run", model, "--feed", f"x={feed}", "--save",
                    weft_dir], check=True, stdout=subprocess.DEVNULL)
    ort = float(np.load(ort_out).ravel()[0])
    ours = float(np.load(os.path.join(weft_dir, "y.npy")).ravel()[0])
    print(f"exact {exact:.0f}  ONNX Runtime {ort:.0f}  weft {ours:.0f}")
    if ort != exact:
        print("ONNX Runtime saturated a pair sum on this CPU")
    sys.exit(0 if ours == exact else 1)


if __name__ == "__main__":
    main()
