"""Random nodes of ONNX's operators (opset 17, and 18 to 21 where an
operator changed), for ops_against_ort.py: OPERATORS maps a name to the
function that adds one such node, with its operands, to a Case."""
import numpy as np
from onnx import TensorProto, numpy_helper

from case import (FLOATS, INTS, axis_in, broadcast_partner, constant_value,
                  conv_geometry, elem, quantized_operand, shape, values,
                  with_ones)
from contrib_operators import CONTRIB_OPERATORS

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
    **CONTRIB_OPERATORS,
}
