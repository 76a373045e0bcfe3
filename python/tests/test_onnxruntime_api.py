"""ONNX Runtime's API, same names: a script written for onnxruntime runs
after changing its import line."""
import json
import threading
import warnings

import numpy as np
import pytest

import weft as ort  # The one line an onnxruntime script changes.


def mlp_reference(x, path):
    import onnx
    from onnx import numpy_helper
    model = onnx.load(path)
    w = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    matmul, add = [n for n in model.graph.node if n.op_type in ("MatMul", "Add")]
    return np.maximum(x @ w[matmul.input[1]] + w[add.input[1]], 0)


def test_an_onnxruntime_script_runs_unchanged(mlp_path):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.inter_op_num_threads = 2
    options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(mlp_path, sess_options=options,
                                   providers=["CPUExecutionProvider"])
    x = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
    (y,) = session.run(None, {session.get_inputs()[0].name: x})
    assert y.shape == (2, 3) and y.dtype == np.float32
    np.testing.assert_allclose(y, mlp_reference(x, mlp_path), rtol=1e-6)
    # Output names select outputs; the bytes of the model load too.
    with open(mlp_path, "rb") as f:
        from_bytes = ort.InferenceSession(f.read())
    (y2,) = from_bytes.run([from_bytes.get_outputs()[0].name], {"x": x})
    np.testing.assert_array_equal(y, y2)


def test_inputs_and_outputs_describe_the_model(mlp_path):
    session = ort.InferenceSession(mlp_path)
    (x,) = session.get_inputs()
    assert x.name == "x"
    assert x.type == "tensor(float)"
    assert x.shape == ["batch", 4]  # Symbolic dimensions as strings.
    (y,) = session.get_outputs()
    assert y.type == "tensor(float)"


def test_execution_mode_maps_to_the_inter_op_pool(mlp_path):
    options = ort.SessionOptions()
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.inter_op_num_threads = 2
    with pytest.warns(ort.ConfigurationWarning,
                      match=r"inter_op_num_threads = 2 has no effect in "
                            r"ExecutionMode\.ORT_SEQUENTIAL.*ORT_PARALLEL"):
        assert ort.InferenceSession(mlp_path, options).inter_op_threads == 1
    options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ort.InferenceSession(mlp_path, options).inter_op_threads == 2
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        for count in (0, 1):  # What sequential means: nothing to say.
            options.inter_op_num_threads = count
            ort.InferenceSession(mlp_path, options)
        options.execution_mode = ort.ExecutionMode.ORT_PARALLEL
        options.inter_op_num_threads = 2
    options.intra_op_num_threads = 1
    assert ort.InferenceSession(mlp_path, options).intra_op_threads == 1


def test_outputs_own_weft_buffers_and_outlive_the_session(mlp_path):
    session = ort.InferenceSession(mlp_path)
    x = np.ones((3, 4), np.float32)
    (y,) = session.run(None, {"x": x})
    assert y.base is not None  # A view of weft's buffer, not a copy.
    expected = y.copy()
    del session
    np.testing.assert_array_equal(y, expected)


def test_concurrent_runs_from_eight_threads(mlp_path):
    session = ort.InferenceSession(mlp_path)
    inputs = [np.full((2, 4), i, np.float32) for i in range(8)]
    expected = [session.run(None, {"x": x})[0] for x in inputs]
    results = [None] * 8

    def work(i):
        for _ in range(50):
            results[i] = session.run(None, {"x": inputs[i]})[0]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, want in zip(results, expected):
        np.testing.assert_array_equal(got, want)


def test_a_weft_json_graph_loads_by_path():
    import os
    from conftest import DATA
    session = ort.InferenceSession(os.path.join(DATA, "add_feed.json"))
    assert [i.name for i in session.get_inputs()] == ["x"]
    (y,) = session.run(None, {"x": np.array([1, 2, 3], np.float32)})
    np.testing.assert_array_equal(y, [11, 22, 33])


