"""RunOptions: one class for ONNX Runtime's and TensorFlow's."""

from . import _strict
from . import _weft


class RunOptions(_strict.StrictOptions):
    """Options of one run, with ONNX Runtime's and TensorFlow's names.

    ``timeout_in_ms``: a deadline (0 = none); a run past it raises
    TimeoutError. ``trace_level``: ``RunOptions.FULL_TRACE`` fills a
    ``RunMetadata``. ``inter_op_thread_pool``: which of the session's
    inter-op pools runs it (-1: the calling thread). ``terminate``: ONNX
    Runtime's flag -- setting it to True, from any thread, cancels the runs
    using these options (they raise RuntimeError) and refuses later ones
    until it is set back to False.

    Assigning a name that is not one of these raises AttributeError, and a
    value of the wrong type TypeError.
    """

    _FIELDS = {
        "timeout_in_ms": _strict.integer,
        "trace_level": _strict.integer,
        "inter_op_thread_pool": _strict.integer,
    }
    _NOT_ACTED_ON = {
        "log_severity_level": "weft has no log levels",
        "log_verbosity_level": "weft has no log levels",
        "logid": "weft has no logger names",
        "run_tag": "weft's traces name runs by their RunMetadata",
    }

    NO_TRACE = 0
    FULL_TRACE = 3

    def __init__(self, timeout_in_ms=0, trace_level=0, inter_op_thread_pool=0):
        self.timeout_in_ms = timeout_in_ms
        self.trace_level = trace_level
        self.inter_op_thread_pool = inter_op_thread_pool
        self._control = _weft._RunControl()

    @property
    def terminate(self):
        """True while runs using these options are being cancelled."""
        return self._control.terminate

    @terminate.setter
    def terminate(self, value):
        self._control.terminate = bool(value)


def run_arguments(options):
    """The core's run arguments for a RunOptions (or None): timeout, trace,
    pool, control. Anything else (a dict, TensorFlow's own RunOptions) is a
    TypeError: its settings would otherwise be ignored."""
    if options is None:
        return 0, False, 0, None
    if not isinstance(options, RunOptions):
        raise TypeError(
            "run options must be a weft.RunOptions (or None), not "
            f"{type(options).__name__}: e.g. weft.RunOptions(timeout_in_ms=100)")
    return (options.timeout_in_ms,
            options.trace_level == RunOptions.FULL_TRACE,
            options.inter_op_thread_pool, options._control)
