"""Random nodes of ONNX Runtime's com.microsoft operators that weft reads
(ops_against_ort.py)."""
import numpy as np
from onnx import TensorProto

from case import (axis_in, broadcast_partner, conv_geometry, elem,
                  quantized_operand, shape, values)

def contrib(make):
    def wrapped(c):
        c.contrib = True
        make(c)
    return wrapped


def fused_matmul(c):
    m, k, n = (int(v) for v in c.rng.integers(1, 7, size=3))
    trans_a, trans_b = (int(v) for v in c.rng.integers(0, 2, size=2))
    batch = shape(c.rng, int(c.rng.integers(0, 2)))
    a = values(c.rng, batch + ((k, m) if trans_a else (m, k)), np.float32)
    b = values(c.rng, batch + ((n, k) if trans_b else (k, n)), np.float32)
    c.node("FusedMatMul", [c.operand(a), c.operand(b)], [TensorProto.FLOAT],
           transA=trans_a, transB=trans_b,
           alpha=float(c.rng.choice([1.0, 0.125, -2.0])))


def contrib_gelu(op_type):
    def make(c):
        dims = shape(c.rng, int(c.rng.integers(1, 4)))
        inputs = [c.operand(values(c.rng, dims, np.float32), False)]
        attrs = {}
        if op_type in ("FastGelu", "BiasGelu") and (
                op_type == "BiasGelu" or c.rng.random() < 0.5):
            inputs.append(c.operand(values(c.rng, dims[-1:], np.float32)))
        if op_type == "QuickGelu":
            attrs["alpha"] = float(c.rng.choice([1.702, 1.0]))
        c.node(op_type, inputs, [TensorProto.FLOAT], **attrs)
    return make


def skip_layer_norm(simplified):
    def make(c):
        b, s, h = (int(v) for v in c.rng.integers(1, 6, size=3))
        x = values(c.rng, (b, s, h), np.float32)
        inputs = [c.operand(x, False),
                  c.operand(values(c.rng, (b, s, h), np.float32), False),
                  c.operand(values(c.rng, (h,), np.float32))]
        if not simplified:
            inputs.append(c.operand(values(c.rng, (h,), np.float32))
                          if c.rng.random() < 0.7 else "")
        if c.rng.random() < 0.5:
            inputs.append(c.operand(values(c.rng, (h,), np.float32)))
        while inputs[-1] == "":
            inputs.pop()
        outputs = [TensorProto.FLOAT]
        if c.rng.random() < 0.4:
            outputs += [None, None, TensorProto.FLOAT]
        c.node("SkipSimplifiedLayerNormalization" if simplified else
               "SkipLayerNormalization", inputs, outputs,
               epsilon=float(c.rng.choice([1e-5, 1e-12])))
    return make


def bias_add(c):
    b, s, ch = (int(v) for v in c.rng.integers(1, 6, size=3))
    c.node("BiasAdd", [c.operand(values(c.rng, (b, s, ch), np.float32), False),
                       c.operand(values(c.rng, (ch,), np.float32)),
                       c.operand(values(c.rng, (b, s, ch), np.float32))],
           [TensorProto.FLOAT])


def qlinear_binary(op_type):
    def make(c):
        c.int_tolerance = 1
        dtype = c.rng.choice([np.uint8, np.int8])
        dims = shape(c.rng, int(c.rng.integers(1, 4)))
        a = quantized_operand(c, dims, dtype, False)
        b = quantized_operand(c, broadcast_partner(c.rng, dims), dtype)
        out = [c.operand(np.array(c.rng.uniform(0.02, 0.3), np.float32)),
               c.operand(np.array(c.rng.integers(-5, 5) + (
                   128 if dtype == np.uint8 else 0), dtype))]
        c.node(op_type, a + b + out, [elem(dtype)])
    return make


