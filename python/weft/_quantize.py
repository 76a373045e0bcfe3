"""Static quantisation of float ONNX models to the QDQ form.

``weft.quantize(model, output, calibration)`` writes what ONNX Runtime's
``quantize_static(..., quant_format=QuantFormat.QDQ, per_channel=True)``
writes: every activation that feeds a quantized op goes through a
QuantizeLinear / DequantizeLinear pair (uint8, asymmetric, its range from
the calibration data), weights are int8 per output channel (symmetric, zero
point 0), biases int32 at scale x_scale * w_scale. weft's ``qdq-fusion``
graph pass (and ONNX Runtime's QDQ transformer) turn those groups into
integer kernels when the model is loaded; any runtime that reads ONNX runs
the file as written.

The model is read and written with the ``onnx`` package; the calibration
runs on weft.
"""

import dataclasses as _dataclasses
import os as _os

import numpy as _np

# Ops whose inputs and output are quantized. A Relu or Clip right after
# one of them is quantized at its own output (the op's output range is then
# the activation's, as ONNX Runtime's quantizer does), so that the integer
# kernel absorbs it.
_QUANTIZED_OPS = ("Conv", "MatMul", "Gemm", "Add", "MaxPool")
# Ops whose output takes its input's scale and zero point.
_SAME_RANGE_OPS = ("MaxPool",)
_ACTIVATIONS = ("Relu", "Clip")


@_dataclasses.dataclass
class QuantizeResult:
    """What ``weft.quantize`` did: the model written, the quantized nodes,
    the activations calibrated, and the float and quantized models'
    outputs compared on the calibration data (``max_abs_error`` and
    ``mean_abs_error`` per output, and, for outputs with a class axis,
    ``top1_agreement``: the fraction of rows whose argmax agrees)."""

    output: str
    quantized_nodes: list
    calibrated_tensors: int
    accuracy: dict


def _load(model):
    import onnx
    if isinstance(model, (bytes, bytearray)):
        return onnx.load_from_string(bytes(model))
    if isinstance(model, onnx.ModelProto):
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        return copy
    return onnx.load(_os.fspath(model))


def _calibration_feeds(calibration, input_names):
    """A list of {input name: array} from a list of dicts, one dict, or a
    directory of .npy files (NAME.npy, or NAME.K.npy for batch K)."""
    if isinstance(calibration, dict):
        return [calibration]
    if isinstance(calibration, (str, _os.PathLike)):
        folder = _os.fspath(calibration)
        batches = {}
        for entry in sorted(_os.listdir(folder)):
            if not entry.endswith(".npy"):
                continue
            stem = entry[:-4]
            name, _, index = stem.partition(".")
            if name not in input_names:
                raise ValueError(
                    f"calibration file {entry!r} names no input of the model "
                    f"(inputs: {', '.join(input_names)})")
            batches.setdefault(index, {})[name] = _np.load(
                _os.path.join(folder, entry))
        if not batches:
            raise ValueError(f"no .npy calibration files in {folder!r}")
        feeds = [batches[k] for k in sorted(batches)]
    else:
        feeds = list(calibration)
    if not feeds:
        raise ValueError("calibration holds no feeds")
    for i, feed in enumerate(feeds):
        missing = [n for n in input_names if n not in feed]
        if missing:
            raise ValueError(f"calibration feed {i} lacks input(s) "
                             f"{', '.join(missing)}")
    return feeds


def _uint8_params(low, high):
    """Scale and zero point mapping [low, high] (widened to hold 0) onto
    uint8, as ONNX Runtime's MinMax calibration computes them."""
    low, high = min(float(low), 0.0), max(float(high), 0.0)
    scale = _np.float32((high - low) / 255.0)
    if scale == 0:
        scale = _np.float32(1.0)
    zero = int(_np.clip(_np.rint(-low / scale), 0, 255))
    return scale, _np.uint8(zero)


def _int8_per_channel(weights, axis):
    """Symmetric int8 weights per slice along ``axis``: scales, values."""
    moved = _np.moveaxis(weights.astype(_np.float32), axis, 0)
    flat = moved.reshape(moved.shape[0], -1)
    scale = (_np.abs(flat).max(axis=1) / 127.0).astype(_np.float32)
    scale[scale == 0] = 1.0
    shape = [1] * weights.ndim
    shape[axis] = -1
    values = _np.clip(_np.rint(weights / scale.reshape(shape)), -127, 127)
    return scale, values.astype(_np.int8)


