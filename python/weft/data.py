"""weft.data: input pipelines with tf.data's names and semantics, run on
weft's pools (docs/data.md).

>>> ds = (weft.data.Dataset.list_files("photos/*.jpg")
...       .map(lambda path: weft.ops.resize(
...                weft.ops.decode_image(weft.ops.read_file(path)), [224, 224]),
...            num_parallel_calls=weft.data.AUTOTUNE)
...       .batch(16)
...       .prefetch(weft.data.AUTOTUNE))
>>> for batch in ds: ...

Elements are NumPy arrays, tuples or dicts of them (nested as deep as
wanted). ``map`` takes

* a ``weft.Graph``: its placeholders are fed the element's tensors in order,
  its outputs are the result;
* a function of ``weft.ops`` calls: traced once into a graph (the
  ``tf.function`` way), then run by weft with no Python in the loop;
* any other Python function: called with NumPy arrays, with the GIL, on
  weft's blocking pool (as ``Graph.py_function``).

Parallel stages run on the process's inter-op pool; with seeds given, the
elements come in the same order with the same values whatever the thread
settings (``deterministic=True``, the default, as in tf.data).
"""

import numpy as _np

from . import _weft
from . import ops as _ops
from ._graph import Graph as _Graph

#: tf.data.AUTOTUNE: let weft choose a parallelism or a buffer size.
AUTOTUNE = _weft.AUTOTUNE

__all__ = ["AUTOTUNE", "Dataset", "Options", "register_iterator",
           "unregister_iterator"]


def register_iterator(name, dataset):
    """Starts a pass over ``dataset`` that graphs read with the
    ``IteratorGetNext`` op (``g.op("IteratorGetNext", [], iterator=name,
    output_types=[np.float32, ...])``): each run of such a node takes the
    next element, so ``sess.run(predictions)`` loads the next batch while
    other nodes compute. At the end of the pass the run raises (out of
    range: "end of sequence"). ValueError if the name is taken."""
    _weft._register_iterator(str(name), dataset._core)


def unregister_iterator(name):
    """Ends the pass registered under ``name``."""
    _weft._unregister_iterator(str(name))


# ---- Element structure: nested tuples and dicts of arrays ----

def _flatten(value):
    """(leaves, structure): structure is None for one array, ("tuple", [..])
    or ("dict", keys, [..]) for nested ones."""
    if isinstance(value, dict):
        keys = list(value)
        leaves, parts = [], []
        for key in keys:
            sub_leaves, sub = _flatten(value[key])
            leaves += sub_leaves
            parts.append((sub, len(sub_leaves)))
        return leaves, ("dict", keys, parts)
    if isinstance(value, (tuple, list)) and not isinstance(value, _np.ndarray):
        leaves, parts = [], []
        for item in value:
            sub_leaves, sub = _flatten(item)
            leaves += sub_leaves
            parts.append((sub, len(sub_leaves)))
        return leaves, ("tuple", parts)
    return [value], None


def _unflatten(structure, leaves):
    if structure is None:
        return leaves[0]
    parts = structure[-1]
    values, at = [], 0
    for sub, count in parts:
        values.append(_unflatten(sub, leaves[at:at + count]))
        at += count
    if structure[0] == "dict":
        return dict(zip(structure[1], values))
    return tuple(values)


class _Structure:
    """An element's structure, known at once or once a function has
    returned (a map's result)."""

    def __init__(self, value=None, known=True):
        self.value, self.known = value, known

    def set(self, value):
        if not self.known:
            self.value, self.known = value, True

    def get(self, leaves):
        # Unknown only when no element ever came out: a tuple then.
        return self.value if self.known else ("tuple", [(None, 1)] * len(leaves))


def _call_with(func, element):
    """tf.data's convention: a tuple is spread over the arguments, a dict
    or one array is passed as it is."""
    if isinstance(element, tuple):
        return func(*element)
    return func(element)


def _to_arrays(value):
    """An element's leaves as arrays, and its structure."""
    leaves, structure = _flatten(value)
    return [_np.asarray(leaf) for leaf in leaves], structure


# ---- Options (tf.data.Options' names) ----

