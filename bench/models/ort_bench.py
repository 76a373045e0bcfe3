#!/usr/bin/env python3
"""ONNX Runtime's latency on one model at each (inter, intra) setting,
through onnxruntime's Python package: ort_bench.js's peer where Node is
not installed (a lent host whose image has onnxruntime 1.30 for Python).

    ort_bench.py MODEL REPEAT NAME=FEED.npy... [--save OUT.npy]

Prints one JSON object, {"inter,intra": median ms, ...}, as ort_bench.js
does: the same settings, three warm-up Runs, the median of REPEAT timed
ones, inter-op threads only in the parallel execution mode. With --save,
also writes the first output of one Run at the default settings (as
ort_run.js does) and times nothing."""
import json
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort


def session(model, inter, intra):
    options = ort.SessionOptions()
    options.inter_op_num_threads = inter
    options.intra_op_num_threads = intra
    options.execution_mode = (ort.ExecutionMode.ORT_PARALLEL if inter > 1
                              else ort.ExecutionMode.ORT_SEQUENTIAL)
    return ort.InferenceSession(model, options,
                                providers=["CPUExecutionProvider"])


def main():
    args = sys.argv[1:]
    save = None
    if "--save" in args:
        at = args.index("--save")
        save = args[at + 1]
        del args[at:at + 2]
    model, repeat, feed_args = args[0], int(args[1]), args[2:]
    feeds = {}
    for arg in feed_args:
        name, path = arg.split("=", 1)
        feeds[name] = np.load(path)
    if save:
        run = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        np.save(save, run.run(None, feeds)[0].astype(np.float32))
        return
    result = {}
    for inter in (1, 2):
        for intra in (1, 2):
            run = session(model, inter, intra)
            for _ in range(3):
                run.run(None, feeds)
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                run.run(None, feeds)
                times.append((time.perf_counter() - start) * 1e3)
            result[f"{inter},{intra}"] = statistics.median(times)
            del run
    print(json.dumps(result))


if __name__ == "__main__":
    main()