def qlinear_unary(op_type):
    def make(c):
        c.int_tolerance = 1
        dtype = c.rng.choice([np.uint8, np.int8])
        x = quantized_operand(c, shape(c.rng, int(c.rng.integers(1, 4))),
                              dtype, False)
        out = [c.operand(np.array(c.rng.uniform(0.002, 0.05), np.float32)),
               c.operand(np.array(c.rng.integers(0, 5) + (
                   0 if dtype == np.uint8 else -128), dtype))]
        attrs = {"alpha": float(c.rng.choice([0.1, 0.01]))} \
            if op_type == "QLinearLeakyRelu" else {}
        c.node(op_type, x + out, [elem(dtype)], **attrs)
    return make


def qlinear_global_pool(c):
    c.int_tolerance = 1
    dtype = c.rng.choice([np.uint8, np.int8])
    last = int(c.rng.integers(2))
    dims = (int(c.rng.integers(1, 3)), int(c.rng.integers(1, 5))) + shape(
        c.rng, 2)
    if last:
        dims = (dims[0],) + dims[2:] + (dims[1],)
    x = quantized_operand(c, dims, dtype, False)
    out = [c.operand(np.array(c.rng.uniform(0.01, 0.2), np.float32)),
           c.operand(np.array(c.rng.integers(-5, 5) + (
               128 if dtype == np.uint8 else 0), dtype))]
    c.node("QLinearGlobalAveragePool", x + out, [elem(dtype)],
           channels_last=last)


def qlinear_average_pool(c):
    c.int_tolerance = 1
    dtype = c.rng.choice([np.uint8, np.int8])
    kernel, _, _, attrs = conv_geometry(c, 2)
    attrs.pop("dilations", None)
    if "pads" in attrs:  # a pad must be smaller than its window
        attrs["pads"] = [min(p, kernel[i % 2] - 1)
                         for i, p in enumerate(attrs["pads"])]
    attrs["kernel_shape"] = list(kernel)
    attrs["count_include_pad"] = int(c.rng.integers(2))
    last = int(c.rng.integers(2))
    image = tuple(int(k + c.rng.integers(0, 5)) for k in kernel)
    channels = int(c.rng.integers(1, 4))
    dims = (1, channels) + image
    if last:
        dims = (1,) + image + (channels,)
    x = quantized_operand(c, dims, dtype, False)
    out = [c.operand(np.array(c.rng.uniform(0.01, 0.2), np.float32)),
           c.operand(np.array(c.rng.integers(-5, 5) + (
               128 if dtype == np.uint8 else 0), dtype))]
    c.node("QLinearAveragePool", x + out, [elem(dtype)], channels_last=last,
           **attrs)


def qlinear_concat(c):
    c.int_tolerance = 1
    dtype = c.rng.choice([np.uint8, np.int8])
    rank = int(c.rng.integers(1, 4))
    dims = list(shape(c.rng, rank))
    axis = axis_in(c.rng, rank)
    inputs = [c.operand(np.array(c.rng.uniform(0.02, 0.3), np.float32)),
              c.operand(np.array(c.rng.integers(-5, 5) + (
                  128 if dtype == np.uint8 else 0), dtype))]
    for _ in range(int(c.rng.integers(1, 4))):
        dims[axis] = int(c.rng.integers(1, 4))
        inputs += quantized_operand(c, dims, dtype)
    c.node("QLinearConcat", inputs, [elem(dtype)], axis=axis)


def dynamic_quantize_matmul(c):
    m, k, n = (int(v) for v in c.rng.integers(1, 9, size=3))
    b_type = c.rng.choice([np.int8, np.uint8])
    per_column = c.rng.random() < 0.5
    count = (n,) if per_column else ()
    inputs = [c.operand(values(c.rng, (m, k), np.float32), False),
              c.operand(values(c.rng, (k, n), b_type, low=-128, high=255)),
              c.operand(c.rng.uniform(0.01, 0.1, size=count).astype(
                  np.float32))]
    if c.rng.random() < 0.6:
        inputs.append(c.operand(values(c.rng, count, b_type, low=-3,
                                       high=9)))
    if c.rng.random() < 0.5:
        if len(inputs) == 3:
            inputs.append("")
        inputs.append(c.operand(values(c.rng, (n,), np.float32)))
    c.node("DynamicQuantizeMatMul", inputs, [TensorProto.FLOAT])


