"""Errors are Python exceptions of the fitting type, naming what is wrong."""
import os

import numpy as np
import pytest

import weft
from conftest import DATA


def test_unknown_feed_or_fetch_is_a_key_error(mlp_path):
    session = weft.InferenceSession(mlp_path)
    with pytest.raises(KeyError, match="no input named 'z'; the inputs are x"):
        session.run(None, {"z": np.ones((1, 4), np.float32)})
    with pytest.raises(KeyError, match="no output named 'q'"):
        session.run(["q"], {"x": np.ones((1, 4), np.float32)})


def test_a_wrong_dtype_or_shape_is_a_value_error_naming_the_input(mlp_path):
    session = weft.InferenceSession(mlp_path)
    with pytest.raises(ValueError, match="input 'x': expected dtype float32, got int64"):
        session.run(None, {"x": np.ones((1, 4), np.int64)})
    with pytest.raises(ValueError, match="dimension 1 is 5"):
        session.run(None, {"x": np.ones((1, 5), np.float32)})


def test_a_bad_model_is_a_value_error():
    with pytest.raises(ValueError, match="unknown op 'FluxCapacitor'"):
        weft.InferenceSession(os.path.join(DATA, "unknown_op.json"))


def test_a_missing_file_is_a_file_not_found_error_naming_it():
    with pytest.raises(FileNotFoundError, match="no_such.onnx"):
        weft.InferenceSession(os.path.join(DATA, "no_such.onnx"))


def test_a_failing_run_is_a_value_error_naming_the_node():
    session = weft.InferenceSession(os.path.join(DATA, "div_zero.json"))
    with pytest.raises((ValueError, RuntimeError), match="node 'q'"):
        session.run(None, {})


def test_a_run_past_the_memory_limit_is_a_memory_error():
    g = weft.Graph()
    x = g.placeholder("x", np.float32, [None])
    y = g.op("Add", [x, x], name="y")
    feed = {x: np.ones(1 << 20, np.float32)}  # y needs 4 MiB.
    limited = weft.ConfigProto(memory_limit_bytes=1 << 20)
    with pytest.raises(MemoryError, match="memory"):
        weft.Session(g, limited).run(y, feed)
    options = weft.SessionOptions()
    options.memory_limit_bytes = 1 << 20
    with pytest.raises(MemoryError):
        weft.InferenceSession(g, options).run(None, {"x": feed[x]})
    assert weft.Session(g).run(y, feed).shape == (1 << 20,)


def test_a_model_path_that_is_no_readable_file_says_why(tmp_path):
    with pytest.raises(IsADirectoryError, match="Is a directory") as error:
        weft.InferenceSession(str(tmp_path))
    assert error.value.filename == str(tmp_path)
    with pytest.raises(FileNotFoundError,
                       match="cannot read the model file: No such file"):
        weft.InferenceSession(str(tmp_path / "absent.onnx"))
    with pytest.raises(IsADirectoryError, match="graph file: Is a directory"):
        weft.Session(str(tmp_path))


def test_the_model_format_comes_from_the_content(tmp_path):
    # An ONNX model under another name, and a weft JSON graph under .onnx.
    onnx_bytes = open(os.path.join(DATA, "mlp.onnx"), "rb").read()
    (tmp_path / "model.bin").write_bytes(onnx_bytes)
    session = weft.InferenceSession(str(tmp_path / "model.bin"))
    assert [i.name for i in session.get_inputs()] == ["x"]
    graph_text = open(os.path.join(DATA, "add_feed.json")).read()
    (tmp_path / "graph.onnx").write_text(graph_text)
    weft.Session(str(tmp_path / "graph.onnx"))


def test_a_four_bit_value_has_no_numpy_dtype_and_says_so(tmp_path):
    from onnx import TensorProto, helper
    int4 = 22  # TensorProto.INT4 in onnx 1.16 and later.
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["q"], to=int4),
         helper.make_node("Identity", ["q"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.INT32, [2])],
        [helper.make_tensor_value_info("y", int4, [2])])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    path = tmp_path / "int4.onnx"
    path.write_bytes(model.SerializeToString())
    session = weft.InferenceSession(str(path))
    with pytest.raises(ValueError,
                       match="an output of dtype int4 has no NumPy dtype"):
        session.run(None, {"x": np.array([3, -9], np.int32)})


def test_names_that_are_not_utf8_round_trip_and_errors_show_their_bytes():
    # ONNX names are bytes nothing checks (ONNX Runtime loads this model):
    # each comes to Python with the byte 0xFF as a lone surrogate, as
    # os.fsdecode gives a file name, and the same str feeds and fetches it.
    session = weft.InferenceSession(os.path.join(DATA, "non_utf8_names.onnx"))
    x = session.get_inputs()[0].name
    y = session.get_outputs()[0].name
    assert (x, y) == ("X\udcffXX", "Y\udcffYY")
    feed = {x: np.array([-1, 2], np.float32)}
    np.testing.assert_array_equal(session.run([y], feed)[0], [0, 2])
    # An error naming one shows the byte, and is still the fitting type.
    with pytest.raises(ValueError, match=r"feed 'X\\xffXX' has shape \[3\]"):
        session.run(None, {x: np.ones(3, np.float32)})
    with pytest.raises(ValueError, match=r"input 'X\\xffXX': expected dtype float32"):
        session.run(None, {x: np.ones(2, np.int64)})
    with pytest.raises(KeyError, match=r"the outputs are Y\\\\xffYY"):
        session.run(["nope"], feed)
