"""weft.quantize: float ONNX models to the QDQ form, calibrated on feeds."""
import os

import numpy as np
import pytest

import weft

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def small_cnn(opset=14):
    """Conv+bias -> Relu -> MaxPool -> Conv -> Add (residual) -> Relu ->
    GlobalAveragePool -> Flatten -> Gemm: each op the quantizer handles."""
    rng = np.random.default_rng(3)

    def init(name, shape, scale=0.3):
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1",
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2",
                         pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "p1"], ["s"], name="residual"),
        helper.make_node("Relu", ["s"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc",
                         transB=1),
    ]
    graph = helper.make_graph(
        nodes, "small_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        [init("w1", [8, 3, 3, 3]), init("b1", [8], 0.1),
         init("w2", [8, 8, 3, 3], 0.2), init("b2", [8], 0.1),
         init("wf", [10, 8]), init("bf", [10], 0.1)])
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)])


def feeds(count=4):
    rng = np.random.default_rng(7)
    return [{"x": rng.standard_normal((1, 3, 16, 16)).astype(np.float32)}
            for _ in range(count)]


def test_quantize_writes_the_qdq_form_and_reports_its_accuracy(tmp_path):
    out = tmp_path / "cnn_int8.onnx"
    result = weft.quantize(small_cnn(), out, feeds())
    assert result.output == str(out)
    assert set(result.quantized_nodes) == {"conv1", "pool", "conv2",
                                           "residual", "fc"}
    model = onnx.load(out)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("QuantizeLinear") >= 4
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    # Weights int8 per output channel with zero point 0; biases int32.
    w1 = inits["conv1_weight_quantized"]
    assert w1.dtype == np.int8 and w1.shape == (8, 3, 3, 3)
    assert inits["conv1_weight_scale"].shape == (8,)
    assert not inits["conv1_weight_zero_point"].any()
    assert inits["conv1_bias_quantized"].dtype == np.int32
    # The float weights the int8 ones replaced are gone.
    assert "w1" not in inits and "w2" not in inits
    # Activations: uint8; a Relu's output range starts at 0.
    relu_zero = inits["r1_zero_point"]
    assert relu_zero.dtype == np.uint8 and relu_zero == 0
    onnx.checker.check_model(model)

    accuracy = result.accuracy["y"]
    assert accuracy["top1_agreement"] >= 0.75
    # The error is a few quantisation steps of the output's range, no more.
    float_y = weft.InferenceSession(small_cnn().SerializeToString()).run(
        None, feeds()[0])[0]
    assert accuracy["max_abs_error"] < 0.1 * np.abs(float_y).max() + 0.05


def test_the_quantized_model_runs_as_integer_kernels(tmp_path):
    out = tmp_path / "cnn_int8.onnx"
    weft.quantize(small_cnn(), out, feeds())
    fused = weft.InferenceSession(str(out))
    plain = weft.InferenceSession(str(out), disabled_optimizers=["qdq-fusion"])
    x = feeds(1)[0]
    got = fused.run(None, x)[0]
    want = plain.run(None, x)[0]
    # The integer convolutions round once where the float graph rounds each
    # product: within a few steps of the output, never far.
    assert np.abs(got - want).max() <= 0.1 * np.abs(want).max() + 0.05


def test_calibration_from_a_directory_of_npy_files(tmp_path):
    folder = tmp_path / "calibration"
    folder.mkdir()
    for i, feed in enumerate(feeds(3)):
        np.save(folder / f"x.{i}.npy", feed["x"])
    result = weft.quantize(small_cnn(), tmp_path / "out.onnx", str(folder),
                           method="percentile", percentile=99.9)
    assert result.calibrated_tensors > 0


def test_excluded_nodes_and_ops_stay_in_float(tmp_path):
    result = weft.quantize(small_cnn(), tmp_path / "out.onnx", feeds(),
                           exclude_nodes=["conv2"], exclude_ops=["Gemm"])
    assert "conv2" not in result.quantized_nodes
    assert "fc" not in result.quantized_nodes
    inits = {t.name for t in onnx.load(tmp_path / "out.onnx").graph.initializer}
    assert "w2" in inits and "wf" in inits  # Still the float weights.


@pytest.mark.parametrize("kwargs, message", [
    ({"method": "entropy"}, "method must be 'minmax' or 'percentile'"),
    ({"percentile": 20}, "percentile must be in (50, 100]"),
    ({"exclude_nodes": ["conv9"]}, "exclude_nodes names no node: conv9"),
])
def test_bad_arguments_are_named(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")
                       .replace("]", r"\]")):
        weft.quantize(small_cnn(), tmp_path / "out.onnx", feeds(), **kwargs)


def test_bad_models_and_feeds_are_named(tmp_path):
    with pytest.raises(ValueError, match="opset is 11"):
        weft.quantize(small_cnn(opset=11), tmp_path / "out.onnx", feeds())
    with pytest.raises(ValueError, match="calibration feed 0 lacks input"):
        weft.quantize(small_cnn(), tmp_path / "out.onnx", [{"z": 1}])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="no .npy calibration files"):
        weft.quantize(small_cnn(), tmp_path / "out.onnx", str(empty))
    assert not os.path.exists(tmp_path / "out.onnx")


def small_mlp():
    """x [2, 5, 16] -> MatMul + Add -> Relu -> Gemm over the flattened rows:
    the products quantize_dynamic rewrites."""
    rng = np.random.default_rng(5)

    def init(name, shape):
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="proj"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="bias"),
        helper.make_node("Relu", ["hb"], ["r"], name="relu"),
        helper.make_node("Reshape", ["r", "shape"], ["flat"], name="flatten"),
        helper.make_node("Gemm", ["flat", "w2", "b2"], ["y"], name="fc",
                         transB=1),
    ]
    graph = helper.make_graph(
        nodes, "small_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [10, 6])],
        [init("w1", [16, 24]), init("b1", [24]), init("w2", [6, 24]),
         init("b2", [6]),
         numpy_helper.from_array(np.array([10, 24], dtype=np.int64), "shape")])
    return helper.make_model(graph,
                             opset_imports=[helper.make_opsetid("", 14)])


def test_dynamic_quantization_rewrites_weight_products(tmp_path):
    rng = np.random.default_rng(9)
    feed = {"x": rng.standard_normal((2, 5, 16)).astype(np.float32)}
    out = tmp_path / "mlp_dynamic.onnx"
    result = weft.quantize(small_mlp(), out, [feed], dynamic=True)
    assert sorted(result.quantized_nodes) == ["fc", "proj"]
    ops = [n.op_type for n in onnx.load(out).graph.node]
    assert ops.count("DynamicQuantizeLinear") == 2
    assert ops.count("MatMulInteger") == 2
    assert "MatMul" not in ops and "Gemm" not in ops
    want = weft.InferenceSession(small_mlp().SerializeToString()).run(
        None, feed)[0]
    got = weft.InferenceSession(str(out)).run(None, feed)[0]
    # Activations in 8 bits: a few percent of the output's range.
    assert np.abs(got - want).max() < 0.05 * np.abs(want).max() + 0.05
    assert result.accuracy["y"]["max_abs_error"] == pytest.approx(
        float(np.abs(got - want).max()), rel=1e-6)
    # Without feeds: quantized all the same, no accuracy to report.
    assert weft.quantize(small_mlp(), out, dynamic=True).accuracy == {}
    with pytest.raises(ValueError, match="needs calibration feeds"):
        weft.quantize(small_mlp(), out)
