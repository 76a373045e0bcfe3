"""The model under construction and the random draws of
ops_against_ort.py: shapes that broadcast, values with edge cases, axes,
convolution windows, quantized operands."""
import numpy as np
from onnx import helper, mapping, numpy_helper

OPSET = 17


class Case:
    """One model under construction: a node (or two) and its operands,
    each either fed at run time or stored as an initializer."""

    def __init__(self, rng):
        self.rng = rng
        self.nodes = []
        self.inputs = []
        self.initializers = []
        self.feeds = {}
        self.outputs = []
        self.count = 0
        self.opset = OPSET
        self.contrib = False  # whether the node is com.microsoft's
        # How far an integer output may be from ONNX Runtime's: 1 where
        # a quantized kernel may round a tie the other way.
        self.int_tolerance = 0

    def name(self, stem):
        self.count += 1
        return f"{stem}{self.count}"

    def operand(self, array, constant=None):
        """An operand: constant (an initializer) or fed, at random unless
        `constant` says; fed operands keep their shapes in the graph."""
        array = np.asarray(array)
        name = self.name("in")
        if constant is None:
            constant = bool(self.rng.integers(2))
        if constant:
            self.initializers.append(numpy_helper.from_array(array, name))
        else:
            self.inputs.append(helper.make_tensor_value_info(
                name, mapping.NP_TYPE_TO_TENSOR_TYPE[array.dtype],
                list(array.shape)))
            self.feeds[name] = array
        return name

    def node(self, op_type, inputs, out_types, **attrs):
        """Adds a node whose outputs all become graph outputs; out_types
        are their ONNX element types (shapes left to the runtimes), None
        for an output left out."""
        names = ["" if elem is None else self.name("out") for elem in out_types]
        domain = "com.microsoft" if self.contrib else ""
        self.nodes.append(helper.make_node(op_type, inputs, names,
                                           name=self.name("n"),
                                           domain=domain, **attrs))
        for name, elem in zip(names, out_types):
            if name:
                self.outputs.append(helper.make_tensor_value_info(
                    name, elem, None))
        return names

    def inner(self, op_type, inputs, count=1, **attrs):
        """Adds a node whose outputs stay inside the graph; returns them."""
        names = [self.name("mid") for _ in range(count)]
        domain = "com.microsoft" if self.contrib else ""
        self.nodes.append(helper.make_node(op_type, inputs, names,
                                           name=self.name("n"),
                                           domain=domain, **attrs))
        return names

    def proto(self):
        graph = helper.make_graph(self.nodes, "case", self.inputs,
                                  self.outputs, self.initializers)
        imports = [helper.make_opsetid("", self.opset)]
        if self.contrib:
            imports.append(helper.make_opsetid("com.microsoft", 1))
        return helper.make_model(graph, opset_imports=imports, ir_version=8)


def shape(rng, rank=None, low=1, high=5):
    if rank is None:
        rank = int(rng.integers(0, 5))
    return tuple(int(d) for d in rng.integers(low, high + 1, size=rank))


def broadcast_partner(rng, dims):
    """A shape that broadcasts with dims: some trailing dimensions, each
    kept or made 1; sometimes dims with 1s where the partner is wider."""
    keep = int(rng.integers(0, len(dims) + 1))
    partner = [d if rng.random() < 0.6 else 1 for d in dims[len(dims) - keep:]]
    return tuple(partner)


def with_ones(rng, dims):
    return tuple(1 if rng.random() < 0.3 else d for d in dims)


# float32 thrice: ONNX Runtime has no double kernel for many operators.
FLOATS = (np.float32, np.float32, np.float32, np.float64)


INTS = (np.int32, np.int64)


def values(rng, dims, dtype, special=0.0, low=-4, high=5):
    """Random values; `special`: the share of floats drawn from NaN, the
    infinities, the signed zeros and huge and tiny numbers."""
    dims = tuple(dims)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=dims).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return rng.integers(max(low, info.min), min(high, info.max),
                            size=dims, endpoint=False).astype(dtype)
    array = np.array(rng.standard_normal(dims) * 2, dtype=dtype)
    if special:
        huge = min(1e30, float(np.finfo(dtype).max) / 2)
        tiny = max(1e-30, float(np.finfo(dtype).tiny))
        edges = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, huge, -huge,
                          tiny, 0.5, -0.5, 1.5, 2.5], dtype=dtype)
        pick = rng.random(dims) < special
        array[pick] = rng.choice(edges, size=int(pick.sum()))
    return np.asarray(array, dtype=dtype)


def elem(dtype):
    """The ONNX element type of a NumPy type (an ONNX type passes as is)."""
    if isinstance(dtype, int):
        return dtype
    return mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)]


def axis_in(rng, rank, negative=True):
    axis = int(rng.integers(0, rank))
    return axis - rank if negative and rng.random() < 0.4 else axis


def conv_geometry(c, spatial, transpose=False):
    attrs = {}
    kernel = tuple(int(v) for v in c.rng.integers(1, 4, size=spatial))
    strides = tuple(int(v) for v in c.rng.integers(1, 4, size=spatial))
    dilations = tuple(int(v) for v in c.rng.integers(1, 3, size=spatial))
    if c.rng.random() < 0.7:
        attrs["strides"] = list(strides)
    else:
        strides = (1,) * spatial
    if c.rng.random() < 0.5:
        attrs["dilations"] = list(dilations)
    else:
        dilations = (1,) * spatial
    pad_mode = c.rng.random()
    if pad_mode < 0.2:
        attrs["auto_pad"] = str(c.rng.choice(["SAME_UPPER", "SAME_LOWER",
                                              "VALID"]))
    elif pad_mode < 0.8:
        attrs["pads"] = [int(v) for v in c.rng.integers(
            0, max(kernel) + 1, size=2 * spatial)]
    return kernel, strides, dilations, attrs


def quantized_operand(c, dims, dtype, constant=None):
    """A quantized tensor, its scale and its zero point, as operands."""
    info = np.iinfo(dtype)
    q = c.rng.integers(info.min, info.max + 1, size=dims).astype(dtype)
    scale = np.array(c.rng.uniform(0.01, 0.2), np.float32)
    zero = np.array(c.rng.integers(info.min // 4 + 64 if info.min == 0 else
                                   -20, 20 if info.min else 160), dtype)
    return [c.operand(q, constant), c.operand(scale), c.operand(zero)]


def constant_value(c, name):
    """The value of operand `name`, fed or stored."""
    if name in c.feeds:
        return c.feeds[name]
    for tensor in c.initializers:
        if tensor.name == name:
            return numpy_helper.to_array(tensor)
    return None