class ThreadingOptions:
    """``private_threadpool_size``: 0 (the default) runs the pipeline's
    parallel stages on the process's inter-op pool, beside the Runs it
    feeds, under one core budget; n > 0 gives each pass a pool of its own
    of n threads (tf.data's private pool, outside weft's budget: ask for it
    only to isolate a pipeline)."""

    def __init__(self):
        self.private_threadpool_size = 0

    def __setattr__(self, name, value):
        if name != "private_threadpool_size":
            raise AttributeError(f"ThreadingOptions has no option {name!r}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError("threading.private_threadpool_size must be an "
                             f"integer of 0 or more, not {value!r}")
        object.__setattr__(self, name, value)


class AutotuneOptions:
    """``enabled``: True (the default) lets AUTOTUNE's performance model
    choose the stages given ``AUTOTUNE``; False keeps them at their start
    (a map: one call per pool thread; a prefetch: two elements)."""

    def __init__(self):
        self.enabled = True

    def __setattr__(self, name, value):
        if name != "enabled":
            raise AttributeError(f"AutotuneOptions has no option {name!r}")
        if not isinstance(value, bool):
            raise ValueError(f"autotune.enabled must be True or False, not "
                             f"{value!r}")
        object.__setattr__(self, name, value)


class Options:
    """tf.data.Options' ``threading`` and ``autotune`` groups, given to a
    pipeline with ``Dataset.with_options``."""

    def __init__(self):
        self.threading = ThreadingOptions()
        self.autotune = AutotuneOptions()


# ---- Datasets ----

