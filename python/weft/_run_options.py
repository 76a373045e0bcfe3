"""RunOptions: one class for ONNX Runtime's and TensorFlow's."""

from . import _weft


class RunOptions:
    """Options of one run, with ONNX Runtime's and TensorFlow's names.

    ``timeout_in_ms``: a deadline (0 = none); a run past it raises
    TimeoutError. ``trace_level``: ``RunOptions.FULL_TRACE`` fills a
    ``RunMetadata``. ``inter_op_thread_pool``: which of the session's
    inter-op pools runs it (-1: the calling thread). ``terminate``: ONNX
    Runtime's flag -- setting it to True, from any thread, cancels the runs
    using these options (they raise RuntimeError) and refuses later ones
    until it is set back to False.
    """

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
    pool, control."""
    if options is None:
        return 0, False, 0, None
    return (int(getattr(options, "timeout_in_ms", 0)),
            getattr(options, "trace_level", 0) == RunOptions.FULL_TRACE,
            int(getattr(options, "inter_op_thread_pool", 0)),
            getattr(options, "_control", None))
