#!/usr/bin/python3
"""weft serve against ONNX Runtime behind a minimal HTTP server, side by side
in one run, under hey's load (docs/BENCHMARKS.md, "Serving").

  bench/serve/serve_bench.py MODEL.onnx [MODEL.onnx ...]
      [--weft build/bin/weft] [--ort-dir DIR] [--concurrency 1,2,4,8,16,64]
      [--seconds 10] [--weft-flags "--max-batch-size 8 ..."]
      [--ort-settings 1:sequential,2:sequential,1:parallel,2:parallel]
      [--rounds N]

Each request is one row (batch 1) of the model's inputs (the feeds
bench/models/export_models.py wrote beside it), sent with the binary tensor
data extension. weft serve and an ONNX Runtime server at each of its
settings (intraOpNumThreads:executionMode) are all started, and then loaded
in turns: per round and concurrency, each server in turn (the order
reversed every other round), hey for 1 s to warm up and then for
--seconds. The table gives, per server and concurrency, the median over
rounds of requests/s, p50, p90, p99 and the server's CPU seconds per
request (from /proc); ONNX Runtime's row is its best setting by that
median. Just before weft serve's turn at concurrency 1, `weft run
--repeat 200` on the same feeds gives the median that its p50 is held to in
that round (1.10x it plus 1 ms). Before each turn,
build/bin/weft_cpu_pair_latency measures how far apart the two CPUs are (a
cache line's round trip, printed per round in brackets): on the KVM guests
the host moves them, and two-thread Runs slow down when they sit apart
(bench/cpu_pair.py). --weft-flags is given to `weft serve` as is: run once
with none (the defaults) and once with the batching flags to compare. The CPU model
is printed first: record it with every figure.
"""
import argparse
import json
import os
import re
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from cpu_pair import pair_latency_ns  # noqa: E402


