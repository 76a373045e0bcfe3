#!/usr/bin/python3
"""Single-node ONNX models whose attributes or constant inputs take the
extreme values of their types (int64's ends, 2^31, 2^62, NaN, infinities,
odd strings), for scripts/extreme-values, which runs each with a
sanitizer build of weft. Every model must give a result or a clear error:
never a sanitizer report, a signal or a hang.

    make_models.py OUT_DIR   writes OUT_DIR/mNNNN.onnx and OUT_DIR/cases.json
                              ([[file, description], ...])
"""
import json
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

mn, mx = -2**63, 2**63 - 1
VALS = [mn, -2**62, -2**31, -1, 0, 2**31, 2**62, mx]
FLOAT_VALS = [float("nan"), float("inf"), -1e30, 0.0, -1.0, 1e-45]
STR_VALS = ["", "x" * 10000, "\x00", "garbage"]
EQUATIONS = ["i->", "ii->i", "ij->iij", "ij->", "...->...", "i...j->j...i",
             "a" * 100 + "->"]


def F(*s):
    return np.ones(s, np.float32)


def I(*v):
    return np.array(v, np.int64)


# (op, constant inputs, fixed attributes, swept attribute, kind[, opset[,
# outputs]]); kind: n > 0 a list of n copies of each value of VALS, 0 the
# value itself, -1 FLOAT_VALS, -2 a NaN tensor, -3 EQUATIONS, -4 STR_VALS.
ATTRIBUTE_CASES = [
 ("Conv", [F(1,2,5,5), F(2,1,3,3)], {}, "group", 0),
 ("Conv", [F(1,2,5,5), F(2,2,3,3)], {}, "strides", 2),
 ("Conv", [F(1,2,5,5), F(2,2,3,3)], {}, "pads", 4),
 ("Conv", [F(1,2,5,5), F(2,2,3,3)], {}, "dilations", 2),
 ("Conv", [F(1,2,5,5), F(2,2,3,3)], {}, "kernel_shape", 2),
 ("ConvTranspose", [F(1,2,5,5), F(2,2,3,3)], {}, "group", 0),
 ("ConvTranspose", [F(1,2,5,5), F(2,2,3,3)], {}, "strides", 2),
 ("ConvTranspose", [F(1,2,5,5), F(2,2,3,3)], {}, "pads", 4),
 ("ConvTranspose", [F(1,2,5,5), F(2,2,3,3)], {}, "output_padding", 2),
 ("ConvTranspose", [F(1,2,5,5), F(2,2,3,3)], {}, "output_shape", 2),
 ("ConvTranspose", [F(1,2,5,5), F(2,2,3,3)], {}, "dilations", 2),
 ("AveragePool", [F(1,2,5,5)], {"kernel_shape": [2,2]}, "pads", 4),
 ("AveragePool", [F(1,2,5,5)], {"kernel_shape": [2,2]}, "strides", 2),
 ("AveragePool", [F(1,2,5,5)], {}, "kernel_shape", 2),
 ("MaxPool", [F(1,2,5,5)], {"kernel_shape": [2,2]}, "dilations", 2),
 ("MaxPool", [F(1,2,5,5)], {"kernel_shape": [2,2]}, "pads", 4),
 ("LpPool", [F(1,2,5,5)], {"kernel_shape": [2,2]}, "p", 0),
 ("GlobalLpPool", [F(1,2,5,5)], {}, "p", 0),
 ("LpNormalization", [F(2,3)], {}, "p", 0),
 ("LpNormalization", [F(2,3)], {}, "axis", 0),
 ("LRN", [F(1,4,3,3)], {}, "size", 0),
 ("GroupNormalization", [F(1,4,3,3), F(4), F(4)], {}, "num_groups", 0, 18),
 ("Gather", [F(2,3), I(0)], {}, "axis", 0),
 ("GatherElements", [F(2,3), np.zeros((2,3),np.int64)], {}, "axis", 0),
 ("ScatterElements", [F(2,3), np.zeros((2,3),np.int64), F(2,3)], {}, "axis", 0),
 ("OneHot", [I(1,2), I(3), np.array([0,1],np.float32)], {}, "axis", 0),
 ("Concat", [F(2,3), F(2,3)], {}, "axis", 0),
 ("Softmax", [F(2,3)], {}, "axis", 0),
 ("Hardmax", [F(2,3)], {}, "axis", 0),
 ("ArgMax", [F(2,3)], {}, "axis", 0),
 ("TopK", [F(2,3), I(1)], {}, "axis", 0, 17, 2),
 ("Unique", [F(2,3)], {}, "axis", 0, 17, 4),
 ("Compress", [F(2,3), np.array([True, False])], {}, "axis", 0),
 ("ReverseSequence", [F(3,2,2), I(1,2)], {}, "batch_axis", 0),
 ("ReverseSequence", [F(3,2,2), I(1,2)], {}, "time_axis", 0),
 ("LSTM", [F(2,1,3), F(1,8,3), F(1,8,2)], {}, "hidden_size", 0),
 ("GRU", [F(2,1,3), F(1,6,3), F(1,6,2)], {}, "hidden_size", 0),
 ("RNN", [F(2,1,3), F(1,2,3), F(1,2,2)], {}, "hidden_size", 0),
 ("RNN", [F(2,1,3), F(1,2,3), F(1,2,2)], {"hidden_size": 2}, "layout", 0),
 ("Split", [F(2,3)], {}, "num_outputs", 0, 18, 2),
 ("Split", [F(2,3)], {}, "axis", 0, 17, 2),
 ("Trilu", [F(2,3)], {}, "upper", 0),
 ("EyeLike", [F(2,3)], {}, "k", 0),
 ("Flatten", [F(2,3)], {}, "axis", 0),
 ("CumSum", [F(2,3), I(0)], {}, "exclusive", 0),
 ("RandomUniform", [], {}, "shape", 2),
 ("RandomNormal", [], {}, "shape", 2),
 ("RandomUniform", [], {"shape": [2,2]}, "dtype", 0),
 ("Multinomial", [F(2,3)], {}, "sample_size", 0),
 ("Bernoulli", [F(2,3)*0.5], {}, "dtype", 0, 15),
 ("RoiAlign", [F(1,1,4,4), np.array([[0,0,2,2]],np.float32), I(0)], {}, "output_height", 0, 16),
 ("RoiAlign", [F(1,1,4,4), np.array([[0,0,2,2]],np.float32), I(0)], {}, "sampling_ratio", 0, 16),
 ("MaxRoiPool", [F(1,1,4,4), np.array([[0,0,0,2,2]],np.float32)], {}, "pooled_shape", 2),
 ("SpaceToDepth", [F(1,1,4,4)], {}, "blocksize", 0),
 ("DepthToSpace", [F(1,4,2,2)], {}, "blocksize", 0),
 ("Cast", [F(2,3)], {}, "to", 0),
 ("EyeLike", [F(2,3)], {}, "dtype", 0),
 ("Shape", [F(2,3)], {}, "start", 0, 15),
 ("Shape", [F(2,3)], {}, "end", 0, 15),
 ("MeanVarianceNormalization", [F(1,2,3,3)], {}, "axes", 2),
 ("LayerNormalization", [F(2,3), F(3), F(3)], {}, "axis", 0),
 ("InstanceNormalization", [F(1,2,3,3), F(2), F(2)], {}, "epsilon", -1),
 ("ConstantOfShape", [I(2,3)], {}, "value", -2),
 ("Einsum", [F(2,3)], {"equation": "ij->ji"}, "x", -3),
 ("GridSample", [F(1,1,4,4), np.zeros((1,2,2,2),np.float32)], {}, "align_corners", 0, 16),
 ("NonMaxSuppression", [np.zeros((1,2,4),np.float32), np.zeros((1,1,2),np.float32)], {}, "center_point_box", 0),
 ("Resize", [F(1,1,2,2), np.array([],np.float32), np.array([1,1,2,2],np.float32)], {}, "exclude_outside", 0),
 ("Resize", [F(1,1,2,2), np.array([],np.float32), np.array([1,1,2,2],np.float32)], {}, "antialias", 0, 18),
 ("STFT", [F(1,16,1), I(2), None, I(4)], {}, "onesided", 0),
 ("DFT", [F(1,8,1)], {}, "axis", 0),
 ("DFT", [F(1,8,1)], {}, "onesided", 0),
 ("MelWeightMatrix", [I(4), I(16), I(8000), np.array(0,np.float32), np.array(4000,np.float32)], {}, "output_datatype", 0),
 ("QLinearConv", [np.ones((1,2,3,3),np.uint8), np.array(1,np.float32), np.array(0,np.uint8), np.ones((2,1,1,1),np.int8), np.array(1,np.float32), np.array(0,np.int8), np.array(1,np.float32), np.array(0,np.uint8)], {}, "group", 0),
 ("ConvInteger", [np.ones((1,2,3,3),np.uint8), np.ones((2,2,1,1),np.uint8)], {}, "group", 0),
 ("ConvInteger", [np.ones((1,2,3,3),np.uint8), np.ones((2,2,1,1),np.uint8)], {}, "strides", 2),
 ("DequantizeLinear", [np.ones((2,3),np.uint8), np.array([1,1,1],np.float32), np.array([0,0,0],np.uint8)], {}, "axis", 0),
 ("QuantizeLinear", [F(2,3), np.array([1,1,1],np.float32), np.array([0,0,0],np.uint8)], {}, "axis", 0),
 ("Bernoulli", [F(2,3)*0.5], {}, "seed", -1, 15),
 ("StringNormalizer", [np.array(["a"], dtype=object)], {}, "is_case_sensitive", 0, 10),
 ("ScatterND", [F(2,3), np.zeros((1,1),np.int64), F(1,3)], {}, "reduction", -4, 16),
 ("Col2Im", [F(1,4,4), I(3,3), I(2,2)], {}, "strides", 2, 18),
 ("CenterCropPad", [F(2,3), I(1,1)], {}, "axes", 1, 18),
 ("Pad", [F(2,3), I(0,0,0,0)], {}, "axes", 2, 18),
 ("Upsample", [F(1,1,2,2), np.array([1,1,2,2],np.float32)], {}, "mode", -4, 9),
]


