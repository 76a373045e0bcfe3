"""weft.dask and `weft predict --local-workers` on LocalClusters of worker
processes (loopback only): results bitwise equal to one process, each
worker's budget, the model loaded once per worker, a worker killed
mid-job, failures named, TLS."""
import concurrent.futures
import json
import os
import signal
import subprocess

import numpy as np
import pytest

import weft

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")

import weft.dask  # noqa: E402  (after the skips: it needs dask)
from weft import _dask_job  # noqa: E402

from conftest import DATA  # noqa: E402

CLI = os.environ.get("WEFT_CLI")
MLP = os.path.join(DATA, "mlp.onnx")
# Mean of each channel of the imagenet recipe's item: [N, 3, 224, 224] ->
# [N, 3].
CHANNEL_MEANS = {"format": "weft-graph", "version": 1, "nodes": [
    {"name": "x", "op": "Placeholder", "attrs": {"dtype": "float32"}},
    {"name": "y", "op": "ReduceMean", "inputs": ["x"],
     "attrs": {"T": "float32", "axes": [2, 3], "keepdims": 0}}],
    "outputs": ["y"]}


def inputs(paths):
    """`weft predict`'s flags for these inputs, in order."""
    return [flag for path in paths for flag in ("-i", path)]


def local_cluster(workers, threads, **kwargs):
    return distributed.LocalCluster(
        n_workers=workers, threads_per_worker=threads, processes=True,
        host="127.0.0.1", dashboard_address=None, **kwargs)


@pytest.fixture(scope="module")
def client():
    with local_cluster(2, 1) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """24 PNGs of varied sizes, and the model over their items."""
    root = tmp_path_factory.mktemp("dask_images")
    rng = np.random.default_rng(7)
    paths = []
    for k in range(24):
        image = rng.integers(0, 256, (12 + k % 5, 16 + k % 3, 3), np.uint8)
        path = root / f"img{k:02d}.png"
        path.write_bytes(weft.ops.encode_png(image).item())
        paths.append(str(path))
    model = root / "channel_means.json"
    model.write_text(json.dumps(CHANNEL_MEANS))
    return paths, str(model)


def test_arrays_and_dataframes_equal_one_process_bitwise(client):
    x = np.random.default_rng(1).standard_normal((103, 4)).astype(np.float32)
    session = weft.InferenceSession(MLP)
    expected = session.run(None, {session.get_inputs()[0].name: x})[0]
    for chunks, batch in ((10, None), (37, 4), (103, 1)):
        got = weft.dask.predict(MLP, da.from_array(x, chunks=chunks),
                                batch_size=batch).compute()
        assert got.shape == expected.shape
        assert np.array_equal(got, expected), (chunks, batch)
    frame = pd.DataFrame(x, columns=list("abcd"),
                         index=np.arange(1000, 1103))
    out = weft.dask.predict(MLP, dd.from_pandas(frame, npartitions=4))
    out = out.compute()
    assert list(out.index) == list(frame.index)
    assert np.array_equal(out.to_numpy(), expected)
    name = session.get_outputs()[0].name
    assert list(out.columns) == [f"{name}_{j}" for j in range(3)]


def _payloads_in(graph):
    """The ModelPayloads a task graph carries as values, nested in tasks."""
    found, pending = [], list(dict(graph).values())
    while pending:
        value = pending.pop()
        if isinstance(value, weft.dask.ModelPayload):
            found.append(value)
        elif isinstance(value, (tuple, list)):
            pending.extend(value)
        elif isinstance(value, dict):
            pending.extend(value.values())
    return found


def test_an_output_without_a_row_per_input_row_is_named(client, tmp_path):
    # A model that sums its rows: [N, 4] -> [1, 4] whatever the batch.
    # Concatenated batch by batch, its rows would have been fewer than the
    # array the job declared: a result of the wrong length, not an error.
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["y"], axes=[0], keepdims=1)],
        "row_sum",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    model = tmp_path / "row_sum.onnx"
    onnx.save(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 11)]), str(model))
    x = da.ones((10, 4), dtype=np.float32, chunks=10)
    with pytest.raises(weft.dask.WorkerTaskError,
                       match=r"partition 0 .*output 'y' has shape \(1, 4\) "
                             r"for a batch of 5 row\(s\)"):
        weft.dask.predict(str(model), x, batch_size=5).compute()


