#!/usr/bin/env python3
"""Writes onnx_cases/test_mlp: mlp.onnx with one test data set in the ONNX
backend-test layout (model.onnx, test_data_set_0/input_0.pb, output_0.pb),
the expected output computed here with NumPy from the model's weights.
Run from this directory: python3 make_onnx_case.py"""
import os
import shutil

import numpy as np
import onnx
from onnx import numpy_helper

model = onnx.load("mlp.onnx")
weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
x = numpy_helper.to_array(onnx.load_tensor("mlp_x.pb"))
values = {model.graph.input[0].name: x, **weights}
for node in model.graph.node:
    a = [values[name] for name in node.input]
    if node.op_type == "MatMul":
        out = a[0] @ a[1]
    elif node.op_type == "Add":
        out = a[0] + a[1]
    elif node.op_type == "Relu":
        out = np.maximum(a[0], 0)
    else:
        raise SystemExit(f"make_onnx_case.py: no NumPy form for {node.op_type}")
    values[node.output[0]] = out.astype(np.float32)
y = values[model.graph.output[0].name]

case = os.path.join("onnx_cases", "test_mlp")
data = os.path.join(case, "test_data_set_0")
os.makedirs(data, exist_ok=True)
shutil.copy("mlp.onnx", os.path.join(case, "model.onnx"))
shutil.copy("mlp_x.pb", os.path.join(data, "input_0.pb"))
tensor = numpy_helper.from_array(y, model.graph.output[0].name)
with open(os.path.join(data, "output_0.pb"), "wb") as f:
    f.write(tensor.SerializeToString())
print(f"wrote {case}: y {y.shape}")
