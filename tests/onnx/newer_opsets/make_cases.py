#!/usr/bin/python3
"""The ONNX test cases of the opsets past Debian's python3-onnx 1.12 (which
stops at opset 17) to 23: what changed at each opset weft reads past 17
(docs/onnx.md, "Opsets"). Written by ../onnx_cases.py's two steps
(../regenerate_cases.sh newer_opsets runs them around ONNX Runtime); the
ImageDecoder cases need Debian's python3-pil (Pillow) as well.
"""
import io
import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))
from onnx_cases import (RNG, case, floats, graph_case, ints, main,  # noqa: E402
                        strings)


def opset_18_cases():
    positive = np.abs(floats(2, 3, 4)) + 0.5
    for op in ["ReduceMax", "ReduceMin", "ReduceMean", "ReduceProd",
               "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
               "ReduceSumSquare"]:
        case(f"{op}_axes_input", op, {"x": positive}, {"keepdims": 0},
             {"axes": np.array([0, -1], np.int64)})
        case(f"{op}_no_axes", op, {"x": positive})
        # Reduced over no axes: each element's own term (x^2, log x, ...).
        case(f"{op}_empty_axes_noop", op, {"x": positive},
             {"noop_with_empty_axes": 1}, {"axes": np.array([], np.int64)})
    case("ReduceMax_fed_axes", "ReduceMax",
         {"x": floats(2, 3, 4), "axes": np.array([1], np.int64)})
    case("Split_num_outputs_even", "Split", {"x": floats(6, 2)},
         {"num_outputs": 3}, outputs=3)
    case("Split_num_outputs_uneven", "Split", {"x": floats(7, 2)},
         {"num_outputs": 3}, outputs=3)
    case("Split_num_outputs_last_axis", "Split", {"x": floats(2, 5)},
         {"axis": -1, "num_outputs": 2}, outputs=2)
    case("Split_sizes_input", "Split", {"x": floats(5, 2)}, {},
         {"split": np.array([1, 4], np.int64)}, outputs=2)
    case("Pad_axes", "Pad", {"x": floats(2, 3, 4)}, {"mode": "constant"},
         {"pads": np.array([1, 2, 0, 1], np.int64), "value": np.float32(7),
          "axes": np.array([0, 2], np.int64)})
    case("Pad_negative_axis_reflect", "Pad", {"x": floats(3, 4)},
         {"mode": "reflect"},
         {"pads": np.array([2, 1], np.int64), "value": np.float32(0),
          "axes": np.array([-1], np.int64)})
    case("Pad_axes_out_of_order_edge", "Pad", {"x": floats(3, 4)},
         {"mode": "edge"},
         {"pads": np.array([1, 0, 2, 1], np.int64), "value": np.float32(0),
          "axes": np.array([1, 0], np.int64)})
    for reduction in ["max", "min", "add", "mul"]:
        case(f"ScatterElements_{reduction}", "ScatterElements",
             {"x": floats(3, 3), "i": np.array([[1, 0, 2], [1, 2, 2]]),
              "u": floats(2, 3)}, {"axis": 0, "reduction": reduction})
        case(f"ScatterND_{reduction}", "ScatterND",
             {"x": floats(4, 2), "i": np.array([[1], [3], [1]]),
              "u": floats(3, 2)}, {"reduction": reduction})
    case("ScatterElements_max_int", "ScatterElements",
         {"x": np.array([5, -3, 2], np.int32), "i": np.array([0, 0, 2]),
          "u": np.array([7, 9, -1], np.int32)},
         {"axis": 0, "reduction": "max"})
    case("LpPool_ceil_mode_dilations", "LpPool", {"x": floats(1, 2, 6, 7)},
         {"kernel_shape": [2, 2], "strides": [2, 2], "dilations": [1, 2],
          "ceil_mode": 1, "p": 2})
    case("LpPool_pads_p1", "LpPool", {"x": floats(1, 2, 5, 5)},
         {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "p": 1})
    case("Mish", "Mish", {"x": np.concatenate(
        [floats(6) * 3, np.array([-30, 30, 0, 80, -80], np.float32)])})
    case("Mish_double", "Mish", {"x": floats(5).astype(np.float64)})
    for op in ["BitwiseAnd", "BitwiseOr", "BitwiseXor"]:
        case(f"{op}_int32_broadcast", op,
             {"a": ints(-1000, 1000, 2, 3), "b": ints(-1000, 1000, 3)})
        case(f"{op}_uint8", op, {"a": ints(0, 256, 4, dtype=np.uint8),
                                 "b": ints(0, 256, 4, dtype=np.uint8)})
        case(f"{op}_int64", op,
             {"a": ints(-2**40, 2**40, 3, dtype=np.int64),
              "b": ints(-2**40, 2**40, 3, dtype=np.int64)})
    case("BitwiseNot_int16", "BitwiseNot",
         {"x": ints(-1000, 1000, 4, dtype=np.int16)})
    case("BitwiseNot_uint64", "BitwiseNot",
         {"x": np.array([0, 1, 2**63], np.uint64)})
    resize_cases()
    case("GroupNormalization_scale_per_group", "GroupNormalization",
         {"x": floats(2, 6, 3, 3), "scale": floats(3), "bias": floats(3)},
         {"num_groups": 3, "epsilon": 1e-3})
    case("GroupNormalization_one_group", "GroupNormalization",
         {"x": floats(1, 4, 5), "scale": floats(1), "bias": floats(1)},
         {"num_groups": 1})
    case("CenterCropPad_crop", "CenterCropPad", {"x": floats(5, 7, 3)}, {},
         {"shape": np.array([3, 4, 3], np.int64)})
    case("CenterCropPad_pad", "CenterCropPad", {"x": floats(2, 3)}, {},
         {"shape": np.array([5, 6], np.int64)})
    case("CenterCropPad_axes", "CenterCropPad", {"x": floats(4, 5, 6)},
         {"axes": [2, 0]}, {"shape": np.array([3, 7], np.int64)})
    case("CenterCropPad_negative_axis_int", "CenterCropPad",
         {"x": ints(0, 100, 3, 8)}, {"axes": [-1]},
         {"shape": np.array([5], np.int64)})
    case("Col2Im", "Col2Im", {"x": floats(1, 5, 5)}, {},
         {"image_shape": np.array([5, 5], np.int64),
          "block_shape": np.array([1, 5], np.int64)})
    case("Col2Im_overlapping", "Col2Im", {"x": floats(2, 8, 12)}, {},
         {"image_shape": np.array([4, 5], np.int64),
          "block_shape": np.array([2, 2], np.int64)})
    case("Col2Im_strides_pads_dilations", "Col2Im", {"x": floats(1, 12, 16)},
         {"strides": [2, 1], "pads": [1, 0, 1, 1], "dilations": [1, 2]},
         {"image_shape": np.array([6, 5], np.int64),
          "block_shape": np.array([2, 2], np.int64)})
    case("Col2Im_1d", "Col2Im", {"x": floats(1, 3, 6)}, {},
         {"image_shape": np.array([8], np.int64),
          "block_shape": np.array([3], np.int64)})
    # Unchanged at 18, read at 18.
    case("Conv_18", "Conv", {"x": floats(1, 2, 5, 5), "w": floats(3, 2, 3, 3)},
         {"pads": [1, 1, 1, 1]})
    case("ReduceSum_axes_input", "ReduceSum", {"x": floats(2, 3)},
         {"keepdims": 0}, {"axes": np.array([1], np.int64)})
    case("LayerNormalization", "LayerNormalization",
         {"x": floats(2, 3, 4), "scale": floats(4), "bias": floats(4)})


