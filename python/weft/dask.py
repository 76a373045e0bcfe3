"""weft.dask: batch inference on a Dask cluster, one core budget per worker.

``predict(model, data)`` runs a model over a ``dask.array`` (blocks along
the first axis), a ``dask.dataframe`` (columns into the model's input) or
file paths (a list, a glob, or a ``dask.bag``; read and preprocessed by
``weft.predict``'s pipeline inside each task), and returns a lazy dask
collection of the outputs in input order.

The model crosses the network once: its bytes are one key of the task
graph, fetched once by each worker, and loaded once per worker process (a
cache by content digest), not per task; a worker that joins later loads it
on its first task. Inside a worker, weft's threads come from the worker's
cores (``worker_info()``), never from the ``OMP_NUM_THREADS=1`` Dask's
nanny sets. Models run batch-invariant, so a row is bitwise the same
whatever the partitions, workers, batch size or threads (docs/dask.md).
"""

import asyncio as _asyncio
import hashlib as _hashlib
import os as _os
import sys as _sys
import tempfile as _tempfile
import threading as _threading

import numpy as _np

from . import _weft
from ._onnxruntime_api import InferenceSession as _InferenceSession
from ._predict import expand_inputs as _expand_inputs

__all__ = ["ModelPayload", "Skipped", "WorkerTaskError", "cluster_info",
           "predict",
           "predict_partition", "worker_info"]


class ModelPayload:
    """A model's bytes, shipped once with a job; workers keep what they
    loaded from it by ``digest`` (SHA-256 of the bytes)."""

    def __init__(self, data, name="model"):
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError("a model is a path or bytes, not "
                            f"{type(data).__name__}")
        self.data = bytes(data)
        self.name = name
        self.digest = _hashlib.sha256(self.data).hexdigest()

    def __dask_tokenize__(self):
        return ("weft.dask.ModelPayload", self.digest)

    def __repr__(self):
        return (f"ModelPayload({self.name!r}, {len(self.data)} bytes, "
                f"sha256 {self.digest[:12]})")


# On the client: the payloads of the model files last read, by the file's
# identity (so a file changed in place is read again), a few at most.
_payloads_by_file = {}
_PAYLOADS_KEPT = 4


def _remember_newest(table, key, value):
    """table[key] = value as the newest entry, the oldest let go beyond
    _PAYLOADS_KEPT (dicts keep insertion order). Called under _lock."""
    table.pop(key, None)
    while len(table) >= _PAYLOADS_KEPT:
        table.pop(next(iter(table)))
    table[key] = value


def model_payload(model):
    """A path (str or PathLike), bytes or a ModelPayload, as a payload. A
    file's payload is kept while the file is unchanged (path, inode, size,
    modification time), so a client calling predict() job after job reads
    and hashes it once."""
    if isinstance(model, ModelPayload):
        return model
    if isinstance(model, (str, _os.PathLike)):
        given = _os.fspath(model)
        path = _os.path.realpath(given)
        stat = _os.stat(path)
        identity = (path, stat.st_ino, stat.st_size, stat.st_mtime_ns)
        with _lock:
            payload = _payloads_by_file.get(identity)
        if payload is None:
            with open(path, "rb") as f:
                payload = ModelPayload(f.read(), _os.path.basename(given))
            with _lock:
                _remember_newest(_payloads_by_file, identity, payload)
        return payload
    return ModelPayload(model)


class Skipped:
    """An input ``skip_bad_inputs`` left out: its ``path`` and ``reason``
    (in the place its row would have had)."""

    def __init__(self, path, reason):
        self.path = path
        self.reason = reason

    def __eq__(self, other):
        return (isinstance(other, Skipped) and
                (self.path, self.reason) == (other.path, other.reason))

    def __repr__(self):
        return f"Skipped({self.path!r}, {self.reason!r})"


class WorkerTaskError(RuntimeError):
    """A task failed: the message names the worker, the partition and, for
    an input, the item."""


# ---------------------------------------------------------------------------
# Inside a worker process: its budget and its loaded models.

