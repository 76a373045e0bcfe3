"""weft.Graph: graphs from Python with any registered op, saved and loaded."""
import os

import numpy as np
import pytest

import weft
from conftest import DATA


def _mlp_graph():
    g = weft.Graph()
    x = g.placeholder("x", np.float32, [None, 4])
    w = g.constant(np.arange(12, dtype=np.float32).reshape(4, 3), name="w")
    b = g.constant(np.array([1, -100, 0], np.float32))
    y = g.op("Relu", [g.op("Add", [g.op("MatMul", [x, w]), b])], name="y")
    return g, x, y


def test_build_and_run_with_both_session_styles():
    g, x, y = _mlp_graph()
    assert (x, y) == ("x", "y")
    assert g.outputs == ["y"]
    assert g.node_names() == ["x", "w", "Const", "MatMul", "Add", "y"]
    feed = np.ones((2, 4), np.float32)
    expected = np.maximum(feed @ np.arange(12, dtype=np.float32).reshape(4, 3)
                          + [1, -100, 0], 0)
    np.testing.assert_array_equal(weft.Session(g).run(y, {x: feed}), expected)
    (out,) = weft.InferenceSession(g).run(None, {"x": feed})
    np.testing.assert_array_equal(out, expected)


def test_attributes_take_their_declared_types_and_multi_output_ops_give_lists():
    g = weft.Graph()
    x = g.placeholder("x", "float32", [2, 6])
    parts = g.op("Split", [x], axis=1, num_outputs=3)
    assert parts == ["Split", "Split:1", "Split:2"]
    t = g.op("Transpose", [parts[1]], perm=[1, 0])
    c = g.op("Cast", [t], to=np.int64)
    values = np.arange(12, dtype=np.float32).reshape(2, 6)
    got = weft.Session(g).run([parts[2], c], {x: values})
    np.testing.assert_array_equal(got[0], values[:, 4:])
    np.testing.assert_array_equal(got[1], values[:, 2:4].T.astype(np.int64))
    assert got[1].dtype == np.int64


def test_mistakes_are_value_errors_naming_the_node():
    g = weft.Graph()
    x = g.placeholder("x", np.float32, [3])
    with pytest.raises(ValueError, match="no op named 'Reluu'.*did you mean 'Relu'"):
        g.op("Reluu", [x])
    with pytest.raises(ValueError, match="node 'Transpose': Transpose has no attribute 'prem'.*perm"):
        g.op("Transpose", [x], prem=[0])
    with pytest.raises(ValueError, match="node 't' attribute 'perm'.*not an int"):
        g.op("Transpose", [x], name="t", perm=["a"])
    with pytest.raises(ValueError, match="duplicate node name 'x'"):
        g.placeholder("x", np.float32, [3])
    with pytest.raises(ValueError, match="placeholder 'p'.*complex128 is not one weft has"):
        g.placeholder("p", np.complex128, [3])
    # A node reading a tensor that does not exist is refused when added,
    # naming the node; the graph still makes a session.
    with pytest.raises(ValueError, match="node 'r' \\(Relu\\): input 0 "
                       "'nowhere' names no tensor"):
        g.op("Relu", ["nowhere"], name="r")
    weft.Session(g)


def test_constants_are_copies():
    g = weft.Graph()
    values = np.array([1, 2, 3], np.float32)
    c = g.constant(values, name="c")
    values[:] = 0
    np.testing.assert_array_equal(weft.Session(g).run(c), [1, 2, 3])


def test_save_and_load_json_round_trip(tmp_path):
    g, x, y = _mlp_graph()
    path = tmp_path / "mlp.json"
    g.save(path)
    loaded = weft.load(path)
    assert loaded.outputs == ["y"]
    feed = {x: np.full((1, 4), 0.5, np.float32)}
    np.testing.assert_array_equal(weft.Session(loaded).run(y, feed),
                                  weft.Session(g).run(y, feed))
    with pytest.raises(FileNotFoundError, match="No such file or directory"):
        weft.load(tmp_path / "missing.json")


def test_load_an_onnx_model_and_extend_it(mlp_path):
    g = weft.load(mlp_path)
    (out_name,) = g.outputs
    doubled = g.op("Add", [out_name, out_name], name="doubled")
    x = np.ones((2, 4), np.float32)
    (reference,) = weft.InferenceSession(mlp_path).run(None, {"x": x})
    np.testing.assert_allclose(weft.Session(g).run(doubled, {"x": x}),
                               2 * reference)
    with pytest.raises(ValueError):
        weft.load(os.path.join(DATA, "bad_syntax.json"))


def test_an_input_naming_no_tensor_is_refused_at_once_and_the_graph_kept():
    g = weft.Graph()
    x = g.placeholder("input", np.float32, [2])
    before = g.node_names()
    with pytest.raises(ValueError, match="Relu: input 0 'nothere' names no "
                       "tensor of this graph"):
        g.op("Relu", ["nothere"])
    with pytest.raises(ValueError, match="did you mean 'input'"):
        g.op("Add", [x, "inptu"])
    with pytest.raises(TypeError, match="must be a list of tensor names"):
        g.op("Relu", x)
    assert g.node_names() == before
    # The graph still builds and runs: nothing half-added.
    y = g.op("Relu", [x], name="y")
    out = weft.Session(g).run(y, {x: np.array([-1, 2], np.float32)})
    np.testing.assert_array_equal(out, [0, 2])
    # "node:k" names the node's k-th output.
    assert g.op("Identity", ["input:0"])