def complex_pairs(z):
    """A complex array as ONNX's [..., 2] real and imaginary parts."""
    return np.stack([z.real, z.imag], axis=-1)


def opset_19_to_22_cases():
    none = np.array([], np.float32)
    case("Resize_half_pixel_symmetric", "Resize", {"x": floats(1, 1, 5, 7)},
         {"mode": "linear",
          "coordinate_transformation_mode": "half_pixel_symmetric"},
         {"roi": none, "scales": none,
          "sizes": np.array([1, 1, 3, 10], np.int64)}, opset=19)
    # (Pads no longer than the axis: past it, ONNX Runtime 1.30 writes
    # zeros and NumPy's wrap is not periodic; weft tiles, as on a torus.)
    case("Pad_wrap", "Pad", {"x": floats(3, 4)}, {"mode": "wrap"},
         {"pads": np.array([2, 3, 1, 2], np.int64)}, opset=19)
    case("AveragePool_dilations", "AveragePool", {"x": floats(1, 2, 7, 8)},
         {"kernel_shape": [2, 3], "dilations": [2, 2], "strides": [1, 2]},
         opset=19)
    case("AveragePool_dilations_ceil_pads", "AveragePool",
         {"x": floats(1, 1, 6, 7)},
         {"kernel_shape": [3, 2], "dilations": [1, 2], "strides": [2, 2],
          "pads": [1, 1, 1, 1], "ceil_mode": 1, "count_include_pad": 1},
         opset=19)
    case("Cast_saturate_to_int32", "Cast",
         {"x": np.array([1.5, -2.5, 7.0], np.float32)},
         {"to": TensorProto.INT32, "saturate": 1}, opset=19,
         output_type=TensorProto.INT32)
    case("QuantizeLinear_saturate", "QuantizeLinear",
         {"x": np.array([-300, -1.5, 0.5, 2.5, 300], np.float32)},
         {"saturate": 1},
         {"scale": np.float32(1.0), "zero": np.int8(3)}, opset=19,
         output_type=TensorProto.INT8)
    for approximate in ["none", "tanh"]:
        case(f"Gelu_{approximate}", "Gelu", {"x": floats(2, 5) * 3},
             {"approximate": approximate}, opset=20)
    # DFT's expected values from NumPy's FFT in double: ONNX Runtime's
    # float32 FFT leaves noise of 1e-6 where the exact value is 0.
    case("DFT_axis_input", "DFT", {"x": floats(2, 8, 1)}, {},
         {"length": np.array(8, np.int64), "axis": np.array(1, np.int64)},
         opset=20, reference=lambda i, c: [complex_pairs(
             np.fft.fft(i["x"][..., 0].astype(np.float64), axis=1))])
    case("DFT_default_axis_onesided", "DFT", {"x": floats(3, 6, 1)},
         {"onesided": 1}, opset=20, reference=lambda i, c: [complex_pairs(
             np.fft.rfft(i["x"][..., 0].astype(np.float64), axis=-1))])
    case("DFT_inverse_complex_length", "DFT", {"x": floats(1, 5, 2)},
         {"inverse": 1},
         {"length": np.array(8, np.int64), "axis": np.array(-2, np.int64)},
         opset=20, reference=lambda i, c: [complex_pairs(np.fft.ifft(
             i["x"][..., 0].astype(np.float64) + 1j * i["x"][..., 1], n=8,
             axis=1))])
    for mode in ["linear", "nearest", "cubic"]:
        case(f"GridSample_{mode}", "GridSample",
             {"x": floats(1, 2, 4, 5), "grid": floats(1, 3, 3, 2)},
             {"mode": mode, "padding_mode": "border"}, opset=20)
    for corners in [0, 1]:
        case(f"AffineGrid_2d_align_corners_{corners}", "AffineGrid",
             {"theta": floats(2, 2, 3)}, {"align_corners": corners},
             {"size": np.array([2, 3, 4, 5], np.int64)}, opset=20)
        case(f"AffineGrid_3d_align_corners_{corners}", "AffineGrid",
             {"theta": floats(1, 3, 4)}, {"align_corners": corners},
             {"size": np.array([1, 1, 2, 3, 4], np.int64)}, opset=20)
    case("GroupNormalization_scale_per_channel", "GroupNormalization",
         {"x": floats(2, 6, 3, 3), "scale": floats(6), "bias": floats(6)},
         {"num_groups": 3, "epsilon": 1e-3, "stash_type": 1}, opset=21)
    case("DequantizeLinear_blocks", "DequantizeLinear",
         {"x": ints(-128, 128, 3, 8, dtype=np.int8)}, {"axis": 1,
                                                     "block_size": 3},
         {"scale": np.abs(floats(3, 3)) + 0.1,
          "zero": ints(-5, 5, 3, 3, dtype=np.int8)}, opset=21,
         output_type=TensorProto.FLOAT)
    case("QuantizeLinear_blocks", "QuantizeLinear", {"x": floats(4, 6) * 20},
         {"axis": 0, "block_size": 2},
         {"scale": np.abs(floats(2, 6)) + 0.1,
          "zero": ints(0, 20, 2, 6, dtype=np.uint8)}, opset=21,
         output_type=TensorProto.UINT8)
    case("QuantizeLinear_output_dtype", "QuantizeLinear",
         {"x": floats(5) * 50}, {"output_dtype": TensorProto.INT8},
         {"scale": np.float32(0.5)}, opset=21, output_type=TensorProto.INT8)
    # A window that would start in the end padding is dropped (22 says so).
    case("MaxPool_ceil_mode_window_in_padding", "MaxPool",
         {"x": floats(1, 1, 5, 5)},
         {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 0, 1, 1],
          "ceil_mode": 1}, opset=22)
    case("AveragePool_ceil_mode_window_in_padding", "AveragePool",
         {"x": floats(1, 1, 5, 5)},
         {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
          "ceil_mode": 1}, opset=22)
    case("Conv_22", "Conv", {"x": floats(1, 2, 5, 5), "w": floats(3, 2, 3, 3)},
         {"strides": [2, 2]}, opset=22)


