"""weft: dataflow graphs of tensor ops on two cooperating thread pools.

The threading settings speak the languages their users know:

* ONNX Runtime: ``weft.SessionOptions``, ``weft.InferenceSession``,
  ``weft.RunOptions``, ``weft.ExecutionMode`` -- a script written for
  ``onnxruntime`` runs after changing only its import line.
* TensorFlow: ``weft.ConfigProto``, ``weft.Session``, ``weft.RunMetadata``,
  ``weft.config.threading.set_inter_op_parallelism_threads`` and the other
  three calls of ``tf.config.threading``.
* PyTorch: ``weft.set_num_threads``, ``weft.get_num_threads``,
  ``weft.set_num_interop_threads``, ``weft.get_num_interop_threads``.

``weft.tune(model)`` recommends the thread settings for a model, with the
reason in numbers.

Graphs come from files (``weft.load``, or a path given to a session) or are
built with ``weft.Graph``, whose ``py_function`` runs Python code as a node.

Unlike TensorFlow and PyTorch, every process-wide setter works at any time:
sessions created afterwards get pools of the new size, running sessions keep
theirs. The getters return effective counts, never 0. See docs/python.md.
"""

import numpy as _np

from . import _weft
from . import data, ops
from ._graph import Graph, load
from ._onnxruntime_api import (ExecutionMode, GraphOptimizationLevel,
                               InferenceSession, ModelMetadata, NodeArg,
                               SessionOptions, get_available_providers,
                               get_device)
from ._predict import PredictResult, predict
from ._quantize import QuantizeResult, quantize
from ._run_options import RunOptions
from ._tensorflow_api import (ConfigProto, RunMetadata, Session,
                              ThreadPoolOptionProto)
from ._tune import TuneResult, tune
from ._warnings import (ConfigurationWarning, PerformanceWarning,
                        ThreadingWarning, WeftWarning)
from ._threading_api import (config, get_num_interop_threads, get_num_threads,
                             set_num_interop_threads, set_num_threads)

#: The version of weft (the C++ library this package was built with).
__version__ = _weft.__version__

# dtypes under TensorFlow's names (tf.float32): NumPy's types.
float16 = _np.float16
float32 = _np.float32
float64 = _np.float64
int8 = _np.int8
int16 = _np.int16
int32 = _np.int32
int64 = _np.int64
uint8 = _np.uint8
uint16 = _np.uint16
uint32 = _np.uint32
uint64 = _np.uint64
bool_ = _np.bool_

__all__ = [
    "ConfigProto",
    "ConfigurationWarning",
    "ExecutionMode",
    "Graph",
    "GraphOptimizationLevel",
    "InferenceSession",
    "ModelMetadata",
    "NodeArg",
    "PerformanceWarning",
    "PredictResult",
    "QuantizeResult",
    "RunMetadata",
    "RunOptions",
    "Session",
    "SessionOptions",
    "ThreadPoolOptionProto",
    "ThreadingWarning",
    "TuneResult",
    "WeftWarning",
    "__version__",
    "config",
    "data",
    "ops",
    "get_available_providers",
    "get_device",
    "get_num_interop_threads",
    "get_num_threads",
    "load",
    "predict",
    "quantize",
    "set_num_interop_threads",
    "set_num_threads",
    "tune",
]
