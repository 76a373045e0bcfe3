"""weft serve from the clients its users have: curl, urllib, requests and a
grpcio client built from the server's own .proto (docs/serving.md). Each
test starts `weft serve` on free loopback ports and stops it with SIGTERM.
"""
import json
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

CLI = os.environ.get("WEFT_CLI")
PROTO = os.path.join(os.path.dirname(__file__), "..", "..", "src", "serve",
                     "grpc_inference.proto")

pytestmark = pytest.mark.skipif(CLI is None, reason="WEFT_CLI is not set")


class Served:
    """A running `weft serve`: its process, HTTP base URL and gRPC port."""

    def __init__(self, args):
        self.process = subprocess.Popen(
            [CLI, "serve", "--http-port", "0", "--grpc-port", "0", "--quiet",
             *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.url, self.grpc_port, self.ready_lines = None, None, []
        deadline = time.time() + 60
        while time.time() < deadline and (self.url is None or
                                          self.grpc_port is None):
            line = self.process.stdout.readline()
            if not line:
                raise AssertionError("weft serve exited: " +
                                     self.process.stderr.read())
            self.ready_lines.append(line)
            if m := re.search(r"listening on (http://\S+) \(HTTP", line):
                self.url = m.group(1)
            if m := re.search(r"listening on \S+:(\d+) \(gRPC", line):
                self.grpc_port = int(m.group(1))

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=60)
        self.process.stdout.close()
        self.process.stderr.close()
        return code


@pytest.fixture
def serve():
    started = []

    def start(*args):
        served = Served(list(args))
        started.append(served)
        return served

    yield start
    for served in started:
        if served.process.poll() is None:
            served.stop()


def post(url, body, headers=None):
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def infer_json(url, model, x):
    body = json.dumps({"inputs": [{"name": "x", "datatype": "FP32",
                                   "shape": list(x.shape),
                                   "data": x.ravel().tolist()}]}).encode()
    return post(f"{url}/v2/models/{model}/infer", body)


def infer_binary(url, model, x, name="x"):
    """The binary tensor data extension, in and out: float32 bytes."""
    header = json.dumps({
        "inputs": [{"name": name, "datatype": "FP32", "shape": list(x.shape),
                    "parameters": {"binary_data_size": x.nbytes}}],
        "parameters": {"binary_data_output": True}}).encode()
    status, headers, body = post(
        f"{url}/v2/models/{model}/infer", header + x.astype(np.float32).tobytes(),
        {"Inference-Header-Content-Length": str(len(header)),
         "Content-Type": "application/octet-stream"})
    assert status == 200, body
    json_length = int(headers["Inference-Header-Content-Length"])
    meta = json.loads(body[:json_length])
    shape = meta["outputs"][0]["shape"]
    return np.frombuffer(body[json_length:], dtype=np.float32).reshape(shape)


def test_curl_and_urllib_get_the_same_answer(serve, mlp_path):
    served = serve(mlp_path)
    assert "model 'mlp' version 1 ready" in "".join(served.ready_lines)
    x = np.arange(8, dtype=np.float32).reshape(2, 4) / 3
    status, _, body = infer_json(served.url, "mlp", x)
    assert status == 200
    from_urllib = json.loads(body)
    request = json.dumps({"id": "c", "inputs": [
        {"name": "x", "datatype": "FP32", "shape": [2, 4],
         "data": x.tolist()}]})
    curl = subprocess.run(
        ["curl", "-s", "-X", "POST", "-H", "Content-Type: application/json",
         "-d", request, f"{served.url}/v2/models/mlp/infer"],
        capture_output=True, text=True, check=True)
    from_curl = json.loads(curl.stdout)
    assert from_curl["id"] == "c"
    assert from_curl["outputs"] == from_urllib["outputs"]
    assert served.stop() == 0


def test_requests_with_the_binary_extension(serve, mlp_path):
    import requests
    served = serve(mlp_path)
    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    header = json.dumps({"inputs": [
        {"name": "x", "datatype": "FP32", "shape": [3, 4],
         "parameters": {"binary_data_size": x.nbytes}}],
        "outputs": [{"name": "y", "parameters": {"binary_data": True}}]}).encode()
    reply = requests.post(f"{served.url}/v2/models/mlp/infer",
                          data=header + x.tobytes(),
                          headers={"Inference-Header-Content-Length":
                                   str(len(header))}, timeout=60)
    assert reply.status_code == 200
    n = int(reply.headers["Inference-Header-Content-Length"])
    y = np.frombuffer(reply.content[n:], dtype=np.float32).reshape(3, 3)
    status, _, body = infer_json(served.url, "mlp", x)
    assert np.array_equal(
        y, np.array(json.loads(body)["outputs"][0]["data"], np.float32)
        .reshape(3, 3))
    # A bad request is a 400 that names the input.
    reply = requests.post(f"{served.url}/v2/models/mlp/infer",
                          json={"inputs": [{"name": "x", "datatype": "FP32",
                                            "shape": [1, 5], "data": [0] * 5}]},
                          timeout=60)
    assert reply.status_code == 400
    assert "input 'x'" in reply.json()["error"]


def grpc_messages(tmp_path):
    """The protocol's messages, built by protoc from the server's .proto."""
    subprocess.run(["protoc", f"--python_out={tmp_path}",
                    f"-I{os.path.dirname(PROTO)}", PROTO], check=True)
    sys.path.insert(0, str(tmp_path))
    try:
        import grpc_inference_pb2
    finally:
        sys.path.pop(0)
    return grpc_inference_pb2


def test_a_grpcio_client_built_from_the_same_proto(serve, mlp_path, tmp_path):
    import grpc
    pb = grpc_messages(tmp_path)
    served = serve(mlp_path)
    channel = grpc.insecure_channel(f"127.0.0.1:{served.grpc_port}")

    def call(method, request, response_type):
        return channel.unary_unary(
            f"/inference.GRPCInferenceService/{method}",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=response_type.FromString)(request, timeout=60)

    assert call("ServerLive", pb.ServerLiveRequest(), pb.ServerLiveResponse).live
    metadata = call("ModelMetadata", pb.ModelMetadataRequest(name="mlp"),
                    pb.ModelMetadataResponse)
    assert metadata.inputs[0].datatype == "FP32"
    x = np.linspace(-2, 2, 8, dtype=np.float32).reshape(2, 4)
    request = pb.ModelInferRequest(model_name="mlp", id="7")
    request.inputs.add(name="x", datatype="FP32", shape=[2, 4])
    request.raw_input_contents.append(x.tobytes())
    response = call("ModelInfer", request, pb.ModelInferResponse)
    assert response.id == "7"
    y = np.frombuffer(response.raw_output_contents[0], np.float32).reshape(2, 3)
    assert np.array_equal(y, infer_binary(served.url, "mlp", x))
    bad = pb.ModelInferRequest(model_name="nope")
    with pytest.raises(grpc.RpcError) as error:
        call("ModelInfer", bad, pb.ModelInferResponse)
    assert error.value.code() == grpc.StatusCode.NOT_FOUND
    channel.close()


def conv_and_encoder_models(directory):
    """A small CNN (7x7 stride 2, max pool, 3x3, depthwise, grouped, 1x1,
    global pool, classifier) and a BERT-style block (projections, attention
    softmax, layer norm, GELU feed-forward), both with an open batch
    dimension and random weights."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(5)

    def const(name, shape):
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * 0.2).astype(np.float32), name)

    def conv(name, x, cin, cout, k, stride, group):
        pad = k // 2
        return [helper.make_node("Conv", [x, name + "_w", name + "_b"], [name],
                                 kernel_shape=[k, k], strides=[stride, stride],
                                 pads=[pad] * 4, group=group),
                helper.make_node("Relu", [name], [name + "_r"])], [
            const(name + "_w", (cout, cin // group, k, k)),
            const(name + "_b", (cout,))]

    nodes, weights = [], []
    for args in [("c7", "x", 3, 16, 7, 2, 1)]:
        n, w = conv(*args)
        nodes += n
        weights += w
    nodes.append(helper.make_node("MaxPool", ["c7_r"], ["p"], kernel_shape=[3, 3],
                                  strides=[2, 2], pads=[1, 1, 1, 1]))
    previous = "p"
    for name, cin, cout, k, stride, group in [("c3", 16, 32, 3, 1, 1),
                                              ("dw", 32, 32, 3, 1, 32),
                                              ("g4", 32, 32, 3, 2, 4),
                                              ("c1", 32, 64, 1, 1, 1)]:
        n, w = conv(name, previous, cin, cout, k, stride, group)
        nodes += n
        weights += w
        previous = name + "_r"
    nodes += [helper.make_node("GlobalAveragePool", [previous], ["gap"]),
              helper.make_node("Flatten", ["gap"], ["flat"]),
              helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["y"])]
    weights += [const("fc_w", (64, 10)), const("fc_b", (10,))]
    cnn = helper.make_model(helper.make_graph(
        nodes, "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 10])],
        weights), opset_imports=[helper.make_opsetid("", 17)])

    h, s = 64, 12
    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"]),
        helper.make_node("MatMul", ["x", "wk"], ["k"]),
        helper.make_node("MatMul", ["x", "wv"], ["v"]),
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["attn"], axis=-1),
        helper.make_node("MatMul", ["attn", "v"], ["ctx"]),
        helper.make_node("Add", ["ctx", "x"], ["res"]),
        helper.make_node("LayerNormalization", ["res", "g", "b"], ["ln"], axis=-1),
        helper.make_node("MatMul", ["ln", "w1"], ["ff"]),
        # GELU as exporters write it: x * (erf(x / sqrt 2) + 1) / 2.
        helper.make_node("Div", ["ff", "sqrt2"], ["ffs"]),
    ]
    nodes += [helper.make_node("Erf", ["ffs"], ["erf"]),
              helper.make_node("Add", ["erf", "one"], ["erf1"]),
              helper.make_node("Mul", ["ff", "erf1"], ["ffe"]),
              helper.make_node("Mul", ["ffe", "half"], ["act"]),
              helper.make_node("MatMul", ["act", "w2"], ["y"])]
    weights = [const("wq", (h, h)), const("wk", (h, h)), const("wv", (h, h)),
               const("g", (h,)), const("b", (h,)), const("w1", (h, 4 * h)),
               const("w2", (4 * h, h)),
               numpy_helper.from_array(np.array(2 ** 0.5, np.float32), "sqrt2"),
               numpy_helper.from_array(np.array(1, np.float32), "one"),
               numpy_helper.from_array(np.array(0.5, np.float32), "half")]
    encoder = helper.make_model(helper.make_graph(
        nodes, "encoder",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", s, h])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", s, h])],
        weights), opset_imports=[helper.make_opsetid("", 17)])
    paths = []
    for model, name in [(cnn, "cnn"), (encoder, "encoder")]:
        path = os.path.join(directory, name + ".onnx")
        onnx.save(model, path)
        paths.append(path)
    return paths


def test_batched_requests_get_the_bits_they_get_alone(serve, tmp_path):
    cnn, encoder = conv_and_encoder_models(tmp_path)
    served = serve(cnn, encoder, "--max-batch-size", "8",
                   "--max-queue-delay-us", "20000")
    rng = np.random.default_rng(9)
    for model, shape in [("cnn", (3, 32, 32)), ("encoder", (12, 64))]:
        inputs = [rng.standard_normal((1 + i % 2, *shape)).astype(np.float32)
                  for i in range(10)]
        together = [None] * len(inputs)

        def client(i):
            together[i] = infer_binary(served.url, model, inputs[i])

        threads = [threading.Thread(target=client, args=(i,))
                   for i in range(len(inputs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i, x in enumerate(inputs):
            alone = infer_binary(served.url, model, x)
            assert together[i].tobytes() == alone.tobytes(), (model, i)
    with urllib.request.urlopen(f"{served.url}/metrics", timeout=60) as r:
        metrics = r.read().decode()
    runs = int(re.search(r'weft_inference_batch_size_count\{model="cnn"\} (\d+)',
                         metrics).group(1))
    assert runs < 20  # Batches formed: fewer Runs than requests.
    # And the served outputs are `weft run`'s with batch_invariant set.
    x = inputs[0]
    npy = tmp_path / "x.npy"
    np.save(npy, x)
    out_dir = tmp_path / "out"
    subprocess.run([CLI, "run", encoder, "--feed", f"x={npy}", "--save",
                    str(out_dir), "--set", "batch_invariant=true"],
                   check=True, capture_output=True)
    assert np.load(out_dir / "y.npy").tobytes() == \
        infer_binary(served.url, "encoder", x).tobytes()


def slow_model(directory, micros):
    path = os.path.join(directory, "slow.json")
    with open(path, "w") as f:
        json.dump({"format": "weft-graph", "version": 1, "nodes": [
            {"name": "x", "op": "Placeholder",
             "attrs": {"dtype": "float32", "shape": [-1, 2]}},
            {"name": "s", "op": "Sleep", "inputs": ["x"],
             "attrs": {"micros": micros}},
            {"name": "zero", "op": "Const", "attrs": {
                "value": {"dtype": "float32", "shape": [], "values": [0]}}},
            {"name": "z", "op": "Mul", "inputs": ["s", "zero"]},
            {"name": "y", "op": "Add", "inputs": ["x", "z"]}],
            "outputs": ["y"]}, f)
    return path


def test_sigterm_under_load_loses_no_accepted_request(serve, tmp_path):
    served = serve(slow_model(tmp_path, 100_000), "--drain-timeout-s", "30")
    statuses = []
    lock = threading.Lock()

    def client():
        status, _, _ = post(f"{served.url}/v2/models/slow/infer", json.dumps(
            {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 2],
                         "data": [1, 2]}]}).encode())
        with lock:
            statuses.append(status)

    threads = [threading.Thread(target=client) for _ in range(12)]
    for t in threads:
        t.start()
    time.sleep(0.3)  # Every request accepted; most still queued.
    assert served.stop() == 0
    for t in threads:
        t.join()
    assert statuses == [200] * 12


def proc_status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def metric(url, name):
    with urllib.request.urlopen(f"{url}/metrics", timeout=60) as r:
        text = r.read().decode()
    return float(re.search(rf"^{name} (\S+)$", text, re.M).group(1))


def load(url, model, x, clients, seconds):
    """`clients` threads sending binary requests for `seconds`; the count
    of answers, each checked against `expected` by the caller."""
    stop = time.time() + seconds
    answers, lock = [], threading.Lock()

    def client():
        while time.time() < stop:
            y = infer_binary(url, model, x)
            with lock:
                answers.append(y)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    return threads, answers


def test_64_clients_keep_within_the_core_budget(serve, tmp_path):
    cnn, _ = conv_and_encoder_models(tmp_path)
    served = serve(cnn, "--max-batch-size", "8")
    pid = served.process.pid
    x = np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype(np.float32)
    expected = infer_binary(served.url, "cnn", x)
    threads_at_rest = proc_status(pid, "Threads")
    budget = metric(served.url, "weft_core_budget")
    cpu_before, wall_before = cpu_seconds(pid), time.time()
    threads, answers = load(served.url, "cnn", x, 64, 4)
    most_threads = 0
    while any(t.is_alive() for t in threads):
        most_threads = max(most_threads, proc_status(pid, "Threads"))
        time.sleep(0.05)
    for t in threads:
        t.join()
    cpu = cpu_seconds(pid) - cpu_before
    wall = time.time() - wall_before
    assert answers and all(a.tobytes() == expected.tobytes() for a in answers)
    # Whatever the number of clients, the server computes on at most its
    # budget of cores and starts no thread per request (gRPC's pool, idle
    # here, may add one).
    assert cpu / wall <= budget * 1.1, (cpu, wall, budget)
    assert most_threads <= threads_at_rest + 1, (most_threads, threads_at_rest)


CGROUP_CPU = "/sys/fs/cgroup/cpu"


def test_auto_threads_inside_a_one_cpu_quota_use_one_core(tmp_path):
    group = os.path.join(CGROUP_CPU, f"weft_serve_test_{os.getpid()}")
    try:
        os.mkdir(group)
        with open(os.path.join(group, "cpu.cfs_quota_us"), "w") as f:
            f.write("100000")  # One CPU per 100 ms period.
    except OSError as error:
        pytest.skip(f"cannot make a cgroup with a CPU quota here: {error}")
    try:
        cnn, _ = conv_and_encoder_models(tmp_path)
        process = subprocess.Popen(
            ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh",
             CLI, "serve", cnn, "--http-port", "0", "--grpc-port", "-1",
             "--quiet"], stdout=subprocess.PIPE, text=True)
        url = None
        while url is None:
            line = process.stdout.readline()
            assert line, "weft serve exited"
            if m := re.search(r"listening on (http://\S+) \(HTTP", line):
                url = m.group(1)
        assert metric(url, "weft_core_budget") == 1
        assert metric(url, "weft_inter_op_threads") == 1
        assert metric(url, "weft_intra_op_threads") == 1
        x = np.ones((1, 3, 32, 32), np.float32)
        cpu_before, wall_before = cpu_seconds(process.pid), time.time()
        threads, answers = load(url, "cnn", x, 16, 3)
        for t in threads:
            t.join()
        usage = (cpu_seconds(process.pid) - cpu_before) / (time.time() - wall_before)
        assert answers
        assert usage <= 1.05, usage
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
        process.stdout.close()
    finally:
        os.rmdir(group)


def test_64_clients_of_every_kind_for_a_minute(serve, tmp_path, mlp_path):
    """The reliability test: valid, malformed, slow and vanishing clients
    together. Every valid answer is right, every malformed request gets a
    clear 4xx, and the server's memory and threads stay flat."""
    import socket
    seconds = float(os.environ.get("WEFT_SERVE_SOAK_SECONDS", "60"))
    served = serve(mlp_path, "--max-batch-size", "16", "--max-queue-delay-us",
                   "500", "--read-timeout-ms", "1000")
    host, port = served.url[len("http://"):].rsplit(":", 1)
    pid = served.process.pid
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((1 + i % 3, 4)).astype(np.float32)
              for i in range(16)]
    expected = [infer_binary(served.url, "mlp", x) for x in inputs]
    malformed = [
        (b"{", 400), (b'{"inputs": []}', 400),
        (b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 4], '
         b'"data": [1, 2]}]}', 400),
        (b'{"inputs": [{"name": "x", "datatype": "FP99", "shape": [1, 4], '
         b'"data": [1, 2, 3, 4]}]}', 400),
        (b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, -4], '
         b'"data": []}]}', 400),
        (b"[" * 5000, 400),
    ]
    stop = time.time() + seconds
    failures, counts, lock = [], {"valid": 0, "malformed": 0, "slow": 0,
                                  "vanished": 0}, threading.Lock()

    def valid(i):
        while time.time() < stop:
            k = (i + counts["valid"]) % len(inputs)
            y = infer_binary(served.url, "mlp", inputs[k])
            with lock:
                counts["valid"] += 1
                if y.tobytes() != expected[k].tobytes():
                    failures.append(f"input {k}: a different answer")

    def bad(i):
        while time.time() < stop:
            body, want = malformed[(i + counts["malformed"]) % len(malformed)]
            status, _, reply = post(f"{served.url}/v2/models/mlp/infer", body)
            with lock:
                counts["malformed"] += 1
                if status != want or "error" not in json.loads(reply):
                    failures.append(f"{body[:40]!r}: {status} {reply[:80]!r}")

    def slow(_):
        while time.time() < stop:
            with socket.create_connection((host, int(port)), timeout=10) as s:
                try:
                    for c in b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n":
                        s.sendall(bytes([c]))
                        time.sleep(0.2)
                except OSError:
                    pass  # Cut off by the server's read timeout: expected.
            with lock:
                counts["slow"] += 1

    def vanishing(_):
        while time.time() < stop:
            with socket.create_connection((host, int(port)), timeout=10) as s:
                s.sendall(b"POST /v2/models/mlp/infer HTTP/1.1\r\nHost: x\r\n"
                          b"Content-Length: 1000\r\n\r\n{\"inputs\": [")
            with lock:
                counts["vanished"] += 1
            time.sleep(0.05)

    kinds = [valid] * 40 + [bad] * 12 + [slow] * 6 + [vanishing] * 6
    threads = [threading.Thread(target=kind, args=(i,))
               for i, kind in enumerate(kinds)]
    for t in threads:
        t.start()
    time.sleep(min(5, seconds / 4))
    rss_early, threads_early = proc_status(pid, "VmRSS"), proc_status(pid, "Threads")
    for t in threads:
        t.join()
    rss_late, threads_late = proc_status(pid, "VmRSS"), proc_status(pid, "Threads")
    assert not failures, failures[:5]
    assert counts["valid"] > 100 and counts["malformed"] > 20, counts
    assert rss_late <= rss_early * 1.25 + 16 * 1024, (rss_early, rss_late)
    assert threads_late <= threads_early + 1, (threads_early, threads_late)
    assert served.stop() == 0
