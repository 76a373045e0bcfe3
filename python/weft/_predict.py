"""weft.predict(): `weft predict` from Python (weft/predict.h)."""

import glob as _glob
import os as _os

from . import _weft
from ._common import check_readable


class PredictResult:
    """What ``weft.predict`` did. ``outputs``: the model's first output, one
    row per predicted input in input order (None when the job wrote files,
    or when every input was skipped); ``paths``: the predicted inputs, in
    the order of the rows; ``skipped``: (path, reason) for each input left
    out (``skip_bad_inputs``); ``summary``: counts and seconds (``inputs``,
    ``predicted``, ``resumed``, ``seconds``, ``model_seconds``,
    ``wait_seconds``, ``inter_op_threads``, ``intra_op_threads``)."""

    def __init__(self, outputs, paths, skipped, summary):
        self.outputs = outputs
        self.paths = paths
        self.skipped = skipped
        self.summary = summary

    def __repr__(self):
        return (f"PredictResult(predicted={len(self.paths)}, "
                f"skipped={len(self.skipped)}, "
                f"seconds={self.summary['seconds']:.2f})")


def preprocess_recipes():
    """The preprocessing recipes by name, with what each does."""
    return dict(_weft._preprocess_recipes())


def expand_inputs(inputs):
    """A glob, a directory, a path, or a list of them, as the list of files
    in job order (a glob's and a directory's files sorted by path)."""
    if isinstance(inputs, (str, _os.PathLike)):
        inputs = [inputs]
    files = []
    for spec in inputs:
        spec = _os.fspath(spec)
        if _os.path.isdir(spec):
            found = sorted(_os.path.join(spec, name) for name in _os.listdir(spec)
                           if _os.path.isfile(_os.path.join(spec, name)))
            if not found:
                raise ValueError(f"input {spec}: no files in it")
            files += found
        elif any(c in spec for c in "*?["):
            found = sorted(_glob.glob(spec))
            if not found:
                raise ValueError(f"input {spec}: no file matches")
            files += found
        else:
            files.append(spec)
    if not files:
        raise ValueError("no inputs given")
    return files


def core_options(sess_options):
    """The core options of a weft.SessionOptions (None: all auto)."""
    if sess_options is None:
        return _weft._SessionOptions()
    to_core = getattr(sess_options, "_to_core", None)
    if to_core is None:
        raise TypeError("sess_options must be a weft.SessionOptions, not "
                        f"{type(sess_options).__name__}")
    return to_core()


def predict(model, inputs, output=None, preprocess="imagenet", batch_size=16,
            skip_bad_inputs=False, sess_options=None, prefetch=True,
            progress=None, _key_offset=0):
    """Runs ``model`` (a path to an ONNX model or weft JSON graph, one
    input, its first output read) over files: each input is read and
    preprocessed by ``preprocess`` (a recipe name from
    ``preprocess_recipes()`` or a weft JSON graph file from a path to one
    item) in parallel on the inter-op pool, a batch ahead of the model, and
    the items run in batches of ``batch_size``.

    ``inputs``: a glob, a directory, a path, or a list of them. ``output``:
    None keeps the rows in memory (``PredictResult.outputs``); a ``.npy``
    path or a directory writes them as ``weft predict --output`` does,
    resumable. ``skip_bad_inputs``: leave out unreadable or corrupt inputs
    and list them (else the first raises, naming it). ``progress``: called
    as ``progress(done, total, items_per_second)`` after each batch.

    Every input's row is bitwise the same whatever batch it falls in and
    whatever the thread settings (the model runs batch-invariant), unless
    the model has DynamicQuantizeLinear, whose scale comes from the whole
    batch."""
    files = expand_inputs(inputs)
    if isinstance(model, (str, _os.PathLike)):
        model = _os.fspath(model)
        check_readable(model, "model")
    out = _weft._predict(model, files, "" if output is None
                         else _os.fspath(output), preprocess, int(batch_size),
                         bool(skip_bad_inputs), bool(prefetch),
                         int(_key_offset), core_options(sess_options),
                         progress)
    if output is not None:
        skipped = [tuple(s) for s in out["skipped"]]
        left_out = {path for path, _ in skipped}
        paths = [f for f in files if f not in left_out]
        return PredictResult(None, paths, skipped, out["summary"])
    paths = [files[i] for i in out["predicted"]]
    skipped = [(files[i], why) for i, why in out["skipped"]]
    return PredictResult(out["rows"], paths, skipped, out["summary"])
