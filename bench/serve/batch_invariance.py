#!/usr/bin/python3
"""Batch invariance through `weft serve` on real models (docs/serving.md):
each model is served with dynamic batching, N clients send one-row requests
of different inputs at once (so they share Runs), then the same requests go
one at a time (so each runs alone); every answer must be bitwise the same.

  bench/serve/batch_invariance.py MODEL.onnx... [--weft build/bin/weft]
      [--clients 12] [--max-batch-size 8] [--delay-us 20000]

Inputs are the feeds bench/models/export_models.py wrote beside each model
(MODEL.NAME.npy), perturbed per client: float inputs by noise, integer ids
by a per-client shift within their range. Prints, per model, the number of
Runs the batcher formed and whether every answer matched.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import threading
import urllib.request

import numpy as np

from serve_bench import DATATYPES, feeds_of  # Beside this script.

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
def variant(feeds, k):
    rng = np.random.default_rng(k)
    out = {}
    for name, x in feeds.items():
        if x.dtype == np.float32:
            out[name] = (x + rng.standard_normal(x.shape).astype(np.float32))
        else:
            high = max(int(x.max()) + 1, 2)
            out[name] = ((x + k) % high).astype(x.dtype)
    return out


def infer(url, feeds):
    inputs, tail = [], b""
    for name, x in feeds.items():
        inputs.append({"name": name, "datatype": DATATYPES[x.dtype],
                       "shape": list(x.shape),
                       "parameters": {"binary_data_size": x.nbytes}})
        tail += x.tobytes()
    header = json.dumps({"inputs": inputs,
                         "parameters": {"binary_data_output": True}}).encode()
    request = urllib.request.Request(
        url, data=header + tail, method="POST",
        headers={"Inference-Header-Content-Length": str(len(header))})
    with urllib.request.urlopen(request, timeout=120) as response:
        n = int(response.headers["Inference-Header-Content-Length"])
        return response.read()[n:]


def check(args, model):
    process = subprocess.Popen(
        [args.weft, "serve", model, "--name", "m", "--http-port", "0",
         "--grpc-port", "-1", "--quiet", "--max-batch-size",
         str(args.max_batch_size), "--max-queue-delay-us", str(args.delay_us)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        base = None
        while base is None:
            line = process.stdout.readline()
            if not line:
                raise RuntimeError(process.stderr.read())
            if m := re.search(r"listening on (http://\S+) \(HTTP", line):
                base = m.group(1)
        url = f"{base}/v2/models/m/infer"
        feeds = feeds_of(model)
        inputs = [variant(feeds, k) for k in range(args.clients)]
        together = [None] * args.clients

        def client(k):
            together[k] = infer(url, inputs[k])

        threads = [threading.Thread(target=client, args=(k,))
                   for k in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with urllib.request.urlopen(f"{base}/metrics", timeout=60) as r:
            runs = int(re.search(r'weft_inference_batch_size_count\{model="m"\} (\d+)',
                                 r.read().decode()).group(1))
        same = sum(infer(url, inputs[k]) == together[k]
                   for k in range(args.clients))
        return runs, same
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--weft", default=os.path.join(ROOT, "build/bin/weft"))
    parser.add_argument("--clients", type=int, default=12)
    parser.add_argument("--max-batch-size", type=int, default=8)
    parser.add_argument("--delay-us", type=int, default=20000)
    args = parser.parse_args()
    failed = False
    for model in args.models:
        runs, same = check(args, model)
        name = os.path.basename(model)
        print(f"{name}: {args.clients} concurrent requests in {runs} Runs; "
              f"{same} of {args.clients} answers bitwise equal to the same "
              f"request run alone")
        failed |= same != args.clients
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