class _Rewriter:
    """The graph being quantized: producers, consumers and initializers by
    name, and the nodes to add."""

    def __init__(self, model):
        from onnx import numpy_helper
        self.model = model
        self.graph = model.graph
        self.init = {t.name: t for t in self.graph.initializer}
        self.const = {}
        for node in self.graph.node:
            if node.op_type == "Constant" and node.attribute:
                attr = node.attribute[0]
                if attr.name == "value":
                    self.const[node.output[0]] = numpy_helper.to_array(attr.t)
        # An Identity of a constant is that constant (PyTorch's exporter
        # writes one for each bias it shares).
        self.alias = {}
        for node in self.graph.node:
            if node.op_type == "Identity":
                self.alias[node.output[0]] = node.input[0]
        self.consumers = {}
        for node in self.graph.node:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)
        self.outputs = {o.name for o in self.graph.output}
        self.new_nodes = []
        self.new_inits = []

    def constant(self, name):
        from onnx import numpy_helper
        while name in self.alias:
            name = self.alias[name]
        if name in self.init:
            return numpy_helper.to_array(self.init[name])
        return self.const.get(name)

    def is_activation(self, name):
        return name != "" and self.constant(name) is None

    def add_init(self, name, array):
        from onnx import numpy_helper
        self.new_inits.append(numpy_helper.from_array(array, name))
        return name

    def add_node(self, op, inputs, outputs, name, **attrs):
        from onnx import helper
        self.new_nodes.append(
            helper.make_node(op, inputs, outputs, name=name, **attrs))


def _quantized_output(rw, node):
    """The tensor that carries ``node``'s quantized output: a sole
    consumer that is a Relu or a Clip with constant bounds takes it over."""
    out = node.output[0]
    users = rw.consumers.get(out, [])
    if (len(users) == 1 and out not in rw.outputs and
            users[0].op_type in _ACTIVATIONS and
            all(rw.constant(i) is not None for i in users[0].input[1:] if i)):
        return users[0].output[0]
    return out


def _select_nodes(rw, exclude_nodes, exclude_ops):
    chosen = []
    for node in rw.graph.node:
        if node.op_type not in _QUANTIZED_OPS:
            continue
        if node.name in exclude_nodes or node.op_type in exclude_ops:
            continue
        if node.op_type in ("MatMul", "Gemm"):
            # Weight products only: a constant second operand, 2-D.
            w = rw.constant(node.input[1])
            if w is None or w.ndim != 2:
                continue
        if node.op_type == "Conv" and rw.constant(node.input[1]) is None:
            continue
        if node.op_type == "Add" and not all(
                rw.is_activation(n) for n in node.input[:2]):
            continue  # A bias Add stays with its product, in float.
        chosen.append(node)
    return chosen


def _collect_ranges(model_bytes, tensors, feeds, method, percentile):
    """Each tensor's (low, high) over the calibration feeds."""
    import onnx
    from . import InferenceSession
    model = onnx.load_from_string(model_bytes)
    have = {o.name for o in model.graph.output}
    for name in tensors:
        if name not in have:
            model.graph.output.append(onnx.ValueInfoProto(name=name))
    session = InferenceSession(model.SerializeToString())
    names = list(tensors)
    samples = {name: [] for name in names}
    for feed in feeds:
        for name, value in zip(names, session.run(names, feed)):
            samples[name].append(_np.asarray(value, dtype=_np.float32).ravel())
    ranges = {}
    for name, parts in samples.items():
        values = _np.concatenate(parts)
        if method == "minmax":
            ranges[name] = (float(values.min()), float(values.max()))
        else:
            ranges[name] = (float(_np.percentile(values, 100.0 - percentile)),
                            float(_np.percentile(values, percentile)))
    return ranges


