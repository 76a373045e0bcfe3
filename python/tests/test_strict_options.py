"""Nothing set is ignored: option objects refuse unknown names and wrong
types, the setters take integers only, run options of another type are
refused, and the ONNX Runtime user's module-level calls answer."""
import re

import numpy as np
import pytest

import weft


@pytest.mark.parametrize("make, typo, meant", [
    (weft.SessionOptions, "intra_op_threads", "intra_op_num_threads"),
    (weft.SessionOptions, "inter_op_num_thread", "inter_op_num_threads"),
    (weft.RunOptions, "timeout_ms", "timeout_in_ms"),
    (weft.ConfigProto, "intra_op_parallelism_thread",
     "intra_op_parallelism_threads"),
    (weft.ThreadPoolOptionProto, "num_thread", "num_threads"),
])
def test_a_misspelt_option_is_refused_with_the_nearest_name(make, typo, meant):
    options = make()
    with pytest.raises(AttributeError,
                       match=re.escape(f"has no option '{typo}' "
                                       f"(did you mean '{meant}'?)")):
        setattr(options, typo, 2)
    assert not hasattr(options, typo)


def test_an_unknown_option_lists_the_options_there_are():
    with pytest.raises(AttributeError, match="its options are .*"
                       "intra_op_num_threads"):
        weft.SessionOptions().threads = 2


@pytest.mark.parametrize("make, name, value", [
    (weft.SessionOptions, "intra_op_num_threads", 2.5),
    (weft.SessionOptions, "intra_op_num_threads", "3"),
    (weft.SessionOptions, "inter_op_num_threads", True),
    (weft.SessionOptions, "use_per_session_threads", 1),
    (weft.SessionOptions, "enable_mem_pattern", "False"),
    (weft.RunOptions, "timeout_in_ms", 1.5),
    (weft.ConfigProto, "inter_op_parallelism_threads", "2"),
    (weft.ConfigProto, "device_count", ["CPU", 2]),
    (weft.ConfigProto, "disabled_graph_passes", "constant-folding"),
    (weft.ThreadPoolOptionProto, "global_name", 7),
])
def test_a_value_of_the_wrong_type_is_refused(make, name, value):
    options = make()
    before = getattr(options, name)
    with pytest.raises(TypeError, match=re.escape(f"{make.__name__}.{name}")):
        setattr(options, name, value)
    assert getattr(options, name) == before


def test_numpy_integers_are_integers():
    options = weft.SessionOptions()
    options.intra_op_num_threads = np.int64(2)
    assert options.intra_op_num_threads == 2
    assert type(options.intra_op_num_threads) is int


def test_an_execution_mode_outside_the_enum_is_a_value_error():
    with pytest.raises(ValueError, match="ORT_SEQUENTIAL, ORT_PARALLEL"):
        weft.SessionOptions().execution_mode = 7


def test_constructor_arguments_are_checked_too():
    with pytest.raises(TypeError, match="ConfigProto.intra_op_parallelism"):
        weft.ConfigProto(intra_op_parallelism_threads=1.5)
    with pytest.raises(AttributeError, match="did you mean 'num_threads'"):
        weft.ConfigProto(session_inter_op_thread_pool=[{"num_thread": 2}])


def test_an_onnxruntime_field_weft_does_not_act_on_warns():
    options = weft.SessionOptions()
    with pytest.warns(RuntimeWarning,
                      match="does not act on SessionOptions.log_severity_level"):
        options.log_severity_level = 3


@pytest.mark.parametrize("setter", [weft.set_num_threads,
                                    weft.set_num_interop_threads])
@pytest.mark.parametrize("value", [2.5, "3", True, None])
def test_the_pytorch_setters_take_integers_only(setter, value):
    before = (weft.get_num_threads(), weft.get_num_interop_threads())
    with pytest.raises(TypeError, match="must be an integer"):
        setter(value)
    assert (weft.get_num_threads(), weft.get_num_interop_threads()) == before


def test_run_options_of_another_type_are_refused(mlp_path):
    session = weft.InferenceSession(mlp_path)
    x = np.zeros((1, 4), np.float32)
    with pytest.raises(TypeError, match="must be a weft.RunOptions .*not dict"):
        session.run(None, {"x": x}, {"timeout_in_ms": 1})
    with weft.Session(mlp_path) as sess:
        with pytest.raises(TypeError, match="not dict"):
            sess.run("y", {"x": x}, options={"timeout_in_ms": 1})


def test_the_onnxruntime_module_calls_answer(mlp_path):
    assert re.fullmatch(r"\d+\.\d+\.\d+", weft.__version__)
    assert weft.get_available_providers() == ["CPUExecutionProvider"]
    assert weft.get_device() == "CPU"
    options = weft.SessionOptions()
    options.intra_op_num_threads = 1
    session = weft.InferenceSession(mlp_path, options,
                                    providers=["CPUExecutionProvider"])
    assert session.get_providers() == ["CPUExecutionProvider"]
    assert session.get_provider_options() == {"CPUExecutionProvider": {}}
    assert session.get_session_options() is options


def test_a_provider_weft_cannot_run_is_refused(mlp_path):
    with pytest.raises(ValueError, match="no execution provider "
                       "'CUDAExecutionProvider'"):
        weft.InferenceSession(mlp_path, providers=["CUDAExecutionProvider"])
    with pytest.raises(TypeError, match="sess_options must be a weft."
                       "SessionOptions"):
        weft.InferenceSession(mlp_path, sess_options={"intra_op_num_threads": 1})


def _two_shared_sessions(mlp_path):
    """Two sessions on the process-wide pools asking for different intra-op
    counts: the pool cannot have both sizes, so one of them is told."""
    first = weft.Session(mlp_path, weft.ConfigProto(
        intra_op_parallelism_threads=1))
    second = weft.Session(mlp_path, weft.ConfigProto(
        intra_op_parallelism_threads=2))
    return first, second


def test_a_cpp_warning_reaches_pythons_warnings_with_its_category(mlp_path):
    with pytest.warns(weft.ThreadingWarning,
                      match=r"shares the process-wide intra-op pool.*"
                            r"requested, \d+ effective") as caught:
        _two_shared_sessions(mlp_path)
    assert all(issubclass(w.category, weft.WeftWarning) for w in caught)
    assert issubclass(weft.ThreadingWarning, UserWarning)


def test_an_error_filter_turns_a_weft_warning_into_an_exception(mlp_path):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", weft.ThreadingWarning)
        with pytest.raises(weft.ThreadingWarning, match="requested"):
            _two_shared_sessions(mlp_path)
