"""PyTorch's and TensorFlow's process-wide threading calls."""

import types as _types

from . import _weft
from ._strict import integer as _integer


def set_num_threads(n):
    """PyTorch's ``torch.set_num_threads``: the process-wide intra-op count
    (0 = auto). Allowed at any time: sessions made afterwards get the new
    pool; running ones keep theirs. ``n`` is an integer (2.5 or "3" is a
    TypeError, as in PyTorch)."""
    _weft.set_intra_op_parallelism_threads(_integer("set_num_threads's n", n))


def get_num_threads():
    """PyTorch's ``torch.get_num_threads``: the effective intra-op count."""
    return _weft.get_intra_op_parallelism_threads()


def set_num_interop_threads(n):
    """PyTorch's ``torch.set_num_interop_threads``: the process-wide inter-op
    count (-1: the caller's thread, 0 = auto). Unlike PyTorch, allowed at any
    time, also after a first run. ``n`` is an integer, as in PyTorch."""
    _weft.set_inter_op_parallelism_threads(
        _integer("set_num_interop_threads's n", n))


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