def test_graph_optimization_level_and_disabled_optimizers(mlp_path):
    # MatMul + Add + Relu: one FusedGemm with the passes on, three nodes
    # with them off; the same bits either way.
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    results = []
    for level in (ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
                  ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
        options = ort.SessionOptions()
        options.graph_optimization_level = level
        (y,) = ort.InferenceSession(mlp_path, options).run(None, {"x": x})
        results.append(y)
    np.testing.assert_array_equal(results[0], results[1])
    kept = ort.InferenceSession(mlp_path,
                                disabled_optimizers=["activation-fusion"])
    np.testing.assert_array_equal(kept.run(None, {"x": x})[0], results[0])
    with pytest.raises(ValueError, match="activation-fusion"):
        ort.InferenceSession(mlp_path, disabled_optimizers=["activation-fusoin"])


def test_enable_mem_pattern_keeps_every_run_right(mlp_path):
    # On (the default) the runs after the first place intermediates in an
    # arena; off, every tensor comes from the heap. Held outputs of earlier
    # runs keep their values while later runs go on.
    inputs = [np.full((2, 4), v, dtype=np.float32) for v in (-1.0, 0.5, 2.0)]
    held = {}
    for pattern in (False, True):
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.enable_mem_pattern = pattern
        assert options._to_core().enable_mem_pattern is pattern
        sess = ort.InferenceSession(mlp_path, options)
        held[pattern] = [sess.run(None, {"x": x})[0] for x in inputs * 2]
    for on, off, x in zip(held[True], held[False], inputs * 2):
        np.testing.assert_array_equal(on, off)
        np.testing.assert_allclose(on, mlp_reference(x, mlp_path), rtol=1e-6)


def test_sequences_and_optionals_are_lists_and_none(tmp_path):
    # As ONNX Runtime's Python API: a sequence is a list of arrays, in and
    # out; an optional is None or its value.
    import onnx
    from onnx import TensorProto, helper
    seq_type = helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    opt_type = helper.make_optional_type_proto(
        helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    graph = helper.make_graph(
        [helper.make_node("SequenceInsert", ["s", "t"], ["grown"]),
         helper.make_node("OptionalHasElement", ["o"], ["has"])],
        "g",
        [helper.make_value_info("s", seq_type),
         helper.make_tensor_value_info("t", TensorProto.FLOAT, [2]),
         helper.make_value_info("o", opt_type)],
        [helper.make_value_info("grown", seq_type),
         helper.make_tensor_value_info("has", TensorProto.BOOL, [])])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 16)])
    path = tmp_path / "seq.onnx"
    onnx.save(model, str(path))
    session = ort.InferenceSession(str(path))
    assert session.get_inputs()[0].type == "seq(tensor(float))"
    assert session.get_inputs()[2].type == "optional(tensor(float))"
    a = np.ones(3, np.float32)
    t = np.array([4, 5], np.float32)
    grown, has = session.run(None, {"s": [a], "t": t, "o": None})
    assert isinstance(grown, list) and len(grown) == 2
    np.testing.assert_array_equal(grown[1], t)
    assert not has
    (has,) = session.run(["has"], {"s": [], "t": t, "o": t})
    assert has
    with pytest.raises(ValueError, match="expected a list of arrays"):
        session.run(None, {"s": a, "t": t, "o": None})


def test_an_initializer_listed_as_an_input_can_be_fed(tmp_path):
    # Older exporters list every initializer among the graph's inputs: ONNX
    # Runtime calls those overridable initializers, runs with the
    # initializer unless a feed names it, and leaves them out of
    # get_inputs().
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "scale"], ["m"]),
         helper.make_node("Add", ["m", "bias"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3]),
         helper.make_tensor_value_info("scale", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])],
        initializer=[
            numpy_helper.from_array(np.array([1, 2, 3], np.float32), "scale"),
            numpy_helper.from_array(np.array([10, 20, 30], np.float32),
                                    "bias")])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "defaults.onnx"
    onnx.save(model, str(path))
    session = ort.InferenceSession(str(path))
    assert [i.name for i in session.get_inputs()] == ["x"]
    (scale,) = session.get_overridable_initializers()
    assert (scale.name, scale.shape, scale.type) == ("scale", [3],
                                                     "tensor(float)")
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(session.run(None, {"x": x})[0],
                                  [[11, 22, 33]] * 2)
    fed = {"x": x, "scale": np.array([0, 0, 5], np.float32)}
    np.testing.assert_array_equal(session.run(None, fed)[0],
                                  [[10, 20, 35]] * 2)
    np.testing.assert_array_equal(session.run(None, {"x": x})[0],
                                  [[11, 22, 33]] * 2)
    # An initializer that is not an input stays a constant.
    with pytest.raises(KeyError, match="no input named 'bias'"):
        session.run(None, {"x": x, "bias": np.zeros(3, np.float32)})
    # A default fed with another shape is refused, naming it.
    with pytest.raises(Exception, match="scale"):
        session.run(None, {"x": x, "scale": np.zeros(4, np.float32)})


def test_string_tensors_are_object_arrays_of_str(tmp_path):
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("StringNormalizer", ["x"], ["y"],
                          case_change_action="UPPER", stopwords=["b"]),
         helper.make_node("Cast", ["n"], ["text"], to=TensorProto.STRING)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.STRING, [3]),
         helper.make_tensor_value_info("n", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.STRING, None),
         helper.make_tensor_value_info("text", TensorProto.STRING, [2])])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 13)])
    path = tmp_path / "strings.onnx"
    onnx.save(model, str(path))
    session = ort.InferenceSession(str(path))
    assert session.get_inputs()[0].type == "tensor(string)"
    y, text = session.run(None, {"x": np.array(["a", "B", "c"]),
                                 "n": np.array([0.5, 1e-5], np.float32)})
    assert y.dtype == object and list(y) == ["A", "C"]
    assert list(text) == ["0.5", "1e-05"]


