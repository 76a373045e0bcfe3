"""Where ONNX Runtime 1.30 gives other values than weft and weft follows
ONNX's definition: the cases docs/onnx.md lists under "Where ONNX Runtime
differs", told apart so ops_against_ort.py counts them apart."""
import numpy as np
from onnx import helper

from case import constant_value
from operators import RNN_ACTIVATIONS

def nearest_index_rounds_apart(dims, scales, transform):
    """Whether some output coordinate of a nearest Resize computed in
    float32 and in float64 lies on different sides of an integer or a
    half (where floor, ceil and rounding turn)."""
    for count, scale in zip(dims, scales):
        out = int(np.floor(count * np.float64(scale)))
        index = np.arange(out)
        single = np.float32(scale)
        if transform == b"half_pixel":
            low = (index.astype(np.float32) + np.float32(0.5)) / single - \
                np.float32(0.5)
            high = (index + 0.5) / np.float64(single) - 0.5
        else:
            low = index.astype(np.float32) / single
            high = index / np.float64(single)
        for edge in (np.floor, lambda v: np.floor(v + 0.5)):
            if (edge(low.astype(np.float64)) != edge(high)).any():
                return True
    return False


def documented_difference(op_type, c):
    """Where ONNX Runtime 1.30 gives other values than weft and weft follows
    ONNX's definition (docs/onnx.md, "Where ONNX Runtime differs"): what
    differs, or None."""
    node = c.nodes[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    same = auto_pad in (b"SAME_UPPER", b"SAME_LOWER")
    if op_type == "LpPool" and same:
        return "ONNX Runtime's LpPool leaves out SAME padding"
    if op_type in ("MaxPool", "Conv") and same and any(
            d > 1 for d in attrs.get("dilations", [])):
        return "ONNX Runtime leaves dilations out of SAME padding"
    if op_type == "ConvTranspose" and same:
        x = constant_value(c, node.input[0])
        w = constant_value(c, node.input[1])
        spatial = x.ndim - 2
        strides = attrs.get("strides", [1] * spatial)
        dilations = attrs.get("dilations", [1] * spatial)
        padding = attrs.get("output_padding", [0] * spatial)
        if any(s * (n - 1) + p + (k - 1) * d + 1 < n * s for n, s, p, k, d in
               zip(x.shape[2:], strides, padding, w.shape[2:], dilations)):
            return "SAME with the kernel shorter than the stride: ONNX's " \
                "output is input x stride, ONNX Runtime's shorter"
    if op_type == "InstanceNormalization" and np.prod(
            constant_value(c, node.input[0]).shape[2:]) == 1:
        return "one value per plane: ONNX Runtime's float variance " \
            "leaves a residue where the exact output is B"
    if op_type == "STFT":
        return "ONNX Runtime's STFT gives values far from the frames' " \
            "DFT in some cases (weft matches NumPy's FFT)"
    if op_type == "AffineGrid" and attrs.get("align_corners") and 1 in list(
            constant_value(c, node.input[1])[2:]):
        return "align_corners with a dimension of one point: weft -1 as " \
            "ONNX's reference, ONNX Runtime +1 (PyTorch 0)"
    if op_type == "MaxUnpool" and len(node.input) > 2:
        return "a larger output_shape: ONNX's reference and node test " \
            "place the unpooled tensor at its origin, ONNX Runtime reads " \
            "the indices in the output's shape"
    if op_type == "RoiAlign" and any(name in c.feeds
                                     for name in node.input[1:]):
        return "rois or batch_indices fed at run time: ONNX Runtime's " \
            "values differ from ONNX's definition (constant ones agree)"
    if op_type in ("AveragePool", "MaxPool", "LpPool",
                   "com.microsoft.QLinearAveragePool") and same:
        x = constant_value(c, node.input[0])
        spatial = x.ndim - 2
        image = x.shape[1:-1] if attrs.get("channels_last") else x.shape[2:]
        strides = attrs.get("strides", [1] * spatial)
        dilations = attrs.get("dilations", [1] * spatial)
        if any((-(-n // s) - 1) * s + (k - 1) * d + 1 < n for n, s, k, d in
               zip(image, strides, attrs["kernel_shape"], dilations)):
            return "SAME with windows that skip inputs: weft pads nothing " \
                "(TensorFlow's SAME), ONNX Runtime pads negatively"
    if op_type == "MeanVarianceNormalization" and (constant_value(
            c, node.input[0]).var(axis=tuple(attrs.get(
                "axes", [0, 2, 3]))) == 0).any():
        return "zero variance: ONNX adds 1e-9 to the deviation, " \
            "ONNX Runtime divides by zero"
    if op_type.endswith("Window") and not attrs.get("periodic", 1) and \
            int(constant_value(c, node.input[0])) == 1:
        return "a symmetric window of one point: weft 1 as PyTorch, " \
            "ONNX Runtime NaN (0 / 0)"
    if op_type in ("LSTM", "GRU", "RNN"):
        alphas = len(attrs.get("activation_alpha", []))
        betas = len(attrs.get("activation_beta", []))
        for name in attrs.get("activations", []):
            reads = RNN_ACTIVATIONS[name.decode()]
            defaulted = (reads >= 1 and alphas <= 0) or (
                reads == 2 and betas <= 0)
            if defaulted and name in (b"ThresholdedRelu", b"Affine",
                                      b"ScaledTanh"):
                return f"{name.decode()} without its parameters: ONNX's " \
                    "operator's defaults, ONNX Runtime's 0"
            alphas -= reads >= 1
            betas -= reads == 2
        if any(name in (b"Relu", b"LeakyRelu", b"Elu", b"Softplus",
                        b"Affine", b"ThresholdedRelu")
               for name in attrs.get("activations", [])):
            return "an unbounded or thresholded activation in the " \
                "recurrence: ONNX Runtime's float and weft's double " \
                "rounding grow apart"
    if op_type == "Resize":
        transform = attrs.get("coordinate_transformation_mode", b"")
        x = constant_value(c, node.input[0])
        scales = constant_value(c, node.input[2]) if len(
            node.input) > 2 and node.input[2] else None
        if scales is not None and transform in (
                b"align_corners", b"pytorch_half_pixel",
                b"tf_crop_and_resize") and any(
                (n * s) % 1 for n, s in zip(x.shape, scales)):
            return "the resized length: ONNX's reference input x scale, " \
                "ONNX Runtime the output's rounded length"
        if attrs.get("mode") == b"nearest" and scales is not None and \
                transform in (b"half_pixel", b"asymmetric") and \
                nearest_index_rounds_apart(x.shape, scales, transform):
            return "nearest at a coordinate on a pixel's edge in float " \
                "(ONNX Runtime) but just inside it in double (weft)"
        sizes = constant_value(c, node.input[3]) if len(
            node.input) > 3 else None
        unscaled = any(s == 1 for s in scales) if scales is not None else \
            any(n == m for n, m in zip(x.shape, sizes))
        if transform == b"tf_crop_and_resize" and unscaled:
            return "ONNX Runtime leaves a dimension of scale 1 " \
                "uncropped by roi"
    return None