def quantize(model, output, calibration=None, *, dynamic=False,
             method="minmax", percentile=99.999, exclude_nodes=(),
             exclude_ops=()):
    """Quantizes a float ONNX model and writes it.

    Static (the default), to the QDQ form: ``calibration`` gives
    representative feeds (a list of {input name: array}, one such dict, or
    a directory of ``NAME.npy`` / ``NAME.K.npy`` files); ``method``:
    ``"minmax"`` or ``"percentile"`` (each activation's range clipped at
    ``percentile`` and 100 - ``percentile``).

    ``dynamic=True``, as ONNX Runtime's ``quantize_dynamic`` writes it:
    each MatMul (and Gemm) with a constant 2-D weight becomes
    DynamicQuantizeLinear of its input, MatMulInteger with int8 weights
    (per output column), and the float rescale; activations are quantized
    at run time, so ``calibration`` is optional (given, it measures the
    accuracy).

    ``model``: a path, the model's bytes or an ``onnx.ModelProto``;
    ``output``: the path to write; ``exclude_nodes`` / ``exclude_ops``: node
    names and op types left in float. Returns a QuantizeResult with the
    accuracy of the quantized model against the float one on the
    calibration data.
    """
    import onnx
    from . import InferenceSession
    if method not in ("minmax", "percentile"):
        raise ValueError(f"method must be 'minmax' or 'percentile', "
                         f"not {method!r}")
    if not 50.0 < float(percentile) <= 100.0:
        raise ValueError(f"percentile must be in (50, 100], not {percentile}")
    original = _load(model)
    opset = max((o.version for o in original.opset_import
                 if o.domain in ("", "ai.onnx")), default=0)
    if opset < 13:
        raise ValueError(f"the model's opset is {opset}: per-channel "
                         "QuantizeLinear/DequantizeLinear need opset 13 or "
                         "later (convert it with onnx.version_converter)")
    float_bytes = original.SerializeToString()
    rw = _Rewriter(original)  # Rewrites `original` in place.
    init_names = set(rw.init)
    inputs = [i.name for i in original.graph.input if i.name not in init_names]
    if calibration is None and not dynamic:
        raise ValueError("static quantization needs calibration feeds "
                         "(or dynamic=True)")
    feeds = (None if calibration is None
             else _calibration_feeds(calibration, inputs))
    unknown = set(exclude_nodes) - {n.name for n in original.graph.node}
    if unknown:
        raise ValueError(f"exclude_nodes names no node: "
                         f"{', '.join(sorted(unknown))}")
    if dynamic:
        nodes = _quantize_dynamic(rw, set(exclude_nodes), set(exclude_ops))
        accuracy = _finish(rw, output, float_bytes, feeds)
        return QuantizeResult(_os.fspath(output), nodes, 0, accuracy)
    nodes = _select_nodes(rw, set(exclude_nodes), set(exclude_ops))

    # Activations to calibrate: every activation input of a quantized node
    # (Conv/MatMul/Gemm: the data input; Add: both; MaxPool: its input) and
    # every quantized output.
    activation_inputs = {}
    quantized_outputs = {}
    for node in nodes:
        data_inputs = node.input[:2] if node.op_type == "Add" else node.input[:1]
        activation_inputs[id(node)] = [n for n in data_inputs
                                       if rw.is_activation(n)]
        if node.op_type not in _SAME_RANGE_OPS:
            quantized_outputs[id(node)] = _quantized_output(rw, node)
    wanted = set()
    for names in activation_inputs.values():
        wanted.update(names)
    wanted.update(quantized_outputs.values())
    ranges = _collect_ranges(float_bytes, sorted(wanted),
                             feeds, method, float(percentile))
    params = {name: _uint8_params(*r) for name, r in ranges.items()}
    # A MaxPool's output keeps its input's scale and zero point: the pair
    # around it is then an exact move that the runtime can drop.
    for node in nodes:
        if node.op_type in _SAME_RANGE_OPS and activation_inputs[id(node)]:
            params[node.output[0]] = params[activation_inputs[id(node)][0]]

    # One Q -> DQ pair per quantized tensor, read by all its consumers.
    renamed = {}
    for name in sorted(params):
        scale, zero = params[name]
        base = name.replace("/", "_").replace(":", "_")
        s = rw.add_init(base + "_scale", _np.array(scale, dtype=_np.float32))
        z = rw.add_init(base + "_zero_point", _np.array(zero, dtype=_np.uint8))
        rw.add_node("QuantizeLinear", [name, s, z], [base + "_quantized"],
                    base + "_QuantizeLinear")
        rw.add_node("DequantizeLinear", [base + "_quantized", s, z],
                    [base + "_dequantized"], base + "_DequantizeLinear")
        renamed[name] = base + "_dequantized"

    # Weights per output channel and biases at x_scale * w_scale.
    for node in nodes:
        if node.op_type not in ("Conv", "MatMul", "Gemm"):
            continue
        w = rw.constant(node.input[1])
        if node.op_type == "Conv":
            axis = 0
        elif node.op_type == "MatMul":
            axis = 1
        else:
            trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
            axis = 0 if trans_b else 1
        w_scale, w_values = _int8_per_channel(w, axis)
        base = (node.name or node.output[0]).replace("/", "_").replace(":", "_")
        wq = rw.add_init(base + "_weight_quantized", w_values)
        ws = rw.add_init(base + "_weight_scale", w_scale)
        wz = rw.add_init(base + "_weight_zero_point",
                         _np.zeros(w_scale.shape, dtype=_np.int8))
        rw.add_node("DequantizeLinear", [wq, ws, wz], [base + "_weight"],
                    base + "_weight_DequantizeLinear", axis=axis)
        node.input[1] = base + "_weight"
        bias_index = 2
        if len(node.input) > bias_index and node.input[bias_index]:
            b = rw.constant(node.input[bias_index])
            x_name = node.input[0]
            if b is not None and x_name in params and b.ndim == 1 and \
                    b.shape[0] == w_scale.shape[0]:
                b_scale = (params[x_name][0] * w_scale).astype(_np.float32)
                b_values = _np.rint(b / b_scale).astype(_np.int32)
                bq = rw.add_init(base + "_bias_quantized", b_values)
                bs = rw.add_init(base + "_bias_scale", b_scale)
                bz = rw.add_init(base + "_bias_zero_point",
                                 _np.zeros(b_scale.shape, dtype=_np.int32))
                rw.add_node("DequantizeLinear", [bq, bs, bz],
                            [base + "_bias"], base + "_bias_DequantizeLinear",
                            axis=0)
                node.input[bias_index] = base + "_bias"

    # Consumers read the dequantized tensors (graph outputs keep the float
    # tensor under its name).
    for node in rw.graph.node:
        for i, name in enumerate(node.input):
            if name in renamed:
                node.input[i] = renamed[name]
    accuracy = _finish(rw, output, float_bytes, feeds)
    return QuantizeResult(_os.fspath(output), [n.name for n in nodes],
                          len(ranges), accuracy)


