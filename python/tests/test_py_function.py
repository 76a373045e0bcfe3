"""py_function: Python code as a node, honest about the GIL."""
import threading

import numpy as np
import pytest

import weft


def test_single_and_multiple_outputs_are_converted_to_tout():
    g = weft.Graph()
    x = g.placeholder("x", np.float32, [3])
    doubled = g.py_function(lambda a: a * 2, [x], np.float32)
    total, count = g.py_function(lambda a: (a.sum(), [len(a)]), [x],
                                 [np.float64, np.int64], name="stats")
    assert (total, count) == ("stats", "stats:1")
    got = weft.Session(g).run([doubled, total, count],
                              {x: np.array([1, 2, 3], np.float32)})
    np.testing.assert_array_equal(got[0], [2, 4, 6])
    assert got[1].dtype == np.float64 and got[1] == 6
    assert got[2].dtype == np.int64 and list(got[2]) == [3]


def test_inputs_are_read_only_views_of_weft_buffers():
    seen = []

    def record(a):
        seen.append((a.__array_interface__["data"][0], a.flags.writeable))
        return a

    g = weft.Graph()
    x = g.placeholder("x", np.float32, [4])
    y = g.op("Relu", [x], name="y")
    g.py_function(record, [y], np.float32, name="z")
    y_value, _ = weft.Session(g).run([y, "z"], {x: np.ones(4, np.float32)})
    # The fetched y is the very buffer the function saw: no copy either way.
    assert seen == [(y_value.__array_interface__["data"][0], False)]


def test_an_exception_in_the_body_is_raised_with_its_own_type():
    def broken(a):
        return a / undefined_name  # noqa: F821

    g = weft.Graph()
    x = g.placeholder("x", np.float32, [1])
    y = g.py_function(broken, [x], np.float32, name="broken")
    session = weft.Session(g)
    with pytest.raises(NameError,
                       match="name 'undefined_name' is not defined") as error:
        session.run(y, {x: np.ones(1, np.float32)})
    # Chained to weft's account of where it happened, with the traceback.
    cause = error.value.__cause__
    assert isinstance(cause, RuntimeError)
    message = str(cause)
    assert "node 'broken'" in message
    assert "Traceback (most recent call last)" in message
    assert "in broken" in message
    assert "python exception" not in message
    # The exception's own traceback reaches into the body.
    assert any(frame.name == "broken"
               for frame in __import__("traceback").extract_tb(
                   error.value.__traceback__))


def test_a_custom_exception_type_survives_the_run_and_the_session_stays_usable():
    class Rejected(Exception):
        pass

    def maybe(a):
        if a[0] < 0:
            raise Rejected(f"negative input {a[0]}")
        return a

    g = weft.Graph()
    x = g.placeholder("x", np.float32, [1])
    y = g.py_function(maybe, [x], np.float32, name="maybe")
    for session in (weft.Session(g), weft.InferenceSession(g)):
        run = (lambda v, s=session: s.run(y, {x: v})) if isinstance(
            session, weft.Session) else (
            lambda v, s=session: s.run([y], {x: v})[0])
        with pytest.raises(Rejected, match="negative input -1.0"):
            run(np.array([-1], np.float32))
        np.testing.assert_array_equal(run(np.array([2], np.float32)), [2])


def test_a_wrong_number_of_results_is_a_value_error():
    g = weft.Graph()
    x = g.placeholder("x", np.float32, [1])
    y = g.py_function(lambda a: a, [x], [np.float32, np.float32], name="two")
    with pytest.raises(ValueError, match="py_function 'two'.*Tout lists 2"):
        weft.Session(g).run(y[0], {x: np.ones(1, np.float32)})


@pytest.mark.parametrize("inter", [1, -1, 2])
def test_a_body_that_runs_sessions_does_not_deadlock(inter):
    """The body runs another session and this one again, with one inter-op
    thread (TensorFlow hangs on the second): the py_function node waits on
    the blocking pool, not on an inter-op worker."""
    inner = weft.Graph()
    a = inner.placeholder("a", np.float32, [2])
    inner.op("Mul", [a, a], name="sq")
    inner_session = weft.Session(inner, weft.ConfigProto(inter_op_parallelism_threads=1))

    g = weft.Graph()
    x = g.placeholder("x", np.float32, [2])
    plus = g.op("Add", [x, x], name="plus")
    holder = {}

    def body(v):
        squared = inner_session.run("sq", {"a": v})
        again = holder["session"].run("plus", {"x": squared})
        return again

    y = g.py_function(body, [x], np.float32, name="body")
    config = weft.ConfigProto(inter_op_parallelism_threads=inter,
                              intra_op_parallelism_threads=1,
                              use_per_session_threads=False)
    holder["session"] = weft.Session(g, config)
    result = holder["session"].run(y, {x: np.array([1, 3], np.float32)})
    np.testing.assert_array_equal(result, [2, 18])
    del plus


def test_runs_from_eight_python_threads_with_py_functions():
    g = weft.Graph()
    x = g.placeholder("x", np.float32, [16])
    y = g.py_function(lambda a: a + 1, [g.op("Mul", [x, x])], np.float32)
    session = weft.Session(g, weft.ConfigProto(inter_op_parallelism_threads=2))
    errors = []

    def client(k):
        for i in range(50):
            value = np.full(16, k * 100 + i, np.float32)
            got = session.run(y, {x: value})
            if not np.array_equal(got, value * value + 1):
                errors.append((k, i))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
