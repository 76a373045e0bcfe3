#!/usr/bin/python3
"""Differential test of weft's graph passes: random models built from the
patterns the passes rewrite, run with every pass off and with them on.

    PYTHONPATH=build/python tests/onnx/pass_equivalence/pass_equivalence.py
        [--seeds FIRST:LAST] [--save DIR] [--verbose] [--precision bf16]
        [--ort NODE_MODULES]

Each seed builds one ONNX model (opset 17) from pieces that real exporters
write and that weft's passes match: convolutions with BatchNormalization,
activations and residual Adds, pools and Concats, Gemm heads, LayerNorm and
Gelu written out op by op, attention (Reshape/Transpose into heads, scaled
QK^T, mask, Softmax), dynamic quantization's MatMulInteger chain and the
QDQ form of static quantization; and what sits between them in real
models: layout-dependent ops, ConvTranspose, LSTM, GRU and RNN layers.
The pieces are joined at random, so an intermediate tensor often has a
second reader or is itself a graph output: the cases where a fusion must
leave a node alone.

What must hold, per model:
- the outputs with every pass on equal the outputs with every pass off,
  within float rounding (integer paths: within a few quantisation steps,
  since a fused integer kernel rounds once where the float graph rounds at
  each node), and
- with the passes on, the outputs at (inter, intra) = (1, 2) and (2, 2)
  are bitwise those at (1, 1) (docs/DESIGN.md, determinism), and
- where the batch dimension is open (half the models), each row run alone
  with batch_invariant set gives bitwise its row of the batch (what
  `weft serve` promises; not for DynamicQuantizeLinear, which quantizes on
  its whole input's range).

With --ort, each model also runs in ONNX Runtime (graph optimizations
off), which must agree with weft's outputs as above.

A model that weft refuses with a clear error in both modes is counted, not
failed (unless more than 1% of the run is); one refused in one mode only
is a failure. For each failure the script names the pass whose removal
alone makes the outputs agree, and --save writes the model there. Exits 1
on any failure.
"""
import argparse
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import weft

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from differential import (first_difference, not_bitwise,  # noqa: E402
                          run_in_onnx_runtime)

OPSET = 17
# SessionOptions.precision for every session (--precision): under "bf16"
# the products round their operands to bf16, so the passes-off comparison
# allows bf16's rounding; the bitwise checks stay bitwise.
PRECISION = "fp32"


class Model:
    """A graph under construction: nodes, constants, and the shape of every
    float tensor made so far."""

    def __init__(self, rng):
        self.rng = rng
        self.nodes = []
        self.initializers = []
        self.shapes = {}
        self.kinds = {}
        self.scales = {}  # DequantizeLinear output -> its scale
        self.dtypes = {}  # graph input -> its NumPy dtype
        self.open_dims = bool(rng.integers(2))
        self.inputs = []
        self.outputs = []
        self.count = 0

    def name(self, stem):
        self.count += 1
        return f"{stem}{self.count}"

    def const(self, array, stem="c"):
        name = self.name(stem)
        self.initializers.append(numpy_helper.from_array(np.asarray(array),
                                                         name))
        return name

    def op(self, op_type, inputs, shape=None, outputs=1, kind="float",
           **attrs):
        names = [self.name(op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names,
                                           name=self.name("n"), **attrs))
        if shape is not None:
            self.shapes[names[0]] = tuple(shape)
            self.kinds[names[0]] = kind
        return names[0] if outputs == 1 else names

    def input(self, shape, dtype=np.float32):
        """A graph input; half the models declare all but the last
        dimension open, as exporters write dynamic axes (so the passes see
        fewer shapes), and are fed the shapes chosen here."""
        name = self.name("x")
        dims = list(shape)
        if self.open_dims:
            dims = [f"d{i}" for i in range(len(dims) - 1)] + dims[-1:]
        self.inputs.append(helper.make_tensor_value_info(
            name, TensorProto.FLOAT if dtype == np.float32
            else TensorProto.INT64, dims))
        self.shapes[name] = tuple(shape)
        self.kinds[name] = "float" if dtype == np.float32 else "index"
        self.dtypes[name] = dtype
        return name

    def mark_output(self, name):
        if name not in self.outputs and name not in [
                i.name for i in self.inputs]:
            self.outputs.append(name)

    def mark_leaves(self):
        """Every tensor no node reads becomes an output, so no piece is
        pruned as dead; a model whose pieces all came to nothing (or only
        to integers) outputs a Relu of its first input."""
        read = {name for node in self.nodes for name in node.input}
        for name, kind in self.kinds.items():
            if name not in read and kind in ("float", "quantized"):
                self.mark_output(name)
        if not self.outputs:
            first = self.inputs[0].name
            self.mark_output(self.op("Relu", [first], self.shapes[first]))

    def proto(self):
        outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT,
                                              list(self.shapes[n]))
                for n in self.outputs]
        read = {name for node in self.nodes for name in node.input}
        graph = helper.make_graph(
            self.nodes, "pass_equivalence", self.inputs, outs,
            [i for i in self.initializers if i.name in read])
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model

    def feeds(self, rng):
        feeds = {}
        for i in self.inputs:
            shape, dtype = self.shapes[i.name], self.dtypes[i.name]
            if dtype == np.float32:
                feeds[i.name] = rng.standard_normal(shape).astype(dtype)
            else:  # Token ids into an embedding table of VOCAB rows.
                feeds[i.name] = rng.integers(0, VOCAB, shape).astype(dtype)
        return feeds

    def pick(self, rank, prefer_quantized=False):
        """A float tensor of this rank, made by any piece so far (so often
        an intermediate of one); for a quantized piece, half the time a
        DequantizeLinear output where there is one."""
        kinds = ("float", "quantized")
        if prefer_quantized and self.rng.integers(2):
            kinds = ("quantized",)
        for allowed in (kinds, ("float", "quantized")):
            names = [n for n, s in self.shapes.items()
                     if self.kinds[n] in allowed and len(s) == rank]
            if names:
                return names[self.rng.integers(len(names))]
        return None

    def same_plane(self, name):
        """A float tensor with name's batch and plane ([N, *, H, W]), name
        itself included: what Concat over channels can join it with."""
        n, _, h, w = self.shapes[name]
        partners = [other for other, s in self.shapes.items()
                    if len(s) == 4 and s[0] == n and s[2:] == (h, w)
                    and self.kinds[other] in ("float", "quantized")]
        return partners[self.rng.integers(len(partners))]

    def same_shape(self, name):
        others = [n for n, s in self.shapes.items()
                  if s == self.shapes[name] and n != name
                  and self.kinds[n] in ("float", "quantized")]
        return others[self.rng.integers(len(others))] if others else None