# (op, inputs as a function of the swept value (None: an omitted input),
# attributes or a function of it[, opset[, outputs]]).
INPUT_CASES = [
 ("Slice", lambda v: [F(2,3), I(v), I(2), I(1), I(1)], {}),
 ("Slice", lambda v: [F(2,3), I(0), I(v), I(1), I(1)], {}),
 ("Slice", lambda v: [F(2,3), I(0), I(3), I(1), I(v)], {}),
 ("Slice", lambda v: [F(2,3), I(0), I(3), I(v), I(1)], {}),
 ("Range", lambda v: [np.array(0, np.int64), np.array(v, np.int64), np.array(1, np.int64)], {}),
 ("Range", lambda v: [np.array(v, np.int64), np.array(0, np.int64), np.array(-1, np.int64)], {}),
 ("Range", lambda v: [np.array(0, np.int64), np.array(10, np.int64), np.array(v, np.int64)], {}),
 ("Range", lambda v: [np.array(0, np.int32), np.array(max(min(v, 2**31-1), -2**31), np.int32), np.array(1, np.int32)], {}),
 ("OneHot", lambda v: [I(0, 1), I(v), np.array([0,1],np.float32)], {}),
 ("OneHot", lambda v: [I(v, 1), I(3), np.array([0,1],np.float32)], {}),
 ("Tile", lambda v: [F(2,3), I(v, 1)], {}),
 ("Expand", lambda v: [F(2,3), I(v, 3)], {}),
 ("Expand", lambda v: [F(1,3), I(v, 1, 3)], {}),
 ("TopK", lambda v: [F(2,3), I(v)], {}, 17, 2),
 ("Pad", lambda v: [F(2,3), I(0, v, 0, 0)], {}),
 ("Pad", lambda v: [F(2,3), I(0, v, 0, 0)], {"mode": "reflect"}),
 ("Pad", lambda v: [F(2,3), I(0, v, 0, 0)], {"mode": "edge"}),
 ("Pad", lambda v: [F(2,3), I(0, 1, 0, 1), np.array(0, np.float32), I(v)], {}, 18),
 ("Resize", lambda v: [F(1,1,2,2), np.array([],np.float32), np.array([],np.float32), I(1,1,v,2)], {}),
 ("Resize", lambda v: [F(1,1,2,2), np.array([],np.float32), np.array([],np.float32), I(1,1,v,2)], {"mode": "linear"}),
 ("ConstantOfShape", lambda v: [I(v, 0)], {}),
 ("ConstantOfShape", lambda v: [I(v, 2)], {}),
 ("Reshape", lambda v: [F(2,3), I(v, -1)], {}),
 ("Reshape", lambda v: [F(2,3), I(v, 0)], {}),
 ("NonMaxSuppression", lambda v: [np.zeros((1,2,4),np.float32), np.ones((1,1,2),np.float32), I(v)], {}),
 ("Trilu", lambda v: [F(2,3), I(v)], {}),
 ("CumSum", lambda v: [F(2,3), I(v)], {}),
 ("Unsqueeze", lambda v: [F(2,3), I(v)], {}),
 ("Squeeze", lambda v: [F(1,3), I(v)], {}),
 ("Gather", lambda v: [F(2,3), I(0, v)], {"axis": 1}),
 ("GatherElements", lambda v: [F(2,3), np.full((2,3), v, np.int64)], {}),
 ("GatherND", lambda v: [F(2,3), I(0, v).reshape(1,2)], {}),
 ("GatherND", lambda v: [F(2,3), I(0).reshape(1,1)], lambda v: {"batch_dims": v if abs(v) < 2**62 else v}),
 ("ScatterND", lambda v: [F(2,3), I(v).reshape(1,1), F(1,3)], {}),
 ("ScatterElements", lambda v: [F(2,3), np.full((1,1), v, np.int64), F(1,1)], {}),
 ("DFT", lambda v: [F(1,8,1), I(v)], {}),
 ("DFT", lambda v: [F(1,8,1), I(4), I(v)], {}, 20),
 ("STFT", lambda v: [F(1,16,1), I(v), None, I(4)], {}),
 ("STFT", lambda v: [F(1,16,1), I(2), None, I(v)], {}),
 ("MelWeightMatrix", lambda v: [I(v), I(16), I(8000), np.array(0,np.float32), np.array(4000,np.float32)], {}),
 ("MelWeightMatrix", lambda v: [I(4), I(v), I(8000), np.array(0,np.float32), np.array(4000,np.float32)], {}),
 ("MelWeightMatrix", lambda v: [I(4), I(16), I(v), np.array(0,np.float32), np.array(4000,np.float32)], {}),
 ("HannWindow", lambda v: [I(v)], {}),
 ("BlackmanWindow", lambda v: [I(v)], {}),
 ("ReduceSum", lambda v: [F(2,3), I(v)], {}),
 ("ReduceMax", lambda v: [F(2,3), I(v)], {}, 18),
 ("Split", lambda v: [F(2,3), I(v, 1)], {"axis": 1}, 17, 2),
 ("Mod", lambda v: [I(mn, v), I(-1, -1)], {}),
 ("Div", lambda v: [I(mn, v), I(-1, v)], {}),
 ("Mod", lambda v: [I(mn, v), I(v, v)], {"fmod": 1}),
 ("Pow", lambda v: [I(2, v), I(v, 2)], {}),
 ("Abs", lambda v: [I(v)], {}),
 ("Neg", lambda v: [I(v)], {}),
 ("Sum", lambda v: [I(v), I(v)], {}),
 ("Mul", lambda v: [I(v), I(v)], {}),
 ("Sub", lambda v: [I(v), I(-v if v != mn else mx)], {}),
 ("ReduceSum", lambda v: [I(v, v)], {"keepdims": 0}, 13),
 ("ReduceProd", lambda v: [I(v, v)], {"keepdims": 0}),
 ("ReduceMean", lambda v: [I(v, v)], {"keepdims": 0}),
 ("ReduceL1", lambda v: [I(v, v)], {"keepdims": 0}),
 ("ReduceSumSquare", lambda v: [I(v, v)], {"keepdims": 0}),
 ("CumSum", lambda v: [I(v, v), I(0)], {}),
 ("MatMul", lambda v: [I(v, v).reshape(1,2), I(v, v).reshape(2,1)], {}),
 ("Einsum", lambda v: [I(v, v)], {"equation": "i->"}),
 ("Cast", lambda v: [I(v)], {"to": TensorProto.FLOAT16}),
 ("Cast", lambda v: [I(v)], {"to": TensorProto.INT32}),
 ("Cast", lambda v: [I(v)], {"to": TensorProto.UINT64}),
 ("Cast", lambda v: [I(v)], {"to": TensorProto.STRING}),
 ("BitShift", lambda v: [np.array([1], np.uint64), np.array([v & (2**64-1)], np.uint64)], {"direction": "LEFT"}),
 ("ReverseSequence", lambda v: [F(3,2,2), I(v, 1)], {}),
 ("Compress", lambda v: [F(2,3), np.array([True]*3)], lambda v: {"axis": v}),
 ("RoiAlign", lambda v: [F(1,1,4,4), np.array([[0,0,2,2]],np.float32), I(v)], {}, 16),
 ("MaxUnpool", lambda v: [F(1,1,2,2), I(0,1,2,v).reshape(1,1,2,2)], {"kernel_shape": [2,2], "strides": [2,2]}),
 ("MaxUnpool", lambda v: [F(1,1,2,2), I(0,1,2,3).reshape(1,1,2,2), I(1,1,v,4)], {"kernel_shape": [2,2], "strides": [2,2]}),
 ("Upsample", lambda v: [F(1,1,2,2), np.array([1,1,2,2],np.float32)], {"mode": "nearest"}, 9),
 ("Bernoulli", lambda v: [F(2,3)*0.5], lambda v: {"seed": float(v)}, 15),
 ("RandomUniformLike", lambda v: [F(2,3)], lambda v: {"seed": float(v)}),
 ("Multinomial", lambda v: [np.log(F(2,3)/3)], lambda v: {"sample_size": v if abs(v) < 2**40 else v}),
 ("Col2Im", lambda v: [F(1,4,4), I(v, 3), I(2,2)], {}, 18),
 ("CenterCropPad", lambda v: [F(2,3), I(v, 1)], {}, 18),
 ("AffineGrid", lambda v: [F(1,2,3), I(1,1,v,2)], {}, 20),
 ("StringSplit", lambda v: [np.array(["a b"], dtype=object)], lambda v: {"maxsplit": v}, 20),
 ("TfIdfVectorizer", lambda v: [I(1, 2)], lambda v: {"mode": "TF", "min_gram_length": 1, "max_gram_length": 1, "max_skip_count": v, "ngram_counts": [0], "ngram_indexes": [0], "pool_int64s": [1]}, 9),
 ("TfIdfVectorizer", lambda v: [I(1, 2)], lambda v: {"mode": "TF", "min_gram_length": 1, "max_gram_length": 1, "max_skip_count": 0, "ngram_counts": [0], "ngram_indexes": [v], "pool_int64s": [1]}, 9),
 ("TfIdfVectorizer", lambda v: [I(1, 2)], lambda v: {"mode": "TF", "min_gram_length": 1, "max_gram_length": v, "max_skip_count": 0, "ngram_counts": [0], "ngram_indexes": [0], "pool_int64s": [1]}, 9),
 ("LpPool", lambda v: [F(1,1,3,3)], lambda v: {"kernel_shape": [2,2], "p": v}, 18),
 ("Hardmax", lambda v: [F(2,3)], lambda v: {"axis": v}, 13),
 ("LogSoftmax", lambda v: [F(2,3)], lambda v: {"axis": v}, 13),
 ("Flatten", lambda v: [F(2,3)], lambda v: {"axis": v}),
 ("ArgMin", lambda v: [F(2,3)], lambda v: {"axis": v}),
 ("Concat", lambda v: [F(2,3), F(2,3)], lambda v: {"axis": v}),
 ("GatherElements", lambda v: [F(2,3), np.zeros((2,3),np.int64)], lambda v: {"axis": v}),
 ("Det", lambda v: [F(2,2)], {}),
 ("QuantizeLinear", lambda v: [F(2,3), np.array(1,np.float32), np.array(0,np.uint8)], lambda v: {"axis": v}),
 ("DequantizeLinear", lambda v: [np.array([v % 256], np.uint8), np.array(1,np.float32), np.array(0,np.uint8)], {}),
 ("DynamicQuantizeLinear", lambda v: [np.array([float(v), 0], np.float32)], {}, 17, 3),
 ("MatMulInteger", lambda v: [np.full((2,2), v % 256, np.uint8), np.full((2,2), (v % 256) - 128, np.int8)], {}),
]


