#!/usr/bin/python3
"""Rewrites a QDQ model (as weft.quantize and ONNX Runtime's static
quantizer write it) into ONNX Runtime's QOperator form, the form its
quantizer writes with QuantFormat.QOperator and older tools by default:
QLinearConv, and com.microsoft's QLinearAdd, QLinearGlobalAveragePool and
QGemm, with MaxPool and Flatten on the integers. Biases are taken as the
quantizers write them: int32 with the input's scale times the weight's. weft expands the
com.microsoft ops at load (docs/onnx.md), so both forms should run at the
same speed in weft; bench/models/qoperator.sh measures that, and ONNX
Runtime on both.

  qoperator_form.py QDQ.onnx OUT.onnx

A group is rewritten only where the integer op means what the QDQ group
does: a Relu or Clip(0, max) between the op and its QuantizeLinear is
dropped only when saturation does its work (uint8, zero point 0, and
255 * scale <= max). What is not rewritten stays in QDQ form.
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

MS = "com.microsoft"


class Graph:
    def __init__(self, model):
        self.model = model
        self.graph = model.graph
        self.inits = {t.name: t for t in self.graph.initializer}
        self.producer = {}
        self.readers = {}
        for n in self.graph.node:
            for o in n.output:
                self.producer[o] = n
            for i in n.input:
                self.readers.setdefault(i, []).append(n)
        self.outputs = {o.name for o in self.graph.output}

    def only_reader(self, value):
        readers = self.readers.get(value, [])
        if len(readers) != 1 or value in self.outputs:
            return None
        return readers[0]

    def dequantized(self, value):
        """(quantized, scale, zero) when `value` is DequantizeLinear's."""
        n = self.producer.get(value)
        if n is None or n.op_type != "DequantizeLinear":
            return None
        return list(n.input) + [""] * (3 - len(n.input))

    def value(self, name):
        """A constant's value: an initializer's or a Constant node's."""
        if name in self.inits:
            return numpy_helper.to_array(self.inits[name])
        n = self.producer.get(name)
        if n is not None and n.op_type == "Constant" and n.attribute and \
                n.attribute[0].name == "value":
            return numpy_helper.to_array(n.attribute[0].t)
        return None


def quantize_after(g, node):
    """The QuantizeLinear reading `node`'s output, through a Relu or Clip
    whose dropping is exact (uint8 with zero point 0 saturates at 0, and
    at 255 * scale below Clip's max); (q_node, dropped_node) or (None,
    None)."""
    reader = g.only_reader(node.output[0])
    bound = None
    if reader is not None and reader.op_type in ("Relu", "Clip"):
        bound, reader = reader, g.only_reader(reader.output[0])
    if reader is None or reader.op_type != "QuantizeLinear":
        return None, None
    if bound is not None:
        zero = g.value(reader.input[2])
        if zero is None or zero.dtype != np.uint8 or zero.any():
            return None, None
        if bound.op_type == "Clip":
            low = g.value(bound.input[1]) if len(bound.input) > 1 else None
            high = g.value(bound.input[2]) if len(bound.input) > 2 else None
            scale = g.value(reader.input[1])
            if low is None or high is None or scale is None or \
                    float(low) != 0.0 or float(high) < 255 * float(scale):
                return None, None
    return reader, bound