def matmul_integer_to_float(c):
    m, k, n = (int(v) for v in c.rng.integers(1, 9, size=3))
    a_type = c.rng.choice([np.uint8, np.int8])
    b_type = c.rng.choice([np.uint8, np.int8])
    per_column = c.rng.random() < 0.5
    count = (n,) if per_column else ()
    inputs = [c.operand(values(c.rng, (m, k), a_type, low=-128, high=255),
                        False),
              c.operand(values(c.rng, (k, n), b_type, low=-128, high=255)),
              c.operand(np.array(c.rng.uniform(0.01, 0.1), np.float32)),
              c.operand(c.rng.uniform(0.01, 0.1, size=count).astype(
                  np.float32))]
    extras = [values(c.rng, (), a_type, low=-3, high=9),
              values(c.rng, count, b_type, low=-3, high=9),
              values(c.rng, (n,), np.float32)]
    given = c.rng.random(3) < 0.6
    # weft refuses b_zero_point without a_zero_point (ONNX Runtime's
    # quantizer writes both): not drawn.
    given[0] |= given[1]
    for extra, present in zip(extras, given):
        inputs.append(c.operand(extra) if present else "")
    while inputs[-1] == "":
        inputs.pop()
    c.node("MatMulIntegerToFloat", inputs, [TensorProto.FLOAT])


def contrib_attention(c):
    b, s = int(c.rng.integers(1, 3)), int(c.rng.integers(1, 6))
    heads = int(c.rng.integers(1, 3))
    hidden = heads * int(c.rng.integers(1, 4))
    inputs = [c.operand(values(c.rng, (b, s, hidden), np.float32), False),
              c.operand(values(c.rng, (hidden, 3 * hidden), np.float32) / 2),
              c.operand(values(c.rng, (3 * hidden,), np.float32))]
    if c.rng.random() < 0.5:
        mask = (c.rng.random((b, s)) < 0.8).astype(np.int32)
        mask[:, 0] = 1
        inputs.append(c.operand(mask))
    attrs = {"num_heads": heads}
    if c.rng.random() < 0.3:
        attrs["unidirectional"] = 1
    if c.rng.random() < 0.3:
        attrs["scale"] = float(c.rng.choice([0.5, 0.1]))
    c.node("Attention", inputs, [TensorProto.FLOAT], **attrs)


def multi_head_attention(c):
    b, s, kv = (int(v) for v in c.rng.integers(1, 5, size=3))
    heads = int(c.rng.integers(1, 3))
    hidden = heads * int(c.rng.integers(1, 4))
    inputs = [c.operand(values(c.rng, (b, s, hidden), np.float32), False),
              c.operand(values(c.rng, (b, kv, hidden), np.float32)),
              c.operand(values(c.rng, (b, kv, hidden), np.float32))]
    if c.rng.random() < 0.5:
        inputs.append(c.operand(values(c.rng, (3 * hidden,), np.float32)))
    if c.rng.random() < 0.4:
        if len(inputs) == 3:
            inputs.append("")
        mask = (c.rng.random((b, kv)) < 0.8).astype(np.int32)
        mask[:, 0] = 1
        inputs.append(c.operand(mask))
    c.node("MultiHeadAttention", inputs, [TensorProto.FLOAT],
           num_heads=heads)