def save(out_dir, index, op, inputs, attrs, opset, outputs):
    names, inits = [], []
    for i, a in enumerate(inputs):
        if a is None:
            names.append("")
            continue
        name = f"c{i}"
        names.append(name)
        if a.dtype == object:
            inits.append(helper.make_tensor(name, TensorProto.STRING, a.shape,
                                            [s.encode() for s in a.flat]))
        else:
            inits.append(numpy_helper.from_array(a, name))
    node = helper.make_node(op, names, [f"y{j}" for j in range(outputs)],
                            **attrs)
    graph = helper.make_graph(
        [node], "g", [],
        [helper.make_tensor_value_info(f"y{j}", TensorProto.UNDEFINED, None)
         for j in range(outputs)], inits)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", opset)])
    path = os.path.join(out_dir, f"m{index:04d}.onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return os.path.basename(path)


def attribute_models():
    for case in ATTRIBUTE_CASES:
        op, inputs, fixed, name, kind = case[:5]
        opset = case[5] if len(case) > 5 else 17
        outputs = case[6] if len(case) > 6 else 1
        values = {-1: FLOAT_VALS, -2: ["tensor"], -3: EQUATIONS,
                  -4: STR_VALS}.get(kind, VALS)
        for v in values:
            attrs = dict(fixed)
            if kind == -2:
                attrs[name] = numpy_helper.from_array(
                    np.array([np.nan], np.float32))
            elif kind == -3:
                attrs["equation"] = v
            elif kind > 0:
                attrs[name] = [v] * kind
            else:
                attrs[name] = v
            yield op, inputs, attrs, opset, outputs, f"{op} {name}={str(v)[:40]}"


def input_models():
    for case in INPUT_CASES:
        op, make_inputs, attrs = case[:3]
        opset = case[3] if len(case) > 3 else 17
        outputs = case[4] if len(case) > 4 else 1
        for v in VALS:
            try:
                inputs = make_inputs(v)
            except (OverflowError, ValueError):
                continue  # Not representable in the input's dtype.
            yield (op, inputs, attrs(v) if callable(attrs) else attrs, opset,
                   outputs, f"{op} value={v}")


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    cases = []
    for op, inputs, attrs, opset, outputs, what in (
            list(attribute_models()) + list(input_models())):
        try:
            path = save(out_dir, len(cases), op, inputs, attrs, opset,
                        outputs)
        except (ValueError, TypeError):
            continue  # onnx's helper refuses the value itself.
        cases.append([path, what])
    with open(os.path.join(out_dir, "cases.json"), "w") as f:
        json.dump(cases, f)
    print(f"{len(cases)} models in {out_dir}")


if __name__ == "__main__":
    main()
