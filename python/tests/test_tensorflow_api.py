"""TensorFlow's Session API, same names: ConfigProto, Session.run with
fetch structures, RunOptions with a deadline and a trace, RunMetadata."""
import json
import os

import numpy as np
import pytest

import weft
from conftest import DATA, EXAMPLES


def test_config_proto_and_fetch_structures():
    config = weft.ConfigProto(
        inter_op_parallelism_threads=2, intra_op_parallelism_threads=1,
        use_per_session_threads=True,
        session_inter_op_thread_pool=[weft.ThreadPoolOptionProto(num_threads=2)],
        device_count={"CPU": 1}, allow_soft_placement=True)
    with weft.Session(os.path.join(DATA, "add_feed.json"), config=config) as sess:
        feed = {"x": np.array([1, 2, 3], np.float32)}
        y = sess.run("y", feed_dict=feed)
        np.testing.assert_array_equal(y, [11, 22, 33])
        (y_list,) = sess.run(["y"], feed_dict=feed)
        np.testing.assert_array_equal(y_list, y)
        as_dict = sess.run({"out": "y"}, feed_dict=feed)
        np.testing.assert_array_equal(as_dict["out"], y)
        assert isinstance(sess.run(("y",), feed_dict=feed), tuple)


def test_run_metadata_and_chrome_trace():
    sess = weft.Session(os.path.join(EXAMPLES, "two_spin_branches.json"),
                        weft.ConfigProto(inter_op_parallelism_threads=2))
    metadata = weft.RunMetadata()
    options = weft.RunOptions(trace_level=weft.RunOptions.FULL_TRACE)
    sess.run("join", options=options, run_metadata=metadata)
    nodes = {s["node_name"] for s in metadata.step_stats}
    assert "join" in nodes
    assert all(s["end_ns"] >= s["start_ns"] for s in metadata.step_stats)
    inputs = {s["node_name"]: s["input_nodes"] for s in metadata.step_stats}
    assert inputs["join"] == ["left_spin", "right_spin"]
    assert inputs["left_spin"] == []
    trace = json.loads(metadata.to_chrome_trace())
    assert trace["traceEvents"]
    # Spin outputs (scalars the branches produce) are held at the peak.
    assert metadata.peak_bytes > 0
    # The first run recorded the sizes; the next places the spins' outputs
    # in its arena and takes only the fetched "join" from the heap.
    assert metadata.arena_bytes == 0
    steady = weft.RunMetadata()
    sess.run("join", options=options, run_metadata=steady)
    assert steady.arena_bytes > 0
    assert steady.heap_tensors == 1
    assert steady.heap_tensor_bytes > 0


def test_a_deadline_is_a_timeout_error_and_the_session_stays_usable():
    sess = weft.Session(os.path.join(EXAMPLES, "two_spin_branches.json"))
    with pytest.raises(TimeoutError, match="deadline"):
        sess.run("join", options=weft.RunOptions(timeout_in_ms=1))
    assert sess.run("join") == 40000  # Two 20 ms spins' micros.


def test_an_unknown_fetch_is_a_key_error():
    sess = weft.Session(os.path.join(EXAMPLES, "two_spin_branches.json"))
    with pytest.raises(KeyError):
        sess.run("no_such_node")


def test_a_closed_session_refuses_runs():
    sess = weft.Session(os.path.join(EXAMPLES, "two_spin_branches.json"))
    sess.close()
    with pytest.raises(RuntimeError, match="closed"):
        sess.run("join")


def test_every_public_name_has_a_docstring():
    for name in weft.__all__:
        obj = getattr(weft, name)
        if callable(obj):
            assert obj.__doc__, name


def test_config_proto_switches_the_graph_passes():
    path = os.path.join(EXAMPLES, "two_spin_branches.json")
    for optimize in (True, False):
        sess = weft.Session(path, weft.ConfigProto(optimize_graph=optimize))
        assert sess.run("join") == 40000
    with pytest.raises(ValueError, match="constant-folding"):
        weft.Session(path, weft.ConfigProto(disabled_graph_passes=["constant-foldin"]))
