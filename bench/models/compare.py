#!/usr/bin/python3
"""Prints the side-by-side table from run.sh's results and checks accuracy.
    compare.py WORK_DIR [MODEL ...]
Latencies are medians over run.sh's rounds of each round's median; the
summary also gives the range of the per-round ratio of the best settings.
Exit 1 when weft's relative L2 error against PyTorch exceeds 1e-4 on any
model or weft's outputs differ between thread settings in any round."""
import glob
import json
import os
import statistics
import sys

import numpy as np

MAX_REL_L2 = 1e-4
work = sys.argv[1]
ok = True
print(f"{'model':<14} {'inter':>5} {'intra':>5} {'weft ms':>9} {'ORT ms':>9} "
      f"{'torch ms':>9} {'weft/ORT':>9} {'rel L2 vs torch':>16}")
summary = []
models = sys.argv[2:] or ["resnet18", "resnet18_b8", "mobilenet_v2",
                          "squeezenet1_1", "bert_encoder", "two_towers"]
for model in models:
    weft_rounds = [json.load(open(f)) for f in sorted(
        glob.glob(os.path.join(work, model + ".weft.*.json")))]
    ort_rounds = [json.load(open(f)) for f in sorted(
        glob.glob(os.path.join(work, model + ".ort.*.json")))]
    if not weft_rounds or len(weft_rounds) != len(ort_rounds):
        sys.exit(f"{model}: {len(weft_rounds)} weft rounds and "
                 f"{len(ort_rounds)} ONNX Runtime rounds in {work}")
    # Per setting, the median over rounds; rows keep the first round's order.
    weft = {"rows": []}
    for row in weft_rounds[0]["rows"]:
        same = [r for w in weft_rounds for r in w["rows"]
                if (r["inter"], r["intra"]) == (row["inter"], row["intra"])]
        weft["rows"].append(dict(row, median_ms=statistics.median(
            r["median_ms"] for r in same),
            outputs_match=all(r["outputs_match"] for r in same)))
    ort = {k: statistics.median(o[k] for o in ort_rounds)
           for k in ort_rounds[0]}
    round_ratios = [min(r["median_ms"] for r in w["rows"]) / min(o.values())
                    for w, o in zip(weft_rounds, ort_rounds)]
    torch_ms = {}
    for line in open(os.path.join(work, model + ".torch.txt")):
        setting, ms = line.split()
        torch_ms[setting] = float(ms)
    ref = np.load(os.path.join(work, model + ".reference.npy")).astype(np.float64)
    out = np.load(os.path.join(work, model + ".weft", "output.npy")).astype(np.float64)
    rel = float(np.linalg.norm(out - ref) / np.linalg.norm(ref))
    if not rel <= MAX_REL_L2:
        ok = False
    for row in weft["rows"]:
        ok = ok and row["outputs_match"]
        setting = f"{row['inter']},{row['intra']}"
        print(f"{model:<14} {row['inter']:>5} {row['intra']:>5} "
              f"{row['median_ms']:>9.2f} {ort[setting]:>9.2f} "
              f"{torch_ms[setting]:>9.2f} "
              f"{row['median_ms'] / ort[setting]:>8.2f}x {rel:>16.2e}")
    best_weft = min(row["median_ms"] for row in weft["rows"])
    at_22 = [r["median_ms"] for r in weft["rows"]
             if (r["inter"], r["intra"]) == (2, 2)]
    summary.append((model, best_weft, min(ort.values()),
                    at_22[0] / best_weft if at_22 else float("nan"),
                    min(round_ratios), max(round_ratios)))
print()
print(f"{'model':<14} {'best weft':>10} {'best ORT':>10} {'ratio':>7} "
      f"{'weft (2,2) / best':>18} {'ratio per round':>16}")
for model, best_weft, best_ort, spread, low, high in summary:
    print(f"{model:<14} {best_weft:>10.2f} {best_ort:>10.2f} "
          f"{best_weft / best_ort:>6.2f}x {spread:>17.2f}x "
          f"{low:>8.2f}-{high:.2f}x")
if not ok:
    print(f"FAILED: a relative L2 error above {MAX_REL_L2} or outputs that "
          "differ between settings", file=sys.stderr)
sys.exit(0 if ok else 1)
