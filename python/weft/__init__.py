"""weft: dataflow graphs of tensor ops on two cooperating thread pools.

The threading settings speak the languages their users know:

* ONNX Runtime: ``weft.SessionOptions``, ``weft.InferenceSession``,
  ``weft.RunOptions``, ``weft.ExecutionMode`` -- a script written for
  ``onnxruntime`` runs after changing only its import line.
* TensorFlow: ``weft.config.threading.set_inter_op_parallelism_threads``
  and the other three calls of ``tf.config.threading``.
* PyTorch: ``weft.set_num_threads``, ``weft.get_num_threads``,
  ``weft.set_num_interop_threads``, ``weft.get_num_interop_threads``.

Unlike TensorFlow and PyTorch, every process-wide setter works at any time:
sessions created afterwards get pools of the new size, running sessions keep
theirs. The getters return effective counts, never 0. See docs/python.md.
"""

import enum as _enum
import os as _os
import types as _types

from . import _weft

__all__ = [
    "ConfigProto",
    "ExecutionMode",
    "RunMetadata",
    "Session",
    "ThreadPoolOptionProto",
    "GraphOptimizationLevel",
    "InferenceSession",
    "NodeArg",
    "RunOptions",
    "SessionOptions",
    "config",
    "get_num_interop_threads",
    "get_num_threads",
    "set_num_interop_threads",
    "set_num_threads",
]


class ExecutionMode(_enum.IntEnum):
    """ONNX Runtime's execution modes, mapped onto weft's inter-op pool.

    ORT_SEQUENTIAL runs one node at a time (inter_op_num_threads = 1);
    ORT_PARALLEL lets independent nodes overlap (inter_op_num_threads as
    set, 0 = auto). In weft both share one core budget with the intra-op
    pool, so ORT_PARALLEL does not oversubscribe.
    """

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class GraphOptimizationLevel(_enum.IntEnum):
    """Accepted for compatibility; weft applies its own passes at every level."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class SessionOptions:
    """ONNX Runtime's SessionOptions, with the fields weft implements.

    intra_op_num_threads: threads one op may split over, counting the one
    running it (0 = auto, as in ONNX Runtime). inter_op_num_threads: threads
    running independent nodes in ORT_PARALLEL mode (0 = auto).
    execution_mode: ExecutionMode. graph_optimization_level: accepted.
    """

    def __init__(self):
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        # ONNX Runtime sessions own their pools unless global pools are
        # enabled: the same default here.
        self.use_per_session_threads = True

    def _to_core(self):
        core = _weft._SessionOptions()
        core.intra_op_parallelism_threads = int(self.intra_op_num_threads)
        if ExecutionMode(self.execution_mode) == ExecutionMode.ORT_SEQUENTIAL:
            core.inter_op_parallelism_threads = 1
        else:
            core.inter_op_parallelism_threads = int(self.inter_op_num_threads)
        core.use_per_session_threads = bool(self.use_per_session_threads)
        return core


class RunOptions:
    """Options of one run: a deadline (``timeout_in_ms``, 0 = none; a run
    past it raises TimeoutError), and TensorFlow's ``trace_level`` and
    ``inter_op_thread_pool``.
    """

    NO_TRACE = 0
    FULL_TRACE = 3

    def __init__(self, timeout_in_ms=0, trace_level=0, inter_op_thread_pool=0):
        self.timeout_in_ms = timeout_in_ms
        self.trace_level = trace_level
        self.inter_op_thread_pool = inter_op_thread_pool


class NodeArg:
    """An input or output of a session: ``name``, ``shape`` (ints; symbolic
    dimensions as strings, unknown ones as None) and ``type`` as ONNX Runtime
    prints it (``'tensor(float)'``)."""

    def __init__(self, name, shape, type):  # noqa: A002 (ONNX Runtime's name)
        self.name = name
        self.shape = shape
        self.type = type

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


def _model_source(path_or_bytes, what):
    """A path (str or PathLike) or a model's bytes, as the core takes it; a
    path to no file is FileNotFoundError, before the core sees it."""
    if isinstance(path_or_bytes, _os.PathLike):
        path_or_bytes = _os.fspath(path_or_bytes)
    if isinstance(path_or_bytes, str) and not _os.path.isfile(path_or_bytes):
        raise FileNotFoundError(f"no {what} file {path_or_bytes!r}")
    return path_or_bytes


class InferenceSession:
    """ONNX Runtime's InferenceSession over weft's runtime.

    ``InferenceSession(path_or_bytes, sess_options=None, providers=None)``
    loads an ONNX model (a path or its bytes; a weft JSON graph by path) and
    compiles it. The GIL is released while it loads and compiles and during
    every run, so runs from several Python threads overlap.
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None, **kwargs):
        del providers, kwargs  # CPU only; accepted as ONNX Runtime does.
        options = sess_options if sess_options is not None else SessionOptions()
        self._session = _weft._Session(_model_source(path_or_bytes, "model"),
                                       options._to_core())
        self._inputs = [NodeArg(v.name, list(v.shape), v.type) for v in self._session.inputs()]
        self._outputs = [NodeArg(v.name, list(v.shape), v.type) for v in self._session.outputs()]

    def get_inputs(self):
        """The model's inputs (initializers excluded), as NodeArg."""
        return list(self._inputs)

    def get_outputs(self):
        """The model's outputs, as NodeArg."""
        return list(self._outputs)

    def get_providers(self):
        """weft runs on the CPU."""
        return ["CPUExecutionProvider"]

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model: ``output_names`` (None: all), ``input_feed``
        ({name: array}). Returns a list of NumPy arrays, one per output,
        that own weft's buffers (no copy)."""
        timeout = 0
        trace = False
        if run_options is not None:
            timeout = int(getattr(run_options, "timeout_in_ms", 0))
            trace = getattr(run_options, "trace_level", 0) == RunOptions.FULL_TRACE
        names = None if output_names is None else list(output_names)
        return self._session.run(names, dict(input_feed), timeout, trace)

    @property
    def inter_op_threads(self):
        """Effective inter-op threads (-1: the caller's thread)."""
        return self._session.inter_op_threads

    @property
    def intra_op_threads(self):
        """Effective intra-op threads, counting the op's own."""
        return self._session.intra_op_threads


