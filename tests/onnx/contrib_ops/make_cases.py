#!/usr/bin/python3
"""ONNX test cases of the com.microsoft ops weft expands at load
(src/io/onnx/contrib_ops.h; docs/onnx.md, "ONNX Runtime's com.microsoft
ops"): the QOperator form of quantized models and the transformer
optimizer's fusions (BERT's embedding, attention with every mask form, a
whole layer), each against ONNX Runtime's own kernels. Attention without
its bias input is left out: ONNX Runtime 1.30 crashes on it (a
segmentation fault; weft's output is within 2e-6 of NumPy's). Written by
../onnx_cases.py's two steps (../regenerate_cases.sh contrib_ops runs them
around ONNX Runtime).

Where ONNX Runtime has no CPU kernel (BiasAdd, QLinearReduceMean), where
its quantized ops round a value one step away from their definition
(dequantize, compute in float, quantize: its QLinearMul multiplies the
integers first, its average pools round a tie away), or where its FastGelu
loses digits in the tail (-9.955e-05 for -9.985e-05 at x = -3.925), the
expected outputs are the definition computed in NumPy, in float64 where
float32 would round the tie itself.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
from onnx import TensorProto, helper  # noqa: E402
from onnx_cases import RNG, case, floats, graph_case, main  # noqa: E402

MS = "com.microsoft"
SCALE = np.float32
# EmbedLayerNormalization's outputs: the normalized sum, mask_index, the sum.
EMBEDDED = [TensorProto.FLOAT, TensorProto.INT32, TensorProto.FLOAT]


def u8(*shape):
    return RNG.integers(0, 256, shape).astype(np.uint8)


def i8(*shape):
    return RNG.integers(-128, 128, shape).astype(np.int8)


def dequantize(x, scale, zero):
    return (x.astype(np.float32) - np.float32(zero)) * np.float32(scale)


def quantize(y, scale, zero):
    info = np.iinfo(zero.dtype)
    q = np.rint(y / np.float64(scale)) + np.float64(zero)
    return np.clip(q, info.min, info.max).astype(zero.dtype)


def tanh_gelu(x):
    """Gelu's tanh approximation, in float64."""
    x = x.astype(np.float64)
    inner = np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)
    return (0.5 * x * (1 + np.tanh(inner))).astype(np.float32)


def average_pool(x, kernel, pads, strides):
    """AveragePool of NCHW `x` without counting the padding."""
    n, c, h, w = x.shape
    out_h = (h + pads[0] + pads[2] - kernel[0]) // strides[0] + 1
    out_w = (w + pads[1] + pads[3] - kernel[1]) // strides[1] + 1
    y = np.zeros((n, c, out_h, out_w), np.float64)
    for i in range(out_h):
        for j in range(out_w):
            top, left = i * strides[0] - pads[0], j * strides[1] - pads[1]
            window = x[:, :, max(top, 0):top + kernel[0],
                       max(left, 0):left + kernel[1]]
            y[:, :, i, j] = window.mean(axis=(2, 3))
    return y


