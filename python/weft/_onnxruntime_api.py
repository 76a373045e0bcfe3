"""ONNX Runtime's Python API, same names, over weft's runtime."""

import enum as _enum

from . import _weft
from . import _strict
from ._common import SessionThreads, model_source
from ._run_options import run_arguments


#: The one execution provider weft has, under ONNX Runtime's name.
CPU_PROVIDER = "CPUExecutionProvider"


def get_available_providers():
    """ONNX Runtime's ``get_available_providers()``: weft runs on the CPU,
    ``['CPUExecutionProvider']``."""
    return [CPU_PROVIDER]


def get_device():
    """ONNX Runtime's ``get_device()``: ``'CPU'``."""
    return "CPU"


def _check_providers(providers):
    """Providers as ONNX Runtime takes them (names, or (name, options)
    pairs); one weft cannot run is a ValueError, not ignored."""
    for provider in providers or []:
        name = provider[0] if isinstance(provider, (tuple, list)) else provider
        if name != CPU_PROVIDER:
            raise ValueError(
                f"weft has no execution provider {name!r}: it runs on the CPU "
                f"only (providers=['{CPU_PROVIDER}'] or None)")


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
    """ORT_DISABLE_ALL turns weft's graph passes off; every other level runs
    all of them (``weft info --passes`` lists them)."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class SessionOptions(_strict.StrictOptions):
    """ONNX Runtime's SessionOptions, with the fields weft implements.

    ``intra_op_num_threads``: threads one op may split over, counting the one
    running it (0 = auto, as in ONNX Runtime). ``inter_op_num_threads``:
    threads running independent nodes in ORT_PARALLEL mode (0 = auto).
    ``execution_mode``: an ExecutionMode. ``graph_optimization_level``: a
    GraphOptimizationLevel. ``use_per_session_threads``: True (ONNX Runtime's default)
    gives the session its own pools; False shares the process-wide ones.
    ``memory_limit_bytes`` (weft's; 0 = none): a run whose tensors would pass
    it raises MemoryError. ``enable_mem_pattern`` (True, as in ONNX Runtime):
    later runs place intermediate tensors in an arena laid out from the first
    run's sizes.

    Assigning a name that is not one of these raises AttributeError (with
    the nearest name), and a value of the wrong type TypeError: a setting is
    never kept and ignored. ONNX Runtime's logging and profiling fields are
    accepted with a RuntimeWarning saying weft does not act on them.
    """

    _FIELDS = {
        "intra_op_num_threads": _strict.integer,
        "inter_op_num_threads": _strict.integer,
        "execution_mode": _strict.member_of(ExecutionMode),
        "graph_optimization_level": _strict.member_of(GraphOptimizationLevel),
        "use_per_session_threads": _strict.boolean,
        "memory_limit_bytes": _strict.integer,
        "enable_mem_pattern": _strict.boolean,
    }
    _NOT_ACTED_ON = {
        "log_severity_level": "weft has no log levels; its warnings go to "
                              "Python's warnings module",
        "log_verbosity_level": "weft has no log levels",
        "logid": "weft has no logger names",
        "enable_cpu_mem_arena": "weft's arena is the memory pattern "
                                "(enable_mem_pattern)",
        "enable_profiling": "use RunOptions(trace_level=FULL_TRACE) and "
                            "RunMetadata.to_chrome_trace()",
        "profile_file_prefix": "use RunMetadata.to_chrome_trace()",
        "optimized_model_filepath": "weft does not write the optimized "
                                    "graph",
    }

    def __init__(self):
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.use_per_session_threads = True
        self.memory_limit_bytes = 0
        self.enable_mem_pattern = True

    def _to_core(self):
        core = _weft._SessionOptions()
        core.intra_op_parallelism_threads = int(self.intra_op_num_threads)
        if ExecutionMode(self.execution_mode) == ExecutionMode.ORT_SEQUENTIAL:
            core.inter_op_parallelism_threads = 1
        else:
            core.inter_op_parallelism_threads = int(self.inter_op_num_threads)
        core.use_per_session_threads = bool(self.use_per_session_threads)
        core.memory_limit_bytes = int(self.memory_limit_bytes)
        core.enable_mem_pattern = bool(self.enable_mem_pattern)
        core.optimize_graph = (GraphOptimizationLevel(self.graph_optimization_level)
                               != GraphOptimizationLevel.ORT_DISABLE_ALL)
        return core


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


class InferenceSession(SessionThreads):
    """ONNX Runtime's InferenceSession over weft's runtime.

    ``InferenceSession(path_or_bytes, sess_options=None, providers=None)``
    loads an ONNX model (a path or its bytes; a weft JSON graph by path, or a
    ``weft.Graph``) and compiles it. The GIL is released while it loads and
    compiles and during every run, so runs from several Python threads
    overlap. Ctrl-C during a run on the main thread cancels the run and
    raises KeyboardInterrupt; the session stays usable.
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None,
                 disabled_optimizers=None, provider_options=None):
        _check_providers(providers)
        for options_of_one in provider_options or []:
            if options_of_one:
                raise ValueError(
                    "weft's CPU provider takes no provider options, got "
                    f"{sorted(options_of_one)}")
        options = sess_options if sess_options is not None else SessionOptions()
        if not isinstance(options, SessionOptions):
            raise TypeError("sess_options must be a weft.SessionOptions (or "
                            f"None), not {type(options).__name__}")
        self._options = options
        core = options._to_core()
        # weft's pass names, as `weft info --passes` lists them; an unknown
        # one raises ValueError naming the nearest.
        core.disabled_graph_passes = list(disabled_optimizers or [])
        self._session = _weft._Session(model_source(path_or_bytes, "model"), core)
        self._inputs = [NodeArg(v.name, list(v.shape), v.type) for v in self._session.inputs()]
        self._outputs = [NodeArg(v.name, list(v.shape), v.type) for v in self._session.outputs()]

    def get_inputs(self):
        """The model's inputs (initializers excluded), as NodeArg."""
        return list(self._inputs)

    def get_outputs(self):
        """The model's outputs, as NodeArg."""
        return list(self._outputs)

    def get_providers(self):
        """weft runs on the CPU: ``['CPUExecutionProvider']``."""
        return [CPU_PROVIDER]

    def get_provider_options(self):
        """ONNX Runtime's per-provider options: the CPU provider has none
        that weft takes, ``{'CPUExecutionProvider': {}}``."""
        return {CPU_PROVIDER: {}}

    def get_session_options(self):
        """The SessionOptions this session was created with."""
        return self._options

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model: ``output_names`` (None: all), ``input_feed``
        ({name: array}; a C-contiguous array of the input's dtype is read in
        place, without a copy -- do not change it during the run),
        ``run_options`` (a RunOptions). Returns a list of NumPy arrays, one
        per output, that own weft's buffers (no copy)."""
        timeout, trace, pool, control = run_arguments(run_options)
        names = None if output_names is None else list(output_names)
        return self._session.run(names, dict(input_feed), timeout, trace, pool,
                                 None, False, control)
