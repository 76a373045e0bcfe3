"""weft.ops: weft's ops as Python functions, for input pipelines
(tf.io / tf.image's names).

Called with NumPy arrays, an op runs at once and returns an array. Called
inside a function given to ``weft.data.Dataset.map``, it is traced: the
function becomes a weft graph once, and weft runs that graph on every
element with no Python in the loop (the ``tf.function`` way).

The random ops take a ``key`` (an int64 scalar, such as the index from
``Dataset.enumerate``) and a ``seed``: what they draw depends on those
alone, so a pipeline gives the same images whatever thread ran each call.
"""

import numpy as _np

from ._graph import Graph as _Graph

__all__ = [
    "center_crop", "convert_image_dtype", "crop_to_bounding_box",
    "decode_image", "decode_jpeg", "decode_png", "encode_jpeg", "encode_png",
    "normalize", "op", "random_crop", "random_flip_left_right",
    "random_resized_crop", "read_file", "resize", "reverse_channels",
    "transpose",
]


class _Symbol:
    """A tensor of a graph being traced."""

    def __init__(self, graph, name):
        self.graph, self.name = graph, name

    def __repr__(self):
        return f"<weft.ops traced tensor {self.name}>"


def op(op_type, inputs, **attrs):
    """Any op weft has (``weft ops`` lists them), by name, with its
    attributes: traced when an input is traced, else run now."""
    inputs = list(inputs)
    traced = [x for x in inputs if isinstance(x, _Symbol)]
    if traced:
        graph = traced[0].graph
        names = [x.name if isinstance(x, _Symbol) else graph.constant(_array(x))
                 for x in inputs]
        return _Symbol(graph, graph.op(op_type, names, **attrs))
    graph = _Graph()
    feeds = {}
    for i, x in enumerate(inputs):
        array = _array(x)
        dtype = "string" if array.dtype.kind in "OUS" else array.dtype
        feeds[graph.placeholder(f"in{i}", dtype)] = array
    graph.outputs = [graph.op(op_type, list(feeds), **attrs)]
    from ._onnxruntime_api import InferenceSession

    return InferenceSession(graph).run(None, feeds)[0]


def _array(value):
    if isinstance(value, (str, bytes)):
        return _np.array(value, dtype=object)
    return _np.asarray(value)


def read_file(filename):
    """The bytes of a file, as a string scalar (tf.io.read_file)."""
    return op("ReadFile", [filename])


def decode_image(contents, channels=0):
    """JPEG or PNG bytes to uint8 [height, width, channels]; channels 0
    keeps the image's own."""
    return op("DecodeImage", [contents], channels=int(channels))


def decode_jpeg(contents, channels=0):
    return op("DecodeJpeg", [contents], channels=int(channels))


def decode_png(contents, channels=0):
    return op("DecodePng", [contents], channels=int(channels))


def encode_jpeg(image, quality=95):
    return op("EncodeJpeg", [image], quality=int(quality))


def encode_png(image):
    return op("EncodePng", [image])


_RESIZE_OPS = {"bilinear": "ResizeBilinear", "nearest": "ResizeNearestNeighbor",
               "area": "ResizeArea"}


def resize(images, size, method="bilinear", antialias=False):
    """An image [height, width, channels] resized to ``size`` ([height,
    width], or [s]: the shorter side to s, the aspect kept), float32.
    ``method``: bilinear, nearest or area (always antialiased)."""
    if method not in _RESIZE_OPS:
        raise ValueError(f"resize: method must be one of {sorted(_RESIZE_OPS)}, "
                         f"not {method!r}")
    return op(_RESIZE_OPS[method], [images], size=[int(s) for s in size],
              antialias=bool(antialias))


def center_crop(image, size):
    return op("CenterCrop", [image], size=[int(s) for s in size])


def crop_to_bounding_box(image, offset_height, offset_width, target_height,
                         target_width):
    return op("CropToBoundingBox", [image], offset_height=int(offset_height),
              offset_width=int(offset_width), target_height=int(target_height),
              target_width=int(target_width))


def random_crop(image, size, key, seed=0):
    return op("RandomCrop", [image, key], size=[int(s) for s in size],
              seed=int(seed))


def random_flip_left_right(image, key, seed=0):
    return op("RandomFlipLeftRight", [image, key], seed=int(seed))


def random_resized_crop(image, size, key, scale=(0.08, 1.0),
                        ratio=(3 / 4, 4 / 3), seed=0, antialias=True):
    """torchvision's RandomResizedCrop, seeded by ``key`` and ``seed``."""
    return op("RandomResizedCrop", [image, key], size=[int(s) for s in size],
              scale=[float(s) for s in scale], ratio=[float(r) for r in ratio],
              seed=int(seed), antialias=bool(antialias))


def normalize(x, mean, std, scale=1.0):
    """(x * scale - mean) / std per channel (the last dimension), float32."""
    return op("Normalize", [x], mean=[float(m) for m in mean],
              std=[float(s) for s in std], scale=float(scale))


def convert_image_dtype(image):
    """uint8 to float32 in [0, 1] (tf.image.convert_image_dtype)."""
    return normalize(image, [0.0], [1.0], scale=1.0 / 255.0)


def reverse_channels(x):
    """RGB to BGR and back."""
    return op("ReverseChannels", [x])


def transpose(x, perm):
    return op("Transpose", [x], perm=[int(p) for p in perm])
