#!/usr/bin/env python3
"""Per model, weft's and ONNX Runtime's best latency from rounds.sh's
results (the median over rounds of each round's best setting), the ratio,
its range over rounds, weft's (2, 2) over its best, and whether weft's
outputs matched across settings in every round.

    lent_summary.py WORK_DIR MODEL...

Exit 1 if weft's outputs differ between settings in any round."""
import glob
import json
import os
import statistics
import sys


def rounds(work, model, runtime):
    return [json.load(open(path)) for path in sorted(
        glob.glob(os.path.join(work, f"{model}.{runtime}.*.json")))]


def main():
    work = sys.argv[1]
    ok = True
    print(f"{'model':<18} {'best weft':>10} {'best ORT':>9} {'ratio':>6} "
          f"{'per round':>12} {'(2,2)/best':>10}  weft settings")
    for model in sys.argv[2:]:
        weft, ort = rounds(work, model, "weft"), rounds(work, model, "ort")
        if not weft or len(weft) != len(ort):
            print(f"{model:<18} {len(weft)} weft rounds, {len(ort)} ORT rounds")
            ok = False
            continue
        weft_best = [min(r["median_ms"] for r in w["rows"]) for w in weft]
        ort_best = [min(o.values()) for o in ort]
        per_round = [w / o for w, o in zip(weft_best, ort_best)]
        at_22 = statistics.median(
            r["median_ms"] for w in weft for r in w["rows"]
            if (r["inter"], r["intra"]) == (2, 2))
        settings = {}
        for w in weft:
            for r in w["rows"]:
                settings.setdefault((r["inter"], r["intra"]), []).append(
                    r["median_ms"])
                ok = ok and r["outputs_match"]
        best_w, best_o = statistics.median(weft_best), statistics.median(ort_best)
        print(f"{model:<18} {best_w:>10.2f} {best_o:>9.2f} {best_w / best_o:>6.2f} "
              f"{min(per_round):>5.2f}-{max(per_round):<5.2f} "
              f"{at_22 / best_w:>10.2f}  " + " ".join(
                  f"{i},{j}:{statistics.median(v):.2f}"
                  for (i, j), v in sorted(settings.items())))
        ort_settings = {k: statistics.median(o[k] for o in ort) for k in ort[0]}
        print(f"{'':<18} ORT settings " + " ".join(
            f"{k}:{v:.2f}" for k, v in ort_settings.items()))
    if not ok:
        print("FAILED: missing rounds, or weft's outputs differ between "
              "settings", file=sys.stderr)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
