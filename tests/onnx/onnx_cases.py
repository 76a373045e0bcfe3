"""What the ONNX case families of this folder share: a registry of
one-node cases, and the two steps that write them in the backend node
tests' layout (DIR/test_NAME/model.onnx and
test_data_set_0/{input,output}_K.pb). The expected outputs come from ONNX
Runtime, which runs in node.js here, so a family's make_cases.py runs twice
around ort_expected.js (regenerate_cases.sh does the three):
  make_cases.py models DIR    writes the models and their inputs (.pb, and
                              .npy for ort_expected.js)
  make_cases.py outputs DIR   turns ort_expected.js's out_K.npy files into
                              output_K.pb and removes the .npy files
"""
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(18)
CASES = []

ELEMENT_TYPES = {
    np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE,
    np.float16: TensorProto.FLOAT16, np.int8: TensorProto.INT8,
    np.int16: TensorProto.INT16, np.int32: TensorProto.INT32,
    np.int64: TensorProto.INT64, np.uint8: TensorProto.UINT8,
    np.uint16: TensorProto.UINT16, np.uint32: TensorProto.UINT32,
    np.uint64: TensorProto.UINT64, np.bool_: TensorProto.BOOL,
    np.object_: TensorProto.STRING,
}


def strings(*values):
    """A string tensor (NumPy's object array of str)."""
    return np.array(values, dtype=object)


def save_for_node(path_without_extension, value):
    """An input as ort_expected.js reads it: .npy, or .json (shape and
    data) for strings, which .npy holds only as Python pickles."""
    if value.dtype == object:
        with open(path_without_extension + ".json", "w") as f:
            json.dump({"shape": list(value.shape),
                       "data": [str(v) for v in value.flat]}, f)
    else:
        np.save(path_without_extension + ".npy", value)


def load_from_node(path_without_extension):
    """An output ort_expected.js wrote (see save_for_node), removed once
    read; None when there is none."""
    for extension in (".npy", ".json"):
        path = path_without_extension + extension
        if os.path.exists(path):
            if extension == ".npy":
                value = np.load(path)
            else:
                with open(path) as f:
                    saved = json.load(f)
                value = np.array(saved["data"], dtype=object).reshape(
                    saved["shape"])
            os.remove(path)
            return value
    return None


def case(name, op, inputs, attrs=None, consts=None, outputs=1, opset=18,
         output_type=None, reference=None, domain="", order=None,
         output_types=None, output_names=None, ort_differs=None):
    """One node of `op` (of `domain`, the default one when ""): `inputs` are
    fed, `consts` are initializers (in that order after the fed ones, or in
    `order`, a list of their names where "" omits an optional input);
    `output_type` is the outputs' element type when not the first input's
    (`output_types`, one per output, when they differ); `output_names`, when
    given, names the node's outputs, "" for one not asked for. `reference`,
    when given, computes the expected outputs in NumPy from (inputs, consts)
    instead of taking ONNX Runtime's, which must still agree within 1e-4
    (within one step for integer outputs), or may fail where it has no CPU
    kernel for the op. `ort_differs`, with a reference, says why ONNX
    Runtime's outputs are not compared: where it departs from ONNX's own
    reference implementation (docs/onnx.md lists each such case)."""
    names = output_names or [f"y{k}" for k in range(outputs)]
    fetched = [n for n in names if n]
    CASES.append({"name": name, "op": op, "inputs": inputs,
                  "attrs": attrs or {}, "consts": consts or {},
                  "opset": opset, "output_names": names,
                  "output_types": output_types or [output_type] * len(fetched),
                  "reference": reference, "domain": domain, "order": order,
                  "ort_differs": ort_differs})


def graph_case(name, nodes, inputs, consts, outputs, opset=18,
               reference=None, ort_differs=None):
    """A graph of several nodes (onnx.helper.make_node), fed `inputs`, with
    initializers `consts` and graph outputs named in `outputs`; a node of
    another domain brings that domain's opset 1 into the model.
    `reference` and `ort_differs` as for case()."""
    CASES.append({"name": name, "nodes": nodes, "inputs": inputs,
                  "consts": consts, "opset": opset, "output_names": outputs,
                  "reference": reference, "ort_differs": ort_differs})


