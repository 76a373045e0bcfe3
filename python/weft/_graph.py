"""weft.Graph: graphs built from Python, TensorFlow-style, with any op weft
has under its ONNX name and attributes."""

import os as _os

from . import _weft


class Graph:
    """A dataflow graph built from Python.

    Each builder returns the name of the tensor it made (``"node"``, or a
    list ``["node", "node:1", ...]`` for an op with several outputs); pass
    names as inputs to later nodes, as fetches to ``Session.run`` and as
    feed keys. ``name=None`` picks ``"<Op>"``, ``"<Op>_1"``, ... A mistake
    (an unknown op or attribute, a duplicate name, a bad value) raises
    ValueError naming the node.

    >>> g = weft.Graph()
    >>> x = g.placeholder("x", np.float32, [None, 4])
    >>> w = g.constant(np.ones((4, 3), np.float32), name="w")
    >>> y = g.op("Relu", [g.op("MatMul", [x, w])], name="y")
    >>> weft.Session(g).run(y, {x: np.ones((2, 4), np.float32)})
    """

    def __init__(self, _core=None):
        self._core = _core if _core is not None else _weft._Graph()

    def placeholder(self, name, dtype, shape=None):
        """An input fed at run time: ``dtype`` as NumPy takes it
        (``np.float32``, ``"int64"``), ``shape`` None (any) or a list whose
        entries are sizes, or None or a name for a dimension of any size."""
        return self._core.placeholder(name, dtype, shape)

    def constant(self, array, name=None):
        """A constant holding a copy of ``array`` (later changes to the
        array do not reach the graph)."""
        return self._core.constant(array, name)

    def op(self, op_type, inputs, name=None, **attrs):
        """A node of any op weft has (``weft ops`` lists them), by its ONNX
        name, with ONNX's attribute names: ``g.op("Conv", [x, w],
        strides=[2, 2], pads=[1, 1, 1, 1])``. ``inputs`` is a list of tensor
        names (``"node"`` or ``"node:k"``); one that names no node of the
        graph raises ValueError at once, and the graph is left as it was."""
        self._check_inputs(op_type, inputs, name)
        return self._core.op(op_type, inputs, name, **attrs)

    def _check_inputs(self, op_type, inputs, name):
        """ValueError for an input naming no node, with the nearest name."""
        from ._strict import did_you_mean

        node_text = op_type if name is None else f"node '{name}' ({op_type})"
        if isinstance(inputs, str):
            raise TypeError(f"{node_text}: inputs must be a list of tensor "
                            f"names, not the str {inputs!r}: [{inputs!r}]")
        nodes = set(self._core.node_names())
        for position, tensor in enumerate(inputs):
            tensor = str(tensor)
            node = tensor[1:] if tensor.startswith("^") else tensor
            base, colon, index = node.rpartition(":")
            if colon and index.isdigit() and base:
                node = base
            if node not in nodes:
                raise ValueError(
                    f"{node_text}: input {position} '{tensor}' names no tensor "
                    f"of this graph{did_you_mean(node, nodes)}; the graph is "
                    "unchanged")

    def py_function(self, func, inputs, Tout, name=None):  # noqa: N803 (TF's name)
        """TensorFlow's ``tf.py_function(func, inp, Tout)``: a node that calls
        ``func`` with its inputs as read-only NumPy arrays. ``Tout`` is a
        dtype (``func`` returns one array-like; the name is returned) or a
        list of dtypes (``func`` returns that many; a list of names is
        returned). Results are converted to ``Tout``.

        The node is a blocking op: it runs on weft's blocking pool and waits
        for the GIL there, holding no inter-op thread, so a body may itself
        run a session. As many such nodes of one run execute at once as the
        session has inter-op threads. A pure-Python body holds the GIL, so
        bodies overlap only where they release it (NumPy, I/O,
        ``time.sleep``). An exception in ``func`` fails the run and is
        raised in the caller with its own type, from a RuntimeError naming
        the node (its ``__cause__``).

        ``func`` lives as long as the process; a saved graph names it, and
        only this process can run it."""
        self._check_inputs("py_function", inputs, name)
        return self._core.py_function(func, inputs, Tout, name)

    @property
    def outputs(self):
        """What ``InferenceSession.run(None, ...)`` fetches and ``save``
        records: as set, else every output that no node reads."""
        return self._core.outputs

    @outputs.setter
    def outputs(self, names):
        self._core.outputs = [str(n) for n in names]

    def node_names(self):
        """The names of the graph's nodes, in the order they were added."""
        return self._core.node_names()

    def to_json(self):
        """The graph as weft's JSON graph format (constants inline)."""
        return self._core.to_json()

    def save(self, path):
        """Writes ``to_json()`` to ``path``; ``weft.load`` and ``weft run``
        read it back."""
        with open(_os.fspath(path), "w", encoding="utf-8") as f:
            f.write(self.to_json())


def load(path):
    """A Graph from a weft JSON graph (``.json``) or an ONNX model (any other
    name), to extend or to run. A path that is no readable file raises
    FileNotFoundError, IsADirectoryError or PermissionError with the
    system's reason; a bad file, ValueError naming what is wrong."""
    from ._common import check_readable  # _common imports _graph lazily too.

    path = _os.fspath(path)
    check_readable(path, "graph")
    return Graph(_weft._load_graph(path))
