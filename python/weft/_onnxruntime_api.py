"""ONNX Runtime's Python API, same names, over weft's runtime."""

import enum as _enum
import json as _json
import time as _time
import warnings as _warnings

from . import _weft
from . import _strict
from ._common import SessionThreads, model_source
from ._run_options import run_arguments
from ._warnings import ConfigurationWarning


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


def _check_flag(key, value):
    if value not in ("0", "1"):
        raise ValueError(f"session config entry {key!r} takes \"0\" or \"1\", "
                         f"not {value!r}")


def _check_names(key, value):
    del key, value  # Pass names are checked when the session is created.


def _set_spinning(field):
    def apply(core, value):
        # "0": park at once (no spin); "1": weft's default spin window.
        setattr(core, field, 0 if value == "0" else -1)
    return apply


def _disable_passes(core, value):
    names = [n.strip() for n in value.split(",") if n.strip()]
    core.disabled_graph_passes = list(core.disabled_graph_passes) + names


#: ONNX Runtime's session configuration keys weft acts on: key -> (check of
#: the value, what it sets on the core options).
SESSION_CONFIG_KEYS = {
    "session.intra_op.allow_spinning": (_check_flag,
                                        _set_spinning("intra_op_spin_us")),
    "session.inter_op.allow_spinning": (_check_flag,
                                        _set_spinning("inter_op_spin_us")),
    "optimization.disable_specified_optimizers": (_check_names,
                                                  _disable_passes),
}