def fused_conv(c):
    spatial = 2
    kernel, _, dilations, attrs = conv_geometry(c, spatial)
    channels_in, channels_out = (int(v) for v in c.rng.integers(1, 4, size=2))
    image = tuple(int((k - 1) * d + 1 + c.rng.integers(0, 4))
                  for k, d in zip(kernel, dilations))
    inputs = [c.operand(values(c.rng, (1, channels_in) + image, np.float32),
                        False),
              c.operand(values(c.rng, (channels_out, channels_in) + kernel,
                               np.float32))]
    if c.rng.random() < 0.6:
        inputs.append(c.operand(values(c.rng, (channels_out,), np.float32)))
    activation_name = str(c.rng.choice(["Relu", "Tanh", "Sigmoid",
                                        "LeakyRelu", "Clip", "HardSigmoid"]))
    params = {"LeakyRelu": [0.1], "Clip": [-1.0, 1.5],
              "HardSigmoid": [0.2, 0.5]}.get(activation_name)
    if params:
        attrs["activation_params"] = params
    c.node("FusedConv", inputs, [TensorProto.FLOAT],
           activation=activation_name, **attrs)


def embed_layer_norm(c):
    b, s, hidden = (int(v) for v in c.rng.integers(1, 5, size=3))
    vocab, positions, segments = 7, s + 2, 2
    inputs = [c.operand(c.rng.integers(0, vocab, size=(b, s)).astype(
        np.int32), False)]
    with_segments = c.rng.random() < 0.6
    inputs.append(c.operand(c.rng.integers(0, segments, size=(b, s)).astype(
        np.int32), False) if with_segments else "")
    inputs += [c.operand(values(c.rng, (vocab, hidden), np.float32)),
               c.operand(values(c.rng, (positions, hidden), np.float32)),
               c.operand(values(c.rng, (segments, hidden), np.float32))
               if with_segments else "",
               c.operand(values(c.rng, (hidden,), np.float32)),
               c.operand(values(c.rng, (hidden,), np.float32))]
    outputs = [TensorProto.FLOAT]
    if c.rng.random() < 0.5:
        mask = (c.rng.random((b, s)) < 0.8).astype(np.int32)
        inputs.append(c.operand(mask))
        outputs.append(TensorProto.INT32)
    c.node("EmbedLayerNormalization", inputs, outputs,
           epsilon=float(c.rng.choice([1e-5, 1e-12])))


CONTRIB_OPERATORS = {
    "com.microsoft.FusedMatMul": contrib(fused_matmul),
    "com.microsoft.Gelu": contrib(contrib_gelu("Gelu")),
    "com.microsoft.FastGelu": contrib(contrib_gelu("FastGelu")),
    "com.microsoft.BiasGelu": contrib(contrib_gelu("BiasGelu")),
    "com.microsoft.QuickGelu": contrib(contrib_gelu("QuickGelu")),
    "com.microsoft.SkipLayerNormalization": contrib(skip_layer_norm(False)),
    "com.microsoft.SkipSimplifiedLayerNormalization": contrib(
        skip_layer_norm(True)),
    "com.microsoft.BiasAdd": contrib(bias_add),
    "com.microsoft.QLinearAdd": contrib(qlinear_binary("QLinearAdd")),
    "com.microsoft.QLinearMul": contrib(qlinear_binary("QLinearMul")),
    "com.microsoft.QLinearSigmoid": contrib(qlinear_unary("QLinearSigmoid")),
    "com.microsoft.QLinearLeakyRelu": contrib(
        qlinear_unary("QLinearLeakyRelu")),
    "com.microsoft.QLinearGlobalAveragePool": contrib(qlinear_global_pool),
    "com.microsoft.QLinearConcat": contrib(qlinear_concat),
    "com.microsoft.QLinearAveragePool": contrib(qlinear_average_pool),
    "com.microsoft.DynamicQuantizeMatMul": contrib(dynamic_quantize_matmul),
    "com.microsoft.MatMulIntegerToFloat": contrib(matmul_integer_to_float),
    "com.microsoft.Attention": contrib(contrib_attention),
    "com.microsoft.MultiHeadAttention": contrib(multi_head_attention),
    "com.microsoft.FusedConv": contrib(fused_conv),
    "com.microsoft.EmbedLayerNormalization": contrib(embed_layer_norm),
}
