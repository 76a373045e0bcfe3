"""weft.tune(): `weft tune` from Python."""

import json

from . import _weft
from ._common import model_source


class TuneResult:
    """What ``weft.tune`` found: ``best`` (the chosen setting: a dict with
    ``inter_op_parallelism_threads``, ``intra_op_parallelism_threads``,
    ``predicted_ms`` and ``measured_ms``), ``table`` (one dict per setting
    of the grid: ``inter``, ``intra``, ``predicted_ms``, ``measured_ms`` or
    None), ``work_ms``, ``span_ms``, ``parallelism``, ``critical_path``,
    and ``data`` (everything, as ``weft tune --json`` prints it)."""

    def __init__(self, data):
        self.data = data
        self.best = data["best"]
        self.table = data["settings"]
        self.work_ms = data["work_ms"]
        self.span_ms = data["span_ms"]
        self.parallelism = data["parallelism"]
        self.critical_path = data["critical_path"]

    def explain(self):
        """Why the best setting won, in numbers."""
        return self.data["explanation"]

    def plot(self, path=None):
        """The grid as heat maps (predicted, measured, winner marked) and one
        Run as a timeline with the critical path in red; a matplotlib Figure,
        also written to ``path`` (PNG or SVG) when given. Needs matplotlib."""
        from ._tune_plot import plot
        return plot(self.data, path)

    def __repr__(self):
        return (f"TuneResult(best=({self.best['inter']}, {self.best['intra']}), "
                f"parallelism={self.parallelism:.2f})")


def tune(model, feeds=None, cores=None, timeout_ms=60000):
    """TensorFlow-style advice for a model: profiles it (a ``weft.Graph``, a
    path or ONNX bytes, with ``feeds`` {name: array} for its inputs),
    predicts every (inter, intra) setting with a model of weft's executor,
    measures the best few (at most half the grid) and returns a TuneResult.
    ``cores`` predicts for a machine of that size instead (nothing is
    measured then). The GIL is released while it runs."""
    source = model_source(model, "model")
    data = _weft._tune(source, dict(feeds or {}),
                       None if cores is None else int(cores), int(timeout_ms))
    return TuneResult(json.loads(data))
