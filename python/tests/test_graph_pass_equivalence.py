"""The graph passes change how a model runs, never what it computes: small
graphs of the patterns each pass rewrites (Conv -> BatchNormalization ->
activation -> residual Add, MatMul with a scale and a bias, the decomposed
LayerNormalization and Gelu, QDQ groups with uint8 and int8 activations,
multi-head attention),
drawn at random from a fixed seed with intermediate values fetched as well,
give the same outputs with the passes as without them: float outputs to
within rounding (folding reorders the arithmetic), quantized ones to within
one step. A differential run of this kind found QLinearMatMul's int8 output
bug."""
import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
from onnx import helper, numpy_helper  # noqa: E402

CASES_PER_PATTERN = 12


class Builder:
    """One graph under construction: fed inputs, initializers, nodes, and
    the values fetched."""

    def __init__(self, rng):
        self.rng = rng
        self.nodes, self.inits, self.feeds, self.fetch = [], [], {}, []
        self.count = 0

    def name(self, stem):
        self.count += 1
        return f"{stem}{self.count}"

    def floats(self, *shape):
        return self.rng.standard_normal(shape).astype(np.float32)

    def feed(self, value):
        name = self.name("in")
        self.feeds[name] = value
        return name

    def const(self, value):
        name = self.name("c")
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type, inputs, **attrs):
        out = self.name("t")
        self.nodes.append(helper.make_node(op_type, inputs, [out], **attrs))
        return out

    def maybe_fetch(self, value):
        if self.rng.random() < 0.3:
            self.fetch.append(value)
        return value

    def model(self, opset):
        def info(name, value):
            return helper.make_tensor_value_info(
                name, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[value.dtype],
                list(value.shape))
        fetched = list(dict.fromkeys(self.fetch))
        graph = helper.make_graph(
            self.nodes, "g", [info(k, v) for k, v in self.feeds.items()],
            [onnx.ValueInfoProto(name=n) for n in fetched], self.inits)
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = 8
        return model.SerializeToString()


def activation(b, x):
    kind = b.rng.choice(["none", "Relu", "Clip", "LeakyRelu", "HardSwish",
                         "Sigmoid"])
    if kind == "none":
        return x
    if kind == "Clip":
        return b.op("Clip", [x, b.const(np.float32(-0.5)),
                             b.const(np.float32(0.8))])
    if kind == "LeakyRelu":
        return b.op("LeakyRelu", [x], alpha=0.2)
    return b.op(kind, [x])