def transformer_cases():
    for opset in (13, 17, 18):
        x, skip, hidden = floats(2, 3, 8), floats(2, 3, 8), 8
        case(f"Gelu_opset{opset}", "Gelu", {"x": floats(2, 5)}, opset=opset,
             domain=MS)
        case(f"BiasGelu_opset{opset}", "BiasGelu", {"x": x},
             consts={"bias": floats(hidden)}, opset=opset, domain=MS)
        case(f"FastGelu_opset{opset}", "FastGelu", {"x": x},
             consts={"bias": floats(hidden)}, opset=opset, domain=MS,
             reference=lambda i, c: [tanh_gelu(i["x"] + c["bias"])])
        case(f"QuickGelu_opset{opset}", "QuickGelu", {"x": floats(2, 7)},
             {"alpha": 1.5}, opset=opset, domain=MS)
        case(f"BiasAdd_opset{opset}", "BiasAdd", {"x": x, "skip": skip},
             consts={"bias": floats(hidden)}, order=["x", "bias", "skip"],
             opset=opset, domain=MS,
             reference=lambda i, c: [i["x"] + c["bias"] + i["skip"]])
        case(f"SkipLayerNormalization_opset{opset}", "SkipLayerNormalization",
             {"x": x, "skip": skip}, {"epsilon": 1e-5},
             {"gamma": floats(hidden), "beta": floats(hidden),
              "bias": floats(hidden)}, outputs=4, opset=opset, domain=MS)
        case(f"SkipSimplifiedLayerNormalization_opset{opset}",
             "SkipSimplifiedLayerNormalization", {"x": x, "skip": skip},
             {"epsilon": 1e-6},
             {"gamma": floats(hidden), "bias": floats(hidden)},
             output_names=["y0", "", "y2", "y3"], opset=opset, domain=MS)
    case("FastGelu_no_bias", "FastGelu", {"x": floats(3, 8)}, domain=MS,
         reference=lambda i, c: [tanh_gelu(i["x"])])
    case("QuickGelu_default_alpha", "QuickGelu", {"x": floats(9)}, domain=MS)
    case("SkipLayerNormalization_no_beta_no_bias", "SkipLayerNormalization",
         {"x": floats(1, 4, 6), "skip": floats(1, 4, 6)}, {},
         {"gamma": floats(6)}, domain=MS)
    for trans_a in (0, 1):
        for trans_b in (0, 1):
            a = floats(2, 4, 5) if trans_a else floats(2, 5, 4)
            b = floats(3, 4) if trans_b else floats(4, 3)
            case(f"FusedMatMul_transA{trans_a}_transB{trans_b}",
                 "FusedMatMul", {"a": a, "b": b},
                 {"alpha": 0.5, "transA": trans_a, "transB": trans_b},
                 domain=MS)
            case(f"FusedGemm_transA{trans_a}_transB{trans_b}", "FusedGemm",
                 {"a": floats(4, 3) if trans_a else floats(3, 4),
                  "b": floats(5, 4) if trans_b else floats(4, 5)},
                 {"transA": trans_a, "transB": trans_b, "alpha": 0.7,
                  "beta": 2.0, "activation": "LeakyRelu",
                  "activation_alpha": 0.2}, {"c": floats(5)}, domain=MS)
    conv = {"w": floats(4, 3, 3, 3), "b": floats(4)}
    case("FusedConv_Relu", "FusedConv", {"x": floats(1, 3, 6, 6)},
         {"activation": "Relu", "pads": [1, 1, 1, 1]}, conv, domain=MS)
    case("FusedConv_Clip_with_sum", "FusedConv",
         {"x": floats(1, 3, 6, 6), "z": floats(1, 4, 6, 6)},
         {"activation": "Clip", "activation_params": [-0.5, 0.5],
          "pads": [1, 1, 1, 1]}, conv, order=["x", "w", "b", "z"],
         domain=MS)
    case("FusedConv_HardSigmoid", "FusedConv", {"x": floats(1, 3, 6, 6)},
         {"activation": "HardSigmoid", "activation_params": [0.3, 0.4],
          "strides": [2, 2]}, {"w": floats(4, 3, 3, 3)}, domain=MS)


