"""Helpers shared by the API modules (not public)."""

import os as _os


def model_source(path_or_bytes, what):
    """A weft.Graph, a path (str or PathLike) or a model's bytes, as the core
    takes it; a path to no file is FileNotFoundError, before the core sees
    it."""
    from ._graph import Graph  # Imported here: _graph imports nothing of ours.

    if isinstance(path_or_bytes, Graph):
        return path_or_bytes._core
    if isinstance(path_or_bytes, _os.PathLike):
        path_or_bytes = _os.fspath(path_or_bytes)
    if isinstance(path_or_bytes, str) and not _os.path.isfile(path_or_bytes):
        raise FileNotFoundError(f"no {what} file {path_or_bytes!r}")
    return path_or_bytes


class SessionThreads:
    """The effective thread counts of a session (``self._session``), for
    both session classes."""

    @property
    def inter_op_threads(self):
        """Effective inter-op threads (-1: the caller's thread)."""
        return self._session.inter_op_threads

    @property
    def intra_op_threads(self):
        """Effective intra-op threads, counting the op's own."""
        return self._session.intra_op_threads