def _finish(rw, output, float_bytes, feeds):
    """Adds the new nodes and initializers, drops the float weights nothing
    reads, sorts, checks and writes the model; returns its accuracy
    against the float model on ``feeds`` (empty without feeds)."""
    import onnx
    from . import InferenceSession
    rw.graph.initializer.extend(rw.new_inits)
    nodes = list(rw.graph.node) + rw.new_nodes
    read = {n for node in nodes for n in node.input}
    read.update(o.name for o in rw.graph.output)
    kept = [t for t in rw.graph.initializer if t.name in read]
    del rw.graph.initializer[:]
    rw.graph.initializer.extend(kept)
    del rw.graph.node[:]
    rw.graph.node.extend(_topological(rw.graph, nodes))
    onnx.checker.check_model(rw.model)
    onnx.save(rw.model, _os.fspath(output))
    if not feeds:
        return {}
    accuracy = {}
    float_session = InferenceSession(float_bytes)
    quant_session = InferenceSession(_os.fspath(output))
    names = [o.name for o in rw.graph.output]
    errors = {n: [] for n in names}
    agree = {n: [] for n in names}
    for feed in feeds:
        want = float_session.run(names, feed)
        got = quant_session.run(names, feed)
        for n, a, b in zip(names, want, got):
            a = _np.asarray(a, dtype=_np.float64)
            b = _np.asarray(b, dtype=_np.float64)
            errors[n].append(_np.abs(a - b).ravel())
            if a.ndim == 2 and a.shape[1] > 1:
                agree[n].append(a.argmax(axis=1) == b.argmax(axis=1))
    for n in names:
        diff = _np.concatenate(errors[n])
        entry = {"max_abs_error": float(diff.max()),
                 "mean_abs_error": float(diff.mean())}
        if agree[n]:
            entry["top1_agreement"] = float(_np.concatenate(agree[n]).mean())
        accuracy[n] = entry
    return accuracy


def _topological(graph, nodes):
    """``nodes`` in an order where each reads only tensors written before
    it (initializers and graph inputs first); the given order among the
    ready ones."""
    ready = {t.name for t in graph.initializer}
    ready.update(i.name for i in graph.input)
    ready.add("")
    pending = list(nodes)
    ordered = []
    while pending:
        rest = []
        for node in pending:
            if all(n in ready for n in node.input):
                ordered.append(node)
                ready.update(node.output)
            else:
                rest.append(node)
        if len(rest) == len(pending):
            raise ValueError("the graph has a cycle or reads a tensor no node "
                             f"writes: {rest[0].name or rest[0].op_type}")
        pending = rest
    return ordered