def floats(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def ints(low, high, *shape, dtype=np.int32):
    return RNG.integers(low, high, shape).astype(dtype)


def node_inputs(c):
    if c["order"] is not None:
        return c["order"]
    return list(c["inputs"]) + list(c["consts"])


def initializer(name, value):
    """A const as a TensorProto: a NumPy value converted, or a TensorProto
    (one of a type NumPy has not, such as INT4) renamed."""
    if isinstance(value, onnx.TensorProto):
        tensor = onnx.TensorProto()
        tensor.CopyFrom(value)
        tensor.name = name
        return tensor
    return numpy_helper.from_array(np.asarray(value), name)


def model_of(c):
    names = c["output_names"]
    first = next(iter(c["inputs"].values()))
    if "nodes" in c:
        nodes = c["nodes"]
        outputs = [onnx.ValueInfoProto(name=n) for n in names]
    else:
        nodes = [helper.make_node(c["op"], node_inputs(c), names,
                                  domain=c["domain"] or None, **c["attrs"])]
        outputs = [helper.make_tensor_value_info(
            k, t or ELEMENT_TYPES[first.dtype.type], None)
            for k, t in zip([n for n in names if n], c["output_types"])]
    graph = helper.make_graph(
        nodes, c["name"],
        [helper.make_tensor_value_info(k, ELEMENT_TYPES[v.dtype.type],
                                       list(v.shape))
         for k, v in c["inputs"].items()],
        outputs,
        initializer=[initializer(k, v) for k, v in c["consts"].items()])
    opsets = [helper.make_opsetid("", c["opset"])]
    for domain in sorted({n.domain for n in nodes if n.domain}):
        opsets.append(helper.make_opsetid(domain, 1))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model


def write_models(root):
    shutil.rmtree(root, ignore_errors=True)
    for c in CASES:
        folder = os.path.join(root, f"test_{c['name']}")
        data = os.path.join(folder, "test_data_set_0")
        os.makedirs(data)
        onnx.save(model_of(c), os.path.join(folder, "model.onnx"))
        for k, (key, value) in enumerate(c["inputs"].items()):
            tensor = numpy_helper.from_array(value, key)
            with open(os.path.join(data, f"input_{k}.pb"), "wb") as f:
                f.write(tensor.SerializeToString())
            save_for_node(os.path.join(data, f"in_{key}"), value)
    print(f"{len(CASES)} cases in {root}")


def agrees(want, value):
    if want.shape != value.shape:
        return False
    if want.dtype == object:
        return want.tolist() == value.tolist()
    if want.dtype.kind in "iu":
        return np.all(np.abs(want.astype(np.int64) - value.astype(np.int64))
                      <= 1)
    return np.allclose(want, value, atol=1e-4, equal_nan=True)


def write_outputs(root):
    references = {f"test_{c['name']}": c for c in CASES
                  if c["reference"] is not None}
    for case_dir in sorted(os.listdir(root)):
        data = os.path.join(root, case_dir, "test_data_set_0")
        error = os.path.join(data, "error.txt")
        c = references.get(case_dir)
        if os.path.exists(error) and c is None:
            sys.exit(f"{case_dir}: ONNX Runtime failed: {open(error).read()}")
        model = onnx.load(os.path.join(root, case_dir, "model.onnx"))
        expected = c["reference"](c["inputs"], c["consts"]) if c else None
        ort_differs = c is not None and c["ort_differs"] is not None
        differences = 0
        for k, output in enumerate(model.graph.output):
            value = load_from_node(os.path.join(data, f"out_{k}"))
            if value is not None:
                if expected is not None:
                    want = np.asarray(expected[k], dtype=value.dtype)
                    # Where ONNX Runtime is known to differ, any
                    # difference counts (agrees() allows integers one step).
                    differences += not (
                        np.array_equal(want, value,
                                       equal_nan=want.dtype.kind == "f")
                        if ort_differs else agrees(want, value))
                    if differences and not ort_differs:
                        sys.exit(f"{case_dir}: ONNX Runtime and NumPy "
                                 "disagree")
                    value = want
            else:
                value = np.asarray(expected[k])
            tensor = numpy_helper.from_array(value, output.name)
            with open(os.path.join(data, f"output_{k}.pb"), "wb") as f:
                f.write(tensor.SerializeToString())
        if ort_differs and not differences:
            sys.exit(f"{case_dir}: ONNX Runtime now agrees with the "
                     "reference; drop ort_differs")
        for f in os.listdir(data):
            if (f.startswith("in_") and f.endswith((".npy", ".json"))) or \
                    f == "error.txt":
                os.remove(os.path.join(data, f))


def main(*families):
    """Registers the cases of each function in `families`, then runs the
    step the command line names."""
    for family in families:
        family()
    step, root = sys.argv[1], sys.argv[2]
    {"models": write_models, "outputs": write_outputs}[step](root)
