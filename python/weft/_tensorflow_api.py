"""TensorFlow's Session API, same names, over weft's runtime."""

from . import _strict
from . import _weft
from ._common import SessionThreads, model_source
from ._run_options import RunOptions, run_arguments


class ThreadPoolOptionProto(_strict.StrictOptions):
    """TensorFlow's ThreadPoolOptionProto: one of a session's inter-op pools
    (``num_threads``, 0 = the inter-op count; ``global_name`` shares it
    process-wide)."""

    _FIELDS = {"num_threads": _strict.integer, "global_name": _strict.text}

    def __init__(self, num_threads=0, global_name=""):
        self.num_threads = num_threads
        self.global_name = global_name


def _thread_pool(what, value):
    """A ThreadPoolOptionProto, or a dict of its fields."""
    if isinstance(value, ThreadPoolOptionProto):
        return value
    if isinstance(value, dict):
        unknown = set(value) - set(ThreadPoolOptionProto._FIELDS)
        if unknown:
            name = sorted(unknown)[0]
            raise AttributeError(
                f"{what} has no field '{name}'"
                f"{_strict.did_you_mean(name, ThreadPoolOptionProto._FIELDS)}")
        return ThreadPoolOptionProto(**value)
    raise TypeError(f"{what} must be a ThreadPoolOptionProto or a dict, not "
                    f"{type(value).__name__}")


class ConfigProto(_strict.StrictOptions):
    """TensorFlow's ConfigProto, with the fields weft implements and their
    TensorFlow names: ``inter_op_parallelism_threads``,
    ``intra_op_parallelism_threads``, ``use_per_session_threads``,
    ``session_inter_op_thread_pool`` (ThreadPoolOptionProto or dicts),
    ``device_count``, ``allow_soft_placement``, ``log_device_placement``,
    ``operation_timeout_in_ms`` (docs/configuration.md), and weft's
    ``memory_limit_bytes`` (0 = none): a run whose tensors would pass it
    raises MemoryError; ``optimize_graph`` (default True: the graph passes
    of docs/graph-passes.md, TensorFlow's Grappler) and
    ``disabled_graph_passes`` (pass names to skip).

    Assigning a name that is not one of these raises AttributeError (with
    the nearest name), and a value of the wrong type TypeError."""

    _FIELDS = {
        "inter_op_parallelism_threads": _strict.integer,
        "intra_op_parallelism_threads": _strict.integer,
        "use_per_session_threads": _strict.boolean,
        "session_inter_op_thread_pool": _strict.list_of(_thread_pool),
        "device_count": _strict.dict_of(_strict.text, _strict.integer),
        "allow_soft_placement": _strict.boolean,
        "log_device_placement": _strict.boolean,
        "operation_timeout_in_ms": _strict.integer,
        "memory_limit_bytes": _strict.integer,
        "optimize_graph": _strict.boolean,
        "disabled_graph_passes": _strict.list_of(_strict.text),
    }

    def __init__(self, inter_op_parallelism_threads=0,
                 intra_op_parallelism_threads=0, use_per_session_threads=False,
                 session_inter_op_thread_pool=None, device_count=None,
                 allow_soft_placement=False, log_device_placement=False,
                 operation_timeout_in_ms=0, memory_limit_bytes=0,
                 optimize_graph=True, disabled_graph_passes=None):
        self.inter_op_parallelism_threads = inter_op_parallelism_threads
        self.intra_op_parallelism_threads = intra_op_parallelism_threads
        self.use_per_session_threads = use_per_session_threads
        self.session_inter_op_thread_pool = list(session_inter_op_thread_pool or [])
        self.device_count = dict(device_count or {})
        self.allow_soft_placement = allow_soft_placement
        self.log_device_placement = log_device_placement
        self.operation_timeout_in_ms = operation_timeout_in_ms
        self.memory_limit_bytes = memory_limit_bytes
        self.optimize_graph = optimize_graph
        self.disabled_graph_passes = list(disabled_graph_passes or [])

    def _to_core(self):
        core = _weft._SessionOptions()
        core.inter_op_parallelism_threads = self.inter_op_parallelism_threads
        core.intra_op_parallelism_threads = self.intra_op_parallelism_threads
        core.use_per_session_threads = self.use_per_session_threads
        core.device_count = dict(self.device_count)
        core.allow_soft_placement = self.allow_soft_placement
        core.log_device_placement = self.log_device_placement
        core.operation_timeout_ms = self.operation_timeout_in_ms
        core.memory_limit_bytes = self.memory_limit_bytes
        core.optimize_graph = self.optimize_graph
        core.disabled_graph_passes = list(self.disabled_graph_passes)
        for pool in self.session_inter_op_thread_pool:
            core.add_inter_op_pool(pool.num_threads, pool.global_name)
        return core


class RunMetadata:
    """What a run recorded: ``step_stats`` (one dict per node with
    ``RunOptions(trace_level=RunOptions.FULL_TRACE)``: node, op, device,
    start and end in steady-clock ns, pool, thread, and ``input_nodes``, the
    nodes it waited for in the graph as run, after the graph passes),
    ``peak_bytes`` (with
    FULL_TRACE: the most bytes of tensors the run held at once, feeds and
    constants not counted), ``arena_bytes``, ``heap_tensors`` and
    ``heap_tensor_bytes`` (with FULL_TRACE: the run's arena under the memory
    pattern, and the tensors its nodes took from the heap instead) and
    ``to_chrome_trace()`` (a trace for Perfetto or chrome://tracing)."""

    def __init__(self):
        self._core = _weft._RunMetadata()

    @property
    def step_stats(self):
        """One dict per executed node, in order of start time."""
        return self._core.node_stats()

    @property
    def peak_bytes(self):
        """The most bytes of tensors a traced run held at once (0 untraced)."""
        return self._core.peak_bytes

    @property
    def arena_bytes(self):
        """The traced run's arena in bytes (0: none, e.g. the first run)."""
        return self._core.arena_bytes

    @property
    def heap_tensors(self):
        """Tensors the traced run's nodes took from the heap, not its arena."""
        return self._core.heap_tensors

    @property
    def heap_tensor_bytes(self):
        """The bytes of those tensors."""
        return self._core.heap_tensor_bytes

    def to_chrome_trace(self):
        """The run as Chrome trace JSON (a string)."""
        return self._core.to_chrome_trace()


class Session(SessionThreads):
    """TensorFlow's Session: ``Session(graph_or_path, config=None)`` over a
    ``weft.Graph``, a weft JSON graph or an ONNX model (a path, or an ONNX
    model's bytes), with a ConfigProto.

    ``run(fetches, feed_dict=None, options=None, run_metadata=None)``: fetches
    is a tensor name (``"y"``, ``"y:1"``), a list or tuple of them, or a dict
    of them, and the result has the same structure, with NumPy arrays.
    feed_dict maps tensor names to arrays. Usable as a context manager.
    """

    def __init__(self, graph_or_path, config=None):
        config = config if config is not None else ConfigProto()
        self._session = _weft._Session(model_source(graph_or_path, "graph"),
                                       config._to_core())
        self._closed = False

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs the graph for ``fetches`` and returns their values in the
        same structure (a name, a list, a tuple or a dict of names)."""
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
        timeout, trace, pool, control = run_arguments(options)
        values = self._session.run(
            [str(n) for n in names], dict(feed_dict or {}), timeout, trace, pool,
            run_metadata._core if run_metadata is not None else None, True,
            control)
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