def resize_cases():
    none = np.array([], np.float32)
    # Antialiasing. (Not with align_corners: ONNX Runtime 1.30 differs from
    # the ONNX reference there, and weft follows the reference; a unit test
    # covers it.)
    # (Cubic up one axis and down the other is left out: ONNX Runtime sums
    # in float32, and an output near 0 there missed the suite's absolute
    # tolerance, 1e-7, against the reference by 6e-7; weft's is within
    # 1e-7 of the reference in double.)
    for mode in ["linear", "cubic"]:
        for scales in [[1, 1, 0.5, 0.4], [1, 1, 0.3, 0.75], [1, 1, 1.6, 0.6]]:
            if mode == "cubic" and scales[2] > 1:
                continue
            for transform in ["half_pixel", "pytorch_half_pixel",
                              "asymmetric"]:
                tag = "_".join(f"{s:g}" for s in scales[2:])
                case(f"Resize_antialias_{mode}_{transform}_{tag}", "Resize",
                     {"x": floats(1, 2, 9, 11)},
                     {"mode": mode, "antialias": 1,
                      "coordinate_transformation_mode": transform},
                     {"roi": none, "scales": np.array(scales, np.float32)})
        case(f"Resize_antialias_{mode}_sizes", "Resize",
             {"x": floats(1, 1, 16, 12)}, {"mode": mode, "antialias": 1},
             {"roi": none, "scales": none,
              "sizes": np.array([1, 1, 5, 7], np.int64)})
        case(f"Resize_antialias_{mode}_exclude_outside", "Resize",
             {"x": floats(1, 1, 10, 10)},
             {"mode": mode, "antialias": 1, "exclude_outside": 1},
             {"roi": none, "scales": np.array([1, 1, 0.35, 0.6], np.float32)})
    case("Resize_axes_scales", "Resize", {"x": floats(1, 2, 4, 6)},
         {"mode": "linear", "axes": [2, 3]},
         {"roi": none, "scales": np.array([1.5, 0.5], np.float32)})
    case("Resize_negative_axis_sizes", "Resize", {"x": floats(2, 5, 4)},
         {"mode": "nearest", "axes": [-1]},
         {"roi": none, "scales": none, "sizes": np.array([7], np.int64)})
    case("Resize_axes_crop_and_resize", "Resize", {"x": floats(1, 1, 5, 6)},
         {"mode": "linear", "axes": [3, 2],
          "coordinate_transformation_mode": "tf_crop_and_resize",
          "extrapolation_value": 3.0},
         {"roi": np.array([0.1, -0.2, 0.9, 0.8], np.float32), "scales": none,
          "sizes": np.array([4, 3], np.int64)})
    case("Resize_not_larger", "Resize", {"x": floats(1, 1, 4, 6)},
         {"mode": "linear", "keep_aspect_ratio_policy": "not_larger"},
         {"roi": none, "scales": none,
          "sizes": np.array([1, 1, 7, 7], np.int64)})
    for policy in ["not_larger", "not_smaller"]:
        case(f"Resize_{policy}_axes", "Resize", {"x": floats(1, 1, 5, 3)},
             {"mode": "cubic", "keep_aspect_ratio_policy": policy,
              "axes": [2, 3]},
             {"roi": none, "scales": none,
              "sizes": np.array([3, 4], np.int64)})


# ---- Opset 23: the ops ONNX defines as functions, with NumPy references
# written from the op texts (ONNX Runtime must agree with them).

def rms_reference(axis, epsilon=1e-5):
    def reference(inputs, consts):
        x, scale = inputs["x"], {**inputs, **consts}["scale"]
        axes = tuple(range(axis % x.ndim, x.ndim))
        mean_square = np.mean(x.astype(np.float32) ** 2, axis=axes,
                              keepdims=True)
        return [(x / np.sqrt(mean_square + epsilon) * scale).astype(x.dtype)]
    return reference