def rewrite(model):
    g = Graph(model)
    replaced, new_nodes = set(), {}
    for n in g.graph.node:
        if n.op_type not in ("Conv", "Add", "Gemm"):
            continue
        q, bound = quantize_after(g, n)
        ins = [g.dequantized(i) for i in n.input]
        if q is None or any(x is None for x in ins):
            continue
        drop = [n, q] + ([bound] if bound else [])
        out = list(q.input[1:3]) + [q.output[0]]
        if n.op_type == "Conv":
            x, w = ins[0], ins[1]
            args = x + w + out[:2]
            if len(ins) > 2:
                args.append(ins[2][0])
            node = helper.make_node("QLinearConv", args, [out[2]],
                                    name=n.name)
            node.attribute.extend(n.attribute)
        elif n.op_type == "Add":
            node = helper.make_node("QLinearAdd", ins[0] + ins[1] + out[:2],
                                    [out[2]], name=n.name, domain=MS)
        else:
            attrs = {a.name: helper.get_attribute_value(a)
                     for a in n.attribute}
            if attrs.get("alpha", 1.0) != 1.0 or attrs.get("beta", 1.0) != 1.0:
                continue
            args = ins[0] + ins[1] + [ins[2][0] if len(ins) > 2 else ""]
            node = helper.make_node("QGemm", args + out[:2], [out[2]],
                                    name=n.name, domain=MS,
                                    transB=attrs.get("transB", 0))
        for d in drop:
            replaced.add(id(d))
        new_nodes[id(q)] = node
    for n in g.graph.node:
        rewritten = pool_on_integers(g, n)
        if rewritten is None:
            continue
        drop, q, pool_nodes = rewritten
        for d in drop:
            replaced.add(id(d))
        new_nodes[id(q)] = pool_nodes
    nodes = []
    for n in g.graph.node:
        if id(n) in new_nodes:
            made = new_nodes[id(n)]
            nodes.extend(made if isinstance(made, list) else [made])
        elif id(n) not in replaced:
            nodes.append(n)
    del g.graph.node[:]
    g.graph.node.extend(nodes)
    drop_dead_dequantizers(model)
    if not any(o.domain == MS for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(MS, 1))
    return model


def same_constant(g, a, b):
    if a == b:
        return True
    ta, tb = g.inits.get(a), g.inits.get(b)
    return (ta is not None and tb is not None and
            np.array_equal(numpy_helper.to_array(ta),
                           numpy_helper.to_array(tb)))


def pool_on_integers(g, n):
    """MaxPool between a DequantizeLinear and a QuantizeLinear of the same
    parameters runs on the integers; GlobalAveragePool [-> Flatten] ->
    QuantizeLinear becomes QLinearGlobalAveragePool [-> Flatten]. Returns
    (nodes to drop, the QuantizeLinear replaced, the new nodes) or None."""
    if n.op_type not in ("MaxPool", "GlobalAveragePool") or \
            len(n.output) != 1:
        return None
    x = g.dequantized(n.input[0])
    flatten = None
    reader = g.only_reader(n.output[0])
    if n.op_type == "GlobalAveragePool" and reader is not None and \
            reader.op_type == "Flatten":
        flatten, reader = reader, g.only_reader(reader.output[0])
    if x is None or reader is None or reader.op_type != "QuantizeLinear":
        return None
    q = reader
    if n.op_type == "MaxPool":
        if not (same_constant(g, x[1], q.input[1]) and
                same_constant(g, x[2], q.input[2])):
            return None
        pool = helper.make_node("MaxPool", [x[0]], [q.output[0]],
                                name=n.name)
        pool.attribute.extend(n.attribute)
        return [n, q], q, [pool]
    pooled = q.output[0] + "/pooled" if flatten else q.output[0]
    made = [helper.make_node("QLinearGlobalAveragePool",
                             x + list(q.input[1:3]), [pooled], name=n.name,
                             domain=MS)]
    if flatten:
        made.append(helper.make_node("Flatten", [pooled], [q.output[0]],
                                     name=flatten.name,
                                     axis=helper.get_attribute_value(
                                         flatten.attribute[0])
                                     if flatten.attribute else 1))
    return [n, q] + ([flatten] if flatten else []), q, made


def drop_dead_dequantizers(model):
    """Removes the nodes and initializers nothing reads any more."""
    while True:
        read = {i for n in model.graph.node for i in n.input}
        read |= {o.name for o in model.graph.output}
        keep = [n for n in model.graph.node
                if any(o in read for o in n.output)]
        if len(keep) == len(model.graph.node):
            break
        del model.graph.node[:]
        model.graph.node.extend(keep)
    inits = [t for t in model.graph.initializer if t.name in read]
    del model.graph.initializer[:]
    model.graph.initializer.extend(inits)


def main():
    model = rewrite(onnx.load(sys.argv[1]))
    ops = {}
    for n in model.graph.node:
        key = (n.domain + "." if n.domain else "") + n.op_type
        ops[key] = ops.get(key, 0) + 1
    onnx.save(model, sys.argv[2])
    print(sys.argv[2] + ": " + ", ".join(
        f"{v} {k}" for k, v in sorted(ops.items(), key=lambda kv: -kv[1])))


if __name__ == "__main__":
    main()