def attention_cases():
    batch, sequence, hidden, heads = 2, 5, 12, 3
    masks = {
        "raw_2d": np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32),
        "raw_3d": (RNG.random((batch, sequence, sequence)) > 0.3).astype(
            np.int32),
        "lengths": np.array([3, 5], np.int32),
        "ends_and_starts": np.array([5, 4, 1, 0], np.int32),
    }
    for opset in (12, 17, 18):
        for mask_name in [None] + list(masks):
            for unidirectional in (0, 1):
                inputs = {"x": floats(batch, sequence, hidden)}
                order = ["x", "weights", "bias"]
                if mask_name:
                    inputs["mask_index"] = masks[mask_name]
                    order.append("mask_index")
                case(f"Attention_{mask_name or 'no_mask'}_unidirectional"
                     f"{unidirectional}_opset{opset}", "Attention", inputs,
                     {"num_heads": heads, "unidirectional": unidirectional},
                     {"weights": floats(hidden, 3 * hidden) * 0.3,
                      "bias": floats(3 * hidden)},
                     order=order, opset=opset, domain=MS)
    case("Attention_qkv_hidden_sizes", "Attention",
         {"x": floats(batch, sequence, hidden)},
         {"num_heads": heads, "qkv_hidden_sizes": [hidden, hidden, 6]},
         {"weights": floats(hidden, 2 * hidden + 6),
          "bias": floats(2 * hidden + 6)}, domain=MS)
    case("Attention_attention_bias_and_scale", "Attention",
         {"x": floats(batch, sequence, hidden),
          "attention_bias": floats(1, heads, sequence, sequence)},
         {"num_heads": heads, "scale": 0.3},
         {"weights": floats(hidden, 3 * hidden), "bias": floats(3 * hidden)},
         order=["x", "weights", "bias", "", "", "attention_bias"],
         domain=MS)
    # MultiHeadAttention: separate query, key and value, keys longer than
    # queries (6 and 4) but where unidirectional, whose rule ONNX Runtime
    # applies to every query row but the last (docs/onnx.md).
    key_masks = {"raw": np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]],
                                 np.int32),
                 "lengths": np.array([4, 6], np.int32)}
    for mask_name in [None] + list(key_masks):
        for unidirectional in (0, 1):
            for with_bias in (0, 1):
                keys = sequence if unidirectional else sequence + 1
                inputs = {"query": floats(batch, sequence, hidden),
                          "key": floats(batch, keys, hidden),
                          "value": floats(batch, keys, 9)}
                order = ["query", "key", "value",
                         "bias" if with_bias else ""]
                if mask_name:
                    inputs["key_padding_mask"] = key_masks[mask_name][
                        :, :keys] if mask_name == "raw" else np.minimum(
                            key_masks[mask_name], keys).astype(np.int32)
                    order.append("key_padding_mask")
                case(f"MultiHeadAttention_{mask_name or 'no_mask'}_"
                     f"unidirectional{unidirectional}_bias{with_bias}",
                     "MultiHeadAttention", inputs,
                     {"num_heads": heads, "unidirectional": unidirectional},
                     {"bias": floats(2 * hidden + 9)} if with_bias else {},
                     order=order, domain=MS)
    case("MultiHeadAttention_attention_bias_and_scale", "MultiHeadAttention",
         {"query": floats(batch, sequence, hidden),
          "key": floats(batch, 6, hidden), "value": floats(batch, 6, hidden),
          "attention_bias": floats(1, heads, sequence, 6)},
         {"num_heads": heads, "scale": 0.2},
         order=["query", "key", "value", "", "", "attention_bias"],
         domain=MS)
    vocabulary = 20
    ids = RNG.integers(0, vocabulary, (batch, sequence)).astype(np.int32)
    embeddings = {"word": floats(vocabulary, hidden),
                  "position": floats(sequence + 3, hidden),
                  "segment": floats(2, hidden), "gamma": floats(hidden),
                  "beta": floats(hidden)}
    case("EmbedLayerNormalization_segments_and_mask",
         "EmbedLayerNormalization",
         {"ids": ids,
          "segments": RNG.integers(0, 2, (batch, sequence)).astype(np.int32),
          "mask": np.array([[1, 0, 1, 1, 0], [1, 1, 1, 1, 1]], np.int32)},
         {"epsilon": 1e-5}, embeddings,
         order=["ids", "segments", "word", "position", "segment", "gamma",
                "beta", "mask"], outputs=3, output_types=EMBEDDED, domain=MS)
    case("EmbedLayerNormalization_position_ids_no_mask",
         "EmbedLayerNormalization",
         {"ids": ids, "positions": np.array([[4, 3, 2, 1, 0]], np.int32)},
         {}, embeddings,
         order=["ids", "", "word", "position", "", "gamma", "beta", "",
                "positions"], outputs=3, output_types=EMBEDDED, domain=MS)
    # A BERT layer as the transformer optimizer writes it: Attention reads
    # the 1-D mask_index EmbedLayerNormalization makes.
    layer = dict(embeddings, weights=floats(hidden, 3 * hidden) * 0.3,
                 bias=floats(3 * hidden), projection=floats(hidden, hidden),
                 gamma2=floats(hidden), beta2=floats(hidden),
                 up=floats(hidden, 2 * hidden) * 0.3,
                 up_bias=floats(2 * hidden))
    nodes = [
        helper.make_node("EmbedLayerNormalization",
                         ["ids", "segments", "word", "position", "segment",
                          "gamma", "beta", "mask"], ["embedded", "mask_index"],
                         domain=MS),
        helper.make_node("Attention",
                         ["embedded", "weights", "bias", "mask_index"],
                         ["attended"], domain=MS, num_heads=heads),
        helper.make_node("MatMul", ["attended", "projection"], ["projected"]),
        helper.make_node("SkipLayerNormalization",
                         ["projected", "embedded", "gamma2", "beta2"],
                         ["normalized"], domain=MS),
        helper.make_node("MatMul", ["normalized", "up"], ["widened"]),
        # BiasGelu here: ONNX Runtime's FastGelu loses digits in the tail
        # (its own cases above take NumPy's values).
        helper.make_node("BiasGelu", ["widened", "up_bias"], ["y"],
                         domain=MS),
    ]
    for opset in (12, 17, 18):
        graph_case(f"bert_layer_opset{opset}", nodes,
                   {"ids": ids,
                    "segments": RNG.integers(0, 2, (batch, sequence)).astype(
                        np.int32),
                    "mask": np.array([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]],
                                     np.int32)},
                   layer, ["y", "mask_index"], opset=opset)


