"""TensorFlow's tf.config.threading and PyTorch's set_num_threads, same
names, with weft's rule: allowed at any time, later sessions get the new
pools, getters return effective counts."""
import numpy as np
import pytest

import weft


def test_pytorch_names(mlp_path):
    weft.set_num_threads(1)
    assert weft.get_num_threads() == 1
    weft.set_num_interop_threads(2)
    assert weft.get_num_interop_threads() == 2
    options = weft.SessionOptions()
    options.use_per_session_threads = False  # Share the process-wide pools.
    options.execution_mode = weft.ExecutionMode.ORT_PARALLEL
    session = weft.InferenceSession(mlp_path, options)
    assert session.intra_op_threads == 1
    # Unlike PyTorch, changing them after a first run is allowed.
    session.run(None, {"x": np.ones((1, 4), np.float32)})
    weft.set_num_threads(2)
    assert weft.get_num_threads() == 2
    assert weft.InferenceSession(mlp_path, options).intra_op_threads == 2
    assert session.intra_op_threads == 1  # Running sessions keep theirs.


def test_tensorflow_names():
    threading = weft.config.threading
    threading.set_inter_op_parallelism_threads(1)
    threading.set_intra_op_parallelism_threads(2)
    assert threading.get_inter_op_parallelism_threads() == 1
    assert threading.get_intra_op_parallelism_threads() == 2
    threading.set_intra_op_parallelism_threads(0)  # Auto: never reads 0.
    assert threading.get_intra_op_parallelism_threads() >= 1


def test_out_of_range_counts_are_value_errors():
    with pytest.raises(ValueError, match="must be from -1 to 4096"):
        weft.set_num_interop_threads(5000)
    with pytest.raises(ValueError, match="must be from 0 to 4096"):
        weft.set_num_threads(-1)