def _two_output_model(path):
    """[N, 2, 3] -> Relu [N, 2, 3] and the sum of each row [N]."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["relu"]),
         helper.make_node("ReduceSum", ["x"], ["total"], axes=[1, 2],
                          keepdims=0)],
        "two_outputs",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                       ["N", 2, 3])],
        [helper.make_tensor_value_info("relu", TensorProto.FLOAT,
                                       ["N", 2, 3]),
         helper.make_tensor_value_info("total", TensorProto.FLOAT, ["N"])])
    onnx.save(helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 11)]), str(path))
    return str(path)


def test_each_output_is_an_array_with_one_run_a_block(client, tmp_path):
    model = _two_output_model(tmp_path / "two.onnx")
    x = np.random.default_rng(3).standard_normal((50, 2, 3)).astype(
        np.float32)
    relu, total = weft.InferenceSession(model).run(None, {"x": x})
    blocks = da.from_array(x, chunks=(20, 2, 3))
    got_relu, got_total = weft.dask.predict(model, blocks, batch_size=7)
    assert got_relu.chunks == ((20, 20, 10), (2,), (3,))
    assert got_total.chunks == ((20, 20, 10),)
    got = da.compute(got_relu, got_total)
    assert np.array_equal(got[0], relu) and np.array_equal(got[1], total)
    # Asked for in another order, or alone.
    got = weft.dask.predict(model, blocks, output_names=["total", "relu"])
    assert np.array_equal(got[0].compute(), total)
    alone = weft.dask.predict(model, blocks, output_names=["relu"])
    assert np.array_equal(alone.compute(), relu)
    # One output: each block of the result is the task that runs the
    # model on the input's block, with no alias task between them.
    layer = dict(alone.__dask_graph__().layers[alone.name])
    assert sorted(layer) == [(alone.name, i, 0, 0) for i in range(3)]
    assert all(task[0] is weft.dask._array_block for task in layer.values())


def test_a_clients_jobs_carry_the_model_once(client):
    x = da.from_array(np.ones((8, 4), np.float32), chunks=4)
    first = weft.dask.predict(MLP, x)
    second = weft.dask.predict(MLP, x)
    # Neither graph carries the bytes: both refer to one key the cluster
    # keeps for this client, made from the model sent once.
    assert _payloads_in(first.__dask_graph__()) == []
    assert _payloads_in(second.__dask_graph__()) == []
    held = list(distributed.futures_of(first))
    assert len(held) == 1
    assert [f.key for f in distributed.futures_of(second)] == [held[0].key]
    assert np.array_equal(first.compute(), second.compute())


def test_the_kept_model_outlives_the_worker_holding_it():
    x = np.random.default_rng(2).standard_normal((40, 4)).astype(np.float32)
    session = weft.InferenceSession(MLP)
    expected = session.run(None, {session.get_inputs()[0].name: x})[0]
    with local_cluster(2, 1) as cluster, distributed.Client(cluster) as c:
        rows = da.from_array(x, chunks=10)
        assert np.array_equal(weft.dask.predict(MLP, rows).compute(),
                              expected)
        (kept,) = distributed.futures_of(weft.dask.predict(MLP, rows))
        holders = c.who_has([kept])[kept.key]
        # Every worker holding the model dies at once (SIGKILL).
        for pid in c.run(os.getpid, workers=list(holders)).values():
            os.kill(pid, signal.SIGKILL)
        # The scheduler makes the model again from the bytes it was sent.
        assert np.array_equal(weft.dask.predict(MLP, rows).compute(),
                              expected)


def test_without_a_client_the_graph_carries_the_model(monkeypatch):
    def no_client():
        raise ValueError("No clients found")
    monkeypatch.setattr(distributed, "default_client", no_client)
    x = da.from_array(np.ones((8, 4), np.float32), chunks=4)
    got = weft.dask.predict(MLP, x)
    assert len(_payloads_in(got.__dask_graph__())) == 1
    session = weft.InferenceSession(MLP)
    expected = session.run(None, {session.get_inputs()[0].name:
                                  np.ones((8, 4), np.float32)})[0]
    assert np.array_equal(got.compute(scheduler="sync"), expected)


def test_a_model_file_is_read_again_only_when_it_changes(tmp_path):
    path = tmp_path / "m.onnx"
    path.write_bytes(open(MLP, "rb").read())
    first = weft.dask.model_payload(str(path))
    assert weft.dask.model_payload(path) is first
    path.write_bytes(open(MLP, "rb").read() + b"\0")
    changed = weft.dask.model_payload(str(path))
    assert changed is not first and changed.digest != first.digest


def test_files_in_input_order_equal_weft_predict(client, images):
    paths, model = images
    expected = weft.predict(model, paths, batch_size=16).outputs
    rows = weft.dask.predict(model, paths, batch_size=4,
                             partition_size=5).compute()
    assert len(rows) == len(paths)
    assert np.array_equal(np.stack(rows), expected)
    # A dask.bag of paths, split another way.
    bag = distributed.Client.current().compute(
        weft.dask.predict(model, __import__("dask.bag").bag.from_sequence(
            paths, npartitions=3), batch_size=3)).result()
    assert np.array_equal(np.stack(bag), expected)


def test_the_model_is_loaded_once_per_worker(images):
    paths, model = images
    with local_cluster(2, 1) as cluster, distributed.Client(cluster) as c:
        weft.dask.predict(model, paths, batch_size=2,
                          partition_size=2).compute()
        loads = [i["models_loaded"] for i in
                 weft.dask.cluster_info(c).values()]
    # 12 partitions over 2 workers: each loaded the model at most once.
    assert sum(loads) >= 1 and all(n <= 1 for n in loads), loads


@pytest.mark.parametrize("workers,threads", [(1, 1), (1, 2), (2, 1)])
def test_each_worker_splits_its_cores_and_overrides_omp(workers, threads):
    host = weft._weft._cpu_budget()["threads"]
    with local_cluster(workers, threads) as cluster, \
            distributed.Client(cluster) as c:
        infos = weft.dask.cluster_info(c)
    assert len(infos) == workers
    for info in infos.values():
        assert info["task_threads"] == threads
        assert info["omp_num_threads"] == "1"  # Dask's nanny set it.
        cores = max(1, host // workers)
        assert info["worker_cores"] == cores
        # Runs in flight x their threads never exceed the worker's cores.
        for policy in info["runs"].values():
            assert (policy["concurrent_runs"] * policy["intra_op_threads"]
                    <= cores), info
        # Arrays: a Run gets all of them, one at a time.
        assert info["runs"]["arrays"]["intra_op_threads"] == cores
        assert info["runs"]["arrays"]["concurrent_runs"] == 1
        # Files: the cores split among the task threads, at once.
        files = info["runs"]["files"]
        assert files["intra_op_threads"] == max(1, cores // threads)
        assert files["concurrent_runs"] == cores // files["intra_op_threads"]
        assert files["pipeline_pool_threads"] == cores
        assert info["overrides"][0].startswith(
            "OMP_NUM_THREADS=1 (set for every worker by Dask's nanny")


def test_worker_info_through_client_run_is_refused_not_hung():
    # client.run calls the function on the worker's event loop, where
    # asking the scheduler for the host's workers would wait on that loop
    # itself. A fresh worker has no budget cached, so it must refuse with
    # the way that works, promptly, and stay usable.
    with local_cluster(1, 1) as cluster, distributed.Client(cluster) as c:
        # Asked from a thread of its own, so that a hang fails the test
        # (a TimeoutError) instead of hanging it.
        pool = concurrent.futures.ThreadPoolExecutor(1)
        try:
            asked = pool.submit(c.run, weft.dask.worker_info)
            with pytest.raises(RuntimeError, match="cluster_info"):
                asked.result(timeout=30)
        finally:
            pool.shutdown(wait=False)
        (info,) = weft.dask.cluster_info(c).values()
        assert info["task_threads"] == 1


def _kill_once(marker):
    """A chaos task hook: the first worker to run partition 2 dies."""
    def hook(partition):
        if partition == 2 and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
    return hook


def test_a_worker_killed_mid_job_costs_time_not_data(images, tmp_path):
    paths, model = images
    with local_cluster(2, 1) as cluster, distributed.Client(cluster) as c:
        clean = _dask_job.run_job(c, model, paths, str(tmp_path / "a.npy"),
                                  batch_size=2, partition_size=4)
        marker = str(tmp_path / "killed")
        faulty = _dask_job.run_job(c, model, paths, str(tmp_path / "b.npy"),
                                   batch_size=2, partition_size=4,
                                   task_hook=_kill_once(marker))
    assert os.path.exists(marker)  # The worker did die.
    assert clean["predicted"] == faulty["predicted"] == len(paths)
    a, b = np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy")
    assert np.array_equal(a, b)
    listed = (tmp_path / "b.npy.paths.txt").read_text().splitlines()
    assert listed == paths  # Every item once, in input order.


def _grow_past_memory_once(partition):
    """A chaos task hook: partition 1 takes more memory than its worker's
    limit (the nanny kills the worker)."""
    if partition == 1:
        hog = bytearray(400 << 20)
        for page in range(0, len(hog), 4096):
            hog[page] = 1
        import time
        time.sleep(10)  # The nanny's monitor acts within a second or so.


def test_a_worker_past_its_memory_limit_is_named(images, tmp_path):
    import dask
    paths, model = images
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with local_cluster(1, 1, memory_limit="300MB") as cluster, \
                distributed.Client(cluster) as c:
            with pytest.raises(_dask_job.JobError) as failed:
                _dask_job.run_job(c, model, paths, str(tmp_path / "m.npy"),
                                  batch_size=2, partition_size=4,
                                  task_hook=_grow_past_memory_once)
    # The worker took the tasks it held with it (partition 1, perhaps 0):
    # the first of them is named, with the worker.
    text = str(failed.value)
    assert text.startswith("partition ")
    assert "out of memory, or killed" in text and "tcp://127.0.0.1:" in text
    # The job can be run again: its state is kept.
    assert (tmp_path / "m.npy.cluster-partial" / "inputs.txt").exists()


def test_failures_name_the_worker_partition_and_item(client, images,
                                                     tmp_path):
    paths, model = images
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    inputs = paths[:6] + [str(bad)] + paths[6:9]
    with pytest.raises(_dask_job.JobError) as failed:
        _dask_job.run_job(client, model, inputs, str(tmp_path / "x.npy"),
                          batch_size=2, partition_size=4)
    text = str(failed.value)
    assert "worker tcp://127.0.0.1:" in text and "partition 1" in text
    assert "bad.png" in text
    done = _dask_job.run_job(client, model, inputs, str(tmp_path / "y.npy"),
                             batch_size=2, partition_size=4,
                             skip_bad_inputs=True)
    assert [p for p, _ in done["skipped"]] == [str(bad)]
    assert any(done["failures"].values())
    rows = weft.dask.predict(model, inputs, batch_size=2,
                             skip_bad_inputs=True).compute()
    assert isinstance(rows[6], weft.dask.Skipped) and rows[6].path == str(bad)
    # A model no worker can load: said with the worker. (For arrays, the
    # client reads the model's signature first and says it there.)
    with pytest.raises(weft.dask.WorkerTaskError,
                       match="worker tcp://.*cannot load the model"):
        weft.dask.predict(b"not a model", paths[:2]).compute()
    with pytest.raises(ValueError, match="not an ONNX model"):
        weft.dask.predict(b"not a model", da.ones((4, 4), chunks=2))


def test_tls_cluster_with_certificates_by_path(images, tmp_path):
    pytest.importorskip("cryptography")
    from distributed.security import Security
    paths, model = images
    security = Security.temporary()
    ca, cert, key = (tmp_path / "ca.pem", tmp_path / "cert.pem",
                     tmp_path / "key.pem")
    ca.write_text(security.tls_ca_file)
    cert.write_text(security.tls_client_cert)
    key.write_text(security.tls_client_key)
    by_path = Security(tls_ca_file=str(ca), tls_client_cert=str(cert),
                       tls_client_key=str(key), require_encryption=True)
    with local_cluster(1, 1, security=security,
                       protocol="tls://") as cluster, \
            distributed.Client(cluster, security=by_path) as c:
        assert cluster.scheduler_address.startswith("tls://127.0.0.1:")
        rows = c.compute(weft.dask.predict(model, paths[:5],
                                           batch_size=2)).result()
        assert len(rows) == 5
        if CLI is not None:
            out = tmp_path / "tls.npy"
            done = subprocess.run(
                [CLI, "predict", model, *inputs(paths[:5]), "-o", str(out),
                 "--batch", "2", "--scheduler", cluster.scheduler_address,
                 "--tls-ca-file", str(ca), "--tls-cert", str(cert),
                 "--tls-key", str(key), "-q"],
                capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, done.stderr
            assert np.array_equal(np.load(out), np.stack(rows))
    # A tls:// address without certificates is refused before connecting.
    if CLI is not None:
        refused = subprocess.run(
            [CLI, "predict", model, "-i", paths[0], "-o",
             str(tmp_path / "n.npy"), "--scheduler", "tls://127.0.0.1:1"],
            capture_output=True, text=True, timeout=60)
        assert refused.returncode != 0
        assert "needs --tls-ca-file" in refused.stderr


@pytest.mark.skipif(CLI is None, reason="WEFT_CLI is not set")
def test_the_command_on_local_workers_equals_one_process(images, tmp_path):
    paths, model = images
    one, two = tmp_path / "one.npy", tmp_path / "two.npy"
    common = [CLI, "predict", model, *inputs(paths), "--batch", "4", "-q"]
    subprocess.run(common + ["-o", str(one)], check=True, timeout=120)
    done = subprocess.run(common + ["-o", str(two), "--local-workers", "2",
                                    "--partition-size", "8"],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "predicted 24 of 24 inputs" in done.stdout
    assert np.array_equal(np.load(one), np.load(two))
    assert (tmp_path / "one.npy.paths.txt").read_text() == \
        (tmp_path / "two.npy.paths.txt").read_text()