class ThreadPoolOptionProto:
    """TensorFlow's ThreadPoolOptionProto: one of a session's inter-op pools
    (``num_threads``, 0 = the inter-op count; ``global_name`` shares it
    process-wide)."""

    def __init__(self, num_threads=0, global_name=""):
        self.num_threads = num_threads
        self.global_name = global_name


class ConfigProto:
    """TensorFlow's ConfigProto, with the fields weft implements and their
    TensorFlow names (docs/configuration.md)."""

    def __init__(self, inter_op_parallelism_threads=0,
                 intra_op_parallelism_threads=0, use_per_session_threads=False,
                 session_inter_op_thread_pool=None, device_count=None,
                 allow_soft_placement=False, log_device_placement=False,
                 operation_timeout_in_ms=0):
        self.inter_op_parallelism_threads = inter_op_parallelism_threads
        self.intra_op_parallelism_threads = intra_op_parallelism_threads
        self.use_per_session_threads = use_per_session_threads
        self.session_inter_op_thread_pool = list(session_inter_op_thread_pool or [])
        self.device_count = dict(device_count or {})
        self.allow_soft_placement = allow_soft_placement
        self.log_device_placement = log_device_placement
        self.operation_timeout_in_ms = operation_timeout_in_ms

    def _to_core(self):
        core = _weft._SessionOptions()
        core.inter_op_parallelism_threads = int(self.inter_op_parallelism_threads)
        core.intra_op_parallelism_threads = int(self.intra_op_parallelism_threads)
        core.use_per_session_threads = bool(self.use_per_session_threads)
        core.device_count = {str(k): int(v) for k, v in self.device_count.items()}
        core.allow_soft_placement = bool(self.allow_soft_placement)
        core.log_device_placement = bool(self.log_device_placement)
        core.operation_timeout_ms = int(self.operation_timeout_in_ms)
        for pool in self.session_inter_op_thread_pool:
            if isinstance(pool, dict):
                pool = ThreadPoolOptionProto(**pool)
            core.add_inter_op_pool(int(pool.num_threads), str(pool.global_name))
        return core