def conv_block(b):
    channels = int(b.rng.choice([3, 4, 8]))
    x = b.feed(b.floats(1, channels, 7, 6))
    groups = int(b.rng.choice([1, channels]))
    out = channels * int(b.rng.choice([1, 2]))
    k = int(b.rng.choice([1, 3]))
    y = b.op("Conv", [x, b.const(b.floats(out, channels // groups, k, k) * .3),
                      b.const(b.floats(out))],
             pads=[k // 2, 0, k // 2, k - 1], group=groups,
             strides=[1, int(b.rng.choice([1, 2]))])
    if b.rng.random() < 0.6:
        y = b.op("BatchNormalization",
                 [b.maybe_fetch(y), b.const(b.floats(out)),
                  b.const(b.floats(out)), b.const(b.floats(out) * 0.1),
                  b.const(np.abs(b.floats(out)) + 0.5)], epsilon=1e-3)
    y = b.maybe_fetch(y)
    if b.rng.random() < 0.5:
        y = b.op("Add", [y, b.const(b.floats(1, out, 1, 1))]
                 if b.rng.random() < 0.5 else [y, y])
    b.fetch.append(activation(b, b.maybe_fetch(y)))


def matmul_block(b):
    m, k, n = (int(v) for v in b.rng.integers(1, 12, 3))
    y = b.op("MatMul", [b.feed(b.floats(2, m, k)), b.const(b.floats(k, n))])
    if b.rng.random() < 0.5:
        y = b.op("Div" if b.rng.random() < 0.5 else "Mul",
                 [b.maybe_fetch(y), b.const(np.float32(4.0))])
    if b.rng.random() < 0.7:
        shape = [(n,), (1, n), (m, n)][int(b.rng.integers(3))]
        y = b.op("Add", [b.maybe_fetch(y), b.const(b.floats(*shape))])
    b.fetch.append(activation(b, b.maybe_fetch(y)))


def layernorm_block(b):
    width = int(b.rng.integers(2, 16))
    x = b.feed(b.floats(2, 3, width) * 2 + 1)
    axes = [-1] if b.rng.random() < 0.7 else [1]

    def mean(t):
        return b.op("ReduceMean", [t], axes=axes, keepdims=1)
    d = b.op("Sub", [x, mean(x)])
    var = mean(b.op("Pow", [d, b.const(np.float32(2.0))]))
    std = b.op("Sqrt", [b.op("Add", [var, b.const(np.float32(1e-5))])])
    y = b.op("Div", [d, std])
    y = b.op("Mul", [b.maybe_fetch(y), b.const(b.floats(width))])
    b.fetch.append(b.op("Add", [y, b.const(b.floats(width))]))


def gelu_block(b):
    x = b.feed(b.floats(3, 5) * 2)
    inner = b.op("Erf", [b.op("Div", [x, b.const(np.float32(np.sqrt(2)))])])
    y = b.op("Mul", [b.op("Mul", [x, b.const(np.float32(0.5))]),
                     b.op("Add", [inner, b.const(np.float32(1.0))])])
    b.fetch.append(y)


def quantize_pair(b, x, dtype):
    info = np.iinfo(dtype)
    scale = b.const(np.float32(b.rng.uniform(0.01, 0.05)))
    zero = b.const(dtype(b.rng.integers(info.min // 2, info.max // 2)))
    q = b.op("QuantizeLinear", [x, scale, zero])
    return b.op("DequantizeLinear", [q, scale, zero]), q


def qdq_block(b):
    dtype = np.uint8 if b.rng.random() < 0.5 else np.int8
    channels, out = 4, 6
    conv = b.rng.random() < 0.5
    x, _ = quantize_pair(b, b.feed(b.floats(1, channels, 6, 6) if conv
                                   else b.floats(3, channels)), dtype)
    weights = b.rng.integers(-127, 128, (out, channels, 3, 3) if conv
                             else (channels, out)).astype(np.int8)
    w = b.op("DequantizeLinear",
             [b.const(weights),
              b.const(b.rng.uniform(0.002, 0.02, out).astype(np.float32)),
              b.const(np.zeros(out, np.int8))], axis=0 if conv else 1)
    if not conv:
        y, q = quantize_pair(b, b.op("MatMul", [x, w]), dtype)
        b.fetch.append(q)
        return
    y = b.op("Conv", [x, w], pads=[1, 1, 1, 1])
    if b.rng.random() < 0.5:
        y = b.op("Relu", [y])
    y, q = quantize_pair(b, y, dtype if b.rng.random() < 0.7 else np.uint8)
    if b.rng.random() < 0.5:
        y, q = quantize_pair(b, b.op("MaxPool", [y], kernel_shape=[2, 2]),
                             np.uint8)
    b.fetch.append(q)


def attention_block(b):
    """Multi-head attention as torch exports it: Q, K, V from one Split or
    fed apart, into heads, scaled scores, an optional mask, Softmax, the
    context merged back."""
    batch, heads, size = (int(v) for v in b.rng.integers(1, 4, 3))
    size *= 4
    queries = int(b.rng.integers(1, 20))
    keys = queries if b.rng.random() < 0.5 else int(b.rng.integers(1, 20))
    width = heads * size
    # A fetched intermediate makes the session run the graph as given:
    # most cases fetch the output alone, so that the fused node runs.
    inside = b.maybe_fetch if b.rng.random() < 0.3 else (lambda x: x)
    if keys == queries and b.rng.random() < 0.6:
        qkv = b.feed(b.floats(batch, queries, 3 * width))
        split = b.name("t")
        b.nodes.append(helper.make_node(
            "Split", [qkv], [split + "q", split + "k", split + "v"], axis=-1))
        q, k, v = split + "q", split + "k", split + "v"
    else:
        q = b.feed(b.floats(batch, queries, width))
        k, v = (b.feed(b.floats(batch, keys, width)) for _ in range(2))

    def heads_of(x, seq, perm):
        shape = b.const(np.array([batch, seq, heads, size], np.int64))
        return b.op("Transpose", [b.op("Reshape", [x, shape])], perm=perm)
    scores = b.op("MatMul", [heads_of(q, queries, [0, 2, 1, 3]),
                             heads_of(k, keys, [0, 2, 3, 1])])
    # 4 becomes the product's alpha; sqrt(32) stays a division.
    scale = 4.0 if b.rng.random() < 0.5 else np.sqrt(32.0)
    scores = b.op("Div" if b.rng.random() < 0.5 else "Mul",
                  [inside(scores), b.const(np.float32(scale))])
    if b.rng.random() < 0.7:
        shape = [(batch, 1, 1, keys), (queries, keys),
                 (batch, heads, queries, keys)][int(b.rng.integers(3))]
        mask = np.where(b.rng.random(shape) < 0.2, -10000.0, 0.0)
        scores = b.op("Add", [inside(scores),
                              b.feed(mask.astype(np.float32))])
    probs = inside(b.op("Softmax", [scores], axis=-1))
    context = b.op("Transpose", [b.op("MatMul", [probs, heads_of(
        v, keys, [0, 2, 1, 3])])], perm=[0, 2, 1, 3])
    b.fetch.append(b.op("Reshape", [inside(context), b.const(
        np.array([batch, queries, width], np.int64))]))


PATTERNS = [conv_block, matmul_block, layernorm_block, gelu_block, qdq_block,
            attention_block]


def run(model, feeds, optimize):
    options = weft.SessionOptions()
    if not optimize:
        options.graph_optimization_level = \
            weft.GraphOptimizationLevel.ORT_DISABLE_ALL
    return weft.InferenceSession(model, options).run(None, feeds)


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: p.__name__)
def test_passes_keep_what_each_pattern_computes(pattern):
    rng = np.random.default_rng(17)
    for case in range(CASES_PER_PATTERN):
        b = Builder(rng)
        pattern(b)
        model = b.model(int(rng.choice([13, 17, 18])) if pattern
                        is not layernorm_block else 17)
        with_passes = run(model, b.feeds, True)
        without = run(model, b.feeds, False)
        for k, (got, want) in enumerate(zip(with_passes, without)):
            where = f"case {case}, output {k}"
            assert got.dtype == want.dtype and got.shape == want.shape, where
            if got.dtype.kind == "f":
                scale = max(1.0, float(np.abs(want).max(initial=0.0)))
                np.testing.assert_allclose(got, want, rtol=1e-4,
                                           atol=1e-5 * scale, err_msg=where)
            else:
                assert np.abs(got.astype(np.int64) -
                              want.astype(np.int64)).max(initial=0) <= 1, where