_lock = _threading.Lock()
_budget = None        # This process's budget (dict), worked out once.
_gates = None         # Per job kind: bounds the Runs in flight.
_models = {}          # (digest, kind) -> a loaded model.
_loads = 0            # Models loaded by this process (worker_info()).
_model_dir = None


def _current_worker():
    try:
        from distributed import get_worker
        return get_worker()
    except (ImportError, ValueError):
        return None


def _worker_state(worker):
    """(task threads, resources) of a worker, in this and older Dask."""
    state = getattr(worker, "state", worker)
    return (max(1, int(state.nthreads)),
            dict(getattr(state, "total_resources", {}) or {}))


def _on_loop_of(worker):
    """Whether this thread runs `worker`'s event loop (as it does for a
    function given to client.run), where nothing may wait on that loop."""
    try:
        running = _asyncio.get_running_loop()
    except RuntimeError:  # No loop runs in this thread: a task thread.
        return False
    return running is getattr(worker.loop, "asyncio_loop", None)


def _host_share(worker, host_cores):
    """This worker's share of its host's cores: by its task threads among
    the task threads of all workers on the host (a LocalCluster's workers
    share one machine), asked of the scheduler. None where it cannot be
    asked (on the worker's event loop, as client.run runs functions)."""
    from distributed.utils import sync
    threads, _ = _worker_state(worker)
    if _on_loop_of(worker):
        # sync() would queue the question on this very loop and wait for
        # it forever: the worker would hang until the scheduler, missing
        # its heartbeats, killed it.
        return None
    try:
        identity = sync(worker.loop, worker.scheduler.identity)
    except Exception:  # noqa: BLE001 (the worker is closing)
        return None
    host = worker.address.rsplit(":", 1)[0]
    on_host = [w for a, w in identity.get("workers", {}).items()
               if a.rsplit(":", 1)[0] == host]
    total = sum(int(w.get("nthreads", 1)) for w in on_host) or threads
    share = max(1, min(host_cores, host_cores * threads // total))
    return share, (f"the host's {host_cores} core(s) shared by "
                   f"{len(on_host)} worker(s) with {total} task thread(s) "
                   "in all")


def _work_out_budget():
    host_cores = int(_weft._cpu_budget()["threads"])
    worker = _current_worker()
    omp = _os.environ.get("OMP_NUM_THREADS")
    if worker is None:
        task_threads, cores, source = 1, host_cores, "this process's cores"
        address = None
    else:
        address = worker.address
        task_threads, resources = _worker_state(worker)
        named = next((k for k in ("CPU", "cpu", "cores") if k in resources),
                     None)
        if named is not None:
            cores = max(1, int(resources[named]))
            source = f"the worker's resources ({named}={resources[named]})"
        else:
            shared = _host_share(worker, host_cores)
            if shared is None:
                return None
            cores, source = shared
    # Arrays and dataframes: each Run gets all of the worker's cores, one
    # Run at a time; task threads beyond the first overlap what is not a
    # Run (moving blocks, Python). Measured on 2 cores (docs/dask.md): 1
    # worker x 2 threads ran the MLP at 16,600 rows/s so, 11,500 with two
    # Runs of 1 thread at once.
    # Files: each task thread's Runs get the worker's cores divided among
    # the task threads, at once, because a files task's own pipeline work
    # (reading, decoding) fills the pool beside its Runs; measured there,
    # 1 x 2 ran ResNet-18's images at 49.1 items/s so, 42.1 one Run at a
    # time.
    files_share = max(1, cores // task_threads)
    runs = {
        "arrays": {"intra_op_threads": cores, "inter_op_threads": cores,
                   "concurrent_runs": 1},
        # Their Runs' inter-op pool is the shared pipeline pool.
        "files": {"intra_op_threads": files_share,
                  "inter_op_threads": cores,
                  "concurrent_runs": max(1, cores // files_share),
                  "pipeline_pool_threads": cores},
    }
    overrides = []
    if omp is not None and worker is not None:
        # Said even where the numbers agree: the variable is not what
        # decided them.
        overrides.append(
            f"OMP_NUM_THREADS={omp} (set for every worker by Dask's nanny, "
            f"distributed.nanny.pre-spawn-environ) is overridden: on the "
            f"worker's {cores} core(s) for its {task_threads} task "
            f"thread(s), weft runs arrays and dataframes one Run of {cores} "
            f"intra-op thread(s) at a time, and files "
            f"{runs['files']['concurrent_runs']} Run(s) of {files_share} "
            f"at once")
    return {
        "worker": address,
        "pid": _os.getpid(),
        "task_threads": task_threads,
        "worker_cores": cores,
        "cores_from": source,
        "runs": runs,
        "omp_num_threads": omp,
        "overrides": overrides,
    }


def _the_budget():
    global _budget, _gates
    with _lock:
        if _budget is None:
            budget = _work_out_budget()
            if budget is None:
                raise RuntimeError(
                    "weft.dask.worker_info() asks the scheduler how many "
                    "workers share this host: call it in a task "
                    "(weft.dask.cluster_info(client)), not with client.run")
            _budget = budget
            _gates = {kind: _threading.BoundedSemaphore(
                policy["concurrent_runs"])
                for kind, policy in budget["runs"].items()}
        return _budget


def worker_info():
    """This process's weft budget as weft.dask applies it (in a task on a
    worker; ``cluster_info(client)`` asks every worker): ``worker`` (address),
    ``task_threads`` (the worker's nthreads), ``worker_cores`` and
    ``cores_from`` (its resources' CPU count, else its share of the host's
    cores, affinity and cgroup quota included), ``runs`` (per job kind,
    "arrays" for arrays and dataframes and "files": a Run's
    ``intra_op_threads`` and ``inter_op_threads`` and the
    ``concurrent_runs`` in flight, whose product never exceeds the
    worker's cores whatever its task threads; files jobs also share one
    inter-op pool of ``pipeline_pool_threads`` for all tasks' pipelines
    and Runs), ``omp_num_threads`` and ``overrides`` (the environment weft
    does not obey here, and why), and ``models_loaded``."""
    info = dict(_the_budget())
    info["models_loaded"] = _loads
    return info


def cluster_info(client):
    """``worker_info()`` of every worker of ``client``'s cluster, asked in
    a task on each: {address: info}."""
    addresses = list(client.scheduler_info()["workers"])
    futures = [client.submit(worker_info, workers=[a], pure=False,
                             allow_other_workers=False) for a in addresses]
    return dict(zip(addresses, client.gather(futures)))


def _session_options(budget, kind):
    """ORT-style options of a Run of job kind "arrays" or "files"."""
    from ._onnxruntime_api import ExecutionMode, SessionOptions
    policy = budget["runs"][kind]
    options = SessionOptions()
    options.intra_op_num_threads = policy["intra_op_threads"]
    options.inter_op_num_threads = policy["inter_op_threads"]
    options.execution_mode = ExecutionMode.ORT_PARALLEL
    options.batch_invariant = True
    return options


def _files_options(budget):
    """Core options of a files job: its pipeline and its model's Runs, and
    those of every task of this process, on one inter-op pool of the
    worker's cores (a named pool is shared process-wide), so that the
    items being decoded and the model share the budget."""
    core = _session_options(budget, "files")._to_core()
    core.session_inter_op_thread_pools = [
        (budget["runs"]["files"]["pipeline_pool_threads"], "weft.dask")]
    return core


def _model_path(payload):
    """The payload as a file (weft loads models from files), in the
    worker's own directory, which Dask removes with the worker."""
    global _model_dir
    if _model_dir is None:
        worker = _current_worker()
        parent = worker.local_directory if worker is not None else None
        _model_dir = _tempfile.mkdtemp(prefix="weft-models-", dir=parent)
    path = _os.path.join(_model_dir, payload.digest)
    if not _os.path.exists(path):
        with open(path + ".tmp", "wb") as f:
            f.write(payload.data)
        _os.replace(path + ".tmp", path)
    return path


def _loaded(payload, kind):
    """The model of `payload`, loaded once per process for each job kind:
    "arrays" (an InferenceSession, for arrays and dataframes) or "files"
    (weft.predict's model)."""
    global _loads
    budget = _the_budget()
    key = (payload.digest, kind)
    with _lock:
        model = _models.get(key)
        if model is not None:
            return model
        path = _model_path(payload)
        try:
            if kind == "arrays":
                model = _InferenceSession(path,
                                          _session_options(budget, kind))
            else:
                model = _weft._PredictModel(path, _files_options(budget))
        except Exception as error:
            raise WorkerTaskError(
                f"{_where()}: cannot load the model {payload.name}: "
                f"{error}") from error
        _models[key] = model
        _loads += 1
        return model


def _where(partition=None):
    worker = _current_worker()
    where = f"worker {worker.address}" if worker is not None else "the client"
    if partition is not None:
        where += f", partition {partition}"
    return where


# ---------------------------------------------------------------------------
# The tasks.

def _run_rows(payload, feeds, output_names, batch_size, partition):
    """The model on the rows of `feeds` (name -> array), batch by batch;
    one array per output name. Each batch's outputs are copied into the
    block's result as they come (held in weft's buffers: _result_like)
    and let go, not kept for one concatenation at the end."""
    session = _loaded(payload, "arrays")
    rows = len(next(iter(feeds.values())))
    step = max(rows if not batch_size else int(batch_size), 1)
    results, first = None, 0
    try:
        with _gates["arrays"]:
            for first in range(0, rows, step):
                batch = {k: v[first:first + step] for k, v in feeds.items()}
                count = min(step, rows - first)
                outputs = session.run(output_names, batch)
                if results is None:
                    results = [_result_like(o, rows) for o in outputs]
                for name, result, output in zip(output_names, results,
                                                outputs):
                    if output.shape[:1] != (count,) or (
                            output.shape[1:] != result.shape[1:]):
                        raise ValueError(
                            f"output {name!r} has shape {output.shape} for "
                            f"a batch of {count} row(s): weft.dask needs a "
                            "row of each output per input row, of one shape")
                    result[first:first + count] = output
    except Exception as error:
        raise WorkerTaskError(f"{_where(partition)} (rows {first} to "
                              f"{min(rows, first + step) - 1} of the block): "
                              f"{error}") from error
    if results is None:
        return [_np.empty((0,), _np.float32) for _ in output_names]
    return results


def _result_like(output, rows):
    """An array for `rows` rows of `output`'s row shape and dtype. In a
    weft buffer where weft has the dtype: a block's result of 128 KiB or
    more then reuses a buffer weft's cache holds (Dask's nanny fixes
    glibc's mmap threshold, so a NumPy array of that size is a fresh
    mapping each task, every page faulting when written)."""
    shape = (rows,) + tuple(output.shape[1:])
    if output.dtype.kind in "OUS":
        return _np.empty(shape, output.dtype)
    return _weft._empty(list(shape), output.dtype)


def _array_block(block, payload, input_name, output_names, batch_size,
                 partition):
    """The block's outputs: a tuple of arrays, or the array itself where
    one output is asked for (the block's only task, with no getitem task
    after it to schedule)."""
    block = _np.ascontiguousarray(block)
    results = _run_rows(payload, {input_name: block}, output_names,
                        batch_size, partition)
    return results[0] if len(output_names) == 1 else tuple(results)


def _frame_part(frame, payload, feeds_from, output_names, columns,
                batch_size, partition):
    import pandas as pd
    feeds = {}
    for name, (columns_in, rows_are_vectors, dtype) in feeds_from.items():
        values = frame[columns_in].to_numpy(dtype=dtype)
        feeds[name] = _np.ascontiguousarray(
            values if rows_are_vectors else values[:, 0])
    outputs = _run_rows(payload, feeds, output_names, batch_size, partition)
    data = {}
    for name, values in zip(output_names, outputs):
        values = values.reshape(len(frame), -1)
        for j, column in enumerate(columns[name]):
            data[column] = values[:, j]
    return pd.DataFrame(data, index=frame.index)


def predict_partition(payload, paths, first_index, partition, preprocess,
                      batch_size, skip_bad_inputs, prefetch=True):
    """One partition of a files job, on a worker: weft.predict over `paths`
    (inputs first_index, first_index + 1, ... of the job), on the model
    loaded once per process. Returns a dict: ``rows`` (an array, or None),
    ``predicted`` and ``skipped`` (positions in `paths`; skipped with the
    reason), ``worker``, ``partition``, ``seconds``."""
    model = _loaded(payload, "files")
    budget = _the_budget()
    try:
        with _gates["files"]:
            out = _weft._predict(
                model, list(paths), "", preprocess, int(batch_size),
                bool(skip_bad_inputs), bool(prefetch), int(first_index),
                _files_options(budget), None)
    except Exception as error:
        raise WorkerTaskError(
            f"{_where(partition)} (inputs {first_index} to "
            f"{first_index + len(paths) - 1}): {error}") from error
    return {"rows": out["rows"], "predicted": list(out["predicted"]),
            "skipped": [tuple(s) for s in out["skipped"]],
            "worker": budget["worker"], "partition": partition,
            "seconds": out["summary"]["seconds"]}


def _files_part(payload, paths, first_index, partition, preprocess,
                batch_size, skip_bad_inputs):
    result = predict_partition(payload, paths, first_index, partition,
                               preprocess, batch_size, skip_bad_inputs)
    items = [None] * len(paths)
    for row, i in enumerate(result["predicted"]):
        items[i] = result["rows"][row]
    for i, why in result["skipped"]:
        items[i] = Skipped(paths[i], why)
    return items


# ---------------------------------------------------------------------------
# On the client: the lazy collections.

# On the client: digest -> (inputs, outputs), a few names and shapes per
# model used.
_signatures = {}


def _describe(payload):
    """The model's inputs and outputs, read on the client (it is loaded
    here only for its signature, with one thread, once per model)."""
    with _lock:
        signature = _signatures.get(payload.digest)
    if signature is None:
        from ._onnxruntime_api import SessionOptions
        options = SessionOptions()
        options.intra_op_num_threads = 1
        session = _InferenceSession(payload.data, options)
        signature = (session.get_inputs(), session.get_outputs())
        with _lock:
            _signatures[payload.digest] = signature
    return signature


# Per distributed Client (by id): the models it keeps on its cluster, by
# digest, as persisted keys; the last few models used.
_held = {}


def _model_in_graph(payload):
    """The model as a job's graph refers to it. Under a distributed Client,
    a key the cluster keeps for that client (persisted once: the scheduler
    holds its bytes and makes it again on a worker if the worker holding
    it dies), so the graph of every later job carries the key, not the
    model's bytes; without one (dask's local schedulers) the bytes
    themselves. Only the client's own cluster ever receives it."""
    import dask
    model = dask.delayed(payload, pure=True)
    distributed = _sys.modules.get("distributed")
    if distributed is None:  # Not imported: there is no Client.
        return model
    try:
        client = distributed.default_client()
    except ValueError:
        return model
    with _lock:
        for stale in [i for i, (c, _) in _held.items()
                      if c.status in ("closing", "closed")]:
            del _held[stale]
        held = _held.setdefault(client.id, (client, {}))[1]
        persisted = held.get(payload.digest)
    if persisted is not None and all(
            f.status in ("pending", "finished")
            for f in distributed.futures_of(persisted)):
        return persisted
    persisted = client.persist(model)
    with _lock:
        # The cluster drops a model let go when no collection refers to it.
        _remember_newest(held, payload.digest, persisted)
    return persisted


_DTYPES = {"tensor(float)": _np.float32, "tensor(double)": _np.float64,
           "tensor(float16)": _np.float16, "tensor(int8)": _np.int8,
           "tensor(int16)": _np.int16, "tensor(int32)": _np.int32,
           "tensor(int64)": _np.int64, "tensor(uint8)": _np.uint8,
           "tensor(uint16)": _np.uint16, "tensor(uint32)": _np.uint32,
           "tensor(uint64)": _np.uint64, "tensor(bool)": _np.bool_}


def _row_shape(arg):
    dims = list(arg.shape)[1:]
    if not all(isinstance(d, int) for d in dims):
        raise ValueError(
            f"output {arg.name!r} has shape {arg.shape}: weft.dask needs "
            "every dimension but the first (the rows) fixed to lay out the "
            "result without running the model")
    return tuple(dims)


def _chosen_outputs(outputs, output_names):
    by_name = {o.name: o for o in outputs}
    if output_names is None:
        return outputs
    unknown = [n for n in output_names if n not in by_name]
    if unknown:
        raise ValueError(f"the model has no output {unknown[0]!r}; its "
                         f"outputs are {sorted(by_name)}")
    return [by_name[n] for n in output_names]


def _predict_array(payload, x, output_names, batch_size):
    inputs, outputs = _describe(payload)
    if len(inputs) != 1:
        raise ValueError(
            f"the model has {len(inputs)} inputs "
            f"({[i.name for i in inputs]}); give a dask.dataframe with a "
            "column per input")
    if x.ndim < 1:
        raise ValueError("a dask.array of rows: the first axis is the rows")
    chosen = _chosen_outputs(outputs, output_names)
    x = x.rechunk({axis: -1 for axis in range(1, x.ndim)})
    model = _model_in_graph(payload)
    return _block_outputs(x, model, inputs[0].name, chosen, batch_size)


def _block_outputs(x, model, input_name, chosen, batch_size):
    """One task per block of `x` running the model (_array_block), and an
    array per chosen output whose blocks are those tasks' results, made as
    a graph directly: with one output, a block's Run is its result's only
    task (from_delayed and concatenate put an alias task after each)."""
    import operator

    import dask.array as da
    from dask.base import tokenize
    from dask.core import flatten
    from dask.highlevelgraph import HighLevelGraph
    names = [o.name for o in chosen]
    token = tokenize(x, model, input_name, names, batch_size)
    runs = f"weft-predict-{token}"
    blocks = list(flatten(x.__dask_keys__()))  # Axes past 0: one block.
    row_shapes = [_row_shape(o) for o in chosen]
    one = len(chosen) == 1
    # One output: a block's Run is that array's block, (name, i, 0, ...).
    run_keys = [(runs, i) + ((0,) * len(row_shapes[0]) if one else ())
                for i in range(len(blocks))]
    layer = {run_key: (_array_block, key, model.key, input_name, names,
                       batch_size, i)
             for i, (run_key, key) in enumerate(zip(run_keys, blocks))}
    graph = HighLevelGraph.from_collections(runs, layer,
                                            dependencies=[x, model])
    layers, dependencies = dict(graph.layers), dict(graph.dependencies)
    arrays = []
    for k, (o, row_shape) in enumerate(zip(chosen, row_shapes)):
        name = runs
        if not one:
            name = f"weft-output-{k}-{token}"
            tail = (0,) * len(row_shape)
            layers[name] = {(name, i) + tail: (operator.getitem, run_key, k)
                            for i, run_key in enumerate(run_keys)}
            dependencies[name] = {runs}
        chunks = (x.chunks[0],) + tuple((d,) for d in row_shape)
        arrays.append(da.Array(HighLevelGraph(layers, dependencies), name,
                               chunks,
                               dtype=_DTYPES.get(o.type, _np.float32)))
    return arrays[0] if one else tuple(arrays)


def _predict_frame(payload, df, output_names, batch_size):
    import dask
    import dask.dataframe as dd
    import pandas as pd
    inputs, outputs = _describe(payload)
    names = [i.name for i in inputs]
    dtypes = {i.name: _DTYPES.get(i.type, _np.float32) for i in inputs}
    if all(n in df.columns for n in names):
        # input -> (its columns, whether each row is a vector, dtype)
        feeds_from = {i.name: ([i.name], len(i.shape) > 1, dtypes[i.name])
                      for i in inputs}
    elif len(inputs) == 1:
        feeds_from = {names[0]: (list(df.columns), True, dtypes[names[0]])}
    else:
        raise ValueError(
            f"the model's inputs {names} are not all columns of the "
            f"dataframe ({list(df.columns)}): give a column per input, or a "
            "model of one input to feed every column to")
    chosen = _chosen_outputs(outputs, output_names)
    out_names = [o.name for o in chosen]
    columns, meta = {}, {}
    for o in chosen:
        width = int(_np.prod(_row_shape(o), dtype=_np.int64))
        columns[o.name] = ([o.name] if width == 1 else
                           [f"{o.name}_{j}" for j in range(width)])
        for c in columns[o.name]:
            meta[c] = pd.Series([], dtype=_DTYPES.get(o.type, _np.float32))
    meta = pd.DataFrame(meta, index=df._meta.index)
    model = _model_in_graph(payload)
    task = dask.delayed(_frame_part, pure=True)
    parts = [task(part, model, feeds_from, out_names, columns, batch_size, p)
             for p, part in enumerate(df.to_delayed())]
    return dd.from_delayed(
        parts, meta=meta,
        divisions=df.divisions if df.known_divisions else None)


def file_partitions(count, batch_size, partition_size=None):
    """(first, stop) of each partition of a files job of `count` inputs.
    Unless said, whole batches: enough partitions (32) for a cluster's task
    threads to share a small job evenly, at most 8 batches each."""
    if partition_size is None:
        batches = -(-count // (32 * batch_size))
        partition_size = batch_size * max(1, min(8, batches))
    size = int(partition_size)
    if size < 1:
        raise ValueError(f"partition_size must be 1 or more, not {size}")
    return [(first, min(count, first + size)) for first in
            range(0, count, size)]


def _predict_paths(payload, paths, batch_size, preprocess, skip_bad_inputs,
                   partition_size):
    import dask
    import dask.bag as db
    model = _model_in_graph(payload)
    task = dask.delayed(_files_part, pure=True)
    parts = [task(model, paths[a:b], a, p, preprocess, batch_size,
                  skip_bad_inputs)
             for p, (a, b) in enumerate(
                 file_partitions(len(paths), batch_size, partition_size))]
    return db.from_delayed(parts)


def predict(model, data, output_names=None, batch_size=None,
            sess_options=None, preprocess="imagenet", skip_bad_inputs=False,
            partition_size=None):
    """A lazy dask collection of ``model``'s outputs over ``data``, in input
    order (compute it with the scheduler or Client you use).

    ``model``: a path or the model's bytes (shipped once, loaded once per
    worker process). ``data``:

    * a ``dask.array`` of rows (blocks along the first axis) -> a
      ``dask.array`` per output (one, or a tuple in ``output_names``'
      order), chunked as ``data``;
    * a ``dask.dataframe`` -> a ``dask.dataframe`` of the outputs (a column
      per output, or ``NAME_0``, ``NAME_1``, ... for wider ones) with
      ``data``'s partitions and index; a column named as a model input
      feeds it, else every column feeds the model's one input;
    * file paths (a list, a glob, or a ``dask.bag`` of paths) -> a
      ``dask.bag`` of the first output's rows, one per input, each read and
      preprocessed by ``preprocess`` (``weft.predict``'s recipes);
      ``skip_bad_inputs`` puts a ``Skipped(path, reason)`` in place of an
      unreadable input's row. ``partition_size``: inputs per task (default
      whole batches, up to 8, about 32 partitions).

    ``batch_size``: rows per Run (None: each block at once for arrays and
    dataframes, 16 for files). Threads per task come from each worker's
    budget (``worker_info()``); ``sess_options`` must be None (a worker's
    session is made from its budget)."""
    if sess_options is not None:
        raise ValueError(
            "weft.dask sizes each worker's threads from its cores "
            "(weft.dask.worker_info()); sess_options must be None")
    if batch_size is not None and int(batch_size) < 1:
        raise ValueError(f"batch_size must be 1 or more, not {batch_size}")
    payload = model_payload(model)
    import dask.array as da
    import dask.bag as db
    if isinstance(data, da.Array):
        return _predict_array(payload, data, output_names, batch_size)
    try:
        import dask.dataframe as dd
        if isinstance(data, dd.DataFrame):
            return _predict_frame(payload, data, output_names, batch_size)
    except ImportError:  # dask.dataframe needs pandas.
        pass
    if output_names is not None:
        raise ValueError("a files job reads the model's first output; "
                         "output_names is for arrays and dataframes")
    if isinstance(data, db.Bag):
        data = list(data.compute())
    paths = _expand_inputs(data)
    return _predict_paths(payload, paths, int(batch_size or 16), preprocess,
                          skip_bad_inputs, partition_size)