class ModelMetadata:
    """ONNX Runtime's ModelMetadata: ``producer_name``, ``graph_name``,
    ``graph_description``, ``domain``, ``description``, ``version`` and
    ``custom_metadata_map`` (the model's metadata_props), as the ONNX file
    says them (empty for a weft JSON graph or a weft.Graph)."""

    def __init__(self, fields):
        self.producer_name = fields["producer_name"]
        self.graph_name = fields["graph_name"]
        self.graph_description = fields["graph_description"]
        self.domain = fields["domain"]
        self.description = fields["description"]
        self.version = fields["version"]
        self.custom_metadata_map = dict(fields["custom_metadata_map"])

    def __repr__(self):
        return (f"ModelMetadata(producer_name={self.producer_name!r}, "
                f"graph_name={self.graph_name!r}, version={self.version!r})")


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
    never kept and ignored. ONNX Runtime's logging fields are accepted with
    a RuntimeWarning saying weft does not act on them.

    ``batch_invariant`` (weft's; False): a row's outputs are bitwise the
    same whether it runs alone or in any batch (docs/serving.md), as
    ``weft.predict`` and ``weft.dask`` run their models.

    ``precision`` (weft's; "fp32"): "bf16" runs float convolutions and
    products against constant weights with bf16 operands and float32 sums,
    where the CPU has AVX-512 BF16 (elsewhere creating the session raises,
    naming the CPU's bf16 units); docs/kernels.md, "bf16 mode".

    ``enable_profiling`` (False): every run of the session is traced, and
    ``InferenceSession.end_profiling()`` writes the runs as one Chrome trace,
    ``<profile_file_prefix><date>_<time>.json``.
    """

    _FIELDS = {
        "intra_op_num_threads": _strict.integer,
        "inter_op_num_threads": _strict.integer,
        "execution_mode": _strict.member_of(ExecutionMode),
        "graph_optimization_level": _strict.member_of(GraphOptimizationLevel),
        "use_per_session_threads": _strict.boolean,
        "memory_limit_bytes": _strict.integer,
        "enable_mem_pattern": _strict.boolean,
        "enable_profiling": _strict.boolean,
        "profile_file_prefix": _strict.text,
        "batch_invariant": _strict.boolean,
        "precision": _strict.text,
    }
    _NOT_ACTED_ON = {
        "log_severity_level": "weft has no log levels; its warnings go to "
                              "Python's warnings module",
        "log_verbosity_level": "weft has no log levels",
        "logid": "weft has no logger names",
        "enable_cpu_mem_arena": "weft's arena is the memory pattern "
                                "(enable_mem_pattern)",
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
        self.enable_profiling = False
        self.profile_file_prefix = "onnxruntime_profile_"
        self.batch_invariant = False
        self.precision = "fp32"
        self._config_entries = {}

    def add_session_config_entry(self, key, value):
        """ONNX Runtime's session configuration keys that weft acts on
        (``SESSION_CONFIG_KEYS``; values are strings, as in ONNX Runtime).
        Any other key is refused by name (ValueError), not stored and
        ignored."""
        key = _strict.text("add_session_config_entry's key", key)
        value = _strict.text(f"the value of {key!r}", value)
        check = SESSION_CONFIG_KEYS.get(key)
        if check is None:
            raise ValueError(
                f"weft does not act on the session config key {key!r}"
                f"{_strict.did_you_mean(key, SESSION_CONFIG_KEYS)}; the keys it "
                f"takes are {', '.join(sorted(SESSION_CONFIG_KEYS))}")
        check[0](key, value)
        self._config_entries[key] = value

    def get_session_config_entry(self, key):
        """The value added for ``key``; KeyError when none was."""
        if key not in self._config_entries:
            raise KeyError(f"no session config entry {key!r} was added")
        return self._config_entries[key]

    def _to_core(self):
        core = _weft._SessionOptions()
        core.intra_op_parallelism_threads = int(self.intra_op_num_threads)
        if ExecutionMode(self.execution_mode) == ExecutionMode.ORT_SEQUENTIAL:
            if int(self.inter_op_num_threads) not in (0, 1):
                # ONNX Runtime ignores the count here without a word; weft
                # keeps the meaning but says so (its own benchmark was
                # caught by it).
                _warnings.warn(
                    f"SessionOptions.inter_op_num_threads = "
                    f"{int(self.inter_op_num_threads)} has no effect in "
                    "ExecutionMode.ORT_SEQUENTIAL, which runs one node at a "
                    "time (as in ONNX Runtime); set execution_mode = "
                    "weft.ExecutionMode.ORT_PARALLEL to let independent "
                    "nodes run at once", ConfigurationWarning, stacklevel=3)
            core.inter_op_parallelism_threads = 1
        else:
            core.inter_op_parallelism_threads = int(self.inter_op_num_threads)
        core.use_per_session_threads = bool(self.use_per_session_threads)
        core.memory_limit_bytes = int(self.memory_limit_bytes)
        core.enable_mem_pattern = bool(self.enable_mem_pattern)
        core.batch_invariant = bool(self.batch_invariant)
        core.precision = str(self.precision)
        core.optimize_graph = (GraphOptimizationLevel(self.graph_optimization_level)
                               != GraphOptimizationLevel.ORT_DISABLE_ALL)
        for key, value in self._config_entries.items():
            SESSION_CONFIG_KEYS[key][1](core, value)
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
        self._profile_events = [] if options.enable_profiling else None
        self._inputs = [NodeArg(v.name, list(v.shape), v.type) for v in self._session.inputs()]
        self._outputs = [NodeArg(v.name, list(v.shape), v.type) for v in self._session.outputs()]
        self._overridable = [NodeArg(v.name, list(v.shape), v.type)
                             for v in self._session.overridable_initializers()]

    def get_inputs(self):
        """The model's inputs (initializers excluded), as NodeArg."""
        return list(self._inputs)

    def get_outputs(self):
        """The model's outputs, as NodeArg."""
        return list(self._outputs)

    def get_overridable_initializers(self):
        """Graph inputs that also have an initializer, as NodeArg: each
        runs with the initializer unless ``run`` feeds it by name."""
        return list(self._overridable)

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
        if self._profile_events is None:
            return self._session.run(names, dict(input_feed), timeout, trace,
                                     pool, None, False, control)
        metadata = _weft._RunMetadata()
        outputs = self._session.run(names, dict(input_feed), timeout, True,
                                    pool, metadata, False, control)
        self._profile_events.extend(
            _json.loads(metadata.to_chrome_trace())["traceEvents"])
        return outputs

    def get_modelmeta(self):
        """The model's metadata, as ONNX Runtime's ModelMetadata."""
        return ModelMetadata(self._session.modelmeta())

    def end_profiling(self):
        """With ``SessionOptions.enable_profiling``: writes the runs traced
        since the session was created (or since the last call) as one Chrome
        trace file (Perfetto, chrome://tracing) and returns its name; "" when
        profiling is off, as in ONNX Runtime."""
        if self._profile_events is None:
            return ""
        name = (self._options.profile_file_prefix +
                _time.strftime("%Y-%m-%d_%H-%M-%S") + ".json")
        with open(name, "w", encoding="utf-8") as f:
            _json.dump({"traceEvents": self._profile_events}, f)
        self._profile_events = []
        return name

    def run_with_ort_values(self, *args, **kwargs):
        """Not in weft: OrtValue is ONNX Runtime's device-memory handle, and
        weft runs on host memory only. ``run()`` reads NumPy feeds in place
        and returns arrays that own weft's buffers, so there is no copy for
        OrtValue to save."""
        del args, kwargs
        raise NotImplementedError(
            "weft has no OrtValue: call run() with NumPy arrays, which it "
            "reads in place and returns without a copy (docs/python.md)")
