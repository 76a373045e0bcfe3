#!/usr/bin/env python3
"""Writes non_utf8_names.onnx: y = Relu(x), x float32 [2], whose node,
input and output names hold the byte 0xFF, which is not UTF-8. ONNX's
names are protobuf strings, which proto2 does not check, and ONNX Runtime
loads such a model; weft's JSON outputs (--trace, --json) print the byte as
U+FFFD rather than fail. Run from this directory: python3
make_non_utf8_names.py"""
import onnx
from onnx import TensorProto, helper

node = helper.make_node("Relu", ["XXXX"], ["YYYY"], name="NNNN")
graph = helper.make_graph(
    [node], "non_utf8_names",
    [helper.make_tensor_value_info("XXXX", TensorProto.FLOAT, [2])],
    [helper.make_tensor_value_info("YYYY", TensorProto.FLOAT, [2])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
data = model.SerializeToString()
for name in (b"XXXX", b"YYYY", b"NNNN"):
    data = data.replace(name, name[:1] + b"\xff" + name[2:])
with open("non_utf8_names.onnx", "wb") as f:
    f.write(data)