def test_get_modelmeta_reports_what_the_model_says(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "tiny_relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        doc_string="one Relu")
    model = helper.make_model(graph, producer_name="meta-test",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.domain = "org.example"
    model.doc_string = "a model to read back"
    model.model_version = 7
    helper.set_model_props(model, {"author": "weft", "licence": "none"})
    path = tmp_path / "meta.onnx"
    onnx.save(model, str(path))
    meta = ort.InferenceSession(str(path)).get_modelmeta()
    assert (meta.producer_name, meta.graph_name, meta.graph_description,
            meta.domain, meta.description, meta.version) == (
        "meta-test", "tiny_relu", "one Relu", "org.example",
        "a model to read back", 7)
    assert meta.custom_metadata_map == {"author": "weft", "licence": "none"}


def test_session_config_entries_weft_acts_on_and_others_refused(mlp_path):
    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry(
        "optimization.disable_specified_optimizers", "matmul-add-to-gemm")
    assert options.get_session_config_entry(
        "session.intra_op.allow_spinning") == "0"
    core = options._to_core()
    assert core.intra_op_spin_us == 0
    assert "matmul-add-to-gemm" in core.disabled_graph_passes
    ort.InferenceSession(mlp_path, options)  # The pass name is a real one.
    with pytest.raises(ValueError, match="does not act on the session config "
                       "key 'session.use_env_allocators'"):
        options.add_session_config_entry("session.use_env_allocators", "1")
    with pytest.raises(ValueError, match="did you mean "
                       "'session.inter_op.allow_spinning'"):
        options.add_session_config_entry("session.inter_op.allow_spining", "1")
    with pytest.raises(ValueError, match='takes "0" or "1"'):
        options.add_session_config_entry("session.inter_op.allow_spinning", "yes")
    with pytest.raises(KeyError):
        options.get_session_config_entry("session.inter_op.allow_spinning")


def test_end_profiling_writes_the_runs_as_one_chrome_trace(mlp_path, tmp_path):
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp_path / "prof_")
    session = ort.InferenceSession(mlp_path, options)
    x = np.ones((2, 4), np.float32)
    for _ in range(2):
        session.run(None, {"x": x})
    name = session.end_profiling()
    assert name.startswith(str(tmp_path / "prof_")) and name.endswith(".json")
    with open(name) as f:
        events = json.load(f)["traceEvents"]
    ops = [e for e in events if e.get("ph") == "X"]
    assert len(ops) >= 2 and all("name" in e and "ts" in e for e in ops)
    assert ort.InferenceSession(mlp_path).end_profiling() == ""


def test_nested_lists_and_scalars_are_converted_as_numpy_would(mlp_path):
    session = ort.InferenceSession(mlp_path)
    rows = [[0.1, 0.2, 0.3, 0.4], [1, 2, 3, 4]]
    (from_list,) = session.run(None, {"x": rows})
    (from_array,) = session.run(None, {"x": np.asarray(rows, np.float32)})
    np.testing.assert_array_equal(from_list, from_array)
    # An array of another dtype is refused, as ONNX Runtime refuses it.
    with pytest.raises(ValueError, match="expected dtype float32, got float64"):
        session.run(None, {"x": np.asarray(rows)})


def test_run_with_ort_values_is_a_documented_refusal(mlp_path):
    with pytest.raises(NotImplementedError, match="weft has no OrtValue"):
        ort.InferenceSession(mlp_path).run_with_ort_values(None, {})


def _cpu_has_avx512_bf16():
    with open("/proc/cpuinfo") as f:
        return "avx512_bf16" in f.read()


def test_precision_bf16_runs_near_fp32_or_is_refused_by_name(mlp_path):
    # weft's SessionOptions.precision: bf16 where the CPU has AVX-512 BF16
    # (close to fp32, not equal: the product ran in bf16), refused naming
    # the CPU's bf16 units elsewhere; a precision that is none, by name.
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    (want,) = ort.InferenceSession(mlp_path).run(None, {"x": x})
    options = ort.SessionOptions()
    options.precision = "bf16"
    if _cpu_has_avx512_bf16():
        (got,) = ort.InferenceSession(mlp_path, options).run(None, {"x": x})
        np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)
        assert not np.array_equal(got, want)
    else:
        with pytest.raises(ValueError, match="bf16 units: none"):
            ort.InferenceSession(mlp_path, options)
    options.precision = "fp16"
    with pytest.raises(ValueError, match="is not one of fp32, bf16"):
        ort.InferenceSession(mlp_path, options)