def weights(rng, *shape, scale=None):
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    scale = scale or 1.0 / math.sqrt(max(fan_in, 1))
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# --- activations -----------------------------------------------------------


def activation(m, x):
    rng, shape = m.rng, m.shapes[x]
    choice = rng.integers(9)
    if choice == 0:
        return m.op("Relu", [x], shape)
    if choice == 1:
        low, high = sorted(rng.uniform(-1, 6, 2).astype(np.float32))
        return m.op("Clip", [x, m.const(np.float32(low)),
                             m.const(np.float32(high))], shape)
    if choice == 2:
        return m.op("Clip", [x, m.const(np.float32(0)),
                             m.const(np.float32(6))], shape)
    if choice == 3:
        return m.op("LeakyRelu", [x], shape,
                    alpha=float(rng.uniform(0.01, 0.3)))
    if choice == 4:
        return m.op("HardSwish", [x], shape)
    if choice == 5:
        return gelu_written_out(m, x)
    if choice == 6:
        return m.op("Mul", [x, m.op("Sigmoid", [x], shape)], shape)
    if choice == 7:
        return m.op("Tanh", [x], shape)
    return m.op("HardSigmoid", [x], shape, alpha=0.2, beta=0.5)


def gelu_written_out(m, x):
    """x * 0.5 * (1 + erf(x / sqrt 2)); one time in four with one constant
    off, which gelu-recognition must leave alone."""
    shape = m.shapes[x]
    constants = [math.sqrt(2), 1.0, 0.5]
    if m.rng.integers(4) == 0:
        constants[m.rng.integers(3)] *= 0.9
    root2, one, half_value = (np.float32(c) for c in constants)
    scaled = m.op("Div", [x, m.const(root2)], shape)
    erf = m.op("Erf", [scaled], shape)
    one_plus = m.op("Add", [erf, m.const(one)], shape)
    if m.rng.integers(2):
        half = m.op("Mul", [x, m.const(half_value)], shape)
        return m.op("Mul", [half, one_plus], shape)
    product = m.op("Mul", [x, one_plus], shape)
    return m.op("Mul", [product, m.const(half_value)], shape)


# --- convolutional pieces --------------------------------------------------


def conv_out(size, kernel, stride, pad_begin, pad_end, dilation):
    return (size + pad_begin + pad_end - dilation * (kernel - 1) - 1) \
        // stride + 1