def unary_quantized(name, op, x, zero, attrs=None, y_scale=0.04,
                    reference=None):
    consts = {"x_scale": SCALE(0.05), "x_zero": zero(),
              "y_scale": SCALE(y_scale), "y_zero": zero()}
    case(name, op, {"x": x}, attrs, consts, domain=MS, reference=reference)


def quantized_cases():
    for dtype, values in ((np.uint8, u8), (np.int8, i8)):
        t = dtype.__name__

        def zero(dtype=dtype):
            info = np.iinfo(dtype)
            return dtype(RNG.integers(info.min, info.max + 1))

        for op, c_scale, f in (("QLinearAdd", 0.07, np.add),
                               ("QLinearMul", 0.2, np.multiply)):
            case(f"{op}_{t}_broadcast", op,
                 {"a": values(2, 3, 4), "b": values(4)},
                 consts={"a_scale": SCALE(0.05), "a_zero": zero(),
                         "b_scale": SCALE(0.03), "b_zero": zero(),
                         "c_scale": SCALE(c_scale), "c_zero": zero()},
                 order=["a", "a_scale", "a_zero", "b", "b_scale", "b_zero",
                        "c_scale", "c_zero"], domain=MS,
                 reference=lambda i, c, f=f: [quantize(
                     f(dequantize(i["a"], c["a_scale"], c["a_zero"]),
                       dequantize(i["b"], c["b_scale"], c["b_zero"])),
                     c["c_scale"], c["c_zero"])])
        unary_quantized(f"QLinearSigmoid_{t}", "QLinearSigmoid",
                        values(2, 9), zero, y_scale=1 / 256)
        unary_quantized(f"QLinearLeakyRelu_{t}", "QLinearLeakyRelu",
                        values(2, 9), zero, {"alpha": 0.1})

        def pooled(pool):
            return lambda i, c: [quantize(
                pool(dequantize(i["x"], c["x_scale"], c["x_zero"])),
                c["y_scale"], c["y_zero"])]

        unary_quantized(
            f"QLinearGlobalAveragePool_{t}", "QLinearGlobalAveragePool",
            values(1, 3, 5, 4), zero, y_scale=0.02,
            reference=pooled(lambda x: x.astype(np.float64).mean(
                axis=(2, 3), keepdims=True)))
        unary_quantized(
            f"QLinearAveragePool_{t}", "QLinearAveragePool",
            values(1, 3, 6, 5), zero,
            {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]},
            y_scale=0.02,
            reference=pooled(
                lambda x: average_pool(x, (3, 3), (1, 1, 1, 1), (2, 2))))
        unary_quantized(
            f"QLinearReduceMean_{t}", "QLinearReduceMean", values(2, 3, 4),
            zero, {"axes": [1], "keepdims": 1}, y_scale=0.03,
            reference=pooled(lambda x: x.astype(np.float64).mean(
                axis=1, keepdims=True)))
        case(f"QLinearConcat_{t}", "QLinearConcat",
             {"a": values(1, 2, 3), "b": values(1, 4, 3)}, {"axis": 1},
             {"y_scale": SCALE(0.05), "y_zero": zero(),
              "a_scale": SCALE(0.04), "a_zero": zero(),
              "b_scale": SCALE(0.06), "b_zero": zero()},
             order=["y_scale", "y_zero", "a", "a_scale", "a_zero", "b",
                    "b_scale", "b_zero"], domain=MS)
        case(f"QLinearConv_{t}", "QLinearConv", {"x": values(1, 2, 5, 5)},
             {"pads": [1, 1, 1, 1]},
             {"x_scale": SCALE(0.02), "x_zero": zero(), "w": i8(3, 2, 3, 3),
              "w_scale": np.array([0.01, 0.02, 0.03], np.float32),
              "w_zero": np.zeros(3, np.int8), "y_scale": SCALE(0.05),
              "y_zero": zero(),
              "bias": RNG.integers(-100, 100, 3).astype(np.int32)},
             domain=MS)
        column_scales = np.array([0.01, 0.02, 0.03, 0.015, 0.005], np.float32)
        for trans_b in (0, 1):
            b = i8(5, 4) if trans_b else i8(4, 5)
            gemm = {"a_scale": SCALE(0.05), "a_zero": zero(), "b": b,
                    "b_scale": column_scales, "b_zero": np.zeros(5, np.int8),
                    "c": RNG.integers(-500, 500, 5).astype(np.int32)}
            order = ["a", "a_scale", "a_zero", "b", "b_scale", "b_zero", "c"]
            case(f"QGemm_float_{t}_transB{trans_b}", "QGemm",
                 {"a": values(3, 4)}, {"transB": trans_b, "alpha": 0.5},
                 gemm, order=order, output_type=1, domain=MS)
            case(f"QGemm_quantized_{t}_transB{trans_b}", "QGemm",
                 {"a": values(3, 4)}, {"transB": trans_b},
                 dict(gemm, y_scale=SCALE(0.02), y_zero=zero()),
                 order=order + ["y_scale", "y_zero"], domain=MS)
        case(f"MatMulIntegerToFloat_{t}", "MatMulIntegerToFloat",
             {"a": values(2, 3, 4)},
             consts={"b": i8(4, 5), "a_scale": SCALE(0.05),
                     "b_scale": column_scales, "a_zero": zero(),
                     "bias": floats(5)},
             order=["a", "b", "a_scale", "b_scale", "a_zero", "", "bias"],
             output_type=1, domain=MS)
    for dtype, values in ((np.int8, i8), (np.uint8, u8)):
        case(f"DynamicQuantizeMatMul_{dtype.__name__}",
             "DynamicQuantizeMatMul", {"a": floats(2, 3, 6)},
             consts={"b": values(6, 5),
                     "b_scale": np.array([0.01, 0.02, 0.03, 0.015, 0.005],
                                         np.float32),
                     "b_zero": np.full(5, 0 if dtype == np.int8 else 128,
                                       dtype),
                     "bias": floats(5)}, domain=MS)
    case("GridSample", "GridSample",
         {"x": floats(1, 2, 4, 5), "grid": floats(1, 3, 3, 2)},
         {"mode": "bilinear", "padding_mode": "border", "align_corners": 1},
         domain=MS)
    case("Trilu_lower", "Trilu", {"x": floats(2, 4, 5)}, {"upper": 0},
         {"k": np.array(1, np.int64)}, domain=MS)
    case("GatherND", "GatherND",
         {"x": floats(3, 4, 2), "indices": np.array([[0, 1], [2, 3]],
                                                    np.int64)}, domain=MS)
    case("QuantizeLinear_per_axis", "QuantizeLinear", {"x": floats(2, 3)},
         {"axis": 1}, {"scale": np.array([0.1, 0.2, 0.3], np.float32),
                       "zero": np.array([1, 2, 3], np.uint8)},
         output_type=2, domain=MS)
    case("DequantizeLinear", "DequantizeLinear", {"x": u8(2, 3)},
         consts={"scale": SCALE(0.1), "zero": np.uint8(3)}, output_type=1,
         domain=MS)