class RunMetadata:
    """What a run recorded: ``step_stats`` (one dict per node with
    ``RunOptions(trace_level=RunOptions.FULL_TRACE)``: node, op, device,
    start and end in steady-clock ns, pool, thread) and
    ``to_chrome_trace()`` (a trace for Perfetto or chrome://tracing)."""

    def __init__(self):
        self._core = _weft._RunMetadata()

    @property
    def step_stats(self):
        return self._core.node_stats()

    def to_chrome_trace(self):
        """The run as Chrome trace JSON (a string)."""
        return self._core.to_chrome_trace()


class Session:
    """TensorFlow's Session: ``Session(graph_or_path, config=None)`` over a
    weft JSON graph or an ONNX model (a path, or an ONNX model's bytes).

    ``run(fetches, feed_dict=None, options=None, run_metadata=None)``: fetches
    is a tensor name (``"y"``, ``"y:1"``), a list or tuple of them, or a dict
    of them, and the result has the same structure, with NumPy arrays.
    feed_dict maps tensor names to arrays.
    """

    def __init__(self, graph_or_path, config=None):
        config = config if config is not None else ConfigProto()
        self._session = _weft._Session(_model_source(graph_or_path, "graph"),
                                       config._to_core())
        self._closed = False

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs the graph for ``fetches`` and returns their values in the
        same structure."""
        if self._closed:
            raise RuntimeError("the session is closed")
        if isinstance(fetches, dict):
            keys = list(fetches.keys())
            names = [fetches[k] for k in keys]
        elif isinstance(fetches, (list, tuple)):
            names = list(fetches)
        else:
            names = [fetches]
        options = options if options is not None else RunOptions()
        values = self._session.run(
            [str(n) for n in names], dict(feed_dict or {}),
            int(options.timeout_in_ms),
            options.trace_level == RunOptions.FULL_TRACE,
            int(options.inter_op_thread_pool),
            run_metadata._core if run_metadata is not None else None,
            True)
        if isinstance(fetches, dict):
            return dict(zip(keys, values))
        if isinstance(fetches, tuple):
            return tuple(values)
        if isinstance(fetches, list):
            return values
        return values[0]

    def close(self):
        """Releases the session; later runs raise RuntimeError."""
        self._closed = True
        self._session = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def set_num_threads(n):
    """PyTorch's ``torch.set_num_threads``: the process-wide intra-op count
    (0 = auto). Allowed at any time: sessions made afterwards get the new
    pool; running ones keep theirs."""
    _weft.set_intra_op_parallelism_threads(int(n))


def get_num_threads():
    """PyTorch's ``torch.get_num_threads``: the effective intra-op count."""
    return _weft.get_intra_op_parallelism_threads()


def set_num_interop_threads(n):
    """PyTorch's ``torch.set_num_interop_threads``: the process-wide inter-op
    count (-1: the caller's thread, 0 = auto). Unlike PyTorch, allowed at any
    time, also after a first run."""
    _weft.set_inter_op_parallelism_threads(int(n))


def get_num_interop_threads():
    """PyTorch's ``torch.get_num_interop_threads``: the effective count."""
    return _weft.get_inter_op_parallelism_threads()


def _threading_namespace():
    ns = _types.SimpleNamespace()
    ns.set_inter_op_parallelism_threads = set_num_interop_threads
    ns.set_intra_op_parallelism_threads = set_num_threads
    ns.get_inter_op_parallelism_threads = get_num_interop_threads
    ns.get_intra_op_parallelism_threads = get_num_threads
    ns.__doc__ = ("TensorFlow's tf.config.threading: the four calls, with "
                  "effective counts from the getters and setters that work "
                  "at any time.")
    return ns

#: TensorFlow's ``tf.config``: ``weft.config.threading.set_..._threads``.
config = _types.SimpleNamespace(threading=_threading_namespace())
