"""Helpers shared by the API modules (not public)."""

import os as _os


def model_source(path_or_bytes, what):
    """A weft.Graph, a path (str or PathLike) or a model's bytes, as the core
    takes it. A path the core could not read raises before the core sees it,
    with the system's reason: FileNotFoundError ("No such file or
    directory"), IsADirectoryError, PermissionError."""
    from ._graph import Graph  # Imported here: _graph imports nothing of ours.

    if isinstance(path_or_bytes, Graph):
        return path_or_bytes._core
    if isinstance(path_or_bytes, _os.PathLike):
        path_or_bytes = _os.fspath(path_or_bytes)
    if isinstance(path_or_bytes, str):
        check_readable(path_or_bytes, what)
    return path_or_bytes


def check_readable(path, what):
    """Raises the OSError subclass for a path that is no readable file,
    with errno, the system's words and the path, as open() would."""
    import errno as _errno

    if _os.path.isdir(path):
        code = _errno.EISDIR
    elif not _os.path.exists(path):
        code = _errno.ENOENT
    elif not _os.access(path, _os.R_OK):
        code = _errno.EACCES
    else:
        return
    reason = _os.strerror(code)
    error = {_errno.EISDIR: IsADirectoryError, _errno.ENOENT: FileNotFoundError,
             _errno.EACCES: PermissionError}[code]
    raise error(code, f"cannot read the {what} file: {reason}", path)


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