def rotary_reference(heads=0, rotary_dim=0, interleaved=False):
    def reference(inputs, consts):
        values = {**inputs, **consts}
        x, cos, sin = values["x"], values["cos"], values["sin"]
        if "positions" in values:
            cos, sin = cos[values["positions"]], sin[values["positions"]]
        # As [batch, sequence, heads, size].
        four = x.transpose(0, 2, 1, 3) if x.ndim == 4 else \
            x.reshape(x.shape[0], x.shape[1], heads, -1)
        dim = rotary_dim or four.shape[-1]
        rotated, kept = four[..., :dim], four[..., dim:]
        cos, sin = cos[:, :, None, :], sin[:, :, None, :]
        if interleaved:
            x1, x2 = rotated[..., 0::2], rotated[..., 1::2]
        else:
            x1, x2 = rotated[..., :dim // 2], rotated[..., dim // 2:]
        real, imaginary = cos * x1 - sin * x2, sin * x1 + cos * x2
        if interleaved:
            turned = np.stack([real, imaginary], -1).reshape(rotated.shape)
        else:
            turned = np.concatenate([real, imaginary], -1)
        y = np.concatenate([turned, kept], -1)
        y = y.transpose(0, 2, 1, 3) if x.ndim == 4 else y.reshape(x.shape)
        return [y.astype(np.float32)]
    return reference


def attention_reference(q_heads=0, kv_heads=0, scale=None, causal=False,
                        softcap=0.0, mode=None):
    """Y (and present_key, present_value, qk_matmul_output where `mode` is
    given) from the op's text."""
    def heads(t, count):
        return t.reshape(t.shape[0], t.shape[1], count, -1) \
            .transpose(0, 2, 1, 3)

    def reference(inputs, consts):
        values = {**inputs, **consts}
        q, k, v = values["q"], values["k"], values["v"]
        three_d = q.ndim == 3
        if three_d:
            q, k, v = heads(q, q_heads), heads(k, kv_heads), heads(v, kv_heads)
        if "past_key" in values:
            k = np.concatenate([values["past_key"], k], 2)
            v = np.concatenate([values["past_value"], v], 2)
        present = [k, v]
        group = q.shape[1] // k.shape[1]
        k_all, v_all = np.repeat(k, group, 1), np.repeat(v, group, 1)
        s = scale if scale is not None else 1 / np.sqrt(q.shape[-1])
        scores = (q.astype(np.float64) @ k_all.transpose(0, 1, 3, 2)) * s
        qk = [scores]
        if softcap:
            scores = softcap * np.tanh(scores / softcap)
        qk.append(scores)
        if "mask" in values:
            mask = values["mask"]
            scores = scores + (np.where(mask, 0, -np.inf)
                               if mask.dtype == np.bool_ else mask)
        if causal:
            past = values["past_key"].shape[2] if "past_key" in values else 0
            rows, cols = scores.shape[-2:]
            later = np.arange(cols)[None, :] > np.arange(rows)[:, None] + past
            scores = scores + np.where(later, -np.inf, 0)
        qk.append(scores)
        top = scores.max(-1, keepdims=True)
        hidden = np.isneginf(top)
        e = np.exp(scores - np.where(hidden, 0, top))
        p = np.where(hidden, 0, e / np.where(hidden, 1, e.sum(-1, keepdims=True)))
        qk.append(p)
        y = p @ v_all
        if three_d:
            y = y.transpose(0, 2, 1, 3).reshape(y.shape[0], y.shape[2], -1)
        outputs = [y.astype(np.float32)]
        if mode is not None:
            outputs += [t.astype(np.float32) for t in present]
            outputs.append(qk[mode].astype(np.float32))
        return outputs
    return reference


def opset_23_cases():
    case("RMSNormalization_last_axis", "RMSNormalization",
         {"x": floats(2, 3, 8)}, {}, {"scale": floats(8)}, opset=23,
         reference=rms_reference(-1))
    case("RMSNormalization_axis_1_epsilon", "RMSNormalization",
         {"x": floats(2, 3, 4)}, {"axis": 1, "epsilon": 0.25},
         {"scale": floats(3, 4)}, opset=23, reference=rms_reference(1, 0.25))
    case("RMSNormalization_fed_scale_axis_minus_2", "RMSNormalization",
         {"x": floats(2, 5, 6), "scale": floats(6)}, {"axis": -2},
         opset=23, reference=rms_reference(-2))

    positions = np.array([[0, 3, 1, 7], [2, 2, 5, 6]], np.int64)
    cache = RNG.uniform(-1, 1, (8, 4)).astype(np.float32)
    for interleaved in [0, 1]:
        case(f"RotaryEmbedding_4d_positions_interleaved_{interleaved}",
             "RotaryEmbedding",
             {"x": floats(2, 3, 4, 8), "positions": positions},
             {"interleaved": interleaved},
             {"cos": cache, "sin": np.sin(cache)},
             order=["x", "cos", "sin", "positions"], opset=23,
             reference=rotary_reference(interleaved=interleaved))
        case(f"RotaryEmbedding_3d_partial_interleaved_{interleaved}",
             "RotaryEmbedding",
             {"x": floats(2, 4, 3 * 10), "cos": floats(2, 4, 3),
              "sin": floats(2, 4, 3)},
             {"interleaved": interleaved, "num_heads": 3,
              "rotary_embedding_dim": 6}, opset=23,
             reference=rotary_reference(3, 6, interleaved))
    case("RotaryEmbedding_4d_caches_per_token", "RotaryEmbedding",
         {"x": floats(1, 2, 5, 4), "cos": floats(1, 5, 2),
          "sin": floats(1, 5, 2)}, opset=23, reference=rotary_reference())

    def attention(name, inputs, attrs=None, consts=None, order=None,
                  reference=None, outputs=None):
        names = outputs or ["y"]
        case(f"Attention_{name}", "Attention", inputs, attrs or {}, consts,
             order=order, opset=23, reference=reference,
             output_names=names, outputs=len(names))

    attention("4d_mha", {"q": floats(2, 3, 4, 8), "k": floats(2, 3, 6, 8),
                         "v": floats(2, 3, 6, 5)},
              reference=attention_reference())
    attention("3d_mha_float_mask",
              {"q": floats(2, 5, 12), "k": floats(2, 5, 12),
               "v": floats(2, 5, 12), "mask": floats(2, 1, 5, 5)},
              {"q_num_heads": 3, "kv_num_heads": 3},
              reference=attention_reference(3, 3))
    attention("3d_gqa_causal", {"q": floats(1, 4, 16), "k": floats(1, 4, 8),
                                "v": floats(1, 4, 8)},
              {"q_num_heads": 4, "kv_num_heads": 2, "is_causal": 1},
              reference=attention_reference(4, 2, causal=True))
    attention("4d_mqa_bool_mask_scale",
              {"q": floats(2, 4, 3, 6), "k": floats(2, 1, 5, 6),
               "v": floats(2, 1, 5, 6),
               "mask": RNG.random((3, 5)) < 0.7},
              {"scale": 0.3}, reference=attention_reference(scale=0.3))
    attention("4d_bool_mask_hides_a_row",
              {"q": floats(1, 1, 2, 4), "k": floats(1, 1, 3, 4),
               "v": floats(1, 1, 3, 4),
               "mask": np.array([[True, False, True], [False] * 3])},
              reference=attention_reference())
    hidden_row = RNG.random((2, 1, 4, 4)) < 0.6
    hidden_row[1, 0, 2] = False
    attention("3d_bool_mask_hides_a_row",
              {"q": floats(2, 4, 8), "k": floats(2, 4, 8), "v": floats(2, 4, 8),
               "mask": hidden_row},
              {"q_num_heads": 2, "kv_num_heads": 2},
              reference=attention_reference(2, 2))
    attention("4d_cross_softcap", {"q": floats(1, 2, 3, 4),
                                   "k": floats(1, 2, 7, 4),
                                   "v": floats(1, 2, 7, 4)},
              {"softcap": 1.5}, reference=attention_reference(softcap=1.5))
    # (ONNX Runtime writes the causal bias as the lowest float, not -inf:
    # the same Y, another qk_matmul_output in mode 2, which is therefore
    # checked without is_causal.)
    for mode in range(4):
        causal = int(mode != 2)
        attention(f"past_qk_mode_{mode}",
                  {"q": floats(1, 3, 8), "k": floats(1, 3, 8),
                   "v": floats(1, 3, 8), "mask": floats(1, 2, 3, 5),
                   "past_key": floats(1, 2, 2, 4),
                   "past_value": floats(1, 2, 2, 4)},
                  {"q_num_heads": 2, "kv_num_heads": 2, "is_causal": causal,
                   "qk_matmul_output_mode": mode, "softcap": 2.0},
                  reference=attention_reference(2, 2, causal=bool(causal),
                                                softcap=2.0, mode=mode),
                  outputs=["y", "present_key", "present_value", "qk"])


# ---- DeformConv (19), with a NumPy reference written from the op text.

def deform_conv_reference(group=1, offset_group=1, strides=(1, 1),
                          pads=(0, 0, 0, 0), dilations=(1, 1)):
    def sample(image, y, x):
        height, width = image.shape
        y0, x0 = int(np.floor(y)), int(np.floor(x))
        total = 0.0
        for r, wy in ((y0, 1 - (y - y0)), (y0 + 1, y - y0)):
            for c, wx in ((x0, 1 - (x - x0)), (x0 + 1, x - x0)):
                if 0 <= r < height and 0 <= c < width:
                    total += wy * wx * image[r, c]
        return total

    def reference(inputs, consts):
        v = {**inputs, **consts}
        x, w, offset = v["x"], v["w"], v["offset"]
        n, channels = x.shape[:2]
        outputs, _, kh, kw = w.shape
        out_h, out_w = offset.shape[2:]
        mask = v.get("mask", np.ones((n, offset_group * kh * kw, out_h, out_w)))
        per_group, per_offset = channels // group, channels // offset_group
        y = np.zeros((n, outputs, out_h, out_w), np.float64)
        for b in range(n):
            for o in range(outputs):
                grp = o // (outputs // group)
                for c in range(grp * per_group, (grp + 1) * per_group):
                    og = c // per_offset
                    for i in range(kh):
                        for j in range(kw):
                            tap = i * kw + j
                            for oh in range(out_h):
                                for ow in range(out_w):
                                    at_y = oh * strides[0] - pads[0] + \
                                        i * dilations[0] + \
                                        offset[b, (og * kh * kw + tap) * 2, oh, ow]
                                    at_x = ow * strides[1] - pads[1] + \
                                        j * dilations[1] + \
                                        offset[b, (og * kh * kw + tap) * 2 + 1, oh, ow]
                                    y[b, o, oh, ow] += (
                                        w[o, c - grp * per_group, i, j]
                                        * mask[b, og * kh * kw + tap, oh, ow]
                                        * sample(x[b, c], at_y, at_x))
        if "b" in v:
            y += v["b"][None, :, None, None]
        return [y.astype(np.float32)]
    return reference


def deform_conv_cases():
    case("DeformConv_plain", "DeformConv",
         {"x": floats(1, 2, 5, 5), "offset": floats(1, 18, 3, 3)},
         {"kernel_shape": [3, 3]}, {"w": floats(3, 2, 3, 3)},
         order=["x", "w", "offset"], opset=19,
         reference=deform_conv_reference())
    case("DeformConv_bias_mask_pads_strides", "DeformConv",
         {"x": floats(2, 4, 7, 6), "offset": floats(2, 18, 4, 3) * 2,
          "mask": RNG.uniform(0, 1, (2, 9, 4, 3)).astype(np.float32)},
         {"pads": [1, 1, 1, 1], "strides": [2, 2]},
         {"w": floats(5, 4, 3, 3), "b": floats(5)},
         order=["x", "w", "offset", "b", "mask"], opset=19,
         reference=deform_conv_reference(strides=(2, 2), pads=(1, 1, 1, 1)))
    case("DeformConv_groups_dilations_mask_without_bias", "DeformConv",
         {"x": floats(1, 4, 9, 8), "offset": floats(1, 2 * 4 * 2, 7, 7),
          "mask": RNG.uniform(0, 1, (1, 2 * 4, 7, 7)).astype(np.float32)},
         {"group": 2, "offset_group": 2, "dilations": [2, 1]},
         {"w": floats(6, 2, 2, 2)},
         order=["x", "w", "offset", "", "mask"], opset=19,
         reference=deform_conv_reference(group=2, offset_group=2,
                                         dilations=(2, 1)))
    # Offsets that reach past the image: the reads there are 0.
    case("DeformConv_far_offsets_one_by_two", "DeformConv",
         {"x": floats(1, 3, 4, 5), "offset": floats(1, 4, 4, 4) * 4},
         {}, {"w": floats(2, 3, 1, 2)},
         order=["x", "w", "offset"], opset=19,
         reference=deform_conv_reference())


def split_reference(delimiter=None, maxsplit=-1):
    """StringSplit as ONNX's reference computes it: Python's str.split,
    the pieces padded with "" to the longest count."""
    def compute(inputs, consts):
        x = inputs["x"]
        pieces = [s.split(delimiter, maxsplit) for s in x.flat]
        widest = max((len(p) for p in pieces), default=0)
        padded = [p + [""] * (widest - len(p)) for p in pieces]
        return [np.array(padded, dtype=object).reshape(*x.shape, widest),
                np.array([len(p) for p in pieces], np.int64).reshape(x.shape)]
    return compute


def encoded_image(format_name, mode, size=(13, 9), **options):
    """A seeded image of Pillow's `mode` ("RGB", "RGBA", "L"), encoded as
    `format_name`, as ImageDecoder's uint8 input."""
    import PIL.Image  # Debian's python3-pil, for these cases alone.
    channels = len(mode)
    pixels = RNG.integers(0, 256, (size[1], size[0], channels), np.uint8)
    image = PIL.Image.fromarray(pixels[..., 0] if channels == 1 else pixels,
                                mode)
    out = io.BytesIO()
    image.save(out, format=format_name, **options)
    return np.frombuffer(out.getvalue(), np.uint8).copy()


def image_decoder_reference(pixel_format):
    """ONNX's reference ImageDecoder (Pillow), with the channels ONNX's text
    gives: 3 for RGB and BGR (grey repeated, alpha dropped), 1 for
    Grayscale."""
    def compute(inputs, consts):
        import PIL.Image
        image = PIL.Image.open(io.BytesIO(inputs["x"].tobytes()))
        if pixel_format == "Grayscale":
            return [np.asarray(image.convert("L"))[..., None]]
        rgb = np.asarray(image.convert("RGB"))
        return [rgb[..., ::-1] if pixel_format == "BGR" else rgb]
    return compute


def image_decoder_cases():
    """ImageDecoder (20): ONNX Runtime has no CPU kernel for it, so the
    expected images are Pillow's, as ONNX's reference decodes them."""
    streams = {
        "jpeg_rgb": encoded_image("JPEG", "RGB", quality=90),
        "jpeg_rgb_444": encoded_image("JPEG", "RGB", subsampling=0),
        "jpeg_grey": encoded_image("JPEG", "L"),
        "png_rgb": encoded_image("PNG", "RGB"),
        "png_rgba": encoded_image("PNG", "RGBA"),
        "png_grey": encoded_image("PNG", "L"),
    }
    for name, stream in streams.items():
        for pixel_format in ["RGB", "BGR", "Grayscale"]:
            case(f"ImageDecoder_{name}_{pixel_format}", "ImageDecoder",
                 {"x": stream}, {"pixel_format": pixel_format}, opset=20,
                 reference=image_decoder_reference(pixel_format))


def opset_20_string_and_bool_cases():
    """The string ops of opset 20, and ReduceMax / ReduceMin of bool."""
    case("StringConcat_same_shape", "StringConcat",
         {"x": strings("abc", "", "é", "a b"), "y": strings("d", "e", "ü", "")},
         opset=20)
    case("StringConcat_broadcast", "StringConcat",
         {"x": strings("a", "bb").reshape(2, 1), "y": strings("1", "22", "")},
         opset=20)
    case("RegexFullMatch_whole_string", "RegexFullMatch",
         {"x": strings("ab@cd.com", "ab@cd.com ", "x@y.org", "@y.org",
                       "a@b.net")},
         {"pattern": r"[a-z]+@[a-z]+\.(com|org)"}, opset=20,
         output_type=TensorProto.BOOL)
    case("RegexFullMatch_two_dims", "RegexFullMatch",
         {"x": strings("2024-01-05", "24-1-5", "", "1999-12-31").reshape(2, 2)},
         {"pattern": r"\d{4}-\d{2}-\d{2}"}, opset=20,
         output_type=TensorProto.BOOL)
    pieces = [TensorProto.STRING, TensorProto.INT64]
    case("StringSplit_delimiter", "StringSplit",
         {"x": strings("a,b,,c", "x", ",lead,")},
         {"delimiter": ","}, outputs=2, opset=20, output_types=pieces)
    case("StringSplit_delimiter_empty_string", "StringSplit",
         {"x": strings("a,b", "")}, {"delimiter": ","}, outputs=2, opset=20,
         output_types=pieces, reference=split_reference(","),
         ort_differs="ONNX Runtime counts no piece in an empty string")
    case("StringSplit_long_delimiter_maxsplit", "StringSplit",
         {"x": strings("1<>2<>3<>4", "<><>", "none").reshape(3, 1)},
         {"delimiter": "<>", "maxsplit": 2}, outputs=2, opset=20,
         output_types=pieces)
    case("StringSplit_spaces", "StringSplit",
         {"x": strings("  a b  c ", "", "xy", "   ")},
         outputs=2, opset=20, output_types=pieces)
    case("StringSplit_white_space", "StringSplit",
         {"x": strings("x\ty\nz", "a \r\n b\x0b\x0cc\u3000d\u00a0e")},
         outputs=2, opset=20, output_types=pieces,
         reference=split_reference(),
         ort_differs="ONNX Runtime splits on the space character alone")
    case("StringSplit_spaces_maxsplit", "StringSplit",
         {"x": strings("a  b  c", " lead and trail").reshape(1, 2)},
         {"maxsplit": 1}, outputs=2, opset=20, output_types=pieces)
    case("StringSplit_spaces_maxsplit_trailing", "StringSplit",
         {"x": strings("a  b  c  ", " lead and trail ").reshape(1, 2)},
         {"maxsplit": 1}, outputs=2, opset=20, output_types=pieces,
         reference=split_reference(None, 1),
         ort_differs="ONNX Runtime drops the white space that ends the last "
                     "piece once maxsplit is reached")
    # Opset 18: a tensor stands for an optional holding it, and an omitted
    # input for an empty one.
    graph_case("Optional_ops_on_a_tensor_and_nothing", [
        helper.make_node("OptionalHasElement", ["x"], ["has_x"]),
        helper.make_node("OptionalHasElement", [""], ["has_nothing"]),
        helper.make_node("OptionalGetElement", ["x"], ["x_value"]),
    ], {"x": floats(2, 3)}, {}, ["has_x", "has_nothing", "x_value"], opset=18)
    flags = np.array([[True, False, False], [False, False, False]])
    for op in ["ReduceMax", "ReduceMin"]:
        case(f"{op}_bool_axis", op, {"x": flags}, {"keepdims": 1},
             {"axes": np.array([1], np.int64)}, opset=20)
        case(f"{op}_bool_all", op, {"x": ~flags}, {"keepdims": 0}, opset=20)


def volumetric_grid_sample_cases():
    """GridSample of a volume (opset 20): trilinear and nearest, each padding
    mode, both align_corners."""
    for mode in ["linear", "nearest"]:
        for padding in ["zeros", "border", "reflection"]:
            for corners in [0, 1]:
                case(f"GridSample_volume_{mode}_{padding}_{corners}",
                     "GridSample",
                     {"x": floats(2, 3, 4, 5, 6),
                      "grid": RNG.uniform(-1.3, 1.3, (2, 3, 2, 4, 3))
                      .astype(np.float32)},
                     {"mode": mode, "padding_mode": padding,
                      "align_corners": corners}, opset=20)


def empty_set_reduction_cases():
    """Reductions over an empty axis (opset 18; onnx/onnx#5568 defines each
    as its identity; ReduceMean's is left undefined)."""
    for op in ["ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd",
               "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum",
               "ReduceLogSumExp"]:
        case(f"{op}_empty_set", op,
             {"x": np.zeros((2, 0, 4), np.float32)}, {"keepdims": 1},
             {"axes": np.array([1], np.int64)}, opset=18)
    case("ReduceMax_empty_set_int32", "ReduceMax",
         {"x": np.zeros((3, 0), np.int32)}, {"keepdims": 0},
         {"axes": np.array([-1], np.int64)}, opset=18,
         reference=lambda i, c: [np.full(3, np.iinfo(np.int32).min, np.int32)],
         ort_differs="ONNX Runtime returns the [3, 0] input unreduced")


def expected(*values):
    """A reference that answers the given outputs: the expected values ONNX's
    own node tests state (onnx/backend/test/case/node), which ONNX Runtime
    must agree with as well."""
    return lambda inputs, consts: list(values)


def upstream_node_cases():
    """The node tests of newer onnx releases for the ops of opset 20 weft
    reads, with their inputs and expected outputs as ONNX states them
    (Debian's onnx 1.12 predates them)."""
    pattern = r"(\W|^)[\w.\-]{0,25}@(yahoo|gmail)\.com(\W|$)"
    bools = TensorProto.BOOL
    case("upstream_regex_full_match_basic", "RegexFullMatch",
         {"x": strings("www.google.com", "www.facebook.com", "www.bbc.co.uk")},
         {"pattern": r"www\.[\w.-]+\.\bcom\b"}, opset=20, output_type=bools,
         reference=expected(np.array([True, True, False])))
    case("upstream_regex_full_match_email_domain", "RegexFullMatch",
         {"x": strings("account@gmail.com", "account@hotmail.com",
                       "not email", "account2@yahoo.com").reshape(2, 2)},
         {"pattern": pattern}, opset=20, output_type=bools,
         reference=expected(np.array([[True, False], [False, True]])))
    case("upstream_regex_full_match_empty", "RegexFullMatch",
         {"x": strings().reshape(2, 0)}, {"pattern": pattern}, opset=20,
         output_type=bools, reference=expected(np.zeros((2, 0), bool)))
    for name, x, y, z in [
            ("", strings("abc", "def"), strings(".com", ".net"),
             strings("abc.com", "def.net")),
            ("_broadcasting", strings("cat", "dog", "snake"), strings("s"),
             strings("cats", "dogs", "snakes")),
            ("_zero_dimensional", strings("cat").reshape(()),
             strings("s").reshape(()), strings("cats").reshape(())),
            ("_empty_string", strings("abc", ""), strings("", "abc"),
             strings("abc", "abc")),
            ("_utf8", strings("的", "中"), strings("的", "中"),
             strings("的的", "中中"))]:
        case(f"upstream_string_concat{name}", "StringConcat",
             {"x": x, "y": y}, opset=20, reference=expected(z))
    pieces = [TensorProto.STRING, TensorProto.INT64]
    words = strings("hello", "world", "!")
    for name, x, attrs, y, z in [
            ("basic", strings("abc.com", "def.net"), {"delimiter": "."},
             np.array([["abc", "com"], ["def", "net"]], object), [2, 2]),
            ("maxsplit",
             strings("hello world", "def.net", "o n n x",
                     "the quick brown fox").reshape(2, 2), {"maxsplit": 2},
             np.array([[["hello", "world", ""], ["def.net", "", ""]],
                       [["o", "n", "n x"], ["the", "quick", "brown fox"]]],
                      object), [[2, 1], [3, 3]]),
            ("consecutive_delimiters", strings("o-n-n--x-", "o-n----nx"),
             {"delimiter": "-"},
             np.array([["o", "n", "n", "", "x", ""],
                       ["o", "n", "", "", "", "nx"]], object), [6, 6]),
            ("empty_string_delimiter",
             strings("hello world !", "  hello   world !",
                     " hello world   ! "), {"delimiter": ""},
             np.stack([words] * 3), [3, 3, 3]),
            ("no_delimiter",
             strings("hello world !", "  hello   world !",
                     " hello world   ! "), {},
             np.stack([words] * 3), [3, 3, 3]),
            ("empty_tensor", strings(), {}, strings().reshape(0, 0), [])]:
        case(f"upstream_string_split_{name}", "StringSplit", {"x": x}, attrs,
             outputs=2, opset=20, output_types=pieces,
             reference=expected(y, np.array(z, np.int64)))


def quantize_precision_cases():
    """QuantizeLinear's precision (23): the division in float32."""
    case("QuantizeLinear_precision_float", "QuantizeLinear",
         {"x": floats(2, 6) * 40}, {"precision": TensorProto.FLOAT},
         {"scale": np.float32(0.37), "zero": np.uint8(128)}, opset=23,
         output_type=TensorProto.UINT8)


def upstream_volumetric_grid_sample_cases():
    """ONNX's node tests of GridSample on a volume (opset 20), with the
    outputs they state (to four decimals)."""
    x = np.arange(1, 13, dtype=np.float32).reshape(1, 1, 3, 2, 2)
    grid = np.array([
        [[-1.0, -1.0, -1.0], [-1.0, -0.5, 0.3]],
        [[-0.5, -0.5, -0.5], [1.0, -0.6, -1.0]],
        [[-0.2, -0.2, -0.2], [0.4, 0.2, 0.6]],
        [[0.0, 0.0, 0.0], [-1.0, 0.0, 0.0]],
        [[0.0, 0.0, 0.0], [-1.0, 1.0, 0.0]],
        [[-0.2, -0.2, -0.2], [1.0, 0.4, -0.2]],
        [[0.5, 0.5, 0.5], [-1.0, -0.8, 0.8]],
        [[1.0, 1.0, 1.0], [0.4, 0.6, -0.3]]],
        np.float32).reshape(1, 2, 4, 2, 3)
    outputs = {
        ("nearest", 0): [[1, 5], [1, 0], [5, 12], [5, 5],
                         [5, 0], [5, 0], [12, 9], [0, 8]],
        ("nearest", 1): [[1, 5], [1, 2], [5, 12], [5, 5],
                         [5, 7], [5, 8], [12, 9], [12, 8]],
        ("linear", 0): [[0.125, 3.4], [2.0, 0.45], [4.7, 10.9], [6.5, 3.0],
                        [6.5, 1.75], [4.7, 3.3], [11.0, 2.52], [1.5, 5.49]],
        ("linear", 1): [[1.0, 6.7], [3.75, 2.4], [5.4, 9.3], [6.5, 6.0],
                        [6.5, 7.0], [5.4, 6.6], [9.25, 8.4], [12.0, 6.1]],
    }
    for (mode, corners), y in outputs.items():
        case(f"upstream_gridsample_volumetric_{mode}_align_corners_{corners}",
             "GridSample", {"x": x, "grid": grid},
             {"mode": mode, "align_corners": corners}, opset=20,
             reference=expected(np.array(y, np.float32).reshape(1, 1, 2, 4, 2)))


ONNX_UINT4, ONNX_INT4 = 21, 22  # Element types past Debian's onnx 1.12.


def four_bit_tensor(values, signed, in_int32_data=False):
    """values (integers in range) as an INT4 or UINT4 TensorProto, packed
    two to a byte with the first in the low nibble, in raw_data or (two to
    an entry) in int32_data: NumPy and onnx 1.12 have no 4-bit type."""
    flat = np.asarray(values).reshape(-1).astype(np.int64) & 0xF
    if flat.size % 2:
        flat = np.append(flat, 0)
    packed = (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8)
    tensor = TensorProto(data_type=ONNX_INT4 if signed else ONNX_UINT4,
                         dims=list(np.shape(values)))
    if in_int32_data:
        tensor.int32_data.extend(int(b) for b in packed)
    else:
        tensor.raw_data = packed.tobytes()
    return tensor


def quantize(x, scale, zero, low, high):
    """ONNX's QuantizeLinear in NumPy: round half to even, saturate."""
    return np.clip(np.rint(x / scale) + zero, low, high)


def int4_and_int16_cases():
    """Opset 21's 4- and 16-bit types in QuantizeLinear and
    DequantizeLinear, and 4-bit Cast: a weight-only int4 MatMul as ONNX
    Runtime's quantizer writes it (blocked along K), a uint4 weight with
    zero points, each with the packed values in raw_data and in
    int32_data, and float models around each type, since node.js carries no
    4-bit tensor."""
    k, n, block = 13, 6, 4  # An odd count of values: a half-filled byte.
    blocks = (k + block - 1) // block
    x = floats(3, k)
    for signed, name in [(True, "int4"), (False, "uint4")]:
        low, high = (-8, 7) if signed else (0, 15)
        w = ints(low, high + 1, k, n, dtype=np.int64)
        scale = (np.abs(floats(blocks, n)) * 0.1 + 0.01).astype(np.float32)
        zero = ints(low, high + 1, blocks, n, dtype=np.int64)
        wide_scale = np.repeat(scale, block, axis=0)[:k]
        wide_zero = np.repeat(zero, block, axis=0)[:k]
        weight = ((w - wide_zero) * wide_scale).astype(np.float32)
        for field in ["raw_data", "int32_data"]:
            graph_case(
                f"DequantizeLinear_{name}_blocked_weight_MatMul_{field}",
                [helper.make_node("DequantizeLinear", ["w", "s", "z"], ["wf"],
                                  axis=0, block_size=block),
                 helper.make_node("MatMul", ["x", "wf"], ["y0"])],
                {"x": x},
                {"w": four_bit_tensor(w, signed, field == "int32_data"),
                 "s": scale, "z": four_bit_tensor(zero, signed)},
                ["y0"], opset=21,
                reference=lambda i, c, weight=weight: [i["x"] @ weight])
        # Quantized and back, per axis, with saturation at both ends.
        y = floats(2, 3, 5) * 6
        scale = np.array([0.5, 0.9, 1.7], np.float32)
        zero = np.array([low, (low + high) // 2, high], np.int64)
        shaped = (scale.reshape(1, 3, 1), zero.reshape(1, 3, 1))
        graph_case(
            f"QuantizeLinear_{name}_per_axis_round_trip",
            [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y0"])],
            {"x": y}, {"s": scale, "z": four_bit_tensor(zero, signed)},
            ["y0"], opset=21,
            reference=lambda i, c, low=low, high=high, s=shaped: [
                ((quantize(i["x"], s[0], s[1], low, high) - s[1]) *
                 s[0]).astype(np.float32)])
        # Cast: in-range integers exact, out-of-range ones wrapped (ONNX's
        # "discard higher bits"), and back to int32.
        values = np.array([-9, -8, -1, 0, 5, 7, 8, 15, 16, 23, -17],
                          np.int32)
        wrapped = values & 0xF
        if signed:
            wrapped = np.where(wrapped >= 8, wrapped - 16, wrapped)
        graph_case(
            f"Cast_int32_to_{name}_and_back",
            [helper.make_node("Cast", ["x"], ["q"], to=ONNX_INT4 if signed
                              else ONNX_UINT4),
             helper.make_node("Cast", ["q"], ["y0"], to=TensorProto.INT32)],
            {"x": values}, {}, ["y0"], opset=21,
            reference=lambda i, c, w=wrapped: [w.astype(np.int32)])
        # From float: truncated toward zero, then wrapped, as ONNX's
        # reference (ml_dtypes' conversion) does.
        fractions = np.array([2.7, -3.5, 7.5, -8.4, 9.0, 0.5, 1.5, -0.5],
                             np.float32)
        low_bits = np.trunc(fractions).astype(np.int64) & 0xF
        if signed:
            low_bits = np.where(low_bits >= 8, low_bits - 16, low_bits)
        graph_case(
            f"Cast_float_to_{name}_truncates",
            [helper.make_node("Cast", ["x"], ["q"], to=ONNX_INT4 if signed
                              else ONNX_UINT4),
             helper.make_node("Cast", ["q"], ["y0"], to=TensorProto.FLOAT)],
            {"x": fractions}, {}, ["y0"], opset=21,
            reference=lambda i, c, w=low_bits: [w.astype(np.float32)],
            ort_differs="ONNX Runtime rounds half away from zero")
    for dtype, onnx_type in [(np.int16, TensorProto.INT16),
                             (np.uint16, TensorProto.UINT16)]:
        info = np.iinfo(dtype)
        zero = np.array(info.min // 2 + info.max // 2, dtype)
        big = floats(4, 5) * 40000
        case(f"QuantizeLinear_{dtype.__name__}", "QuantizeLinear",
             {"x": big}, {}, {"scale": np.float32(1.3), "zero": zero},
             opset=21, output_type=onnx_type,
             reference=lambda i, c, info=info, dtype=dtype: [
                 quantize(i["x"], c["scale"], c["zero"].astype(np.float64),
                          info.min, info.max).astype(dtype)])
        q = ints(info.min, info.max, 3, 4, dtype=dtype)
        case(f"DequantizeLinear_{dtype.__name__}_per_axis",
             "DequantizeLinear", {"x": q}, {"axis": 1},
             {"scale": np.array([0.5, 0.25, 2, 3e-3], np.float32),
              "zero": np.array([0, 7, -3 if info.min else 3, 100], dtype)},
             opset=21, output_type=TensorProto.FLOAT,
             reference=lambda i, c: [
                 ((i["x"].astype(np.float64) - c["zero"]) *
                  c["scale"]).astype(np.float32)])


# ONNX's FLOAT8 element types: (code, exponent bits, mantissa bits, bias,
# has infinity, no negative zero (FNUZ)).
FLOAT8_TYPES = {
    "float8e4m3fn": (17, 4, 3, 7, False, False),
    "float8e4m3fnuz": (18, 4, 3, 8, False, True),
    "float8e5m2": (19, 5, 2, 15, True, False),
    "float8e5m2fnuz": (20, 5, 2, 16, False, True),
}


def float8_values(exponent_bits, mantissa_bits, bias, has_inf, fnuz):
    """Every code's value (NaN for NaN codes), by the format's definition:
    the reference the cases' float8 rounding is checked against, written
    apart from weft's arithmetic."""
    values = []
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        exponent = (code & 0x7F) >> mantissa_bits
        mantissa = code & ((1 << mantissa_bits) - 1)
        top = (1 << exponent_bits) - 1
        if fnuz and code == 0x80:
            values.append(np.nan)
        elif has_inf and exponent == top:
            values.append(sign * np.inf if mantissa == 0 else np.nan)
        elif not has_inf and not fnuz and (code & 0x7F) == 0x7F:
            values.append(np.nan)
        elif exponent == 0:
            values.append(sign * mantissa * 2.0 ** (1 - bias - mantissa_bits))
        else:
            values.append(sign * (1 + mantissa / 2 ** mantissa_bits) *
                          2.0 ** (exponent - bias))
    return np.array(values)


def float8_round(x, spec, saturate):
    """x rounded to the float8 format `spec` as ONNX's Cast defines it:
    the nearest value, a tie to the even code; where that is past the
    largest, the largest (saturate) or infinity (E5M2) or NaN; as float32."""
    values = float8_values(*spec[1:])
    codes = [c for c in range(128) if np.isfinite(values[c])]
    largest_code = max(codes, key=lambda c: values[c])
    largest = values[largest_code]
    # One step past the largest, with the next code's parity: a value
    # rounding there overflows.
    beyond = largest + 2.0 ** (np.floor(np.log2(largest)) - spec[2])
    candidates = [(values[c], c) for c in codes] + [(beyond, largest_code + 1)]
    out = []
    for v in np.asarray(x, np.float64).reshape(-1):
        if np.isnan(v):
            out.append(np.nan)
            continue
        a = abs(v)
        nearest = None if np.isinf(a) else min(
            candidates, key=lambda vc: (abs(vc[0] - a), vc[1] & 1))
        if nearest is None or nearest[1] > largest_code:
            if saturate:
                out.append(np.copysign(largest, v))
            else:
                out.append(np.copysign(np.inf, v) if spec[4] else np.nan)
            continue
        out.append(np.copysign(nearest[0], v))
    return np.array(out, np.float32).reshape(np.shape(x))


# Where ONNX Runtime 1.30's float8 conversion without saturation departs
# from ONNX's table ("[x] > FLT_MAX": NaN, or infinity for E5M2), as
# ONNX's reference (ml_dtypes) follows it.
ORT_FLOAT8_OVERFLOW = {
    "float8e4m3fn": "ONNX Runtime gives 448, the largest, for 480, which "
                    "is past it, where ONNX's table says NaN",
    "float8e5m2": "ONNX Runtime gives NaN for a value that rounds past "
                  "57344, where ONNX's table says infinity",
}


def float8_cases():
    """Opset 19's FLOAT8 types: Cast of floats to each and back, with and
    without `saturate`, over ties, subnormals, the largest value and past
    it, infinities, NaN and -0; and QuantizeLinear / DequantizeLinear in
    each. node.js carries no float8 tensor, so each case is float32 at both
    ends."""
    special = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 1.0625, 1.1875,
                        -3.25, 0.3, 2.0 ** -9, 2.0 ** -10, 3 * 2.0 ** -11,
                        2.0 ** -17, 2.0 ** -18, 1e-30, 224, 232, 240, 241,
                        248, 256, 448, 449, 464, 465, 480, 500, 1e4, 57344,
                        59000, 61440, 61441, 7e4, -7e4], np.float32)
    x = np.concatenate([special, floats(40) * 30])
    for name, spec in FLOAT8_TYPES.items():
        for saturate in (1, 0):
            differs = ORT_FLOAT8_OVERFLOW.get(name) if not saturate else None
            graph_case(
                f"Cast_float_to_{name}_saturate_{saturate}",
                [helper.make_node("Cast", ["x"], ["q"], to=spec[0],
                                  saturate=saturate),
                 helper.make_node("Cast", ["q"], ["y0"],
                                  to=TensorProto.FLOAT)],
                {"x": x}, {}, ["y0"], opset=19,
                reference=lambda i, c, spec=spec, sat=saturate: [
                    float8_round(i["x"], spec, sat)],
                ort_differs=differs)
        zero = TensorProto(name="z", data_type=spec[0], dims=[])
        zero.int32_data.append(0)
        scale = np.float32(0.125)
        graph_case(
            f"QuantizeLinear_{name}_round_trip",
            [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y0"])],
            {"x": floats(3, 7) * 8}, {"s": scale, "z": zero}, ["y0"],
            opset=19,
            reference=lambda i, c, spec=spec: [
                float8_round(i["x"] / c["s"], spec, True) * c["s"]])


def moved_narrow_types_cases():
    """Reshape, Transpose, Squeeze, Unsqueeze, Flatten, Shape and Size on
    int4 and float8 values (opsets 19 and 21 list them): a packed weight
    stored [N, K] as a flat initializer, reshaped and transposed before
    its DequantizeLinear. NumPy's outputs: ONNX Runtime 1.30's CPU provider
    has no Reshape or Flatten kernel for these types."""
    k, n = 5, 3
    w = ints(-8, 8, n * k, dtype=np.int64)
    scale = np.array([0.5, 0.25, 0.125], np.float32)
    x = floats(2, k)
    weight = (w.reshape(n, k).T * scale).astype(np.float32)
    graph_case(
        "Reshape_Transpose_int4_weight_then_DequantizeLinear",
        [helper.make_node("Reshape", ["w", "shape"], ["w2"]),
         helper.make_node("Transpose", ["w2"], ["wt"], perm=[1, 0]),
         helper.make_node("Unsqueeze", ["wt", "zero_axis"], ["wu"]),
         helper.make_node("Squeeze", ["wu", "zero_axis"], ["ws"]),
         helper.make_node("DequantizeLinear", ["ws", "s"], ["wf"], axis=1),
         helper.make_node("MatMul", ["x", "wf"], ["y0"])],
        {"x": x},
        {"w": four_bit_tensor(w, True),
         "shape": np.array([n, k], np.int64),
         "zero_axis": np.array([0], np.int64), "s": scale},
        ["y0"], opset=21,
        reference=lambda i, c, weight=weight: [i["x"] @ weight])
    codes = TensorProto(name="f8", data_type=FLOAT8_TYPES["float8e5m2"][0],
                        dims=[2, 3])
    values = [1.5, -2.0, 0.25, 57344.0, -0.0, 3.0]
    # E5M2's bits are float16's top byte.
    codes.raw_data = (np.array(values, np.float16).view(np.uint16) >> 8).astype(
        np.uint8).tobytes()
    graph_case(
        "Flatten_Shape_Size_float8e5m2",
        [helper.make_node("Flatten", ["f8"], ["flat"], axis=0),
         helper.make_node("DequantizeLinear", ["flat", "one"], ["y0"]),
         helper.make_node("Shape", ["f8"], ["y1"]),
         helper.make_node("Size", ["f8"], ["y2"])],
        {"x": floats(1)}, {"f8": codes, "one": np.float32(1)},
        ["y0", "y1", "y2"], opset=21,
        reference=lambda i, c: [np.array([values], np.float32),
                                np.array([2, 3], np.int64),
                                np.array(6, np.int64)])


if __name__ == "__main__":
    main(opset_18_cases, opset_19_to_22_cases, opset_23_cases,
         deform_conv_cases, opset_20_string_and_bool_cases,
         image_decoder_cases, empty_set_reduction_cases,
         volumetric_grid_sample_cases, upstream_node_cases,
         upstream_volumetric_grid_sample_cases, quantize_precision_cases,
         int4_and_int16_cases, float8_cases, moved_narrow_types_cases)
