"""NumPy references, from ONNX's definitions, for the operators where ONNX
Runtime 1.30 gives other values (ops_against_ort.py compares weft with
these where ONNX Runtime differs, so those operators stay checked).

Each takes the node's operand values (None for one left out) and its
attributes, and returns its outputs in float64."""
import math

import numpy as np


def _bilinear(plane, y, x):
    """RoiAlign's sample of one plane at (y, x): 0 beyond one pixel past
    the border, the border's value up to it."""
    height, width = plane.shape
    if y < -1 or y > height or x < -1 or x > width:
        return 0.0
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(y), int(x)
    if y0 >= height - 1:
        y0 = y1 = height - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= width - 1:
        x0 = x1 = width - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    dy, dx = y - y0, x - x0
    return ((1 - dy) * (1 - dx) * plane[y0, x0] + (1 - dy) * dx * plane[y0, x1]
            + dy * (1 - dx) * plane[y1, x0] + dy * dx * plane[y1, x1])


def roi_align(operands, attrs):
    """Average mode: each bin the mean of its grid of bilinear samples."""
    x, rois, batch_indices = operands
    out_h, out_w = attrs["output_height"], attrs["output_width"]
    ratio, scale = attrs["sampling_ratio"], attrs["spatial_scale"]
    half_pixel = attrs.get("coordinate_transformation_mode",
                           b"half_pixel") == b"half_pixel"
    offset = 0.5 if half_pixel else 0.0
    out = np.zeros((len(rois), x.shape[1], out_h, out_w))
    for r, (roi, batch) in enumerate(zip(rois, batch_indices)):
        x1, y1, x2, y2 = (float(v) * scale - offset for v in roi)
        roi_w, roi_h = x2 - x1, y2 - y1
        if not half_pixel:  # the legacy mode: at least one pixel
            roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
        bin_h, bin_w = roi_h / out_h, roi_w / out_w
        grid_h = ratio if ratio > 0 else math.ceil(roi_h / out_h)
        grid_w = ratio if ratio > 0 else math.ceil(roi_w / out_w)
        for channel in range(x.shape[1]):
            plane = x[int(batch), channel].astype(np.float64)
            for i in range(out_h):
                for j in range(out_w):
                    total = 0.0
                    for iy in range(grid_h):
                        y = y1 + i * bin_h + (iy + 0.5) * bin_h / grid_h
                        for ix in range(grid_w):
                            xx = x1 + j * bin_w + (ix + 0.5) * bin_w / grid_w
                            total += _bilinear(plane, y, xx)
                    out[r, channel, i, j] = total / max(grid_h * grid_w, 1)
    return [out]


def stft(operands, attrs):
    """Frames of frame_length every `step` samples, windowed, each one's
    DFT; onesided keeps the first frame_length // 2 + 1 bins."""
    signal, step, window, frame_length = (list(operands) + [None] * 2)[:4]
    values = signal[..., 0].astype(np.complex128)
    if signal.shape[-1] == 2:
        values = values + 1j * signal[..., 1]
    length = int(frame_length) if frame_length is not None else len(window)
    taps = np.ones(length) if window is None else window.astype(np.float64)
    step = int(step)
    frames = (values.shape[1] - length) // step + 1
    spectra = np.stack([np.fft.fft(values[:, f * step:f * step + length] *
                                   taps, axis=-1) for f in range(frames)], 1)
    if attrs.get("onesided", 1):
        spectra = spectra[..., :length // 2 + 1]
    return [np.stack([spectra.real, spectra.imag], -1)]


def affine_grid(operands, attrs):
    """theta applied to the normalised coordinates of every point of
    `size`'s spatial dims: align_corners puts -1 and 1 on the end points
    (one point: -1, as ONNX's reference), else on the outer edges."""
    theta, size = operands
    spatial = [int(d) for d in size[2:]]
    axes = []
    for count in spatial:
        if attrs.get("align_corners"):
            axes.append(np.linspace(-1, 1, count) if count > 1
                        else np.array([-1.0]))
        else:
            axes.append((2 * np.arange(count) + 1) / count - 1)
    mesh = np.meshgrid(*axes, indexing="ij")  # (d,) h, w
    homogeneous = np.stack(mesh[::-1] + [np.ones_like(mesh[0])], -1)
    return [np.einsum("nij,...j->n...i", theta.astype(np.float64),
                      homogeneous)]


REFERENCES = {"RoiAlign": roi_align, "STFT": stft,
              "AffineGrid": affine_grid}
