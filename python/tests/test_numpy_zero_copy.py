"""NumPy without copies: feeds read in place, outputs that own weft's
buffer, checked by address; other feeds converted once or refused."""
import sys

import numpy as np
import pytest

import weft


def _address(array):
    return array.__array_interface__["data"][0]


def _recording_graph(dtype=np.float32):
    """x -> py_function that records the address of what it is given -> y."""
    seen = []
    g = weft.Graph()
    x = g.placeholder("x", dtype, [None, 3])
    g.py_function(lambda a: seen.append(_address(a)) or a * 2, [x], dtype, name="y")
    return g, seen


def test_a_contiguous_feed_of_the_right_dtype_is_used_in_place():
    g, seen = _recording_graph()
    session = weft.Session(g)
    feed = np.arange(6, dtype=np.float32).reshape(2, 3)
    references = sys.getrefcount(feed)
    y = session.run("y", {"x": feed})
    assert seen == [_address(feed)]  # The kernel read the caller's memory.
    np.testing.assert_array_equal(y, feed * 2)
    assert sys.getrefcount(feed) == references  # Released after the run.


def test_an_output_owns_weft_buffer_without_a_copy():
    seen = []
    g = weft.Graph()
    x = g.placeholder("x", np.float32, [4])
    y = g.op("Relu", [x], name="y")
    g.py_function(lambda a: seen.append(_address(a)) or a + 1, [y], np.float32,
                  name="z")
    y_value, _ = weft.Session(g).run([y, "z"], {x: np.ones(4, np.float32)})
    assert _address(y_value) == seen[0]  # The buffer the node wrote.
    assert y_value.flags.owndata is False and y_value.base is not None
    assert y_value.flags.writeable  # Nothing else holds it.


def test_shared_buffers_come_back_read_only():
    g = weft.Graph()
    c = g.constant(np.array([1, 2], np.float32), name="c")
    x = g.placeholder("x", np.float32, [2])
    session = weft.Session(g)
    constant = session.run(c)
    with pytest.raises(ValueError, match="read-only"):
        constant[0] = 5  # Would change the graph's constant for every run.
    np.testing.assert_array_equal(session.run(c), [1, 2])
    feed = np.zeros(2, np.float32)
    passed_through = session.run(x, {x: feed})
    assert _address(passed_through) == _address(feed)
    assert not passed_through.flags.writeable


def test_non_contiguous_feeds_are_converted_once():
    g, seen = _recording_graph()
    session = weft.Session(g)
    wide = np.arange(12, dtype=np.float32).reshape(2, 6)
    strided = wide[:, ::2]
    y = session.run("y", {"x": strided})
    np.testing.assert_array_equal(y, strided * 2)
    assert seen[0] != _address(strided)
    fortran = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(session.run("y", {"x": fortran}), fortran * 2)
    # A list converts too (InferenceSession takes what np.asarray takes).
    np.testing.assert_array_equal(
        session.run("y", {"x": np.asarray([[1, 2, 3]], np.float32)}), [[2, 4, 6]])


def test_a_misaligned_contiguous_feed_is_copied_not_refused():
    # As an array unpickled from a buffer at an odd offset (Dask sends
    # blocks so): C-contiguous, but its floats not on 4-byte boundaries.
    g, seen = _recording_graph()
    raw = np.zeros(6 * 4 + 1, np.uint8)
    misaligned = raw[1:].view(np.float32).reshape(2, 3)
    misaligned[:] = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert misaligned.flags.c_contiguous and not misaligned.flags.aligned
    y = weft.Session(g).run("y", {"x": misaligned})
    np.testing.assert_array_equal(y, misaligned * 2)
    assert seen[0] != _address(misaligned)


def test_other_dtypes_and_shapes_are_refused_naming_the_input(mlp_path):
    session = weft.InferenceSession(mlp_path)
    with pytest.raises(ValueError, match="input 'x': expected dtype float32, got float64"):
        session.run(None, {"x": np.ones((1, 4))})
    with pytest.raises(ValueError, match="'x'.*dimension 1 is 5"):
        session.run(None, {"x": np.ones((1, 5), np.float32)})
    with pytest.raises(ValueError, match="input 'x': expected dtype float32, got object"):
        session.run(None, {"x": object()})