def _quantize_dynamic(rw, exclude_nodes, exclude_ops):
    """Rewrites each MatMul / Gemm with a constant 2-D weight into
    DynamicQuantizeLinear + MatMulInteger + the float rescale; returns the
    names of the nodes rewritten."""
    from onnx import TensorProto
    quantized_inputs = {}
    done = []
    for node in list(rw.graph.node):
        if node.op_type not in ("MatMul", "Gemm"):
            continue
        if node.name in exclude_nodes or node.op_type in exclude_ops:
            continue
        w = rw.constant(node.input[1])
        if w is None or w.ndim != 2 or not rw.is_activation(node.input[0]):
            continue
        bias = None
        if node.op_type == "Gemm":
            attrs = {a.name: a for a in node.attribute}
            if any(attrs[k].f != 1.0 for k in ("alpha", "beta") if k in attrs):
                continue
            if "transA" in attrs and attrs["transA"].i:
                continue
            if "transB" in attrs and attrs["transB"].i:
                w = w.T
            if len(node.input) > 2 and node.input[2]:
                bias = node.input[2]
        base = (node.name or node.output[0]).replace("/", "_").replace(":", "_")
        x = node.input[0]
        if x not in quantized_inputs:
            stem = x.replace("/", "_").replace(":", "_")
            quantized_inputs[x] = (stem + "_quantized", stem + "_scale",
                                   stem + "_zero_point")
            rw.add_node("DynamicQuantizeLinear", [x],
                        list(quantized_inputs[x]),
                        stem + "_DynamicQuantizeLinear")
        xq, xs, xz = quantized_inputs[x]
        w_scale, w_values = _int8_per_channel(w, 1)
        wq = rw.add_init(base + "_weight_quantized", w_values)
        ws = rw.add_init(base + "_weight_scale", w_scale)
        wz = rw.add_init(base + "_weight_zero_point",
                         _np.zeros(w_scale.shape, dtype=_np.int8))
        rw.add_node("MatMulInteger", [xq, wq, xz, wz], [base + "_int32"],
                    base + "_MatMulInteger")
        rw.add_node("Cast", [base + "_int32"], [base + "_float"],
                    base + "_Cast", to=TensorProto.FLOAT)
        rw.add_node("Mul", [xs, ws], [base + "_scale"], base + "_scale_Mul")
        out = node.output[0]
        scaled = base + "_scaled" if bias else out
        rw.add_node("Mul", [base + "_float", base + "_scale"], [scaled],
                    base + "_Mul")
        if bias:
            rw.add_node("Add", [scaled, bias], [out], base + "_bias_Add")
        rw.graph.node.remove(node)
        done.append(node.name)
    return done


def command_main(argv):
    """``weft quantize``'s work (tools/weft/quantize_command.cc checks the
    flags, then runs this): quantizes, prints what was quantized and the
    accuracy, and returns the exit code (2: bad input, named)."""
    import argparse
    import sys
    parser = argparse.ArgumentParser(prog="weft quantize")
    parser.add_argument("model")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--calibrate")
    parser.add_argument("--dynamic", action="store_true")
    parser.add_argument("--method", default="minmax")
    parser.add_argument("--percentile", type=float, default=99.999)
    parser.add_argument("--exclude-node", action="append", default=[])
    parser.add_argument("--exclude-op", action="append", default=[])
    args = parser.parse_args(argv)
    try:
        result = quantize(args.model, args.output, args.calibrate,
                          dynamic=args.dynamic, method=args.method,
                          percentile=args.percentile,
                          exclude_nodes=args.exclude_node,
                          exclude_ops=args.exclude_op)
    except (ValueError, OSError) as e:
        print(f"weft: error: {e}", file=sys.stderr)
        return 2
    form = "dynamic" if args.dynamic else "static (QDQ)"
    print(f"weft quantize: wrote {result.output}, {form}: "
          f"{len(result.quantized_nodes)} nodes quantized"
          + ("" if args.dynamic else
             f", {result.calibrated_tensors} tensors calibrated"))
    for output, entry in result.accuracy.items():
        parts = [f"max abs error {entry['max_abs_error']:.4g}",
                 f"mean abs error {entry['mean_abs_error']:.4g}"]
        if "top1_agreement" in entry:
            parts.append(f"top-1 agreement {entry['top1_agreement']:.1%}")
        print(f"  {output} against the float model: {', '.join(parts)}")
    return 0