class Dataset:
    """An immutable pipeline; each ``iter()`` is a fresh pass."""

    def __init__(self, core, structure, options=None):
        self._core = core
        self._structure = structure
        self._options = options

    def _derived(self, core, structure):
        """A dataset made from this one: it keeps this one's options."""
        return Dataset(core, structure, self._options)

    def options(self):
        """The options ``with_options`` gave (a default ``Options()`` if
        none)."""
        return self._options if self._options is not None else Options()

    def with_options(self, options):
        """This dataset with tf.data-style ``Options`` for its passes."""
        if not isinstance(options, Options):
            raise TypeError("with_options takes a weft.data.Options, not "
                            f"{type(options).__name__}")
        return Dataset(self._core, self._structure, options)

    # Sources.
    @staticmethod
    def from_tensor_slices(tensors):
        """One element per row of the tensors' first dimension (all must
        have it, and agree)."""
        leaves, structure = _to_arrays(tensors)
        return Dataset(_weft._Dataset.from_tensor_slices(leaves),
                       _Structure(structure))

    @staticmethod
    def from_tensors(tensors):
        """One element: the tensors as given."""
        leaves, structure = _to_arrays(tensors)
        return Dataset(_weft._Dataset.from_tensor_slices(
            [leaf[_np.newaxis] for leaf in leaves]), _Structure(structure))

    @staticmethod
    def range(*args):
        """``range(stop)``, ``range(start, stop[, step])``: int64 scalars."""
        if not 1 <= len(args) <= 3:
            raise TypeError("range takes stop, or start, stop[, step]")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (
            args[0], args[1], args[2] if len(args) == 3 else 1)
        return Dataset(_weft._Dataset.range(int(start), int(stop), int(step)),
                       _Structure(None))

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None):
        """The files matching a glob, as string scalars: sorted by path, or
        (shuffle=True, tf.data's default) in an order drawn from ``seed``
        and reshuffled each repeat. No match raises ValueError."""
        shuffle = True if shuffle is None else bool(shuffle)
        return Dataset(_weft._Dataset.list_files(
            str(file_pattern), shuffle,
            int(seed) if seed is not None else _np.random.randint(0, 2**62)),
            _Structure(None))

    @staticmethod
    def from_generator(generator, output_signature=None, args=None):
        """Elements from ``generator(*args)``, called afresh for each pass.
        Runs with the GIL on the thread that asks for the next element."""
        del output_signature  # Elements carry their own dtypes and shapes.
        cell = _Structure(known=False)

        def factory():
            for value in generator(*(args or ())):
                leaves, structure = _to_arrays(value)
                cell.set(structure)
                yield tuple(leaves)

        return Dataset(_weft._Dataset.from_generator(factory), cell)

    @staticmethod
    def zip(datasets):
        """Elements of the datasets side by side (a tuple, or a dict for a
        dict of datasets), until the shortest ends."""
        if isinstance(datasets, dict):
            keys, parts = list(datasets), list(datasets.values())
        else:
            keys, parts = None, list(datasets)
        zipped = _weft._Dataset.zip([d._core for d in parts])
        return Dataset(zipped, _ZipStructure(keys, [d._structure for d in parts]))

    # Transformations.
    def map(self, map_func, num_parallel_calls=None, deterministic=None):
        """``map_func`` on each element: a weft.Graph, a function of
        weft.ops (traced once into a graph), or any Python function (called
        with NumPy arrays). ``num_parallel_calls``: None (in the consumer's
        thread), a count, or AUTOTUNE."""
        calls = 0 if num_parallel_calls is None else int(num_parallel_calls)
        ordered = True if deterministic is None else bool(deterministic)
        if isinstance(map_func, _Graph):
            return self._map_graph(map_func, calls, ordered)
        traced = self._trace(map_func)
        if traced is not None:
            graph, structure = traced
            return self._map_graph(graph, calls, ordered, structure)
        cell = _Structure(known=False)
        structure = self._structure

        def call(*leaves):
            result = _call_with(map_func, _unflatten(structure.get(leaves),
                                                     list(leaves)))
            out, out_structure = _to_arrays(result)
            cell.set(out_structure)
            return tuple(out)

        return self._derived(self._core.map_python(call, calls, ordered), cell)

    def _map_graph(self, graph, calls, ordered, structure=None):
        inputs = graph._core.placeholders()
        outputs = list(graph.outputs)
        if structure is None:
            structure = None if len(outputs) == 1 else (
                "tuple", [(None, 1)] * len(outputs))
        return self._derived(self._core.map_graph(graph._core, inputs, outputs, calls,
                                            ordered), _Structure(structure))

    def _trace(self, func):
        """A graph from calling ``func`` on symbolic tensors, when it uses
        weft.ops alone; None otherwise (it then runs as Python). As with
        tf.function, ``func`` runs once here: a side effect before its first
        weft.ops call happens once more. Tracing needs the element's dtypes,
        read from the first element of a pass (the stages before run for
        it once)."""
        example = self._first_element_arrays()
        if example is None:
            return None
        graph = _Graph()
        symbols = [_ops._Symbol(graph, graph.placeholder(
            f"in{i}", "string" if a.dtype.kind in "OUS" else a.dtype))
            for i, a in enumerate(example)]
        try:
            result = _call_with(func, _unflatten(self._structure.get(symbols),
                                                 symbols))
        except Exception:  # noqa: BLE001 - not traceable: run it as Python.
            return None
        leaves, structure = _flatten(result)
        if not leaves or not all(isinstance(x, _ops._Symbol) for x in leaves):
            return None
        if len(graph.node_names()) == len(symbols):
            return None  # No weft op was called: plain Python (an identity).
        names = []
        for i, leaf in enumerate(leaves):
            names.append(graph.op("Identity", [leaf.name], name=f"out{i}"))
        graph.outputs = names
        return graph, structure

    def _first_element_arrays(self):
        try:
            iterator = self._core.iterator()
            return [_np.asarray(a) for a in next(iterator)]
        except (StopIteration, Exception):  # noqa: BLE001
            return None

    def filter(self, predicate):
        structure = self._structure

        def keep(*leaves):
            return bool(_call_with(predicate, _unflatten(structure.get(leaves),
                                                         list(leaves))))

        return self._derived(self._core.filter(keep), structure)

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None,
              deterministic=None):
        del num_parallel_calls, deterministic  # Stacking is one copy.
        return self._derived(self._core.batch(int(batch_size), bool(drop_remainder)),
                       self._structure)

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None,
                     drop_remainder=False):
        shapes = []
        if padded_shapes is not None:
            leaves, _ = _flatten(padded_shapes)
            shapes = [[-1 if d is None else int(d) for d in s] for s in leaves]
        # One scalar per component (None: zeros), in the element's order; a
        # number converts to the component's dtype where it fits exactly.
        values = []
        if padding_values is not None:
            # One value (not a tuple or dict) pads every component.
            values, _ = _flatten(padding_values)
            values = [None if v is None else _np.asarray(v) for v in values]
        return self._derived(self._core.padded_batch(int(batch_size), shapes,
                                               bool(drop_remainder), values),
                       self._structure)

    def unbatch(self):
        return self._derived(self._core.unbatch(), self._structure)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True):
        seed = int(seed) if seed is not None else _np.random.randint(0, 2**62)
        return self._derived(self._core.shuffle(int(buffer_size), seed,
                                          bool(reshuffle_each_iteration)),
                       self._structure)

    def repeat(self, count=None):
        return self._derived(self._core.repeat(-1 if count is None else int(count)),
                       self._structure)

    def take(self, count):
        return self._derived(self._core.take(int(count)), self._structure)

    def skip(self, count):
        return self._derived(self._core.skip(int(count)), self._structure)

    def interleave(self, map_func, cycle_length=None, block_length=None,
                   num_parallel_calls=None, deterministic=None):
        """``map_func`` makes a Dataset of each element; ``cycle_length`` of
        them are read in turn, ``block_length`` elements at a time."""
        del num_parallel_calls, deterministic
        structure = self._structure
        cell = _Structure(known=False)

        def make(*leaves):
            inner = _call_with(map_func, _unflatten(structure.get(leaves),
                                                    list(leaves)))
            if inner._structure.known:
                cell.set(inner._structure.value)
            return inner

        cycle = int(cycle_length) if cycle_length else 2
        return self._derived(self._core.interleave(make, cycle, int(block_length or 1)),
                       cell)

    def enumerate(self, start=0):
        return self._derived(self._core.enumerate(int(start)),
                       _EnumerateStructure(self._structure))

    def cache(self, filename=""):
        return self._derived(self._core.cache(str(filename)), self._structure)

    def prefetch(self, buffer_size):
        return self._derived(self._core.prefetch(int(buffer_size)), self._structure)

    def ignore_errors(self):
        return self._derived(self._core.ignore_errors(), self._structure)

    def apply(self, transformation_func):
        return transformation_func(self)

    # Reading.
    def __iter__(self):
        options = self.options()
        return _Iterator(self._core.iterator(
            options.threading.private_threadpool_size,
            options.autotune.enabled), self._structure)

    def as_numpy_iterator(self):
        return iter(self)

    def stats(self):
        """Runs one pass and returns what each stage did (as
        ``iterator.stats()`` does for a pass of your own)."""
        iterator = iter(self)
        for _ in iterator:
            pass
        return iterator.stats()

    def __repr__(self):
        return f"<weft.data.Dataset {self._core.describe()}>"


