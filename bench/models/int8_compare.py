#!/usr/bin/python3
"""Prints int8.sh's table: per model, weft's and ONNX Runtime's best
latency on the int8 form and on the float form, the ratios, and how far
weft's int8 output is from ONNX Runtime's on the same model.
    int8_compare.py WORK_DIR MODEL...
The difference is given in steps of the quantized tensor nearest the output
(the scale of the last QuantizeLinear before it) where the model has one.
Exit 1 if weft's outputs differ between thread settings in any round."""
import glob
import json
import os
import platform
import statistics
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def best(work, model, runtime):
    """Median over rounds of each round's best setting, and every round's
    rows matching across settings (weft)."""
    rounds = [json.load(open(f)) for f in sorted(
        glob.glob(os.path.join(work, f"{model}.{runtime}.*.json")))]
    if not rounds:
        sys.exit(f"{model}: no {runtime} results in {work}")
    if runtime == "weft":
        consistent = all(r["outputs_match"] for w in rounds for r in w["rows"])
        return statistics.median(min(r["median_ms"] for r in w["rows"])
                                 for w in rounds), consistent
    return statistics.median(min(o.values()) for o in rounds), True


def output_step(path):
    """The scale of the last QuantizeLinear in the model, or None."""
    model = onnx.load(path)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in reversed(model.graph.node):
        if node.op_type == "QuantizeLinear" and node.input[1] in inits:
            return float(inits[node.input[1]].max())
    return None


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    work = sys.argv[1]
    ok = True
    print(f"CPU: {cpu_name()}")
    print(f"{'model':<14} {'weft int8':>10} {'ORT int8':>9} {'weft/ORT':>9} "
          f"{'weft float':>11} {'ORT float':>10} {'int8 gain':>10} "
          f"{'vs ORT out':>18}")
    for model in sys.argv[2:]:
        wq, consistent_q = best(work, model + "_int8", "weft")
        oq, _ = best(work, model + "_int8", "ort")
        wf, consistent_f = best(work, model, "weft")
        of, _ = best(work, model, "ort")
        ok = ok and consistent_q and consistent_f
        mine = np.load(os.path.join(work, model + "_int8.weft", "output.npy"))
        theirs = np.load(os.path.join(work, model + "_int8_ort_output.npy"))
        diff = float(np.abs(mine.astype(np.float64) - theirs).max())
        step = output_step(os.path.join(work, model + "_int8.onnx"))
        versus = (f"{diff / step:.2f} steps" if step else
                  f"max {diff:.2e}")
        print(f"{model:<14} {wq:>10.2f} {oq:>9.2f} {wq / oq:>8.2f}x "
              f"{wf:>11.2f} {of:>10.2f} {wf / wq:>9.2f}x {versus:>18}")
    if not ok:
        print("FAILED: weft's outputs differ between thread settings",
              file=sys.stderr)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