def pack_codes(codes, bits):
    """Codes [..., count] (count a multiple of 8 / bits) packed low first
    into uint8 [..., count * bits / 8], as MatMulNBits reads them."""
    per = 8 // bits
    grouped = codes.reshape(codes.shape[:-1] + (-1, per)).astype(np.uint8)
    packed = np.zeros(grouped.shape[:-1], np.uint8)
    for i in range(per):
        packed |= (grouped[..., i] << (i * bits)).astype(np.uint8)
    return packed


def matmul_nbits_case(name, a_shape, k, n, block, bits, zero="packed",
                      bias=False, flat_scales=False):
    """A MatMulNBits of a random weight: B's codes [N, k_blocks, block]
    packed; zero points packed per row (each row padded to whole bytes),
    float, or omitted; scales [N, k_blocks] or flat."""
    blocks = (k + block - 1) // block
    codes = RNG.integers(0, 2 ** bits, (n, blocks, block))
    scales = (RNG.random((n, blocks)) * 0.1 + 0.01).astype(np.float32)
    consts = {"b": pack_codes(codes, bits),
              "scales": scales.reshape(-1) if flat_scales else scales}
    order = ["a", "b", "scales"]
    if zero == "packed":
        per = 8 // bits
        row = RNG.integers(0, 2 ** bits, (n, -(-blocks // per) * per))
        consts["zero"] = pack_codes(row, bits).reshape(-1)
    elif zero == "float":
        consts["zero"] = (RNG.random((n, blocks)) * 2 ** bits).astype(
            np.float32)
    order.append("zero" if zero else "")
    if bias:
        consts["bias"] = floats(n)
        order += ["", "bias"]
    while order[-1] == "":
        order.pop()
    case(f"MatMulNBits_{name}", "MatMulNBits", {"a": floats(*a_shape, k)},
         {"K": k, "N": n, "bits": bits, "block_size": block}, consts,
         order=order, domain=MS)


def weight_only_cases():
    """ONNX Runtime's weight-only quantization: 4 bits in blocks of 16 and
    32 (K a multiple of the block or not, an odd number of blocks), with and
    without zero points and bias, float zero points, flat scales, a batch of
    matrices; 2 and 8 bits. And its SimplifiedLayerNormalization."""
    matmul_nbits_case("4bit_bias", (3,), 20, 6, 16, 4, bias=True)
    matmul_nbits_case("4bit_no_zero_flat_scales", (3,), 32, 5, 16, 4,
                      zero=None, flat_scales=True)
    matmul_nbits_case("4bit_float_zero", (3,), 40, 7, 32, 4, zero="float")
    matmul_nbits_case("4bit_three_blocks_batched", (2, 3), 40, 6, 16, 4)
    matmul_nbits_case("8bit", (3,), 20, 6, 16, 8)
    matmul_nbits_case("2bit", (3,), 40, 6, 16, 2)
    # ONNX Runtime's RMS normalization, which it registers in the default
    # domain (its transformer optimizer writes it for T5 and Llama): Y and
    # inv_std_var, over the last axis and over the last two.
    case("SimplifiedLayerNormalization", "SimplifiedLayerNormalization",
         {"x": floats(2, 3, 8)}, {"epsilon": 1e-5}, {"scale": floats(8)},
         outputs=2, opset=17, output_types=[1, 1])
    case("SimplifiedLayerNormalization_axis_1", "SimplifiedLayerNormalization",
         {"x": floats(2, 3, 8)}, {"axis": 1, "epsilon": 1e-6},
         {"scale": floats(3, 8)}, opset=17)


def rotary_caches(positions, half):
    """cos and sin of RoPE's angles, [positions, half], float32."""
    inverse = 1.0 / (10000 ** (np.arange(half) / half))
    angles = np.outer(np.arange(positions), inverse)
    return (np.cos(angles).astype(np.float32),
            np.sin(angles).astype(np.float32))


def gqa_case(name, batch, sequence, seqlens, total, heads=4, kv_heads=2,
             size=16, past=None, packed=False, rotary_half=None, attrs=None):
    """A GroupQueryAttention: query, key and value of `sequence` new tokens
    (packed into query when `packed`), a past cache of `past` rows (none
    when None), seqlens_k = total lengths - 1 per batch row, the scalar
    total_sequence_length; rotary caches of 16 positions when
    `rotary_half`."""
    inputs = {}
    order = []
    if packed:
        inputs["query"] = floats(batch, sequence, (heads + 2 * kv_heads) * size)
        order += ["query", "", ""]
    else:
        inputs["query"] = floats(batch, sequence, heads * size)
        inputs["key"] = floats(batch, sequence, kv_heads * size)
        inputs["value"] = floats(batch, sequence, kv_heads * size)
        order += ["query", "key", "value"]
    if past is not None:
        inputs["past_key"] = floats(batch, kv_heads, past, size)
        inputs["past_value"] = floats(batch, kv_heads, past, size)
        order += ["past_key", "past_value"]
    else:
        order += ["", ""]
    inputs["seqlens_k"] = np.array(seqlens, np.int32) - 1
    inputs["total_sequence_length"] = np.array([total], np.int32)
    order += ["seqlens_k", "total_sequence_length"]
    consts = {}
    all_attrs = {"num_heads": heads, "kv_num_heads": kv_heads}
    if rotary_half:
        consts["cos_cache"], consts["sin_cache"] = rotary_caches(16,
                                                                 rotary_half)
        order += ["cos_cache", "sin_cache"]
        all_attrs["do_rotary"] = 1
    all_attrs.update(attrs or {})
    case(f"GroupQueryAttention_{name}", "GroupQueryAttention", inputs,
         all_attrs, consts, order=order, outputs=3, opset=17, domain=MS)


def decoder_cases():
    """What onnxruntime-genai's decoders carry: GroupQueryAttention over a
    first prompt, a decoding step over a cache (rows of equal and of
    different lengths: the present cache's rows past a row's length are
    zeros), a later prompt over a cache, packed QKV, rotary embedding
    (halves and interleaved, all or part of a head), a local window with a
    softcap and a scale, smooth softmax; and com.microsoft RotaryEmbedding
    with positions per token or an offset."""
    gqa_case("prompt", 2, 4, [4, 4], 4)
    gqa_case("decode_step", 2, 1, [6, 6], 6, past=5)
    gqa_case("decode_step_ragged", 2, 1, [4, 7], 7, past=6)
    gqa_case("later_prompt_packed_rotary", 1, 3, [7], 7, past=4, packed=True,
             rotary_half=8)
    gqa_case("prompt_interleaved_partial_rotary", 1, 5, [5], 5, size=32,
             rotary_half=8, attrs={"rotary_interleaved": 1})
    gqa_case("prompt_local_window_softcap", 1, 6, [6], 6,
             attrs={"local_window_size": 2, "softcap": 2.0, "scale": 0.3})
    gqa_case("decode_step_smooth_softmax", 1, 1, [5], 5, past=4,
             attrs={"smooth_softmax": 1})
    cos, sin = rotary_caches(16, 8)
    case("RotaryEmbedding_3d_position_ids", "RotaryEmbedding",
         {"x": floats(2, 3, 32),
          "position_ids": np.array([[0, 1, 2], [4, 5, 6]], np.int64)},
         {"num_heads": 2}, {"cos_cache": cos, "sin_cache": sin},
         order=["x", "position_ids", "cos_cache", "sin_cache"], opset=17,
         domain=MS)
    case("RotaryEmbedding_4d_offset_interleaved", "RotaryEmbedding",
         {"x": floats(1, 2, 3, 16), "position_ids": np.array([3], np.int64)},
         {"interleaved": 1}, {"cos_cache": cos, "sin_cache": sin},
         order=["x", "position_ids", "cos_cache", "sin_cache"], opset=17,
         domain=MS)
    case("RotaryEmbedding_3d_partial", "RotaryEmbedding",
         {"x": floats(1, 4, 64),
          "position_ids": np.array([[2, 3, 4, 5]], np.int64)},
         {"num_heads": 2, "rotary_embedding_dim": 16},
         {"cos_cache": cos, "sin_cache": sin},
         order=["x", "position_ids", "cos_cache", "sin_cache"], opset=17,
         domain=MS)

    # A Llama-style layer as onnxruntime-genai's builder writes one for
    # int4 on CPU, at a decoding step over a cache: RMS normalization, the
    # packed Q, K and V projection in 4-bit codes, GroupQueryAttention with
    # rotary embedding reading it (whose shape the model does not declare),
    # the output projection, the skip connection and its normalization.
    hidden, heads, kv_heads, size = 64, 4, 2, 16
    layer = {"norm": floats(hidden), "norm2": floats(hidden)}
    layer["cos_cache"], layer["sin_cache"] = rotary_caches(16, 8)
    for name, n in (("qkv", (heads + 2 * kv_heads) * size), ("o", hidden)):
        codes = RNG.integers(0, 16, (n, hidden // 32, 32))
        layer[f"{name}_b"] = pack_codes(codes, 4)
        layer[f"{name}_scales"] = (RNG.random((n, hidden // 32)) * 0.05 +
                                   0.01).astype(np.float32)
    nbits = {"K": hidden, "bits": 4, "block_size": 32}
    nodes = [
        helper.make_node("SimplifiedLayerNormalization", ["x", "norm"],
                         ["normed"], epsilon=1e-5),
        helper.make_node("MatMulNBits", ["normed", "qkv_b", "qkv_scales"],
                         ["qkv"], domain=MS, N=(heads + 2 * kv_heads) * size,
                         **nbits),
        helper.make_node("GroupQueryAttention",
                         ["qkv", "", "", "past_key", "past_value",
                          "seqlens_k", "total_sequence_length", "cos_cache",
                          "sin_cache"],
                         ["attended", "present_key", "present_value"],
                         domain=MS, num_heads=heads, kv_num_heads=kv_heads,
                         do_rotary=1),
        helper.make_node("MatMulNBits", ["attended", "o_b", "o_scales"],
                         ["projected"], domain=MS, N=hidden, **nbits),
        helper.make_node("SkipSimplifiedLayerNormalization",
                         ["projected", "x", "norm2"], ["y"], domain=MS,
                         epsilon=1e-5),
    ]
    graph_case("llama_layer_int4_decode_step", nodes,
               {"x": floats(1, 1, hidden),
                "past_key": floats(1, kv_heads, 5, size),
                "past_value": floats(1, kv_heads, 5, size),
                "seqlens_k": np.array([5], np.int32),
                "total_sequence_length": np.array([6], np.int32)},
               layer, ["y", "present_key", "present_value"], opset=17)


if __name__ == "__main__":
    main(transformer_cases, attention_cases, quantized_cases,
         weight_only_cases, decoder_cases)