class _ZipStructure(_Structure):
    def __init__(self, keys, parts):
        super().__init__(known=True)
        self._keys, self._parts = keys, parts

    def get(self, leaves):
        # Each part's structure, known by now (a part's first element came).
        parts, at = [], 0
        for part in self._parts:
            count = _count_leaves(part)
            parts.append((part.get(leaves[at:at + count]), count))
            at += count
        if self._keys is None:
            return ("tuple", parts)
        return ("dict", self._keys, parts)


class _EnumerateStructure(_Structure):
    def __init__(self, inner):
        super().__init__(known=True)
        self._inner = inner

    def get(self, leaves):
        return ("tuple", [(None, 1), (self._inner.get(leaves[1:]),
                                      len(leaves) - 1)])


def _count_leaves(structure):
    value = structure.value if structure.known else None
    if isinstance(structure, (_ZipStructure, _EnumerateStructure)) or value is None:
        if isinstance(structure, _ZipStructure):
            return sum(_count_leaves(p) for p in structure._parts)
        if isinstance(structure, _EnumerateStructure):
            return 1 + _count_leaves(structure._inner)
        return 1
    return sum(count for _, count in value[-1])


class _Iterator:
    """One pass: ``next()`` gives the next element (NumPy arrays in the
    dataset's structure); ``stats()`` what each stage did so far."""

    def __init__(self, core, structure):
        self._core, self._structure = core, structure

    def __iter__(self):
        return self

    def __next__(self):
        leaves = list(next(self._core))
        return _unflatten(self._structure.get(leaves), leaves)

    def stats(self):
        """Per stage, source first: elements, elements/s is elements over
        your pass's time, busy_seconds (its own work), wait_seconds (its
        consumer waited on it), parallelism, skipped (ignore_errors)."""
        return self._core.stats()