def conv(m, x):
    """A convolution of every kind: square or not (Inception's 1 x 7 and
    7 x 1), strided, dilated, grouped or depthwise (with a multiplier),
    padded evenly or not; then BatchNormalization and an activation, each
    one time in two or so."""
    rng = m.rng
    n, c, h, w = m.shapes[x]
    kernel = [int(rng.choice([1, 1, 3, 3, 3, 5, 7]))] * 2
    stride = [int(rng.choice([1, 1, 1, 2]))] * 2
    dilation = [2 if kernel[0] == 3 and rng.integers(8) == 0 else 1] * 2
    if rng.integers(5) == 0:  # Each axis its own.
        kernel = [int(v) for v in rng.choice([1, 2, 3, 5, 7], 2)]
        stride = [int(v) for v in rng.choice([1, 1, 2, 3], 2)]
        dilation = [int(v) for v in rng.choice([1, 1, 2], 2)]
    group_kind = rng.integers(6)
    if group_kind == 0:
        group, out_c = c, c * int(rng.choice([1, 1, 2]))
    elif group_kind == 1 and c % 2 == 0:
        group, out_c = 2, 2 * int(rng.choice([2, 4, 8]))
    else:
        group, out_c = 1, int(rng.choice([3, 4, 8, 16, 24, 32, 64]))
    half = [d * (k - 1) // 2 for k, d in zip(kernel, dilation)]
    pads = half + half
    if rng.integers(4) == 0:
        pads = [int(rng.integers(0, half[i % 2] + 2)) for i in range(4)]
    oh = conv_out(h, kernel[0], stride[0], pads[0], pads[2], dilation[0])
    ow = conv_out(w, kernel[1], stride[1], pads[1], pads[3], dilation[1])
    if oh < 1 or ow < 1 or any(
            pads[i] >= kernel[i % 2] * dilation[i % 2] for i in range(4)):
        return None
    inputs = [x, m.const(weights(rng, out_c, c // group, *kernel))]
    if rng.integers(3):
        inputs.append(m.const(weights(rng, out_c, scale=0.5)))
    attrs = dict(kernel_shape=kernel, strides=stride, pads=pads, group=group)
    if max(dilation) > 1:
        attrs["dilations"] = dilation
    y = m.op("Conv", inputs, (n, out_c, oh, ow), **attrs)
    if rng.integers(2):
        y = batch_norm(m, y)
    if rng.integers(3):
        y = activation(m, y)
    return y


def batch_norm(m, x):
    rng, shape = m.rng, m.shapes[x]
    c = shape[1]
    scale = rng.uniform(0.5, 1.5, c).astype(np.float32)
    bias = weights(rng, c, scale=0.3)
    mean = weights(rng, c, scale=0.3)
    var = rng.uniform(0.5, 2.0, c).astype(np.float32)
    return m.op("BatchNormalization",
                [x] + [m.const(a) for a in (scale, bias, mean, var)], shape,
                epsilon=1e-5)


def residual(m, x):
    rng, shape = m.rng, m.shapes[x]
    other = m.same_shape(x)
    choice = rng.integers(4)
    if other is None or choice == 0:
        broadcast = list(shape)
        for axis in range(len(shape)):
            if rng.integers(2):
                broadcast[axis] = 1
        start = int(rng.integers(len(broadcast) + 1))
        other = m.const(weights(rng, *broadcast[start:], scale=0.5))
    pair = [x, other] if rng.integers(2) else [other, x]
    y = m.op(str(rng.choice(["Add", "Add", "Mul", "Sub"])), pair, shape)
    return activation(m, y) if rng.integers(2) else y


def pool(m, x):
    rng = m.rng
    n, c, h, w = m.shapes[x]
    choice = rng.integers(4)
    if choice == 0:
        return m.op("GlobalAveragePool", [x], (n, c, 1, 1))
    if choice == 3:
        return m.op("GlobalMaxPool", [x], (n, c, 1, 1))
    kernel = int(rng.choice([2, 3]))
    stride = int(rng.choice([1, 2]))
    pads = [int(rng.integers(0, kernel // 2 + 1))] * 4
    oh = conv_out(h, kernel, stride, pads[0], pads[2], 1)
    ow = conv_out(w, kernel, stride, pads[1], pads[3], 1)
    if oh < 1 or ow < 1:
        return None
    attrs = dict(kernel_shape=[kernel, kernel], strides=[stride, stride],
                 pads=pads)
    if choice == 1:
        return m.op("MaxPool", [x], (n, c, oh, ow), **attrs)
    return m.op("AveragePool", [x], (n, c, oh, ow),
                count_include_pad=int(rng.integers(2)), **attrs)


def concat(m, x):
    n, c, h, w = m.shapes[x]
    other = m.same_plane(x)
    order = [x, other] if m.rng.integers(2) else [other, x]
    return m.op("Concat", order,
                (n, c + m.shapes[other][1], h, w), axis=1)


def head(m, x):
    rng = m.rng
    n, c, h, w = m.shapes[x]
    if h * w > 1:
        x = m.op("GlobalAveragePool", [x], (n, c, 1, 1))
    flat = m.op("Flatten", [x], (n, c), axis=1)
    classes = int(rng.choice([5, 10, 16]))
    if rng.integers(2):
        trans_b = int(rng.integers(2))
        w_shape = (classes, c) if trans_b else (c, classes)
        inputs = [flat, m.const(weights(rng, *w_shape))]
        if rng.integers(4):
            inputs.append(m.const(weights(rng, classes, scale=0.5)))
        y = m.op("Gemm", inputs, (n, classes), transB=trans_b,
                 alpha=float(rng.choice([1.0, 1.0, 0.5])))
    else:
        y = m.op("MatMul", [flat, m.const(weights(rng, c, classes))],
                 (n, classes))
        if rng.integers(3):
            bias = m.const(weights(rng, classes, scale=0.5))
            pair = [y, bias] if rng.integers(2) else [bias, y]
            y = m.op("Add", pair, (n, classes))
    if rng.integers(2):
        y = activation(m, y)
    if rng.integers(2):
        y = m.op("Softmax", [y], (n, classes), axis=-1)
    return y


def layout_round_trip(m, x):
    n, c, h, w = m.shapes[x]
    t = m.op("Transpose", [x], (n, h, w, c), perm=[0, 2, 3, 1])
    if m.rng.integers(2):
        t = activation(m, t)
    return m.op("Transpose", [t], (n, c, h, w), perm=[0, 3, 1, 2])


def squeeze_excite(m, x):
    """MobileNetV3's and EfficientNet's gate: pooled, two 1 x 1 convolutions,
    a sigmoid, and the feature map scaled by it (a [N, C, 1, 1] tensor times
    a [N, C, H, W] one, both from convolutions)."""
    rng = m.rng
    n, c, h, w = m.shapes[x]
    if rng.integers(3) == 0:
        pooled = m.op("ReduceMean", [x], (n, c, 1, 1), axes=[2, 3],
                      keepdims=1)
    else:
        pooled = m.op("GlobalAveragePool", [x], (n, c, 1, 1))
    mid = max(c // 4, 1)
    squeezed = m.op("Conv", [pooled, m.const(weights(rng, mid, c, 1, 1)),
                             m.const(weights(rng, mid, scale=0.3))],
                    (n, mid, 1, 1), kernel_shape=[1, 1])
    squeezed = m.op("Relu", [squeezed], (n, mid, 1, 1))
    gate = m.op("Conv", [squeezed, m.const(weights(rng, c, mid, 1, 1))],
                (n, c, 1, 1), kernel_shape=[1, 1])
    gate = m.op(str(rng.choice(["Sigmoid", "HardSigmoid"])), [gate],
                (n, c, 1, 1))
    pair = [x, gate] if rng.integers(2) else [gate, x]
    return m.op("Mul", pair, (n, c, h, w))


def channel_op(m, x):
    """An op whose meaning depends on the layout, after whatever made x:
    the channels-last pass must hand it NCHW."""
    rng = m.rng
    n, c, h, w = m.shapes[x]
    choice = rng.integers(12)
    if choice == 0:
        return m.op("Softmax", [x], (n, c, h, w), axis=1)
    if choice == 1:
        return m.op("ReduceMean", [x], (n, 1, h, w), axes=[1], keepdims=1)
    if choice == 2 and c >= 2:
        first = c // 2
        parts = m.op("Split", [x, m.const(np.array([first, c - first],
                                                   np.int64))],
                     outputs=2, axis=1)
        m.shapes[parts[0]], m.kinds[parts[0]] = (n, first, h, w), "float"
        m.shapes[parts[1]], m.kinds[parts[1]] = (n, c - first, h, w), "float"
        return parts[int(rng.integers(2))]
    if choice == 3 and h >= 2:
        return m.op("Slice", [x, m.const(np.array([1], np.int64)),
                              m.const(np.array([h], np.int64)),
                              m.const(np.array([2], np.int64))],
                    (n, c, h - 1, w))
    if choice == 4:
        return m.op("Pad", [x, m.const(np.array([0, 0, 1, 2, 0, 0, 2, 1],
                                                np.int64))],
                    (n, c, h + 3, w + 3), mode="constant")
    if choice == 5:
        return m.op("Resize", [x, "", m.const(np.array([1, 1, 2, 2],
                                                       np.float32))],
                    (n, c, 2 * h, 2 * w),
                    mode=str(rng.choice(["nearest", "linear"])))
    if choice == 6:
        return m.op("Flatten", [x], (n, c * h * w), axis=1)
    if choice == 7 and h % 2 == 0 and w % 2 == 0:
        return m.op("SpaceToDepth", [x], (n, 4 * c, h // 2, w // 2),
                    blocksize=2)
    if choice == 8:
        return m.op("InstanceNormalization",
                    [x, m.const(rng.uniform(0.5, 1.5, c).astype(np.float32)),
                     m.const(weights(rng, c, scale=0.3))], (n, c, h, w))
    if choice == 9:
        return m.op("PRelu", [x, m.const(rng.uniform(
            0, 0.3, (c, 1, 1)).astype(np.float32))], (n, c, h, w))
    if choice == 10:
        return conv_transpose(m, x)
    return m.op("Concat", [x, x], (n, c, 2 * h, w), axis=2)


def conv_transpose(m, x):
    """ConvTranspose as decoders and FPNs write it (2 x 2 stride 2), or with
    any kernel, stride, dilation, padding, output_padding and group."""
    rng = m.rng
    n, c, h, w = m.shapes[x]
    if rng.integers(2):
        kernel, stride, dilation = [2, 2], [2, 2], [1, 1]
        pads, extra, group = [0, 0, 0, 0], [0, 0], 1
    else:
        kernel = [int(v) for v in rng.choice([1, 2, 3, 4, 5], 2)]
        stride = [int(v) for v in rng.choice([1, 2, 3], 2)]
        dilation = [int(v) for v in rng.choice([1, 1, 2], 2)]
        pads = [int(rng.integers(0, kernel[i % 2])) for i in range(4)]
        extra = [int(rng.integers(0, max(stride[i], dilation[i])))
                 for i in range(2)]
        group = int(rng.choice([1, 1, c])) if c > 1 else 1
    per_group = int(rng.choice([1, 2, 4]))
    out_c = group * per_group
    size = [(d - 1) * st + e + dl * (k - 1) + 1
            for d, st, e, dl, k in zip((h, w), stride, extra, dilation,
                                       kernel)]
    out = [size[i] - pads[i] - pads[i + 2] for i in range(2)]
    if min(out) < 1:
        return None
    attrs = dict(kernel_shape=kernel, strides=stride, pads=pads,
                 group=group)
    if max(dilation) > 1:
        attrs["dilations"] = dilation
    if max(extra) > 0:
        attrs["output_padding"] = extra
    inputs = [x, m.const(weights(rng, c, per_group, *kernel))]
    if rng.integers(2):
        inputs.append(m.const(weights(rng, out_c, scale=0.5)))
    return m.op("ConvTranspose", inputs, (n, out_c, *out), **attrs)


def cnn_model(rng):
    m = Model(rng)
    shape = (int(rng.choice([1, 1, 2, 3])), int(rng.choice([1, 3, 4, 8, 16])),
             int(rng.integers(5, 21)), int(rng.integers(5, 21)))
    m.input(shape)
    if rng.integers(4) == 0:
        m.input(shape)
    for _ in range(int(rng.integers(2, 9))):
        step = rng.choice([conv, conv, conv, residual, residual, pool, concat,
                           layout_round_trip, quantized_conv, quantized_conv,
                           quantized_binary, quantized_reshaping,
                           squeeze_excite, channel_op])
        y = step(m, m.pick(4, prefer_quantized=step in QUANTIZED_PIECES))
        if y is not None and rng.integers(6) == 0:
            m.mark_output(y)
    if rng.integers(2):
        m.mark_output(head(m, m.pick(4)))
    m.mark_leaves()
    return m


# --- quantized pieces (static QDQ and dynamic) -------------------------------


def quantize_pair(m, x, after_relu=False):
    """Q then DQ of x, as the QDQ form writes an activation: uint8 with a
    zero point near the middle, or one time in four int8; after a Relu,
    as calibration makes it, mostly uint8 with zero point 0."""
    rng = m.rng
    scale = float(rng.uniform(0.01, 0.08))
    if after_relu and rng.integers(5):
        zero = np.uint8(0)
    elif rng.integers(4) == 0:
        zero = np.int8(rng.integers(-20, 21))
    else:
        zero = np.uint8(rng.choice([0, 128, int(rng.integers(100, 156))]))
    s, z = m.const(np.float32(scale)), m.const(zero)
    shape = m.shapes[x]
    q = m.op("QuantizeLinear", [x, s, z], shape, kind="integer")
    dq = m.op("DequantizeLinear", [q, s, z], shape, kind="quantized")
    m.scales[dq] = np.float32(scale)
    return dq


def dequantized(m, x):
    """x as a DequantizeLinear output: itself when it is one already (a
    chain of quantized layers), else x through a new Q/DQ pair."""
    return x if m.kinds[x] == "quantized" else quantize_pair(m, x)


def quantized_weight(m, w_float, axis):
    """DequantizeLinear of int8 weights: per channel along axis or per
    tensor, the zero point 0 or, one time in five per tensor, not."""
    rng = m.rng
    if rng.integers(2):
        other = tuple(i for i in range(w_float.ndim) if i != axis)
        w_scale = (np.abs(w_float).max(axis=other) / 127 + 1e-6).astype(
            np.float32)
        shape = [1] * w_float.ndim
        shape[axis] = -1
        w_q = np.clip(np.round(w_float / w_scale.reshape(shape)), -127,
                      127).astype(np.int8)
        zero = np.zeros(w_scale.shape, np.int8)
        dq = m.op("DequantizeLinear", [m.const(w_q), m.const(w_scale),
                                       m.const(zero)], w_float.shape,
                  axis=axis, kind="weight")
        m.scales[dq] = w_scale
        return dq
    w_scale = np.float32(np.abs(w_float).max() / 120 + 1e-6)
    zero = np.int8(rng.integers(-5, 6) if rng.integers(5) == 0 else 0)
    w_q = np.clip(np.round(w_float / w_scale) + zero, -128, 127).astype(
        np.int8)
    dq = m.op("DequantizeLinear", [m.const(w_q), m.const(w_scale),
                                   m.const(zero)], w_float.shape,
              kind="weight")
    m.scales[dq] = w_scale
    return dq


def quantized_bias(m, dq_x, dq_w, count):
    """An int32 bias through DequantizeLinear at the scale the QDQ form
    gives it, x's scale times the weights'; one time in five another, which
    the integer kernels cannot take."""
    rng = m.rng
    if dq_x in m.scales and rng.integers(5):
        scale = np.broadcast_to(m.scales[dq_x] * m.scales[dq_w],
                                (count,)).astype(np.float32)
    else:
        scale = (np.full(count, 1e-4) * rng.uniform(1, 20, count)).astype(
            np.float32)
    b_q = rng.integers(-2000, 2000, count).astype(np.int32)
    return m.op("DequantizeLinear", [m.const(b_q), m.const(scale),
                                     m.const(np.zeros(count, np.int32))],
                (count,), axis=0)


def quantized_conv(m, x):
    rng = m.rng
    n, c, h, w = m.shapes[x]
    kernel = int(rng.choice([1, 3, 3, 5, 7]))
    stride = int(rng.choice([1, 2]))
    out_c = int(rng.choice([4, 8, 16, 32, 64]))
    depthwise = rng.integers(4) == 0
    group = c if depthwise else 1
    if depthwise:
        out_c = c
    pad = kernel // 2 if rng.integers(4) else 0
    oh = conv_out(h, kernel, stride, pad, pad, 1)
    ow = conv_out(w, kernel, stride, pad, pad, 1)
    if oh < 1 or ow < 1:
        return None
    dq_x = dequantized(m, x)
    dq_w = quantized_weight(
        m, weights(rng, out_c, c // group, kernel, kernel), axis=0)
    inputs = [dq_x, dq_w]
    if rng.integers(3):
        inputs.append(quantized_bias(m, dq_x, dq_w, out_c))
    y = m.op("Conv", inputs, (n, out_c, oh, ow), kernel_shape=[kernel, kernel],
             strides=[stride, stride], pads=[pad] * 4, group=group)
    relu = rng.integers(2)
    if relu:
        y = m.op("Relu", [y], m.shapes[y])
    elif rng.integers(3) == 0:
        y = m.op("Clip", [y, m.const(np.float32(0)), m.const(np.float32(6))],
                 m.shapes[y])
    return quantize_pair(m, y, after_relu=relu)


def quantized_binary(m, x):
    """QLinearAdd's pattern: two dequantized tensors -> Add or Mul [-> Relu]
    -> Q/DQ; the second a same-shaped tensor or, where none, x again."""
    rng = m.rng
    shape = m.shapes[x]
    other = m.same_shape(x) or x
    pair = [dequantized(m, x), dequantized(m, other)]
    y = m.op(str(rng.choice(["Add", "Add", "Mul"])), pair, shape)
    relu = rng.integers(3) == 0
    if relu:
        y = m.op("Relu", [y], shape)
    return quantize_pair(m, y, after_relu=relu)


def quantized_reshaping(m, x):
    """A shape-only op or a pool between DQ and Q, which qdq-fusion moves the
    pair through or runs on integers."""
    rng = m.rng
    n, c, h, w = m.shapes[x]
    dq_x = dequantized(m, x)
    choice = rng.integers(5)
    if choice == 0:
        y = m.op("MaxPool", [dq_x], (n, c, (h - 2) // 2 + 1, (w - 2) // 2 + 1),
                 kernel_shape=[2, 2], strides=[2, 2]) if h >= 2 and w >= 2 \
            else m.op("GlobalMaxPool", [dq_x], (n, c, 1, 1))
    elif choice == 1:
        y = m.op("GlobalAveragePool", [dq_x], (n, c, 1, 1))
    elif choice == 2:
        y = m.op("AveragePool", [dq_x], (n, c, h, w), kernel_shape=[3, 3],
                 pads=[1, 1, 1, 1], count_include_pad=int(rng.integers(2)))
    elif choice == 3:
        y = m.op("Transpose", [dq_x], (n, c, w, h), perm=[0, 1, 3, 2])
    else:
        other = m.same_plane(x)
        y = m.op("Concat", [dq_x, dequantized(m, other)],
                 (n, c + m.shapes[other][1], h, w), axis=1)
    if rng.integers(3) == 0:  # The same scale and zero point as the input's.
        return y
    return quantize_pair(m, y)


def quantized_linear(m, x):
    """The QDQ form of a MatMul or Gemm with constant int8 weights (per
    column along axis 1, or per tensor)."""
    rng = m.rng
    shape = m.shapes[x]
    d_out = int(rng.choice([8, 16, 32]))
    dq_x = dequantized(m, x)
    dq_w = quantized_weight(m, weights(rng, shape[-1], d_out), axis=1)
    out_shape = shape[:-1] + (d_out,)
    if len(shape) == 2 and rng.integers(2):
        inputs = [dq_x, dq_w]
        if rng.integers(2):
            inputs.append(quantized_bias(m, dq_x, dq_w, d_out))
        y = m.op("Gemm", inputs, out_shape)
    else:
        y = m.op("MatMul", [dq_x, dq_w], out_shape)
        if rng.integers(2):
            y = m.op("Add", [y, quantized_bias(m, dq_x, dq_w, d_out)],
                     out_shape)
    relu = rng.integers(3) == 0
    if relu:
        y = m.op("Relu", [y], out_shape)
    if rng.integers(4) == 0:  # A float output, as a classifier's last layer.
        return y
    return quantize_pair(m, y, after_relu=relu)


def dynamic_linear(m, x):
    """quantize_dynamic's MatMul: DynamicQuantizeLinear, MatMulInteger with
    int8 weights, Cast, Mul by the two scales [, Add bias]."""
    rng = m.rng
    shape = m.shapes[x]
    d_in, d_out = shape[-1], int(rng.choice([8, 16, 32, 48]))
    w_float = weights(rng, d_in, d_out)
    w_scale = np.float32(np.abs(w_float).max() / 127 + 1e-6)
    w_q = np.clip(np.round(w_float / w_scale), -127, 127).astype(np.int8)
    q, s, z = m.op("DynamicQuantizeLinear", [x], outputs=3)
    m.kinds[q] = "integer"
    out_shape = shape[:-1] + (d_out,)
    sums = m.op("MatMulInteger", [q, m.const(w_q), z,
                                  m.const(np.int8(0))], out_shape,
                kind="int32")
    as_float = m.op("Cast", [sums], out_shape, to=TensorProto.FLOAT)
    both = m.op("Mul", [s, m.const(w_scale)], ())
    y = m.op("Mul", [as_float, both], out_shape)
    if rng.integers(2):
        y = m.op("Add", [y, m.const(weights(rng, d_out, scale=0.5))],
                 out_shape)
    return y


# --- transformer pieces ------------------------------------------------------


def linear(m, x):
    rng = m.rng
    shape = m.shapes[x]
    d_out = int(rng.choice([shape[-1], 16, 32, 64]))
    y = m.op("MatMul", [x, m.const(weights(rng, shape[-1], d_out))],
             shape[:-1] + (d_out,))
    if rng.integers(4):
        bias = m.const(weights(rng, d_out, scale=0.5))
        pair = [y, bias] if rng.integers(3) else [bias, y]
        y = m.op("Add", pair, m.shapes[y])
    if rng.integers(2):
        y = activation(m, y)
    return y


def layer_norm_written_out(m, x):
    rng, shape = m.rng, m.shapes[x]
    d = shape[-1]
    if rng.integers(4) == 0:
        return m.op("LayerNormalization",
                    [x, m.const(rng.uniform(0.5, 1.5, d).astype(np.float32)),
                     m.const(weights(rng, d, scale=0.3))], shape, axis=-1,
                    epsilon=1e-5)
    # One time in three a near miss that layernorm-recognition must leave
    # alone: statistics over another axis, a cube, or epsilon after the
    # square root.
    miss = int(rng.integers(6))
    axis = 1 if miss == 0 else len(shape) - 1
    mean_shape = tuple(1 if i == axis else v for i, v in enumerate(shape))
    mean = m.op("ReduceMean", [x], mean_shape, axes=[axis])
    centred = m.op("Sub", [x, mean], shape)
    power = np.float32(3 if miss == 1 else 2)
    squared = m.op("Pow", [centred, m.const(power)], shape)
    var = m.op("ReduceMean", [squared], mean_shape, axes=[axis])
    if miss == 1:
        var = m.op("Abs", [var], mean_shape)
    if miss != 2:
        var = m.op("Add", [var, m.const(np.float32(1e-5))], mean_shape)
    std = m.op("Sqrt", [var], mean_shape)
    if miss == 2:  # Epsilon after the root: no NaN from a constant row.
        std = m.op("Add", [std, m.const(np.float32(1e-3))], mean_shape)
    normed = m.op("Div", [centred, std], shape)
    scaled = m.op("Mul", [normed, m.const(
        rng.uniform(0.5, 1.5, d).astype(np.float32))], shape)
    return m.op("Add", [scaled, m.const(weights(rng, d, scale=0.3))], shape)


def attention(m, x):
    rng = m.rng
    b, s, d = m.shapes[x]
    heads = [h for h in (1, 2, 4, 8) if d % h == 0 and d // h >= 2]
    h = int(rng.choice(heads))
    hd = d // h

    def project():
        y = m.op("MatMul", [x, m.const(weights(rng, d, d))], (b, s, d))
        if rng.integers(3):
            y = m.op("Add", [y, m.const(weights(rng, d, scale=0.3))],
                     (b, s, d))
        return y

    if rng.integers(3) == 0:
        qkv = m.op("MatMul", [x, m.const(weights(rng, d, 3 * d))],
                   (b, s, 3 * d))
        q, k, v = m.op("Split", [qkv, m.const(np.array([d, d, d],
                                                       np.int64))],
                       outputs=3, axis=-1)
        for t in (q, k, v):
            m.shapes[t], m.kinds[t] = (b, s, d), "float"
    else:
        q, k, v = project(), project(), project()
    # Exporters write the heads' shape with the batch and sequence given,
    # or as 0 (copy the input's).
    split = m.const(np.array([0, 0, h, hd] if rng.integers(4) == 0
                             else [b, s, h, hd], np.int64))
    qh = m.op("Transpose", [m.op("Reshape", [q, split], (b, s, h, hd))],
              (b, h, s, hd), perm=[0, 2, 1, 3])
    vh = m.op("Transpose", [m.op("Reshape", [v, split], (b, s, h, hd))],
              (b, h, s, hd), perm=[0, 2, 1, 3])
    kr = m.op("Reshape", [k, split], (b, s, h, hd))
    if rng.integers(2):
        kt = m.op("Transpose", [kr], (b, h, hd, s), perm=[0, 2, 3, 1])
    else:
        kh = m.op("Transpose", [kr], (b, h, s, hd), perm=[0, 2, 1, 3])
        kt = m.op("Transpose", [kh], (b, h, hd, s), perm=[0, 1, 3, 2])
    if rng.integers(6) == 0:  # The scale on Q, before the product.
        qh = m.op("Mul", [qh, m.const(np.float32(1 / math.sqrt(hd)))],
                  (b, h, s, hd))
    scores = m.op("MatMul", [qh, kt], (b, h, s, s))
    choice = rng.integers(3)
    if choice == 0:
        scores = m.op("Div", [scores, m.const(np.float32(math.sqrt(hd)))],
                      (b, h, s, s))
    elif choice == 1:
        scores = m.op("Mul", [scores, m.const(np.float32(1 / math.sqrt(hd)))],
                      (b, h, s, s))
    choice = rng.integers(6)
    if choice < 3:
        scores = m.op("Add", [scores, attention_mask(m, b, h, s)],
                      (b, h, s, s))
    elif choice == 3:
        scores = masked_fill(m, scores, (b, h, s, s))
    # Softmax over the queries' axis one time in eight: not attention.
    axis = 2 if rng.integers(8) == 0 else -1
    probs = m.op("Softmax", [scores], (b, h, s, s), axis=axis)
    if rng.integers(8) == 0:
        m.mark_output(probs)
    context = m.op("MatMul", [probs, vh], (b, h, s, hd))
    if rng.integers(8) == 0:  # Heads merged without the Transpose.
        merged = context
    else:
        merged = m.op("Transpose", [context], (b, s, h, hd),
                      perm=[0, 2, 1, 3])
    shape = np.array([b, s, d] if rng.integers(2) else [0, 0, d], np.int64)
    if merged == context:
        shape = np.array([b, s, d], np.int64)
    return m.op("Reshape", [merged, m.const(shape)], (b, s, d))


def masked_fill(m, scores, shape):
    """torch's masked_fill as it exports: Where(mask, fill, scores), the
    fill -inf (a row masked throughout is NaN after Softmax, in every
    runtime) or the float's lowest value."""
    rng = m.rng
    b, h, s, _ = shape
    mask_shape = [(b, 1, 1, s), (1, 1, s, s), (b, h, s, s)][rng.integers(3)]
    mask = m.const(rng.random(mask_shape) < 0.3)
    fill = np.float32(-np.inf if rng.integers(2) else np.finfo(np.float32).min)
    return m.op("Where", [mask, m.const(fill), scores], shape)


def attention_mask(m, b, h, s):
    """A mask to add to the scores: a constant of one of the shapes that
    broadcast, or BERT's (1 - mask) * -10000 from a fed [b, s] input."""
    rng = m.rng
    if rng.integers(3) == 0:
        fed = m.input((b, s))
        keep = m.op("Greater", [fed, m.const(np.float32(-0.8))], (b, s),
                    kind="bool")
        as_float = m.op("Cast", [keep], (b, s), to=TensorProto.FLOAT)
        inverted = m.op("Sub", [m.const(np.float32(1)), as_float], (b, s))
        big = m.op("Mul", [inverted, m.const(np.float32(-10000))], (b, s))
        return m.op("Reshape", [big, m.const(np.array([b, 1, 1, s],
                                                      np.int64))],
                    (b, 1, 1, s))
    shapes = [(b, 1, 1, s), (1, 1, s, s), (b, 1, s, s), (s,), (1, s),
              (b, h, s, s), (1, h, 1, s)]
    mask_shape = shapes[rng.integers(len(shapes))]
    # BERT's -10000, or -inf, as some exporters write it: a row masked
    # throughout is then NaN after Softmax, fused or not.
    masked = -np.inf if rng.integers(4) == 0 else -10000.0
    mask = np.where(rng.random(mask_shape) < 0.3, masked,
                    0.0).astype(np.float32)
    return m.const(mask)


VOCAB = 50


def embedding_input(m, shape):
    """BERT's start: token ids gathered from a table, plus position
    embeddings, then a LayerNorm."""
    rng = m.rng
    b, s, d = shape
    ids = m.input((b, s), dtype=np.int64)
    table = m.const(weights(rng, VOCAB, d, scale=1.0))
    tokens = m.op("Gather", [table, ids], (b, s, d))
    positions = m.const(weights(rng, s, d, scale=0.5))
    return layer_norm_written_out(m, m.op("Add", [tokens, positions],
                                          (b, s, d)))


def pooler(m, x):
    """The first token's row, a dense layer and Tanh (BERT's pooler)."""
    b, s, d = m.shapes[x]
    first = m.op("Gather", [x, m.const(np.int64(0))], (b, d), axis=1)
    dense = m.op("Gemm", [first, m.const(weights(m.rng, d, d)),
                          m.const(weights(m.rng, d, scale=0.3))], (b, d),
                 transB=1)
    return m.op("Tanh", [dense], (b, d))


def recurrent(m, x):
    """An LSTM, GRU or RNN over the sequence (one or both directions,
    time-major or batch-major, with or without bias, initial state and
    per-row lengths), its outputs brought back to [b, s, directions * H]."""
    rng = m.rng
    b, s, d = m.shapes[x]
    op = str(rng.choice(["LSTM", "GRU", "RNN"]))
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    hidden = int(rng.choice([4, 8, 16]))
    direction = str(rng.choice(["forward", "reverse", "bidirectional"]))
    dirs = 2 if direction == "bidirectional" else 1
    batch_major = bool(rng.integers(2))
    inputs = [x if batch_major else
              m.op("Transpose", [x], (s, b, d), perm=[1, 0, 2]),
              m.const(weights(rng, dirs, gates * hidden, d)),
              m.const(weights(rng, dirs, gates * hidden, hidden))]
    optional = []
    if rng.integers(2):
        optional.append((3, m.const(weights(rng, dirs, 2 * gates * hidden,
                                            scale=0.3))))
    if rng.integers(4) == 0:  # Rows of other lengths (padding after).
        lengths = rng.integers(1, s + 1, b).astype(np.int32)
        optional.append((4, m.const(lengths)))
    if rng.integers(3) == 0:
        state = (b, dirs, hidden) if batch_major else (dirs, b, hidden)
        optional.append((5, m.const(weights(rng, *state, scale=0.5))))
    if op == "LSTM" and rng.integers(3) == 0:  # Peepholes.
        optional.append((7, m.const(weights(rng, dirs, 3 * hidden,
                                            scale=0.5))))
    for index, name in optional:
        inputs += [""] * (index - len(inputs)) + [name]
    attrs = dict(hidden_size=hidden, direction=direction,
                 layout=int(batch_major))
    if rng.integers(5) == 0:
        attrs["clip"] = float(rng.uniform(0.5, 3))
    if op == "LSTM" and rng.integers(5) == 0:
        attrs["input_forget"] = 1
    if op == "GRU":
        attrs["linear_before_reset"] = int(rng.integers(2))
    y_shape = (b, s, dirs, hidden) if batch_major else (s, dirs, b, hidden)
    y = m.op(op, inputs, y_shape, **attrs)
    if not batch_major:
        y = m.op("Transpose", [y], (b, s, dirs, hidden), perm=[2, 0, 1, 3])
    return m.op("Reshape", [y, m.const(np.array([0, 0, -1], np.int64))],
                (b, s, dirs * hidden))


def sequence_residual(m, x):
    other = m.same_shape(x)
    if other is None:
        return None
    pair = [x, other] if m.rng.integers(2) else [other, x]
    return m.op("Add", pair, m.shapes[x])


def transformer_model(rng):
    m = Model(rng)
    d = int(rng.choice([8, 16, 32, 64]))
    shape = (int(rng.choice([1, 2, 3])), int(rng.integers(1, 13)), d)
    if rng.integers(3) == 0:
        embedding_input(m, shape)
    else:
        m.input(shape)
    for _ in range(int(rng.integers(2, 8))):
        step = rng.choice([linear, linear, layer_norm_written_out, attention,
                           attention, sequence_residual, dynamic_linear,
                           quantized_linear, recurrent])
        x = m.pick(3, prefer_quantized=step in QUANTIZED_PIECES)
        if step is attention and m.shapes[x][-1] < 2:
            continue
        y = step(m, x)
        if y is not None and rng.integers(6) == 0:
            m.mark_output(y)
    if rng.integers(3) == 0:
        pooler(m, m.pick(3))
    m.mark_leaves()
    return m


QUANTIZED_PIECES = (quantized_conv, quantized_binary, quantized_reshaping,
                    quantized_linear)


# --- running and comparing ---------------------------------------------------


def session(model_bytes, passes_on, inter=1, intra=1, disabled=(),
            batch_invariant=False):
    options = weft.SessionOptions()
    options.precision = PRECISION
    options.batch_invariant = batch_invariant
    options.inter_op_num_threads = inter
    options.intra_op_num_threads = intra
    if inter > 1:
        options.execution_mode = weft.ExecutionMode.ORT_PARALLEL
    if not passes_on:
        options.graph_optimization_level = \
            weft.GraphOptimizationLevel.ORT_DISABLE_ALL
    return weft.InferenceSession(model_bytes, options,
                                 disabled_optimizers=list(disabled))


def run(model_bytes, feeds, passes_on, **kwargs):
    try:
        return session(model_bytes, passes_on, **kwargs).run(None, feeds), None
    except Exception as error:  # noqa: BLE001 -- weft's errors, reported
        return None, f"{type(error).__name__}: {error}"


def disagreement(reference, candidate, step):
    """None when the outputs agree, else what differs. `step`: the largest
    quantisation step of the model's activations, 0 for a float model."""
    for index, (ref, got) in enumerate(zip(reference, candidate)):
        if ref.shape != got.shape:
            return f"output {index}: shape {got.shape}, expected {ref.shape}"
        if ref.size == 0:
            continue
        both_nan = np.isnan(ref) & np.isnan(got)
        finite = np.abs(ref[np.isfinite(ref)])
        scale = float(finite.max()) if finite.size else 0.0
        # Float passes reorder sums (folded BatchNorm, Winograd, channels-
        # last tiles); an integer kernel rounds once where the float graph
        # rounds at every node, so a quantized value may move by a step, and
        # a step early in a chain by a few steps of a later layer.
        # bf16 operands (about 3 significant digits) move a value before a
        # QuantizeLinear across more steps.
        wide = PRECISION != "fp32"
        tolerance = (max((0.1 if wide else 5e-2) * scale,
                         (4 if wide else 2) * step) if step
                     else (5e-2 if wide else 1e-4) * max(scale, 1e-3))
        bad = ~both_nan & ~(np.abs(ref - got) <= tolerance)
        if bad.any():
            return first_difference(index, bad, ref, got,
                                    f" (scale {scale:.3g})")
    return None


PASSES = ["identity-elimination", "qdq-fusion", "shape-folding",
          "constant-folding", "matmul-integer-fusion",
          "layernorm-recognition", "gelu-recognition", "batchnorm-folding",
          "matmul-scale-fusion", "attention-fusion", "matmul-add-to-gemm",
          "conv-residual-fusion", "activation-fusion", "nhwc-layout"]


def batch_variance(model_bytes, feeds):
    """With batch_invariant set, each row of a batch run alone gives bitwise
    the outputs of its rows in the batch (docs/serving.md). None when so,
    or when the model cannot run a row alone (a constant with the batch
    dimension, an output that is not per row); else what differs."""
    batch, error = run(model_bytes, feeds, True, intra=2,
                       batch_invariant=True)
    rows = {len(v) for v in feeds.values()}
    if error or len(rows) != 1 or rows.pop() < 2:
        return None
    for i in range(len(next(iter(feeds.values())))):
        alone, error = run(model_bytes, {k: v[i:i + 1] for k, v in
                                         feeds.items()}, True,
                           batch_invariant=True)
        if error:
            return None
        for index, (whole, one) in enumerate(zip(batch, alone)):
            if whole.shape[1:] != one.shape[1:] or len(one) != 1 \
                    or len(whole) != len(batch[0]):
                return None
            if whole[i:i + 1].tobytes() != one.tobytes():
                return (f"row {i} alone differs from its row in the batch "
                        f"in output {index}")
    return None


def culprit(model_bytes, feeds, reference, step):
    for name in PASSES:
        got, error = run(model_bytes, feeds, True, disabled=[name])
        if error is None and disagreement(reference, got, step) is None:
            return name
    return "no single pass"


def model_of(seed):
    """The seed's model as bytes, its feeds, the largest quantisation step
    of its activations (0 for a float model; 1/127 of the largest input
    value for quantize_dynamic's pieces), and whether its rows must keep
    their bits run alone."""
    rng = np.random.default_rng(seed)
    m = transformer_model(rng) if seed % 3 == 2 else cnn_model(rng)
    step = 0.0
    if any(k == "integer" for k in m.kinds.values()):
        step = max([float(np.max(v)) for name, v in m.scales.items()
                    if m.kinds[name] == "quantized"] + [4 / 127])
    # Rows of a batch can be run alone where the batch dimension is open;
    # DynamicQuantizeLinear quantizes on its whole input's range, so rows
    # share a scale (the server says such a model is not batch invariant).
    rows_apart = m.open_dims and not any(
        n.op_type == "DynamicQuantizeLinear" for n in m.nodes)
    return (m.proto().SerializeToString(),
            m.feeds(np.random.default_rng(seed + 1)), step, rows_apart)


def check(seed):
    """(status, detail, model bytes): status is ok, refused or failed."""
    model_bytes, feeds, step, rows_apart = model_of(seed)
    reference, ref_error = run(model_bytes, feeds, False)
    optimized, opt_error = run(model_bytes, feeds, True)
    if ref_error and opt_error:
        return "refused", ref_error, model_bytes
    if ref_error or opt_error:
        return "failed", (f"passes off: {ref_error or 'ran'}; "
                          f"passes on: {opt_error or 'ran'}"), model_bytes
    wrong = disagreement(reference, optimized, step)
    if wrong:
        return "failed", (f"{wrong}; the pass that makes it agree: "
                          f"{culprit(model_bytes, feeds, reference, step)}"
                          ), model_bytes
    for inter, intra in ((1, 2), (2, 2)):
        threaded, error = run(model_bytes, feeds, True, inter=inter,
                              intra=intra)
        differs = error or not_bitwise(optimized, threaded)
        if differs:
            return "failed", (f"at ({inter}, {intra}) against (1, 1): "
                              f"{differs}"), model_bytes
    if rows_apart:
        varies = batch_variance(model_bytes, feeds)
        if varies:
            return "failed", varies, model_bytes
    return "ok", "", model_bytes


def against_onnx_runtime(seeds, node_modules):
    """The seeds' models in ONNX Runtime (graph optimizations off) against
    weft with every pass on. Returns the (seed, what differs) pairs, and
    the seeds whose model ONNX Runtime refused (its CPU kernels refuse
    batch-major recurrent layers, layout = 1)."""
    found, refused = [], []
    models = {seed: model_of(seed) for seed in seeds}
    expected = run_in_onnx_runtime(
        {seed: (m[0], m[1]) for seed, m in models.items()}, node_modules)
    for seed, (model_bytes, feeds, step, _) in models.items():
        outputs, error = expected[seed]
        if error:
            refused.append(seed)
            continue
        got, weft_error = run(model_bytes, feeds, True)
        wrong = weft_error or disagreement(outputs, got, step)
        if wrong:
            found.append((seed, wrong))
    return found, refused


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="0:200",
                        help="FIRST:LAST, LAST excluded (default 0:200)")
    parser.add_argument("--save", help="write each failing model here")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--precision", default="fp32",
                        help="SessionOptions.precision (fp32 or bf16)")
    parser.add_argument("--ort", metavar="NODE_MODULES",
                        help="also compare with ONNX Runtime (npm "
                        "onnxruntime-node installed under NODE_MODULES)")
    args = parser.parse_args()
    global PRECISION
    PRECISION = args.precision
    first, last = (int(v) for v in args.seeds.split(":"))
    counts = {"ok": 0, "refused": 0, "failed": 0}
    for seed in range(first, last):
        status, detail, model_bytes = check(seed)
        counts[status] += 1
        if status == "failed" or (args.verbose and status == "refused"):
            print(f"seed {seed}: {status}: {detail}", flush=True)
        if status == "failed" and args.save:
            os.makedirs(args.save, exist_ok=True)
            with open(os.path.join(args.save, f"seed{seed}.onnx"), "wb") as f:
                f.write(model_bytes)
    print(f"{last - first} models: {counts['ok']} agree, "
          f"{counts['refused']} refused in both modes, "
          f"{counts['failed']} failed")
    # A model refused in both modes checks nothing; past 1% of them the
    # generator (or weft) has drifted and the run would pass on little.
    if counts["refused"] * 100 > last - first:
        print(f"more than 1% refused in both modes ({counts['refused']}): "
              "see --verbose")
        counts["failed"] += 1
    if args.ort:
        found, refused = against_onnx_runtime(range(first, last), args.ort)
        for seed, wrong in found:
            print(f"seed {seed}: against ONNX Runtime: {wrong}")
        print(f"against ONNX Runtime: "
              f"{last - first - len(found) - len(refused)} agree, "
              f"{len(found)} differ, {len(refused)} refused by it")
        counts["failed"] += len(found)
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
