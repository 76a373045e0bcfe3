#!/usr/bin/python3
"""Differential test of weft's ONNX operators: one random node per model,
with random shapes, attributes, data types and values, run in weft and
(with --ort) in ONNX Runtime.

    PYTHONPATH=build/python tests/onnx/ops_against_ort/ops_against_ort.py
        [--seeds FIRST:LAST] [--ort NODE_MODULES] [--save DIR]
        [--only OP[,OP...]] [--save-all DIR] [--trace] [--verbose]

The ONNX node suite gives each operator a handful of fixed cases, often
with every weight one value or every attribute at its default; a kernel
can pass all of them and still be wrong where real models go (GRU's
reset gate was). Each seed picks one operator (about 150: opset 17's,
newer ones at opsets 18 to 21, recurrent layers with every activation,
and ONNX Runtime's com.microsoft operators that weft reads) and draws
what the suite leaves out: broadcast shapes, negative axes, every
attribute's values, integer and double types, constant or fed operands,
values at the edges (NaN, infinities, signed zeros) where the operator
defines them.

What must hold, per model:
- weft either runs it or refuses it with an error (Python exception),
  never a crash;
- the outputs at (inter, intra) = (1, 2) and (2, 2) are bitwise those at
  (1, 1) (docs/DESIGN.md, determinism);
- for RoiAlign, STFT and AffineGrid, the outputs equal the NumPy
  references of references.py (ONNX Runtime differs from ONNX on them);
- with --ort: where ONNX Runtime (graph optimizations off) runs the model,
  weft runs it too and gives the same types, shapes and values (integers
  and booleans exactly, quantized outputs of com.microsoft operators
  within one step; floats within 1e-5 of the output's scale plus 1e-5
  relative; NaN where ONNX Runtime has NaN). Where the values differ in a
  way docs/onnx.md lists ("Where ONNX Runtime differs", each checked
  against ONNX's definition), the model counts as "differ as
  documented". Where ONNX Runtime refuses a model, weft's verdict is
  printed with --verbose, not judged: ONNX Runtime refuses some valid
  models (double kernels it lacks) and accepts some invalid ones.

Without --ort (as ctest runs it), a model weft refuses is counted, not
failed. Exits 1 on any failure; --save writes each failing model and its
feeds.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
from onnx import TensorProto, helper, mapping, numpy_helper

import weft
from references import REFERENCES

HERE = os.path.dirname(os.path.abspath(__file__))
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


# --- drawing shapes and values -----------------------------------------------


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


# --- the operators -----------------------------------------------------------


def activation(op_type, draw=None, dtypes=FLOATS):
    def make(c):
        dtype = c.rng.choice(dtypes)
        x = c.operand(values(c.rng, shape(c.rng), dtype, 0.05), False)
        c.node(op_type, [x], [elem(dtype)], **(draw(c.rng) if draw else {}))
    return make


def binary(op_type, dtypes, result=None, special=0.03, nonzero=False,
           **attrs):
    def make(c):
        dtype = c.rng.choice(dtypes)
        a_dims = shape(c.rng)
        b_dims = broadcast_partner(c.rng, a_dims)
        a_dims = with_ones(c.rng, a_dims)
        if c.rng.random() < 0.5:
            a_dims, b_dims = b_dims, a_dims
        a = values(c.rng, a_dims, dtype, special)
        b = values(c.rng, b_dims, dtype, special)
        if nonzero and np.issubdtype(dtype, np.integer):
            b[b == 0] = 3
        inputs = [c.operand(a), c.operand(b)]
        c.node(op_type, inputs, [elem(result or dtype)], **attrs)
    return make


def variadic(op_type, dtypes=FLOATS):
    def make(c):
        dtype = c.rng.choice(dtypes)
        full = shape(c.rng)
        inputs = []
        for _ in range(int(c.rng.integers(1, 4))):
            dims = with_ones(c.rng, broadcast_partner(c.rng, full))
            inputs.append(c.operand(values(c.rng, dims, dtype, 0.02)))
        c.node(op_type, inputs, [elem(dtype)])
    return make


def pow_op(c):
    base_type = c.rng.choice(FLOATS + INTS)
    exp_type = c.rng.choice(FLOATS + INTS)
    dims = shape(c.rng)
    base = values(c.rng, dims, base_type, 0.03)
    if base_type in INTS and exp_type in FLOATS:
        # A negative integer to a fractional power is NaN, zero to a
        # negative one infinite, and neither has an integer: undefined.
        # Keep such bases at one or above.
        base = np.maximum(np.abs(base), 1).astype(base_type)
    # An integer result out of its type's range is undefined too: no
    # infinities or huge exponents for integer bases.
    exponent = values(c.rng, broadcast_partner(c.rng, dims), exp_type,
                      0.0 if base_type in INTS else 0.03, low=0, high=4)
    c.node("Pow", [c.operand(base), c.operand(exponent)], [elem(base_type)])


def mod_op(c):
    fmod = int(c.rng.integers(2))
    dtype = c.rng.choice(FLOATS) if fmod else c.rng.choice(FLOATS + INTS)
    make = binary("Mod", [dtype], special=0.0, nonzero=True, fmod=fmod)
    make(c)


def bit_shift(c):
    dtype = c.rng.choice([np.uint8, np.uint32, np.uint64])
    dims = shape(c.rng)
    x = values(c.rng, dims, dtype, low=0, high=200)
    amount = values(c.rng, broadcast_partner(c.rng, dims), dtype, low=0,
                    high=8)
    c.node("BitShift", [c.operand(x), c.operand(amount)], [elem(dtype)],
           direction=str(c.rng.choice(["LEFT", "RIGHT"])))


def where_op(c):
    dtype = c.rng.choice(FLOATS + INTS)
    full = shape(c.rng)
    parts = [with_ones(c.rng, broadcast_partner(c.rng, full))
             for _ in range(3)]
    cond = values(c.rng, parts[0], np.bool_)
    c.node("Where", [c.operand(cond), c.operand(values(c.rng, parts[1], dtype)),
                     c.operand(values(c.rng, parts[2], dtype))],
           [elem(dtype)])


def clip_op(c):
    dtype = c.rng.choice(FLOATS + INTS)
    x = c.operand(values(c.rng, shape(c.rng), dtype, 0.05))
    inputs = [x]
    low = float(c.rng.integers(-3, 1))
    high = float(c.rng.integers(0, 4))
    if c.rng.random() < 0.7:
        inputs.append(c.operand(np.array(low, dtype=dtype)))
    else:
        inputs.append("")
    if c.rng.random() < 0.7:
        inputs.append(c.operand(np.array(high, dtype=dtype)))
    while inputs and inputs[-1] == "":
        inputs.pop()
    c.node("Clip", inputs, [elem(dtype)])


def prelu(c):
    dtype = c.rng.choice(FLOATS)
    dims = shape(c.rng, rank=int(c.rng.integers(1, 5)))
    slope_dims = broadcast_partner(c.rng, dims)
    c.node("PRelu", [c.operand(values(c.rng, dims, dtype, 0.05), False),
                     c.operand(values(c.rng, slope_dims, dtype))],
           [elem(dtype)])


def cast_op(c):
    kinds = [np.float32, np.float64, np.int32, np.int64, np.int8, np.uint8,
             np.bool_, np.float16, np.int16, np.uint16]
    source = kinds[int(c.rng.integers(len(kinds)))]
    target = kinds[int(c.rng.integers(len(kinds)))]
    x = values(c.rng, shape(c.rng), source, 0.0, low=-100, high=100)
    if np.issubdtype(source, np.floating) and not (
            np.issubdtype(target, np.floating) or target == np.bool_):
        # Out-of-range float-to-integer casts are undefined (C++ and
        # ONNX alike): keep the values inside the target's range.
        info = np.iinfo(target)
        x = np.clip(np.trunc(x * 10), max(info.min, -1000),
                    min(info.max, 1000)).astype(source)
    elif np.issubdtype(source, np.integer) and np.issubdtype(
            target, np.integer) and np.iinfo(target).min == 0:
        x = np.abs(x).astype(source)
    c.node("Cast", [c.operand(x, False)], [elem(target)],
           to=elem(target))


def reduce_op(op_type):
    def make(c):
        dtype = c.rng.choice(FLOATS + (INTS if op_type in (
            "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
            "ReduceSumSquare", "ReduceL1") else ()))
        rank = int(c.rng.integers(1, 5))
        dims = shape(c.rng, rank, low=1, high=4)
        x = values(c.rng, dims, dtype, 0.0, low=-3, high=4)
        if op_type in ("ReduceLogSum", "ReduceL2", "ReduceLogSumExp") or (
                op_type == "ReduceProd"):
            x = np.abs(x) + 0.5 if np.issubdtype(dtype, np.floating) else x
        count = int(c.rng.integers(0, rank + 1))
        axes = sorted({axis_in(c.rng, rank) % rank
                       for _ in range(count)})
        axes = [a - rank if c.rng.random() < 0.3 else a for a in axes]
        attrs = {"keepdims": int(c.rng.integers(2))}
        inputs = [c.operand(x, False)]
        if op_type == "ReduceSum":
            if axes or c.rng.random() < 0.5:
                inputs.append(c.operand(np.array(axes, dtype=np.int64)))
            if not axes:
                attrs["noop_with_empty_axes"] = int(c.rng.integers(2))
        elif axes:
            attrs["axes"] = axes
        c.node(op_type, inputs, [elem(dtype)], **attrs)
    return make


def arg_op(op_type):
    def make(c):
        dtype = c.rng.choice(FLOATS + INTS)
        rank = int(c.rng.integers(1, 5))
        x = values(c.rng, shape(c.rng, rank), dtype, low=-2, high=3)
        c.node(op_type, [c.operand(x, False)], [TensorProto.INT64],
               axis=axis_in(c.rng, rank), keepdims=int(c.rng.integers(2)),
               select_last_index=int(c.rng.integers(2)))
    return make


def softmax_op(op_type):
    def make(c):
        dtype = c.rng.choice(FLOATS)
        rank = int(c.rng.integers(1, 5))
        x = values(c.rng, shape(c.rng, rank), dtype, 0.0)
        c.node(op_type, [c.operand(x, False)], [elem(dtype)],
               axis=axis_in(c.rng, rank))
    return make


def reshape_op(c):
    dims = shape(c.rng, int(c.rng.integers(1, 5)))
    x = values(c.rng, dims, np.float32)
    total = int(np.prod(dims))
    target = []
    left = total
    for _ in range(int(c.rng.integers(1, 4))):
        divisors = [d for d in range(1, left + 1) if left % d == 0]
        d = int(c.rng.choice(divisors))
        target.append(d)
        left //= d
    target.append(left)
    if c.rng.random() < 0.4:
        target[int(c.rng.integers(len(target)))] = -1
    for i in range(min(len(target), len(dims))):
        if target[i] == dims[i] and c.rng.random() < 0.4:
            target[i] = 0
    c.node("Reshape", [c.operand(x, False),
                       c.operand(np.array(target, dtype=np.int64))],
           [TensorProto.FLOAT])


def transpose_op(c):
    rank = int(c.rng.integers(0, 6))
    x = values(c.rng, shape(c.rng, rank), c.rng.choice(FLOATS + INTS))
    attrs = {}
    if c.rng.random() < 0.8:
        attrs["perm"] = [int(v) for v in c.rng.permutation(rank)]
    c.node("Transpose", [c.operand(x, False)], [elem(x.dtype)], **attrs)


def squeeze_op(c):
    dims = shape(c.rng, int(c.rng.integers(1, 5)))
    dims = tuple(1 if c.rng.random() < 0.5 else d for d in dims)
    x = values(c.rng, dims, np.float32)
    ones = [i for i, d in enumerate(dims) if d == 1]
    inputs = [c.operand(x, False)]
    if ones and c.rng.random() < 0.7:
        chosen = sorted(set(int(a) for a in c.rng.choice(
            ones, size=int(c.rng.integers(1, len(ones) + 1)))))
        chosen = [a - len(dims) if c.rng.random() < 0.3 else a
                  for a in chosen]
        inputs.append(c.operand(np.array(chosen, dtype=np.int64)))
    c.node("Squeeze", inputs, [TensorProto.FLOAT])


def unsqueeze_op(c):
    dims = shape(c.rng, int(c.rng.integers(0, 4)))
    x = values(c.rng, dims, np.float32)
    count = int(c.rng.integers(1, 3))
    out_rank = len(dims) + count
    axes = [int(a) for a in c.rng.choice(out_rank, size=count,
                                         replace=False)]
    axes = [a - out_rank if c.rng.random() < 0.3 else a for a in axes]
    c.node("Unsqueeze", [c.operand(x, False),
                         c.operand(np.array(axes, dtype=np.int64))],
           [TensorProto.FLOAT])


def flatten_op(c):
    rank = int(c.rng.integers(0, 5))
    x = values(c.rng, shape(c.rng, rank), np.float32)
    axis = int(c.rng.integers(-rank, rank + 1)) if rank else 0
    c.node("Flatten", [c.operand(x, False)], [TensorProto.FLOAT], axis=axis)


def expand_op(c):
    full = shape(c.rng, int(c.rng.integers(1, 5)))
    x_dims = with_ones(c.rng, broadcast_partner(c.rng, full))
    target = with_ones(c.rng, full) if c.rng.random() < 0.3 else full
    x = values(c.rng, x_dims, c.rng.choice(FLOATS + INTS))
    c.node("Expand", [c.operand(x, False),
                      c.operand(np.array(target, dtype=np.int64))],
           [elem(x.dtype)])


def tile_op(c):
    dims = shape(c.rng, int(c.rng.integers(1, 4)))
    x = values(c.rng, dims, c.rng.choice(FLOATS + INTS))
    repeats = c.rng.integers(0 if c.rng.random() < 0.1 else 1, 4,
                             size=len(dims)).astype(np.int64)
    c.node("Tile", [c.operand(x, False), c.operand(repeats)],
           [elem(x.dtype)])


def concat_op(c):
    rank = int(c.rng.integers(1, 5))
    dims = list(shape(c.rng, rank))
    axis = axis_in(c.rng, rank)
    inputs = []
    dtype = c.rng.choice(FLOATS + INTS)
    for _ in range(int(c.rng.integers(1, 4))):
        dims[axis] = int(c.rng.integers(0 if c.rng.random() < 0.15 else 1, 4))
        inputs.append(c.operand(values(c.rng, dims, dtype)))
    c.node("Concat", inputs, [elem(dtype)], axis=axis)


def split_op(c):
    rank = int(c.rng.integers(1, 5))
    dims = shape(c.rng, rank, low=1, high=6)
    axis = axis_in(c.rng, rank)
    length = dims[axis]
    x = c.operand(values(c.rng, dims, np.float32), False)
    if c.rng.random() < 0.5:
        parts, left = [], length
        while left > 0 and len(parts) < 3:
            part = int(c.rng.integers(0, left + 1))
            parts.append(part)
            left -= part
        parts.append(left)
        c.node("Split", [x, c.operand(np.array(parts, dtype=np.int64))],
               [TensorProto.FLOAT] * len(parts), axis=axis)
    else:
        divisors = [d for d in range(1, length + 1) if length % d == 0]
        count = int(c.rng.choice(divisors))
        c.node("Split", [x], [TensorProto.FLOAT] * count, axis=axis)


def slice_op(c):
    rank = int(c.rng.integers(1, 5))
    dims = shape(c.rng, rank, low=1, high=7)
    x = values(c.rng, dims, c.rng.choice(FLOATS + INTS))
    count = int(c.rng.integers(1, rank + 1))
    axes = [int(a) for a in c.rng.choice(rank, size=count, replace=False)]
    starts, ends, steps = [], [], []
    for a in axes:
        n = dims[a]
        step = int(c.rng.choice([1, 1, 2, 3, -1, -2]))
        bound = [-n - 3, -n, -1, 0, 1, n - 1, n, n + 4,
                 -(2 ** 62), 2 ** 62]
        starts.append(int(c.rng.choice(bound)) if c.rng.random() < 0.5
                      else int(c.rng.integers(-n, n)))
        ends.append(int(c.rng.choice(bound)) if c.rng.random() < 0.5
                    else int(c.rng.integers(-n, n + 1)))
        steps.append(step)
    axes = [a - rank if c.rng.random() < 0.3 else a for a in axes]
    inputs = [c.operand(x, False), c.operand(np.array(starts, np.int64)),
              c.operand(np.array(ends, np.int64))]
    if c.rng.random() < 0.8:
        inputs.append(c.operand(np.array(axes, np.int64)))
        if c.rng.random() < 0.8:
            inputs.append(c.operand(np.array(steps, np.int64)))
    elif len(axes) != rank or sorted(axes) != list(range(rank)):
        inputs.append(c.operand(np.array(axes, np.int64)))
    c.node("Slice", inputs, [elem(x.dtype)])


def pad_op(c):
    rank = int(c.rng.integers(1, 5))
    dims = shape(c.rng, rank, low=1, high=5)
    mode = str(c.rng.choice(["constant", "reflect", "edge"]))
    dtype = c.rng.choice(FLOATS + INTS)
    x = values(c.rng, dims, dtype)
    pads = []
    for _ in range(2):
        for d in dims:
            limit = d - 1 if mode == "reflect" else 3
            low = -min(d - 1, 2) if mode == "constant" else 0
            pads.append(int(c.rng.integers(low, max(limit, 0) + 1)))
    inputs = [c.operand(x, False), c.operand(np.array(pads, np.int64))]
    if mode == "constant" and c.rng.random() < 0.6:
        inputs.append(c.operand(np.array(1.5 if dtype in FLOATS else 7,
                                         dtype=dtype)))
    c.node("Pad", inputs, [elem(dtype)], mode=mode)


def gather_op(c):
    rank = int(c.rng.integers(1, 4))
    dims = shape(c.rng, rank)
    axis = axis_in(c.rng, rank)
    n = dims[axis]
    x = values(c.rng, dims, c.rng.choice(FLOATS + INTS))
    index_type = c.rng.choice(INTS)
    indices = c.rng.integers(-n, n, size=shape(c.rng, int(c.rng.integers(
        0, 3)))).astype(index_type)
    c.node("Gather", [c.operand(x, False), c.operand(indices)],
           [elem(x.dtype)], axis=axis)


def gather_elements(c):
    rank = int(c.rng.integers(1, 4))
    dims = shape(c.rng, rank)
    axis = axis_in(c.rng, rank)
    n = dims[axis]
    index_dims = list(dims)
    for i in range(rank):
        index_dims[i] = int(c.rng.integers(1, 5)) if i == axis % rank else \
            int(c.rng.integers(1, dims[i] + 1))
    x = values(c.rng, dims, np.float32)
    indices = c.rng.integers(-n, n, size=index_dims).astype(
        c.rng.choice(INTS))
    c.node("GatherElements", [c.operand(x, False), c.operand(indices)],
           [TensorProto.FLOAT], axis=axis)


def gather_nd(c):
    rank = int(c.rng.integers(1, 5))
    dims = shape(c.rng, rank)
    batch = int(c.rng.integers(0, rank))
    depth = int(c.rng.integers(1, rank - batch + 1))
    index_dims = list(dims[:batch]) + list(shape(c.rng, int(
        c.rng.integers(0, 3)))) + [depth]
    indices = np.zeros(index_dims, dtype=np.int64)
    for k in range(depth):
        n = dims[batch + k]
        indices[..., k] = c.rng.integers(-n, n, size=index_dims[:-1])
    x = values(c.rng, dims, c.rng.choice(FLOATS + INTS))
    c.node("GatherND", [c.operand(x, False), c.operand(indices)],
           [elem(x.dtype)], batch_dims=batch)


def scatter_elements(c):
    rank = int(c.rng.integers(1, 4))
    dims = shape(c.rng, rank)
    axis = axis_in(c.rng, rank)
    n = dims[axis]
    reduction = str(c.rng.choice(["none", "add", "mul"]))
    index_dims = [int(c.rng.integers(1, d + 1)) for d in dims]
    # Without a reduction, two updates to one element leave it undefined:
    # draw distinct indices along the axis for each line.
    indices = np.zeros(index_dims, dtype=np.int64)
    moved = np.moveaxis(indices, axis, -1)
    for line in np.ndindex(moved.shape[:-1]):
        chosen = c.rng.permutation(n)[:moved.shape[-1]]
        moved[line] = chosen - n * (c.rng.random(len(chosen)) < 0.3)
    dtype = c.rng.choice(FLOATS + INTS)
    x = values(c.rng, dims, dtype)
    updates = values(c.rng, index_dims, dtype)
    c.node("ScatterElements", [c.operand(x, False), c.operand(indices),
                               c.operand(updates)], [elem(dtype)],
           axis=axis, reduction=reduction)


def scatter_nd(c):
    rank = int(c.rng.integers(1, 4))
    dims = shape(c.rng, rank)
    depth = int(c.rng.integers(1, rank + 1))
    reduction = str(c.rng.choice(["none", "add", "mul"]))
    cells = list(np.ndindex(*dims[:depth]))
    count = int(c.rng.integers(1, len(cells) + 1))
    chosen = [cells[i] for i in c.rng.permutation(len(cells))[:count]]
    indices = np.array(chosen, dtype=np.int64).reshape(count, depth)
    indices = np.where(c.rng.random(indices.shape) < 0.3,
                       indices - np.array(dims[:depth]), indices)
    dtype = c.rng.choice(FLOATS + INTS)
    updates = values(c.rng, (count,) + tuple(dims[depth:]), dtype)
    c.node("ScatterND", [c.operand(values(c.rng, dims, dtype), False),
                         c.operand(indices), c.operand(updates)],
           [elem(dtype)], reduction=reduction)


def cumsum_op(c):
    rank = int(c.rng.integers(1, 4))
    dtype = c.rng.choice(FLOATS + INTS)
    x = values(c.rng, shape(c.rng, rank), dtype)
    axis = np.array(axis_in(c.rng, rank),
                    dtype=c.rng.choice([np.int32, np.int64]))
    c.node("CumSum", [c.operand(x, False), c.operand(axis)], [elem(dtype)],
           exclusive=int(c.rng.integers(2)), reverse=int(c.rng.integers(2)))


def topk_op(c):
    rank = int(c.rng.integers(1, 4))
    dims = shape(c.rng, rank, high=6)
    axis = axis_in(c.rng, rank)
    dtype = c.rng.choice(FLOATS + INTS)
    # Distinct values: ties may come back in either order where
    # sorted = 0, and ONNX orders ties by index only where sorted.
    x = c.rng.permutation(int(np.prod(dims))).reshape(dims).astype(dtype)
    k = int(c.rng.integers(0, dims[axis] + 1))
    largest = int(c.rng.integers(2))
    c.node("TopK", [c.operand(x, False),
                    c.operand(np.array([k], np.int64))],
           [elem(dtype), TensorProto.INT64], axis=axis, largest=largest,
           sorted=1)


def trilu_op(c):
    rank = int(c.rng.integers(2, 4))
    x = values(c.rng, shape(c.rng, rank, high=6), c.rng.choice(FLOATS + INTS))
    inputs = [c.operand(x, False)]
    if c.rng.random() < 0.7:
        inputs.append(c.operand(np.array(int(c.rng.integers(-5, 6)),
                                         np.int64)))
    c.node("Trilu", inputs, [elem(x.dtype)], upper=int(c.rng.integers(2)))


def depth_to_space(c):
    block = int(c.rng.integers(1, 4))
    dims = (int(c.rng.integers(1, 3)), block * block * int(
        c.rng.integers(1, 4)), int(c.rng.integers(1, 4)),
        int(c.rng.integers(1, 4)))
    x = values(c.rng, dims, np.float32)
    c.node("DepthToSpace", [c.operand(x, False)], [TensorProto.FLOAT],
           blocksize=block, mode=str(c.rng.choice(["DCR", "CRD"])))


def space_to_depth(c):
    block = int(c.rng.integers(1, 4))
    dims = (int(c.rng.integers(1, 3)), int(c.rng.integers(1, 4)),
            block * int(c.rng.integers(1, 4)), block * int(
                c.rng.integers(1, 4)))
    c.node("SpaceToDepth", [c.operand(values(c.rng, dims, np.float32),
                                      False)], [TensorProto.FLOAT],
           blocksize=block)


def one_hot(c):
    rank = int(c.rng.integers(0, 3))
    depth = int(c.rng.integers(1, 6))
    indices = c.rng.integers(-depth, depth, size=shape(c.rng, rank)).astype(
        c.rng.choice(INTS + FLOATS))
    axis = int(c.rng.integers(-rank - 1, rank + 1))
    dtype = c.rng.choice(FLOATS + INTS)
    c.node("OneHot", [c.operand(indices, False),
                      c.operand(np.array(depth, c.rng.choice(INTS))),
                      c.operand(np.array([-2, 5], dtype))],
           [elem(dtype)], axis=axis)


def range_op(c):
    dtype = c.rng.choice(FLOATS + INTS)
    start = int(c.rng.integers(-5, 5))
    delta = int(c.rng.choice([-3, -2, -1, 1, 2, 3]))
    limit = start + delta * int(c.rng.integers(-1, 7))
    if dtype in FLOATS:
        start, delta = start + 0.25, delta * 0.5
    c.node("Range", [c.operand(np.array(v, dtype)) for v in
                     (start, limit, delta)], [elem(dtype)])


def shape_op(c):
    rank = int(c.rng.integers(0, 5))
    attrs = {}
    if c.rng.random() < 0.6:
        attrs["start"] = int(c.rng.integers(-rank - 2, rank + 2))
    if c.rng.random() < 0.6:
        attrs["end"] = int(c.rng.integers(-rank - 2, rank + 2))
    x = c.operand(values(c.rng, shape(c.rng, rank), np.float32), False)
    c.node("Shape", [x], [TensorProto.INT64], **attrs)


def matmul_op(c):
    dtype = c.rng.choice(FLOATS + INTS)
    m, k, n = (int(v) for v in c.rng.integers(1, 9, size=3))
    batch = shape(c.rng, int(c.rng.integers(0, 3)))
    a_dims = (with_ones(c.rng, batch) + (m, k)) if c.rng.random() < 0.8 \
        else (k,)
    b_dims = (broadcast_partner(c.rng, batch) + (k, n)) \
        if c.rng.random() < 0.8 else (k,)
    c.node("MatMul", [c.operand(values(c.rng, a_dims, dtype)),
                      c.operand(values(c.rng, b_dims, dtype))],
           [elem(dtype)])


def gemm_op(c):
    dtype = c.rng.choice(FLOATS)
    m, k, n = (int(v) for v in c.rng.integers(1, 9, size=3))
    trans_a, trans_b = (int(v) for v in c.rng.integers(0, 2, size=2))
    a = values(c.rng, (k, m) if trans_a else (m, k), dtype)
    b = values(c.rng, (n, k) if trans_b else (k, n), dtype)
    inputs = [c.operand(a), c.operand(b)]
    if c.rng.random() < 0.7:
        inputs.append(c.operand(values(c.rng, with_ones(c.rng, (m, n))[
            2 - int(c.rng.integers(0, 3)):], dtype)))
    c.node("Gemm", inputs, [elem(dtype)], transA=trans_a, transB=trans_b,
           alpha=float(c.rng.choice([1.0, 0.5, -2.0])),
           beta=float(c.rng.choice([1.0, 0.0, 3.0])))


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


def conv_op(c):
    spatial = int(c.rng.integers(1, 4))
    kernel, _, dilations, attrs = conv_geometry(c, spatial)
    group = int(c.rng.choice([1, 1, 2, 3]))
    channels_in = group * int(c.rng.integers(1, 4))
    channels_out = group * int(c.rng.integers(1, 4))
    if c.rng.random() < 0.2:
        group = channels_in = channels_out = int(c.rng.integers(2, 6))
    image = tuple(int((k - 1) * d + 1 + c.rng.integers(0, 6))
                  for k, d in zip(kernel, dilations))
    dtype = c.rng.choice(FLOATS)
    x = values(c.rng, (int(c.rng.integers(1, 3)), channels_in) + image, dtype)
    w = values(c.rng, (channels_out, channels_in // group) + kernel, dtype)
    inputs = [c.operand(x, False), c.operand(w)]
    if c.rng.random() < 0.6:
        inputs.append(c.operand(values(c.rng, (channels_out,), dtype)))
    if c.rng.random() < 0.5:
        attrs["kernel_shape"] = list(kernel)
    c.node("Conv", inputs, [elem(dtype)], group=group, **attrs)


def conv_transpose_op(c):
    spatial = int(c.rng.integers(1, 4))
    kernel, strides, dilations, attrs = conv_geometry(c, spatial, True)
    group = int(c.rng.choice([1, 1, 2]))
    channels_in = group * int(c.rng.integers(1, 4))
    channels_out = group * int(c.rng.integers(1, 4))
    image = tuple(int(v) for v in c.rng.integers(1, 5, size=spatial))
    if c.rng.random() < 0.4:
        attrs["output_padding"] = [int(c.rng.integers(0, max(s, d)))
                                   for s, d in zip(strides, dilations)]
    if c.rng.random() < 0.2 and "auto_pad" not in attrs:
        attrs.pop("pads", None)
        attrs["output_shape"] = [int((i - 1) * s + (k - 1) * d + 1 +
                                     c.rng.integers(0, s))
                                 for i, s, k, d in zip(image, strides,
                                                       kernel, dilations)]
    x = values(c.rng, (int(c.rng.integers(1, 3)), channels_in) + image,
               np.float32)
    w = values(c.rng, (channels_in, channels_out // group) + kernel,
               np.float32)
    inputs = [c.operand(x, False), c.operand(w)]
    if c.rng.random() < 0.6:
        inputs.append(c.operand(values(c.rng, (channels_out,), np.float32)))
    c.node("ConvTranspose", inputs, [TensorProto.FLOAT], group=group,
           **attrs)


def pool_op(op_type):
    def make(c):
        spatial = int(c.rng.integers(1, 4))
        kernel, _, dilations, attrs = conv_geometry(c, spatial)
        attrs["kernel_shape"] = list(kernel)
        if op_type != "MaxPool":
            attrs.pop("dilations", None)
            dilations = (1,) * spatial
        if op_type == "AveragePool":
            attrs["count_include_pad"] = int(c.rng.integers(2))
        if op_type == "LpPool":
            attrs["p"] = int(c.rng.choice([1, 2, 3]))
        elif c.rng.random() < 0.4:
            attrs["ceil_mode"] = 1
        if "pads" in attrs:  # a pad must be smaller than its window
            attrs["pads"] = [min(p, kernel[i % spatial] - 1)
                             for i, p in enumerate(attrs["pads"])]
        image = tuple(int((k - 1) * d + 1 + c.rng.integers(0, 6))
                      for k, d in zip(kernel, dilations))
        x = values(c.rng, (int(c.rng.integers(1, 3)), int(
            c.rng.integers(1, 4))) + image, np.float32)
        outputs = [TensorProto.FLOAT]
        if op_type == "MaxPool" and c.rng.random() < 0.4:
            outputs.append(TensorProto.INT64)
            attrs["storage_order"] = int(c.rng.integers(2))
            # Indices of equal maxima are unspecified: distinct values.
            x = c.rng.permutation(x.size).reshape(x.shape).astype(np.float32)
        c.node(op_type, [c.operand(x, False)], outputs, **attrs)
    return make


def global_pool(op_type):
    def make(c):
        x = values(c.rng, (int(c.rng.integers(1, 3)), int(c.rng.integers(
            1, 4))) + shape(c.rng, int(c.rng.integers(1, 4))), np.float32)
        attrs = {"p": int(c.rng.choice([1, 2, 3]))} \
            if op_type == "GlobalLpPool" else {}
        c.node(op_type, [c.operand(x, False)], [TensorProto.FLOAT], **attrs)
    return make


def batch_norm(c):
    channels = int(c.rng.integers(1, 5))
    dims = (int(c.rng.integers(1, 3)), channels) + shape(c.rng, int(
        c.rng.integers(0, 3)))
    dtype = c.rng.choice(FLOATS)
    scale, bias, mean = (values(c.rng, (channels,), dtype) for _ in range(3))
    var = np.abs(values(c.rng, (channels,), dtype)) + 0.1
    c.node("BatchNormalization", [c.operand(values(c.rng, dims, dtype), False)]
           + [c.operand(v) for v in (scale, bias, mean, var)], [elem(dtype)],
           epsilon=float(c.rng.choice([1e-5, 1e-3, 0.1])))


def instance_norm(c):
    channels = int(c.rng.integers(1, 5))
    dims = (int(c.rng.integers(1, 3)), channels) + shape(c.rng, int(
        c.rng.integers(1, 3)))
    c.node("InstanceNormalization", [
        c.operand(values(c.rng, dims, np.float32), False),
        c.operand(values(c.rng, (channels,), np.float32)),
        c.operand(values(c.rng, (channels,), np.float32))],
        [TensorProto.FLOAT], epsilon=float(c.rng.choice([1e-5, 0.1])))


def layer_norm(c):
    rank = int(c.rng.integers(1, 4))
    dims = shape(c.rng, rank)
    axis = axis_in(c.rng, rank)
    normalized = dims[axis % rank:]
    dtype = c.rng.choice(FLOATS)
    inputs = [c.operand(values(c.rng, dims, dtype), False),
              c.operand(values(c.rng, with_ones(c.rng, normalized), dtype))]
    if c.rng.random() < 0.6:
        inputs.append(c.operand(values(c.rng, with_ones(c.rng, normalized),
                                       dtype)))
    outputs = [elem(dtype)]
    c.node("LayerNormalization", inputs, outputs, axis=axis,
           epsilon=float(c.rng.choice([1e-5, 0.1])))


def lrn(c):
    dims = (int(c.rng.integers(1, 3)), int(c.rng.integers(1, 7))) + shape(
        c.rng, 2)
    c.node("LRN", [c.operand(values(c.rng, dims, np.float32), False)],
           [TensorProto.FLOAT], size=int(c.rng.integers(1, 6)),
           alpha=float(c.rng.choice([1e-4, 0.5])),
           beta=float(c.rng.choice([0.75, 0.5])),
           bias=float(c.rng.choice([1.0, 2.0])))


def mean_variance(c):
    dims = shape(c.rng, 4)
    axes = sorted(set(int(a) for a in c.rng.choice(4, size=int(
        c.rng.integers(1, 4)))))
    c.node("MeanVarianceNormalization",
           [c.operand(values(c.rng, dims, np.float32), False)],
           [TensorProto.FLOAT], axes=axes)


def lp_norm(c):
    rank = int(c.rng.integers(1, 4))
    c.node("LpNormalization",
           [c.operand(values(c.rng, shape(c.rng, rank), np.float32), False)],
           [TensorProto.FLOAT], axis=axis_in(c.rng, rank),
           p=int(c.rng.choice([1, 2])))


def resize_op(c):
    rank = int(c.rng.integers(1, 5))
    dims = shape(c.rng, rank)
    mode = str(c.rng.choice(["nearest", "linear", "cubic"]))
    if mode != "nearest":  # ONNX Runtime's linear and cubic: the last two
        rank = max(rank, 2)
        dims = shape(c.rng, rank)
    transform = str(c.rng.choice(["half_pixel", "pytorch_half_pixel",
                                  "align_corners", "asymmetric",
                                  "tf_crop_and_resize"]))
    attrs = {"mode": mode, "coordinate_transformation_mode": transform}
    if mode == "nearest":
        attrs["nearest_mode"] = str(c.rng.choice([
            "round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]))
    if mode == "cubic":
        attrs["cubic_coeff_a"] = float(c.rng.choice([-0.75, -0.5]))
        attrs["exclude_outside"] = int(c.rng.integers(2))
    resized = [i for i in range(rank) if i >= rank - 2 or mode == "nearest"]
    x = c.operand(values(c.rng, (1,) * 0 + dims, np.float32), False)
    roi = ""
    if transform == "tf_crop_and_resize":
        low = c.rng.uniform(0, 0.4, size=rank)
        high = c.rng.uniform(0.6, 1.0, size=rank)
        for i in range(rank):
            if i not in resized:
                low[i], high[i] = 0, 1
        roi = c.operand(np.concatenate([low, high]).astype(np.float32))
        attrs["extrapolation_value"] = float(c.rng.choice([0.0, -1.5]))
    if c.rng.random() < 0.5:
        scales = np.ones(rank, np.float32)
        for i in resized:
            scales[i] = float(c.rng.choice([0.5, 0.75, 1.0, 1.5, 2.0, 3.0,
                                            0.6]))
        inputs = [x, roi, c.operand(scales)]
    else:
        sizes = np.array(dims, np.int64)
        for i in resized:
            sizes[i] = int(c.rng.integers(1, 9))
        inputs = [x, roi, "", c.operand(sizes)]
    c.node("Resize", inputs, [TensorProto.FLOAT], **attrs)


def einsum_op(c):
    equation, operand_dims = EINSUMS[int(c.rng.integers(len(EINSUMS)))]
    letters = {}
    for dims in operand_dims:
        for letter in dims:
            letters.setdefault(letter, int(c.rng.integers(1, 5)))
    dtype = c.rng.choice(FLOATS)
    inputs = [c.operand(values(c.rng, [letters[ch] for ch in dims], dtype))
              for dims in operand_dims]
    c.node("Einsum", inputs, [elem(dtype)], equation=str(equation))


EINSUMS = [("ij,jk->ik", ("ij", "jk")), ("bij,bjk->bik", ("bij", "bjk")),
           ("ij->ji", ("ij",)), ("ii->i", ("ii",)), ("ij->", ("ij",)),
           ("i,i->", ("i", "i")), ("i,j->ij", ("i", "j")),
           ("bhqd,bhkd->bhqk", ("bhqd", "bhkd")), ("ij,ij->ij", ("ij", "ij")),
           ("ijk->kji", ("ijk",)), ("ij,kj->ik", ("ij", "kj")),
           ("abc,cd->abd", ("abc", "cd")), ("ij", ("ij",)),
           ("ji", ("ij",)), ("ij,jk", ("ij", "jk")),
           ("ii", ("ii",))]


def quantize_linear(c):
    dtype = c.rng.choice([np.uint8, np.int8])
    rank = int(c.rng.integers(1, 4))
    dims = shape(c.rng, rank)
    per_axis = c.rng.random() < 0.4
    axis = axis_in(c.rng, rank)
    count = (dims[axis],) if per_axis else ()
    scale = (c.rng.uniform(0.01, 0.5, size=count)).astype(np.float32)
    zero = c.rng.integers(0 if dtype == np.uint8 else -20, 30,
                          size=count).astype(dtype)
    x = values(c.rng, dims, np.float32) * 20
    # Ties round to even in ONNX; keep a few exact ties in.
    x.flat[::7] = (np.round(x.flat[::7]) + 0.5) * (scale.flat[0] if
                                                   scale.size else scale)
    inputs = [c.operand(x, False), c.operand(scale)]
    if c.rng.random() < 0.8:
        inputs.append(c.operand(zero))
        out = dtype
    else:
        out = np.uint8
    c.node("QuantizeLinear", inputs, [elem(out)],
           **({"axis": axis} if per_axis else {}))


def dequantize_linear(c):
    dtype = c.rng.choice([np.uint8, np.int8, np.int32])
    rank = int(c.rng.integers(1, 4))
    dims = shape(c.rng, rank)
    per_axis = dtype != np.int32 and c.rng.random() < 0.4
    axis = axis_in(c.rng, rank)
    count = (dims[axis],) if per_axis else ()
    info = np.iinfo(dtype)
    x = c.rng.integers(max(info.min, -1000), min(info.max, 1000) + 1,
                       size=dims).astype(dtype)
    scale = c.rng.uniform(0.01, 0.5, size=count).astype(np.float32)
    inputs = [c.operand(x, False), c.operand(scale)]
    if c.rng.random() < 0.7:
        zero = np.zeros(count, dtype) if dtype == np.int32 else \
            c.rng.integers(max(info.min, -20), 30, size=count).astype(dtype)
        inputs.append(c.operand(zero))
    c.node("DequantizeLinear", inputs, [TensorProto.FLOAT],
           **({"axis": axis} if per_axis else {}))


def dynamic_quantize(c):
    x = values(c.rng, shape(c.rng, int(c.rng.integers(1, 4))), np.float32, 0)
    c.node("DynamicQuantizeLinear", [c.operand(x, False)],
           [TensorProto.UINT8, TensorProto.FLOAT, TensorProto.UINT8])


def matmul_integer(c):
    m, k, n = (int(v) for v in c.rng.integers(1, 9, size=3))
    a_type = c.rng.choice([np.uint8, np.int8])
    b_type = c.rng.choice([np.uint8, np.int8])
    batch = shape(c.rng, int(c.rng.integers(0, 2)))
    a = values(c.rng, batch + (m, k), a_type, low=-128, high=255)
    b = values(c.rng, (k, n), b_type, low=-128, high=255)
    inputs = [c.operand(a, False), c.operand(b)]
    if c.rng.random() < 0.7:
        inputs.append(c.operand(values(c.rng, (), a_type, low=-5, high=9)))
        if c.rng.random() < 0.7:
            b_zero = (n,) if c.rng.random() < 0.5 else ()
            inputs.append(c.operand(values(c.rng, b_zero, b_type, low=-5,
                                           high=9)))
    c.node("MatMulInteger", inputs, [TensorProto.INT32])


def conv_integer(c):
    kernel, _, dilations, attrs = conv_geometry(c, 2)
    channels_in = int(c.rng.integers(1, 4))
    channels_out = int(c.rng.integers(1, 4))
    image = tuple(int((k - 1) * d + 1 + c.rng.integers(0, 4))
                  for k, d in zip(kernel, dilations))
    x = values(c.rng, (1, channels_in) + image, np.uint8, low=0, high=255)
    w = values(c.rng, (channels_out, channels_in) + kernel, np.uint8, low=0,
               high=255)
    inputs = [c.operand(x, False), c.operand(w)]
    if c.rng.random() < 0.7:
        inputs.append(c.operand(np.array(int(c.rng.integers(0, 20)),
                                         np.uint8)))
        if c.rng.random() < 0.7:
            inputs.append(c.operand(np.array(int(c.rng.integers(0, 20)),
                                             np.uint8)))
    c.node("ConvInteger", inputs, [TensorProto.INT32], **attrs)


def qlinear_matmul(c):
    m, k, n = (int(v) for v in c.rng.integers(1, 9, size=3))
    a_type = c.rng.choice([np.uint8, np.int8])
    b_type = c.rng.choice([np.uint8, np.int8])
    out_type = a_type
    a = values(c.rng, (m, k), a_type, low=-128, high=255)
    b = values(c.rng, (k, n), b_type, low=-128, high=255)

    def scale(v):
        return np.array(v, np.float32)
    inputs = [c.operand(a, False), c.operand(scale(0.05)),
              c.operand(values(c.rng, (), a_type, low=-3, high=9)),
              c.operand(b), c.operand(scale(c.rng.uniform(0.01, 0.1))),
              c.operand(values(c.rng, (), b_type, low=-3, high=9)),
              c.operand(scale(c.rng.uniform(2, 20))),
              c.operand(values(c.rng, (), out_type, low=-3, high=9))]
    c.node("QLinearMatMul", inputs, [elem(out_type)])


def compress_op(c):
    rank = int(c.rng.integers(1, 4))
    dims = shape(c.rng, rank)
    attrs = {}
    length = int(np.prod(dims))
    if c.rng.random() < 0.7:
        attrs["axis"] = axis_in(c.rng, rank)
        length = dims[attrs["axis"]]
    condition = c.rng.integers(0, 2, size=int(c.rng.integers(
        0, length + 1))).astype(np.bool_)
    c.node("Compress", [c.operand(values(c.rng, dims, np.float32), False),
                        c.operand(condition)], [TensorProto.FLOAT], **attrs)


def nonzero_op(c):
    x = values(c.rng, shape(c.rng), c.rng.choice(FLOATS + INTS), low=-1,
               high=2)
    c.node("NonZero", [c.operand(x, False)], [TensorProto.INT64])


def reverse_sequence(c):
    batch, time = (int(v) for v in c.rng.integers(1, 5, size=2))
    batch_axis = int(c.rng.integers(2))
    dims = [0, 0] + list(shape(c.rng, int(c.rng.integers(0, 2))))
    dims[batch_axis], dims[1 - batch_axis] = batch, time
    lengths = c.rng.integers(1, time + 1, size=batch).astype(np.int64)
    c.node("ReverseSequence", [c.operand(values(c.rng, dims, np.float32),
                                         False), c.operand(lengths)],
           [TensorProto.FLOAT], batch_axis=batch_axis,
           time_axis=1 - batch_axis)


def eye_like(c):
    dims = shape(c.rng, 2, high=6)
    dtype = c.rng.choice(FLOATS + INTS)
    c.node("EyeLike", [c.operand(values(c.rng, dims, np.float32), False)],
           [elem(dtype)], k=int(c.rng.integers(-4, 5)), dtype=elem(dtype))


def constant_of_shape(c):
    dims = np.array(shape(c.rng, int(c.rng.integers(0, 4)), low=0),
                    np.int64)
    dtype = c.rng.choice(FLOATS + INTS)
    c.node("ConstantOfShape", [c.operand(dims, False)], [elem(dtype)],
           value=numpy_helper.from_array(np.array([3], dtype)))


def hardmax_like(c):
    softmax_op("Hardmax")(c)


def det_op(c):
    n = int(c.rng.integers(1, 5))
    dims = shape(c.rng, int(c.rng.integers(0, 3))) + (n, n)
    c.node("Det", [c.operand(values(c.rng, dims, np.float32), False)],
           [TensorProto.FLOAT])


def grid_sample(c):
    n, channels = (int(v) for v in c.rng.integers(1, 3, size=2))
    h, w, gh, gw = (int(v) for v in c.rng.integers(1, 6, size=4))
    grid = c.rng.uniform(-1.3, 1.3, size=(n, gh, gw, 2)).astype(np.float32)
    c.node("GridSample", [
        c.operand(values(c.rng, (n, channels, h, w), np.float32), False),
        c.operand(grid)], [TensorProto.FLOAT],
        mode=str(c.rng.choice(["bilinear", "nearest", "bicubic"])),
        padding_mode=str(c.rng.choice(["zeros", "border", "reflection"])),
        align_corners=int(c.rng.integers(2)))


def window_op(op_type):
    def make(c):
        size = np.array(int(c.rng.integers(1, 12)), c.rng.choice(INTS))
        c.node(op_type, [c.operand(size, False)], [TensorProto.FLOAT],
               periodic=int(c.rng.integers(2)))
    return make


# --- recurrent layers ---------------------------------------------------------

# ONNX's recurrent activations and the alpha / beta each one reads.
RNN_ACTIVATIONS = {"Relu": 0, "Tanh": 0, "Sigmoid": 0, "Affine": 2,
                   "LeakyRelu": 1, "ThresholdedRelu": 1, "ScaledTanh": 2,
                   "HardSigmoid": 2, "Elu": 1, "Softsign": 0, "Softplus": 0}


def recurrent(op_type):
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op_type]
    per_direction = {"LSTM": 3, "GRU": 2, "RNN": 1}[op_type]

    def make(c):
        seq, batch, size, hidden = (int(v) for v in c.rng.integers(
            1, 5, size=4))
        direction = str(c.rng.choice(["forward", "reverse",
                                      "bidirectional"]))
        dirs = 2 if direction == "bidirectional" else 1
        attrs = {"hidden_size": hidden, "direction": direction}
        scale = 0.6
        inputs = [c.operand(values(c.rng, (seq, batch, size), np.float32),
                            False),
                  c.operand(values(c.rng, (dirs, gates * hidden, size),
                                   np.float32) * scale),
                  c.operand(values(c.rng, (dirs, gates * hidden, hidden),
                                   np.float32) * scale)]
        optional = [
            (dirs, 2 * gates * hidden), None,
            (dirs, batch, hidden)] + (
            [(dirs, batch, hidden), (dirs, 3 * hidden)]
            if op_type == "LSTM" else [])
        for index, dims in enumerate(optional):
            if c.rng.random() < 0.5:
                inputs.append("")
            elif dims is None:  # sequence_lens
                lengths = c.rng.integers(1, seq + 1, size=batch)
                inputs.append(c.operand(lengths.astype(np.int32)))
            else:
                inputs.append(c.operand(values(c.rng, dims, np.float32) *
                                        scale))
        while inputs[-1] == "":
            inputs.pop()
        if c.rng.random() < 0.5:
            names = list(RNN_ACTIVATIONS)
            chosen = [names[int(c.rng.integers(len(names)))]
                      for _ in range(per_direction * dirs)]
            attrs["activations"] = chosen
            if c.rng.random() < 0.85:  # else ONNX's defaults (documented)
                alphas, betas = [], []
                for name in chosen:
                    if RNN_ACTIVATIONS[name] >= 1:
                        alphas.append(float(c.rng.choice([0.5, 0.2, 1.5])))
                    if RNN_ACTIVATIONS[name] == 2:
                        betas.append(float(c.rng.choice([0.5, 0.1, -0.3])))
                if alphas:
                    attrs["activation_alpha"] = alphas
                if betas:
                    attrs["activation_beta"] = betas
        if c.rng.random() < 0.3:
            attrs["clip"] = float(c.rng.choice([0.5, 2.0]))
        if op_type == "LSTM" and c.rng.random() < 0.3:
            attrs["input_forget"] = 1
        if op_type == "GRU":
            attrs["linear_before_reset"] = int(c.rng.integers(2))
        outputs = [TensorProto.FLOAT if c.rng.random() < 0.7 else None
                   for _ in range(3 if op_type == "LSTM" else 2)]
        if not any(outputs):
            outputs[0] = TensorProto.FLOAT
        while outputs[-1] is None:
            outputs.pop()
        c.node(op_type, inputs, outputs, **attrs)
    return make


# --- signals, detection, sets ---------------------------------------------------


def dft_op(c):
    batch = int(c.rng.integers(1, 3))
    signal = shape(c.rng, int(c.rng.integers(1, 3)), high=6)
    complex_in = c.rng.random() < 0.5
    x = values(c.rng, (batch,) + signal + ((2,) if complex_in else (1,)),
               np.float32)
    axis = int(c.rng.integers(1, 1 + len(signal)))
    inverse = int(c.rng.integers(2))
    onesided = int(not complex_in and not inverse and c.rng.random() < 0.5)
    inputs = [c.operand(x, False)]
    if c.rng.random() < 0.4:
        inputs.append(c.operand(np.array(int(c.rng.integers(
            1, 8)), c.rng.choice(INTS))))
    c.node("DFT", inputs, [TensorProto.FLOAT], axis=axis, inverse=inverse,
           onesided=onesided)


def stft_op(c):
    length = int(c.rng.integers(4, 17))
    frame = int(c.rng.integers(2, length + 1))
    step = int(c.rng.integers(1, frame + 1))
    complex_in = c.rng.random() < 0.3
    x = values(c.rng, (int(c.rng.integers(1, 3)), length,
                       2 if complex_in else 1), np.float32)
    inputs = [c.operand(x, False), c.operand(np.array(step, np.int64))]
    with_window = c.rng.random() < 0.6
    inputs.append(c.operand(np.hanning(frame).astype(np.float32))
                  if with_window else "")
    if not with_window or c.rng.random() < 0.5:
        inputs.append(c.operand(np.array(frame, np.int64)))
    while inputs[-1] == "":
        inputs.pop()
    c.node("STFT", inputs, [TensorProto.FLOAT],
           onesided=int(not complex_in and c.rng.random() < 0.6))


def unique_op(c):
    rank = int(c.rng.integers(1, 4))
    x = values(c.rng, shape(c.rng, rank), c.rng.choice(FLOATS + INTS),
               low=-2, high=3)
    if x.dtype in (np.float32, np.float64):
        x = np.round(x / 2).astype(x.dtype)
    attrs = {"sorted": int(c.rng.integers(2))}
    if c.rng.random() < 0.5:
        attrs["axis"] = axis_in(c.rng, rank)
    c.node("Unique", [c.operand(x, False)],
           [elem(x.dtype), TensorProto.INT64, TensorProto.INT64,
            TensorProto.INT64], **attrs)


def non_max_suppression(c):
    batch, classes, count = (int(c.rng.integers(1, 3)),
                             int(c.rng.integers(1, 3)),
                             int(c.rng.integers(1, 9)))
    corners = c.rng.uniform(0, 10, size=(batch, count, 2))
    sizes = c.rng.uniform(0.5, 6, size=(batch, count, 2))
    center = int(c.rng.integers(2))
    if center:
        boxes = np.concatenate([corners, sizes], axis=-1)
    else:
        boxes = np.concatenate([corners, corners + sizes], axis=-1)
        flip = c.rng.random((batch, count)) < 0.3  # corners either way
        boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]
    scores = c.rng.permutation(batch * classes * count).reshape(
        batch, classes, count) / (batch * classes * count)
    inputs = [c.operand(boxes.astype(np.float32), False),
              c.operand(scores.astype(np.float32), False)]
    for value, dtype in ((int(c.rng.integers(0, 6)), np.int64),
                         (float(c.rng.choice([0.0, 0.3, 0.5, 0.9])),
                          np.float32),
                         (float(c.rng.choice([0.0, 0.2, 0.6])),
                          np.float32)):
        if c.rng.random() < 0.8:
            inputs.append(c.operand(np.array([value], dtype)))
        else:
            break
    c.node("NonMaxSuppression", inputs, [TensorProto.INT64],
           center_point_box=center)


def roi_align(c):
    n, channels = int(c.rng.integers(1, 3)), int(c.rng.integers(1, 3))
    h, w = (int(v) for v in c.rng.integers(2, 8, size=2))
    count = int(c.rng.integers(1, 4))
    low = c.rng.uniform(-1, 4, size=(count, 2))
    rois = np.concatenate([low, low + c.rng.uniform(0.5, 6, size=(count, 2))],
                          axis=1)[:, [1, 0, 3, 2]]
    c.node("RoiAlign", [
        c.operand(values(c.rng, (n, channels, h, w), np.float32), False),
        c.operand(rois.astype(np.float32)),
        c.operand(c.rng.integers(0, n, size=count).astype(np.int64))],
        [TensorProto.FLOAT], mode="avg",
        output_height=int(c.rng.integers(1, 4)),
        output_width=int(c.rng.integers(1, 4)),
        sampling_ratio=int(c.rng.integers(0, 3)),
        spatial_scale=float(c.rng.choice([1.0, 0.5])),
        coordinate_transformation_mode=str(c.rng.choice(
            ["half_pixel", "output_half_pixel"])))


# --- newer opsets (ONNX Runtime 1.30 reads up to 23) ----------------------------


def group_norm(c):
    c.opset = int(c.rng.choice([18, 21]))
    groups = int(c.rng.integers(1, 4))
    channels = groups * int(c.rng.integers(1, 3))
    dims = (int(c.rng.integers(1, 3)), channels) + shape(c.rng, int(
        c.rng.integers(1, 3)))
    count = channels if c.opset >= 21 else groups
    c.node("GroupNormalization", [
        c.operand(values(c.rng, dims, np.float32), False),
        c.operand(values(c.rng, (count,), np.float32)),
        c.operand(values(c.rng, (count,), np.float32))],
        [TensorProto.FLOAT], num_groups=groups,
        epsilon=float(c.rng.choice([1e-5, 0.1])))


def mish(c):
    c.opset = 18
    activation("Mish")(c)


def gelu(c):
    c.opset = 20
    activation("Gelu", lambda r: {"approximate": str(r.choice(
        ["none", "tanh"]))})(c)


def bitwise(op_type):
    def make(c):
        c.opset = 18
        dtype = c.rng.choice([np.int32, np.int64, np.uint8, np.int8])
        dims = shape(c.rng)
        inputs = [c.operand(values(c.rng, dims, dtype, low=-100, high=100),
                            False)]
        if op_type != "BitwiseNot":
            inputs.append(c.operand(values(c.rng, broadcast_partner(
                c.rng, dims), dtype, low=-100, high=100)))
        c.node(op_type, inputs, [elem(dtype)])
    return make


def col2im(c):
    c.opset = 18
    kernel = [int(v) for v in c.rng.integers(1, 4, size=2)]
    strides = [int(v) for v in c.rng.integers(1, 3, size=2)]
    dilations = [int(v) for v in c.rng.integers(1, 3, size=2)]
    pads = [int(v) for v in c.rng.integers(0, 2, size=4)]
    image = [int(v) for v in c.rng.integers(3, 7, size=2)]
    blocks = 1
    for i in range(2):
        span = (kernel[i] - 1) * dilations[i] + 1
        padded = image[i] + pads[i] + pads[i + 2]
        if padded < span:
            image[i] += span - padded
            padded = span
        blocks *= (padded - span) // strides[i] + 1
    channels = int(c.rng.integers(1, 3))
    x = values(c.rng, (1, channels * kernel[0] * kernel[1], blocks),
               np.float32)
    c.node("Col2Im", [c.operand(x, False),
                      c.operand(np.array(image, np.int64)),
                      c.operand(np.array(kernel, np.int64))],
           [TensorProto.FLOAT], strides=strides, dilations=dilations,
           pads=pads)


def center_crop_pad(c):
    c.opset = 18
    rank = int(c.rng.integers(1, 4))
    dims = shape(c.rng, rank, high=6)
    attrs = {}
    if c.rng.random() < 0.5:
        axes = sorted(set(int(a) for a in c.rng.choice(
            rank, size=int(c.rng.integers(1, rank + 1)))))
        attrs["axes"] = axes
    else:
        axes = list(range(rank))
    target = c.rng.integers(1, 8, size=len(axes)).astype(np.int64)
    c.node("CenterCropPad", [c.operand(values(c.rng, dims, np.float32),
                                       False), c.operand(target)],
           [TensorProto.FLOAT], **attrs)


def affine_grid(c):
    c.opset = 20
    spatial = int(c.rng.choice([2, 3]))
    n = int(c.rng.integers(1, 3))
    theta = values(c.rng, (n, spatial, spatial + 1), np.float32) / 2
    size = [n, int(c.rng.integers(1, 3))] + [
        int(v) for v in c.rng.integers(1, 5, size=spatial)]
    c.node("AffineGrid", [c.operand(theta, False),
                          c.operand(np.array(size, np.int64))],
           [TensorProto.FLOAT], align_corners=int(c.rng.integers(2)))


def reduce_18(c):
    c.opset = 18
    op_type = str(c.rng.choice(["ReduceMax", "ReduceMean", "ReduceL2",
                                "ReduceLogSumExp", "ReduceProd"]))
    rank = int(c.rng.integers(1, 4))
    x = np.abs(values(c.rng, shape(c.rng, rank), np.float32)) + 0.5
    inputs = [c.operand(x, False)]
    attrs = {"keepdims": int(c.rng.integers(2))}
    if c.rng.random() < 0.7:
        axes = sorted(set(axis_in(c.rng, rank, False) for _ in range(
            int(c.rng.integers(0, rank + 1)))))
        inputs.append(c.operand(np.array(axes, np.int64)))
        if not axes:
            attrs["noop_with_empty_axes"] = int(c.rng.integers(2))
    c.node(op_type, inputs, [TensorProto.FLOAT], **attrs)


def split_18(c):
    c.opset = 18
    rank = int(c.rng.integers(1, 4))
    dims = shape(c.rng, rank, high=7)
    axis = axis_in(c.rng, rank)
    count = int(c.rng.integers(1, dims[axis] + 1))
    c.node("Split", [c.operand(values(c.rng, dims, np.float32), False)],
           [TensorProto.FLOAT] * count, axis=axis, num_outputs=count)


def pad_18(c):
    c.opset = 18
    rank = int(c.rng.integers(1, 4))
    dims = shape(c.rng, rank, high=5)
    axes = sorted(set(int(a) for a in c.rng.choice(
        rank, size=int(c.rng.integers(1, rank + 1)))))
    mode = str(c.rng.choice(["constant", "reflect", "edge", "wrap"]))
    pads = []
    for _ in range(2):
        for a in axes:
            pads.append(int(c.rng.integers(0, dims[a] if mode in (
                "reflect", "wrap") else 3)))
    axes = [a - rank if c.rng.random() < 0.3 else a for a in axes]
    c.opset = 19 if mode == "wrap" else 18
    c.node("Pad", [c.operand(values(c.rng, dims, np.float32), False),
                   c.operand(np.array(pads, np.int64)), "",
                   c.operand(np.array(axes, np.int64))],
           [TensorProto.FLOAT], mode=mode)


def scatter_18(c):
    c.opset = 18
    rank = int(c.rng.integers(1, 4))
    dims = shape(c.rng, rank)
    axis = axis_in(c.rng, rank)
    index_dims = [int(c.rng.integers(1, d + 1)) for d in dims]
    indices = c.rng.integers(-dims[axis], dims[axis], size=index_dims)
    c.node("ScatterElements", [
        c.operand(values(c.rng, dims, np.float32), False),
        c.operand(indices.astype(np.int64)),
        c.operand(values(c.rng, index_dims, np.float32))],
        [TensorProto.FLOAT], axis=axis,
        reduction=str(c.rng.choice(["max", "min", "add", "mul"])))


def resize_18(c):
    c.opset = 19
    rank = int(c.rng.integers(2, 5))
    dims = shape(c.rng, rank, high=6)
    axes = sorted(set(int(a) for a in c.rng.choice(
        rank, size=int(c.rng.integers(1, 3)))))
    mode = str(c.rng.choice(["nearest", "linear", "cubic"]))
    if mode != "nearest":  # ONNX Runtime: two trailing axes at most
        axes = [a for a in axes if a >= rank - 2] or [rank - 1]
    attrs = {"mode": mode, "coordinate_transformation_mode": str(
        c.rng.choice(["half_pixel", "asymmetric", "half_pixel_symmetric"]))}
    if mode != "nearest" and c.rng.random() < 0.5:
        attrs["antialias"] = 1
    inputs = [c.operand(values(c.rng, dims, np.float32), False), "", ""]
    if c.rng.random() < 0.5:
        inputs[2] = c.operand(np.array([float(c.rng.choice([0.5, 2.0, 1.5,
                                                            0.75]))
                                        for _ in axes], np.float32))
    else:
        inputs.append(c.operand(c.rng.integers(1, 9, size=len(axes)).astype(
            np.int64)))
        attrs["keep_aspect_ratio_policy"] = str(c.rng.choice(
            ["stretch", "not_larger", "not_smaller"]))
    c.node("Resize", inputs, [TensorProto.FLOAT], axes=axes, **attrs)


# --- com.microsoft operators (ONNX Runtime defines them) ------------------------


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


def quantized_operand(c, dims, dtype, constant=None):
    """A quantized tensor, its scale and its zero point, as operands."""
    info = np.iinfo(dtype)
    q = c.rng.integers(info.min, info.max + 1, size=dims).astype(dtype)
    scale = np.array(c.rng.uniform(0.01, 0.2), np.float32)
    zero = np.array(c.rng.integers(info.min // 4 + 64 if info.min == 0 else
                                   -20, 20 if info.min else 160), dtype)
    return [c.operand(q, constant), c.operand(scale), c.operand(zero)]


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


def qlinear_conv(c):
    c.int_tolerance = 1
    kernel, _, dilations, attrs = conv_geometry(c, 2)
    group = int(c.rng.choice([1, 1, 2]))
    channels_in = group * int(c.rng.integers(1, 4))
    channels_out = group * int(c.rng.integers(1, 4))
    image = tuple(int((k - 1) * d + 1 + c.rng.integers(0, 4))
                  for k, d in zip(kernel, dilations))
    x_type = c.rng.choice([np.uint8, np.int8])
    x = quantized_operand(c, (1, channels_in) + image, x_type, False)
    per_channel = c.rng.random() < 0.5
    count = (channels_out,) if per_channel else ()
    w = [c.operand(values(c.rng, (channels_out, channels_in // group) +
                          kernel, np.int8, low=-128, high=128)),
         c.operand(c.rng.uniform(0.005, 0.05, size=count).astype(np.float32)),
         c.operand(np.zeros(count, np.int8))]
    out = [c.operand(np.array(c.rng.uniform(0.05, 0.5), np.float32)),
           c.operand(np.array(c.rng.integers(-5, 5) + (
               128 if x_type == np.uint8 else 0), x_type))]
    inputs = x + w + out
    if c.rng.random() < 0.5:
        inputs.append(c.operand(c.rng.integers(-500, 500, size=channels_out
                                               ).astype(np.int32)))
    c.node("QLinearConv", inputs, [elem(x_type)], group=group, **attrs)


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


# --- losses, unpooling, the rest ------------------------------------------------


def nll_loss(c):
    n, classes = int(c.rng.integers(1, 5)), int(c.rng.integers(2, 6))
    extra = shape(c.rng, int(c.rng.integers(0, 3)))
    dtype = c.rng.choice(FLOATS)
    scores = values(c.rng, (n, classes) + extra, dtype)
    target = c.rng.integers(0, classes, size=(n,) + extra).astype(np.int64)
    attrs = {"reduction": str(c.rng.choice(["none", "sum", "mean"]))}
    if c.rng.random() < 0.5:
        attrs["ignore_index"] = int(c.rng.integers(0, classes))
        if c.rng.random() < 0.2:  # every target ignored
            target[:] = attrs["ignore_index"]
    inputs = [c.operand(scores, False), c.operand(target)]
    if c.rng.random() < 0.5:
        inputs.append(c.operand(np.abs(values(c.rng, (classes,), dtype)) +
                                0.1))
    c.node("NegativeLogLikelihoodLoss", inputs, [elem(dtype)], **attrs)


def softmax_cross_entropy(c):
    n, classes = int(c.rng.integers(1, 5)), int(c.rng.integers(2, 6))
    extra = shape(c.rng, int(c.rng.integers(0, 3)))
    dtype = c.rng.choice(FLOATS)
    scores = values(c.rng, (n, classes) + extra, dtype)
    labels = c.rng.integers(0, classes, size=(n,) + extra).astype(
        c.rng.choice(INTS))
    attrs = {"reduction": str(c.rng.choice(["none", "sum", "mean"]))}
    if c.rng.random() < 0.5:
        attrs["ignore_index"] = int(c.rng.integers(0, classes))
    inputs = [c.operand(scores, False), c.operand(labels)]
    if c.rng.random() < 0.5:
        inputs.append(c.operand(np.abs(values(c.rng, (classes,), dtype)) +
                                0.1))
    outputs = [elem(dtype)] + ([elem(dtype)] if c.rng.random() < 0.5 else [])
    c.node("SoftmaxCrossEntropyLoss", inputs, outputs, **attrs)


def max_unpool(c):
    kernel = [int(v) for v in c.rng.integers(1, 4, size=2)]
    strides = [int(v) for v in c.rng.integers(1, 4, size=2)]
    n, channels = int(c.rng.integers(1, 3)), int(c.rng.integers(1, 3))
    pooled = [int(v) for v in c.rng.integers(1, 4, size=2)]
    unpooled = [(p - 1) * s + k for p, s, k in zip(pooled, strides, kernel)]
    # Distinct indices, each inside its own window's plane.
    plane = unpooled[0] * unpooled[1]
    indices = np.stack([np.stack([
        c.rng.permutation(plane)[:pooled[0] * pooled[1]].reshape(pooled) +
        (b * channels + ch) * plane for ch in range(channels)])
        for b in range(n)]).astype(np.int64)
    inputs = [c.operand(values(c.rng, (n, channels) + tuple(pooled),
                               np.float32), False), c.operand(indices)]
    if c.rng.random() < 0.4:
        inputs.append(c.operand(np.array(
            [n, channels] + [u + int(c.rng.integers(0, 2)) for u in unpooled],
            np.int64)))
    c.node("MaxUnpool", inputs, [TensorProto.FLOAT], kernel_shape=kernel,
           strides=strides)


def dropout_inference(c):
    dtype = c.rng.choice(FLOATS)
    x = values(c.rng, shape(c.rng), dtype)
    inputs = [c.operand(x, False)]
    if c.rng.random() < 0.5:
        inputs.append(c.operand(np.array(0.3, dtype)))
        if c.rng.random() < 0.5:
            inputs.append(c.operand(np.array(False)))
    outputs = [elem(dtype)] + ([TensorProto.BOOL] if c.rng.random() < 0.5
                               else [])
    c.node("Dropout", inputs, outputs)


def cast_like(c):
    kinds = [np.float32, np.float64, np.int32, np.int64, np.int8, np.uint8,
             np.float16]
    source = kinds[int(c.rng.integers(len(kinds)))]
    target = kinds[int(c.rng.integers(len(kinds)))]
    x = values(c.rng, shape(c.rng), source, low=0, high=100)
    if np.issubdtype(source, np.floating):  # in every target's range
        x = np.abs(x)
    c.node("CastLike", [c.operand(x, False),
                        c.operand(np.zeros((1,), target))], [elem(target)])


def size_op(c):
    c.node("Size", [c.operand(values(c.rng, shape(c.rng, low=0), np.float32),
                              False)], [TensorProto.INT64])


def mel_weight_matrix(c):
    bins = int(c.rng.integers(1, 9))
    dft = 2 * int(c.rng.integers(4, 17))
    rate = int(c.rng.choice([8000, 16000]))
    low = float(c.rng.choice([0.0, 100.0]))
    high = float(c.rng.choice([rate / 2, rate / 4]))
    c.node("MelWeightMatrix", [
        c.operand(np.array(bins, np.int64), False),
        c.operand(np.array(dft, np.int64)),
        c.operand(np.array(rate, np.int64)),
        c.operand(np.array(low, np.float32)),
        c.operand(np.array(high, np.float32))], [TensorProto.FLOAT])


def half(op_type):
    """float16 operands for an op with float16 kernels in ONNX Runtime."""
    def make(c):
        dims = shape(c.rng)
        if op_type in ("Add", "Mul", "Sub", "Div"):
            inputs = [c.operand(values(c.rng, dims, np.float16, 0.02)),
                      c.operand(values(c.rng, broadcast_partner(c.rng, dims),
                                       np.float16, 0.02))]
            attrs = {}
        elif op_type == "MatMul":
            m, k, n = (int(v) for v in c.rng.integers(1, 9, size=3))
            inputs = [c.operand(values(c.rng, (m, k), np.float16)),
                      c.operand(values(c.rng, (k, n), np.float16))]
            attrs = {}
        elif op_type == "LayerNormalization":
            dims = shape(c.rng, int(c.rng.integers(1, 4)))
            inputs = [c.operand(values(c.rng, dims, np.float16), False),
                      c.operand(values(c.rng, dims[-1:], np.float16))]
            attrs = {}
        else:
            rank = max(len(dims), 1)
            dims = shape(c.rng, rank)
            inputs = [c.operand(values(c.rng, dims, np.float16, 0.02), False)]
            attrs = {"axis": axis_in(c.rng, rank)} if op_type == "Softmax" \
                else {}
        c.node(op_type, inputs, [TensorProto.FLOAT16], **attrs)
    return make


def sequence_chain(c):
    """SplitToSequence, then what reads a sequence back into a tensor."""
    rank = int(c.rng.integers(1, 4))
    dims = shape(c.rng, rank, high=5)
    axis = axis_in(c.rng, rank)
    x = c.operand(values(c.rng, dims, c.rng.choice(FLOATS + INTS)), False)
    dtype = elem(constant_value(c, x).dtype)
    attrs = {"axis": axis}
    inputs = [x]
    if c.rng.random() < 0.5:
        length = dims[axis]
        parts, left = [], length
        while left > 0:
            part = int(c.rng.integers(1, left + 1))
            parts.append(part)
            left -= part
        inputs.append(c.operand(np.array(parts, np.int64)))
    else:
        attrs["keepdims"] = int(c.rng.integers(2))
    sequence = c.inner("SplitToSequence", inputs, **attrs)[0]
    reader = str(c.rng.choice(["ConcatFromSequence", "SequenceAt",
                               "SequenceLength", "SequenceErase"]))
    if reader == "ConcatFromSequence":
        new_axis = int(c.rng.integers(2))
        out_rank = rank + new_axis - (attrs.get("keepdims", 1) == 0)
        c.node(reader, [sequence], [dtype], new_axis=new_axis,
               axis=int(c.rng.integers(-out_rank, out_rank))
               if out_rank else 0)
    elif reader == "SequenceLength":
        c.node(reader, [sequence], [TensorProto.INT64])
    else:
        count = dims[axis] if len(inputs) == 1 else len(
            constant_value(c, inputs[1]))
        position = c.operand(np.array(int(c.rng.integers(-count, count)),
                                      c.rng.choice(INTS)))
        if reader == "SequenceAt":
            c.node(reader, [sequence, position], [dtype])
        else:
            rest = c.inner(reader, [sequence, position])[0]
            c.node("SequenceLength", [rest], [TensorProto.INT64])


def topk_ties(c):
    rank = int(c.rng.integers(1, 4))
    dims = shape(c.rng, rank, high=6)
    axis = axis_in(c.rng, rank)
    x = c.rng.integers(-2, 3, size=dims).astype(c.rng.choice(FLOATS + INTS))
    k = int(c.rng.integers(0, dims[axis] + 1))
    # Sorted: equal values come lower index first (ONNX).
    c.node("TopK", [c.operand(x, False), c.operand(np.array([k], np.int64))],
           [elem(x.dtype), TensorProto.INT64], axis=axis,
           largest=int(c.rng.integers(2)), sorted=1)


def einsum_random(c):
    """A random equation over up to three operands: letters shared,
    summed, repeated within an operand (a diagonal), kept or dropped."""
    letters = "abcdef"[:int(c.rng.integers(1, 6))]
    sizes = {ch: int(c.rng.integers(1, 4)) for ch in letters}
    operands = []
    for _ in range(int(c.rng.integers(1, 4))):
        count = int(c.rng.integers(0, 4))
        operands.append("".join(c.rng.choice(list(letters), size=count)))
    used = sorted(set("".join(operands)))
    kept = [ch for ch in used if c.rng.random() < 0.5]
    c.rng.shuffle(kept)
    equation = ",".join(operands) + "->" + "".join(kept)
    dtype = c.rng.choice(FLOATS)
    inputs = [c.operand(values(c.rng, [sizes[ch] for ch in term], dtype))
              for term in operands]
    c.node("Einsum", inputs, [elem(dtype)], equation=equation)


def hard_sigmoid_attrs(rng):
    return {"alpha": float(rng.choice([0.2, 0.5])),
            "beta": float(rng.choice([0.5, 0.1]))}


OPERATORS = {
    "Add": binary("Add", FLOATS + INTS), "Sub": binary("Sub", FLOATS + INTS),
    "Mul": binary("Mul", FLOATS + INTS),
    "Div": binary("Div", FLOATS + INTS, nonzero=True),
    "Pow": pow_op, "Mod": mod_op, "BitShift": bit_shift,
    "Equal": binary("Equal", FLOATS + INTS, TensorProto.BOOL),
    "Less": binary("Less", FLOATS + INTS, TensorProto.BOOL),
    "Greater": binary("Greater", FLOATS + INTS, TensorProto.BOOL),
    "LessOrEqual": binary("LessOrEqual", FLOATS + INTS, TensorProto.BOOL),
    "GreaterOrEqual": binary("GreaterOrEqual", FLOATS + INTS,
                             TensorProto.BOOL),
    "And": binary("And", [np.bool_], TensorProto.BOOL),
    "Or": binary("Or", [np.bool_], TensorProto.BOOL),
    "Xor": binary("Xor", [np.bool_], TensorProto.BOOL),
    "Max": variadic("Max", FLOATS + INTS), "Min": variadic("Min",
                                                           FLOATS + INTS),
    "Sum": variadic("Sum"), "Mean": variadic("Mean"), "Where": where_op,
    "Clip": clip_op, "PRelu": prelu, "Cast": cast_op,
    "Relu": activation("Relu", dtypes=FLOATS + INTS),
    "Sigmoid": activation("Sigmoid"), "Tanh": activation("Tanh"),
    "HardSigmoid": activation("HardSigmoid", hard_sigmoid_attrs),
    "HardSwish": activation("HardSwish"),
    "Elu": activation("Elu", lambda r: {"alpha": float(r.choice([1., .3]))}),
    "Celu": activation("Celu", lambda r: {"alpha": float(r.choice([1., 2.]))}),
    "Selu": activation("Selu"),
    "LeakyRelu": activation("LeakyRelu",
                            lambda r: {"alpha": float(r.choice([.01, .3]))}),
    "ThresholdedRelu": activation("ThresholdedRelu", lambda r: {
        "alpha": float(r.choice([1.0, 0.5]))}),
    "Softplus": activation("Softplus"), "Softsign": activation("Softsign"),
    "Shrink": activation("Shrink", lambda r: {
        "lambd": float(r.choice([0.5, 1.5])),
        "bias": float(r.choice([0.0, 0.5]))}),
    "Abs": activation("Abs", dtypes=FLOATS + INTS),
    "Neg": activation("Neg", dtypes=FLOATS + INTS),
    "Sign": activation("Sign", dtypes=FLOATS + INTS),
    **{op: activation(op) for op in (
        "Sqrt", "Exp", "Log", "Ceil", "Floor", "Round", "Reciprocal", "Sin",
        "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh",
        "Acosh", "Atanh", "Erf")},
    "IsNaN": lambda c: c.node("IsNaN", [c.operand(values(
        c.rng, shape(c.rng), np.float32, 0.3), False)], [TensorProto.BOOL]),
    "IsInf": lambda c: c.node("IsInf", [c.operand(values(
        c.rng, shape(c.rng), np.float32, 0.3), False)], [TensorProto.BOOL],
        detect_negative=int(c.rng.integers(2)),
        detect_positive=int(c.rng.integers(2))),
    "Not": lambda c: c.node("Not", [c.operand(values(
        c.rng, shape(c.rng), np.bool_), False)], [TensorProto.BOOL]),
    **{op: reduce_op(op) for op in (
        "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
        "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
        "ReduceSumSquare")},
    "ArgMax": arg_op("ArgMax"), "ArgMin": arg_op("ArgMin"),
    "Softmax": softmax_op("Softmax"), "LogSoftmax": softmax_op("LogSoftmax"),
    "Hardmax": hardmax_like, "Reshape": reshape_op,
    "Transpose": transpose_op, "Squeeze": squeeze_op,
    "Unsqueeze": unsqueeze_op, "Flatten": flatten_op, "Expand": expand_op,
    "Tile": tile_op, "Concat": concat_op, "Split": split_op,
    "Slice": slice_op, "Pad": pad_op, "Gather": gather_op,
    "GatherElements": gather_elements, "GatherND": gather_nd,
    "ScatterElements": scatter_elements, "ScatterND": scatter_nd,
    "CumSum": cumsum_op, "TopK": topk_op, "Trilu": trilu_op,
    "DepthToSpace": depth_to_space, "SpaceToDepth": space_to_depth,
    "OneHot": one_hot, "Range": range_op, "Shape": shape_op,
    "MatMul": matmul_op, "Gemm": gemm_op, "Conv": conv_op,
    "ConvTranspose": conv_transpose_op, "MaxPool": pool_op("MaxPool"),
    "AveragePool": pool_op("AveragePool"), "LpPool": pool_op("LpPool"),
    "GlobalAveragePool": global_pool("GlobalAveragePool"),
    "GlobalMaxPool": global_pool("GlobalMaxPool"),
    "GlobalLpPool": global_pool("GlobalLpPool"),
    "BatchNormalization": batch_norm,
    "InstanceNormalization": instance_norm,
    "LayerNormalization": layer_norm, "LRN": lrn,
    "MeanVarianceNormalization": mean_variance,
    "LpNormalization": lp_norm, "Resize": resize_op, "Einsum": einsum_op,
    "QuantizeLinear": quantize_linear,
    "DequantizeLinear": dequantize_linear,
    "DynamicQuantizeLinear": dynamic_quantize,
    "MatMulInteger": matmul_integer, "ConvInteger": conv_integer,
    "QLinearMatMul": qlinear_matmul, "Compress": compress_op,
    "NonZero": nonzero_op, "ReverseSequence": reverse_sequence,
    "EyeLike": eye_like, "ConstantOfShape": constant_of_shape,
    "Det": det_op, "GridSample": grid_sample,
    "HannWindow": window_op("HannWindow"),
    "HammingWindow": window_op("HammingWindow"),
    "BlackmanWindow": window_op("BlackmanWindow"),
    "NegativeLogLikelihoodLoss": nll_loss,
    "SoftmaxCrossEntropyLoss": softmax_cross_entropy,
    "MaxUnpool": max_unpool, "Dropout": dropout_inference,
    "Sequence": sequence_chain, "TopKTies": topk_ties,
    "EinsumRandom": einsum_random,
    "CastLike": cast_like, "Size": size_op,
    "MelWeightMatrix": mel_weight_matrix,
    **{f"float16.{op}": half(op) for op in (
        "Add", "Sub", "Mul", "Div", "MatMul", "Relu", "Sigmoid", "Tanh",
        "Softmax", "LayerNormalization", "Abs", "Neg", "Sqrt", "Exp")},
    "LSTM": recurrent("LSTM"), "GRU": recurrent("GRU"),
    "RNN": recurrent("RNN"), "DFT": dft_op, "STFT": stft_op,
    "Unique": unique_op, "NonMaxSuppression": non_max_suppression,
    "RoiAlign": roi_align, "QLinearConv": qlinear_conv,
    "GroupNormalization": group_norm, "Mish": mish, "Gelu": gelu,
    "BitwiseAnd": bitwise("BitwiseAnd"), "BitwiseOr": bitwise("BitwiseOr"),
    "BitwiseXor": bitwise("BitwiseXor"), "BitwiseNot": bitwise("BitwiseNot"),
    "Col2Im": col2im, "CenterCropPad": center_crop_pad,
    "AffineGrid": affine_grid, "Reduce18": reduce_18, "Split18": split_18,
    "Pad18": pad_18, "ScatterElements18": scatter_18, "Resize19": resize_18,
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


def case_of(seed, only=None):
    rng = np.random.default_rng(seed)
    names = sorted(only or OPERATORS)
    op_type = names[int(rng.integers(len(names)))]
    c = Case(rng)
    OPERATORS[op_type](c)
    return op_type, c


# --- running and comparing ---------------------------------------------------


def run(model_bytes, feeds, inter=1, intra=1):
    options = weft.SessionOptions()
    options.inter_op_num_threads = inter
    options.intra_op_num_threads = intra
    if inter > 1:
        options.execution_mode = weft.ExecutionMode.ORT_PARALLEL
    try:
        session = weft.InferenceSession(model_bytes, options)
        return session.run(None, feeds), None
    except Exception as error:  # noqa: BLE001 -- weft's errors, reported
        return None, f"{type(error).__name__}: {error}"


def disagreement(expected, got, int_tolerance=0):
    """None when got matches expected, else what differs."""
    if len(expected) != len(got):
        return f"{len(got)} outputs, expected {len(expected)}"
    for index, (ref, out) in enumerate(zip(expected, got)):
        out = np.asarray(out)
        if ref.dtype != out.dtype:
            return f"output {index}: type {out.dtype}, expected {ref.dtype}"
        if ref.shape != out.shape:
            return f"output {index}: shape {out.shape}, expected {ref.shape}"
        if ref.size == 0:
            continue
        if not np.issubdtype(ref.dtype, np.floating):
            bad = np.abs(ref.astype(np.int64) - out.astype(np.int64)) > \
                int_tolerance if int_tolerance else ref != out
        else:
            ref64 = ref.astype(np.float64)
            out64 = out.astype(np.float64)
            finite = np.abs(ref64[np.isfinite(ref64)])
            scale = max(float(finite.max()) if finite.size else 0.0, 0.1)
            tolerance = 1e-5 * scale + 1e-5 * np.abs(ref64)
            if ref.dtype == np.float16:
                tolerance = tolerance * 100
            same_special = (np.isnan(ref64) & np.isnan(out64)) | (
                ref64 == out64)
            with np.errstate(invalid="ignore"):  # inf - inf
                bad = ~same_special & ~(np.abs(ref64 - out64) <= tolerance)
        if bad.any():
            at = np.unravel_index(np.argmax(bad), ref.shape)
            return (f"output {index}: {int(bad.sum())} of {ref.size} values "
                    f"differ, e.g. at {tuple(int(i) for i in at)}: "
                    f"{out[at]!r} against {ref[at]!r}")
    return None


def constant_value(c, name):
    """The value of operand `name`, fed or stored."""
    if name in c.feeds:
        return c.feeds[name]
    for tensor in c.initializers:
        if tensor.name == name:
            return numpy_helper.to_array(tensor)
    return None


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
    if op_type == "MeanVarianceNormalization":
        return "zero variance: ONNX adds 1e-9 to the deviation, " \
            "ONNX Runtime divides by zero"
    if op_type.endswith("Window") and not attrs.get("periodic", 1):
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
        if transform == b"tf_crop_and_resize":
            return "ONNX Runtime leaves a dimension of scale 1 " \
                "uncropped by roi"
    return None


def not_bitwise(reference, candidate):
    for index, (ref, got) in enumerate(zip(reference, candidate)):
        if ref.shape != got.shape or ref.tobytes() != got.tobytes():
            return f"output {index} differs in its bits"
    return None


def reference_outputs(op_type, c):
    """The NumPy reference's outputs (references.py), in weft's types, or
    None where there is none for the operator."""
    reference = REFERENCES.get(op_type)
    if reference is None:
        return None
    node = c.nodes[0]
    operands = [constant_value(c, name) if name else None
                for name in node.input]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return reference(operands, attrs)


def check_alone(op_type, c):
    """weft on its own: runs or refuses, bitwise across thread settings,
    and equal to the NumPy reference where there is one. Returns (outputs
    or None, refusal or None, failure or None)."""
    model_bytes = c.proto().SerializeToString()
    outputs, error = run(model_bytes, c.feeds)
    if error:
        return None, error, None
    expected = reference_outputs(op_type, c)
    if expected is not None:
        wrong = disagreement([e.astype(o.dtype) for e, o in
                              zip(expected, outputs)], outputs)
        if wrong:
            return outputs, None, f"against the NumPy reference: {wrong}"
    for inter, intra in ((1, 2), (2, 2)):
        threaded, threaded_error = run(model_bytes, c.feeds, inter, intra)
        differs = threaded_error or not_bitwise(outputs, threaded)
        if differs:
            return outputs, None, f"at ({inter}, {intra}): {differs}"
    return outputs, None, None


def onnx_runtime(cases, node_modules):
    """Each case in ONNX Runtime: seed -> (outputs, None) or (None, error)."""
    results = {}
    with tempfile.TemporaryDirectory() as root:
        for seed, (_, c) in cases.items():
            data = os.path.join(root, f"seed{seed:07d}", "test_data_set_0")
            os.makedirs(data)
            with open(os.path.join(root, f"seed{seed:07d}", "model.onnx"),
                      "wb") as f:
                f.write(c.proto().SerializeToString())
            for name, value in c.feeds.items():
                np.save(os.path.join(data, f"in_{name}.npy"), value)
        subprocess.run(["node", os.path.join(HERE, "..", "ort_expected.js"),
                        root], check=True, stderr=subprocess.DEVNULL,
                       env=dict(os.environ, NODE_PATH=node_modules))
        for seed, (_, c) in cases.items():
            data = os.path.join(root, f"seed{seed:07d}", "test_data_set_0")
            error_file = os.path.join(data, "error.txt")
            if os.path.exists(error_file):
                with open(error_file) as f:
                    results[seed] = (None, f.read().strip())
                continue
            results[seed] = ([np.load(os.path.join(data, f"out_{k}.npy"))
                              for k in range(len(c.outputs))], None)
    return results


def save(directory, seed, op_type, c):
    folder = os.path.join(directory, f"seed{seed}_{op_type}")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "model.onnx"), "wb") as f:
        f.write(c.proto().SerializeToString())
    for name, value in c.feeds.items():
        np.save(os.path.join(folder, f"in_{name}.npy"), value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="0:500",
                        help="FIRST:LAST, LAST excluded (default 0:500)")
    parser.add_argument("--ort", metavar="NODE_MODULES",
                        help="also compare with ONNX Runtime (npm "
                        "onnxruntime-node installed under NODE_MODULES)")
    parser.add_argument("--only", help="comma-separated operators to draw")
    parser.add_argument("--save", help="write each failing case here")
    parser.add_argument("--save-all", metavar="DIR",
                        help="write every case here (model.onnx and "
                        "in_NAME.npy), e.g. to run them with a sanitizer "
                        "build's `weft run`")
    parser.add_argument("--trace", action="store_true",
                        help="print each seed before running it")
    parser.add_argument("--verbose", action="store_true",
                        help="also print refusals and what ONNX Runtime "
                        "refuses")
    args = parser.parse_args()
    first, last = (int(v) for v in args.seeds.split(":"))
    only = args.only.split(",") if args.only else None
    cases = {seed: case_of(seed, only) for seed in range(first, last)}
    if args.save_all:
        for seed, (op_type, c) in cases.items():
            save(args.save_all, seed, op_type, c)
    expected = onnx_runtime(cases, args.ort) if args.ort else {}
    counts = {"agree": 0, "differ as documented": 0, "refused by both": 0,
              "refused by ONNX Runtime": 0, "refused by weft": 0, "failed": 0}
    for seed, (op_type, c) in cases.items():
        if args.trace:
            print(f"seed {seed}: {op_type}", flush=True)
        outputs, refusal, failure = check_alone(op_type, c)
        ort_outputs, ort_error = expected.get(seed, (None, None))
        verdict = "agree"
        if failure:
            verdict = "failed"
        elif args.ort and ort_error:
            verdict = "refused by both" if refusal else \
                "refused by ONNX Runtime"
            if args.verbose:
                print(f"seed {seed}: {op_type}: ONNX Runtime refuses "
                      f"({ort_error[:200]}); weft "
                      f"{'refuses: ' + refusal[:200] if refusal else 'runs'}")
        elif refusal:
            verdict = "failed" if args.ort else "refused by weft"
            failure = f"weft refuses: {refusal}"
        elif args.ort:
            failure = disagreement(ort_outputs, outputs, c.int_tolerance)
            if failure:
                known = documented_difference(op_type, c)
                verdict = "differ as documented" if known else "failed"
                failure = f"{failure} ({known})" if known else failure
        counts[verdict] += 1
        if failure and (verdict == "failed" or args.verbose):
            print(f"seed {seed}: {op_type}: {failure}", flush=True)
        if verdict == "failed" and args.save:
            save(args.save, seed, op_type, c)
    print(f"{last - first} models: " + ", ".join(
        f"{count} {what}" for what, count in counts.items()))
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