def cpu_model():
    """The CPU's name, family and model ("AMD EPYC, family 25 model 17"):
    a virtual machine's name alone often hides the generation."""
    fields = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
            if not line.strip():
                break
    return (f"{fields.get('model name', 'unknown CPU')}, family "
            f"{fields.get('cpu family', '?')} model {fields.get('model', '?')}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


DATATYPES = {np.dtype(np.float32): "FP32", np.dtype(np.int64): "INT64",
             np.dtype(np.int32): "INT32"}


def feed_files(model):
    """{input name: path} of the feeds bench/models/export_models.py wrote
    beside the model (MODEL.NAME.npy)."""
    directory = os.path.dirname(model) or "."
    # Compared by file name: a model given as "bert_encoder.onnx" has
    # "./bert_encoder.input_ids.npy" beside it, which its stem does not
    # prefix.
    prefix = os.path.splitext(os.path.basename(model))[0] + "."
    return {file[len(prefix):-len(".npy")]: os.path.join(directory, file)
            for file in sorted(os.listdir(directory))
            if file.startswith(prefix) and file.endswith(".npy") and
            not file.endswith(".reference.npy")}


def feeds_of(model):
    """The model's inputs, batch 1: feed_files(model), else random FP32
    values of the first input's shape (open dimensions as 1)."""
    feeds = {name: np.load(path) for name, path in feed_files(model).items()}
    if feeds:
        return feeds
    import onnx
    graph = onnx.load(model, load_external_data=False).graph
    initializers = {i.name for i in graph.initializer}
    first = next(i for i in graph.input if i.name not in initializers)
    dims = [d.dim_value if d.dim_value > 0 else 1
            for d in first.type.tensor_type.shape.dim]
    return {first.name:
            np.random.default_rng(0).standard_normal(dims).astype(np.float32)}


def write_body(model, path):
    inputs, tail = [], b""
    for name, x in feeds_of(model).items():
        inputs.append({"name": name, "datatype": DATATYPES[x.dtype],
                       "shape": list(x.shape),
                       "parameters": {"binary_data_size": x.nbytes}})
        tail += x.tobytes()
    header = json.dumps({"inputs": inputs,
                         "parameters": {"binary_data_output": True}}).encode()
    with open(path, "wb") as f:
        f.write(header + tail)
    return len(header)


def wait_for_line(process, pattern, timeout=120):
    """The lines the server printed up to and with the first matching
    `pattern`."""
    deadline = time.time() + timeout
    lines = []
    while time.time() < deadline:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError("server exited: " + process.stderr.read())
        lines.append(line)
        if re.search(pattern, line):
            return lines
    raise RuntimeError("server not ready in time")


def hey(url, body, header_length, concurrency, seconds):
    out = subprocess.run(
        ["hey", "-z", f"{seconds}s", "-c", str(concurrency), "-m", "POST",
         "-H", f"Inference-Header-Content-Length: {header_length}",
         "-T", "application/octet-stream", "-D", body, url],
        capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    pct = {p: float(s) * 1000 for p, s in
           re.findall(r"(\d+)%% in ([\d.]+) secs".replace("%%", "%"), out)}
    ok = sum(int(n) for n in re.findall(r"\[200\]\s+(\d+) responses", out))
    bad = sum(int(n) for code, n in
              re.findall(r"\[(\d+)\]\s+(\d+) responses", out) if code != "200")
    return {"rps": rps, "p50": pct.get("50"), "p90": pct.get("90"),
            "p99": pct.get("99"), "ok": ok, "errors": bad}


def check_one_request(url, body, header_length):
    """Sends the body once and fails with the server's answer unless it is
    200: a load of rejected requests measures the error path, not the
    model."""
    with open(body, "rb") as f:
        data = f.read()
    request = urllib.request.Request(url, data=data, method="POST", headers={
        "Inference-Header-Content-Length": str(header_length),
        "Content-Type": "application/octet-stream"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()
    except urllib.error.HTTPError as error:
        raise SystemExit(f"{url} answered {error.code} to the benchmark's "
                         f"request: {error.read().decode(errors='replace')}")


def measure(process, url, body, header_length, concurrency, seconds):
    hey(url, body, header_length, concurrency, 1)  # Warm-up.
    before = cpu_seconds(process.pid)
    result = hey(url, body, header_length, concurrency, seconds)
    cpu = cpu_seconds(process.pid) - before
    result["cpu_ms_per_request"] = 1000 * cpu / max(1, result["ok"])
    return result


def stop(process):
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()


def start_server(command_for, ready, body, header_length, env=None,
                 timeout=120):
    """Starts `command_for(port)`, waits for its line matching `ready` and
    checks that it answers the benchmark's request. Returns the process,
    its infer URL and the lines it printed; stops it on any failure."""
    port = free_port()
    process = subprocess.Popen(
        command_for(port),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        lines = wait_for_line(process, ready, timeout=timeout)
        url = f"http://127.0.0.1:{port}/v2/models/m/infer"
        check_one_request(url, body, header_length)
    except BaseException:
        stop(process)
        raise
    return process, url, lines


def start_weft(args, model, body, header_length):
    """A weft serve of `model`, ready, and its infer URL."""
    flags = shlex.split(args.weft_flags)
    if "--tune" in flags:  # The tuner times the request the bench sends.
        for name, path in feed_files(model).items():
            flags += ["--tune-feed", f"{name}={path}"]
    # --tune times the model first: minutes on a slow host.
    process, url, lines = start_server(
        lambda port: [args.weft, "serve", model, "--name", "m",
                      "--http-port", str(port), "--grpc-port", "-1",
                      "--quiet", *flags],
        r"listening on http", body, header_length, timeout=900)
    for line in lines:
        if line.startswith("why:"):  # --tune's choice, for the record.
            print(f"{os.path.basename(model)}: weft serve --tune {line}",
                  end="")
    return process, url


def start_ort(args, model, setting, body, header_length):
    """ONNX Runtime behind ort_server.js at `setting` (intra:mode), ready,
    and its infer URL."""
    env = dict(os.environ, NODE_PATH=os.path.join(args.ort_dir, "node_modules"))
    intra, mode = setting.split(":")
    process, url, _ = start_server(
        lambda port: ["node", os.path.join(HERE, "ort_server.js"), model,
                      str(port), intra, mode,
                      "2" if mode == "parallel" else "1"],
        r"listening", body, header_length, env=env)
    return process, url


def weft_run_median(args, model, runs=200):
    """`weft run`'s median latency on the same feeds, its default settings:
    item 8 holds weft serve's p50 at concurrency 1 to 1.10x this plus 1 ms.
    """
    files = feed_files(model)
    feeds = [f"--feed={name}={path}" for name, path in files.items()]
    out = subprocess.run(
        [args.weft, "run", model, *(feeds or ["--random-feeds"]),
         "--repeat", str(runs)],
        capture_output=True, text=True, check=True).stdout
    value, unit = re.search(r"time: median ([\d.]+) (ms|µs|s)\b",
                            out).groups()
    return float(value) * {"µs": 1e-3, "ms": 1.0, "s": 1e3}[unit]


def median_of(results):
    """One row from a server's rounds at one concurrency: the median of
    each figure, the responses and errors summed, and per round the
    requests/s and the CPUs' distance it was measured at."""
    row = {key: statistics.median(r[key] for r in results)
           for key in ("rps", "p50", "p90", "p99", "cpu_ms_per_request")}
    row["ok"] = sum(r["ok"] for r in results)
    row["errors"] = sum(r["errors"] for r in results)
    row["rounds"] = [r["rps"] for r in results]
    row["pair_ns"] = [r["pair_ns"] for r in results]
    row["p50_rounds"] = [r["p50"] for r in results]
    return row


def serve_in_turns(args, model, body, header_length, levels):
    """Every server alive at once (weft's, and ONNX Runtime's at each
    setting), loaded in turns: per round and concurrency, each server in
    turn, the order reversed every other round. A host whose speed drifts
    over minutes (these KVM guests: the same Run 3.7 ms in one minute, 5.3
    in the next) then slows both sides' rows alike, where one side's rows
    all before the other's put the drift into the ratio; and a server whose
    own rate moves between levels (ONNX Runtime's on two cores: 129-213
    req/s on MobileNetV2 in one run) shows it round by round. Returns
    weft's rows, the peer's best setting's rows per concurrency and `weft
    run`'s median per round, taken just before weft serve's turn at
    concurrency 1 (or at the round's start without one), so that the lone
    request is held to a Run of the same minutes. Each turn records the two
    CPUs' distance it began at (cpu_pair.py): a two-thread Run's speed
    follows it."""
    servers = {}
    try:
        servers["weft"] = start_weft(args, model, body, header_length)
        for setting in args.ort_settings.split(","):
            servers[setting] = start_ort(args, model, setting, body,
                                         header_length)
        rows = {label: {c: [] for c in levels} for label in servers}
        alone = []
        for r in range(args.rounds):
            if 1 not in levels:
                alone.append(weft_run_median(args, model))
            order = list(servers) if r % 2 == 0 else list(servers)[::-1]
            for c in levels:
                for label in order:
                    process, url = servers[label]
                    if label == "weft" and c == 1:
                        alone.append(weft_run_median(args, model))
                    time.sleep(0.5)  # ONNX Runtime's threads spin on a while.
                    pair_ns = pair_latency_ns()
                    result = measure(process, url, body, header_length, c,
                                     args.seconds)
                    result["pair_ns"] = pair_ns
                    rows[label][c].append(result)
    finally:
        for process, _ in servers.values():
            stop(process)
    weft = {c: median_of(rows["weft"][c]) for c in levels}
    ort = {}
    for setting in args.ort_settings.split(","):
        for c in levels:
            candidate = median_of(rows[setting][c])
            candidate["setting"] = setting
            if c not in ort or candidate["rps"] > ort[c]["rps"]:
                ort[c] = candidate
    return weft, ort, alone


def distances(weft_ns, ort_ns):
    """The CPUs' distance at weft's and the peer's turns, as a note."""
    if weft_ns is None or ort_ns is None:
        return ""
    return f" [{weft_ns}/{ort_ns} ns]"


def print_lone_request(weft_row, alone):
    """Item 8's bound at concurrency 1, round by round: weft serve's p50
    against 1.10x the `weft run` median taken just before it, plus 1 ms."""
    ratios = [p50 / (1.10 * ms + 1)
              for p50, ms in zip(weft_row["p50_rounds"], alone)]
    by_round = ", ".join(
        f"{p50:.1f} ms / {ms:.2f} ms: {ratio:.2f}"
        f"{'' if ns is None else f' [{ns} ns]'}"
        for p50, ms, ratio, ns in zip(weft_row["p50_rounds"], alone, ratios,
                                      weft_row["pair_ns"]))
    print(f"  c=1: weft serve p50 against 1.10x `weft run`'s median + 1 ms: "
          f"{statistics.median(ratios):.2f} of the bound (by round, p50 / "
          f"`weft run`: {by_round})")


def row(name, c, r):
    return (f"| {name} | {c} | {r['rps']:.1f} | {r['p50']:.1f} | "
            f"{r['p90']:.1f} | {r['p99']:.1f} | {r['cpu_ms_per_request']:.1f} |"
            f" {r['errors']} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--weft", default=os.path.join(ROOT, "build/bin/weft"))
    parser.add_argument("--ort-dir",
                        default=os.path.join(ROOT, "build/bench-models/ort"))
    parser.add_argument("--concurrency", default="1,2,4,8,16,64")
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--weft-flags", default="")
    parser.add_argument("--ort-settings",
                        default="1:sequential,2:sequential,1:parallel,2:parallel")
    parser.add_argument("--rounds", type=int, default=1,
                        help="turns of every server at every concurrency; "
                        "each row is the median over rounds")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    print(f"CPU: {cpu_model()}, {os.cpu_count()} CPUs; weft serve "
          f"{args.weft_flags or '(defaults)'}; hey {args.seconds} s per row, "
          f"{args.rounds} round(s) in turns")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            name = os.path.splitext(os.path.basename(model))[0]
            body = os.path.join(tmp, name + ".body")
            header_length = write_body(model, body)
            weft, ort, alone = serve_in_turns(args, model, body,
                                              header_length, levels)
            results[name] = {"weft": weft, "ort": ort,
                             "weft_run_median_ms": alone}
            print(f"\n{name}\n")
            print("| server | concurrency | req/s | p50 ms | p90 ms | p99 ms |"
                  " CPU ms/req | errors |")
            print("|---|---|---|---|---|---|---|---|")
            for c in levels:
                print(row("weft serve", c, weft[c]))
                print(row(f"ORT {ort[c]['setting']}", c, ort[c]))
            for c in levels:
                by_round = ", ".join(
                    f"{w / o:.2f}{distances(wn, on)}" for w, o, wn, on in
                    zip(weft[c]["rounds"], ort[c]["rounds"],
                        weft[c]["pair_ns"], ort[c]["pair_ns"]))
                print(f"  c={c}: weft/ORT throughput "
                      f"{weft[c]['rps'] / ort[c]['rps']:.2f}x (by round: "
                      f"{by_round}), p99 {weft[c]['p99'] / ort[c]['p99']:.2f}x")
            if 1 in weft:
                print_lone_request(weft[1], alone)
            sys.stdout.flush()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
