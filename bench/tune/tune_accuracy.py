#!/usr/bin/python3
"""`weft tune`'s targets, measured (issue 17, docs/BENCHMARKS.md): for each
model, `weft tune --json` and then `weft bench --json` over the same grid,
in the same run:

  - choice: bench's median for the setting tune chose over bench's best
    median (target <= 1.05);
  - error: |predicted - bench's median| / bench's median, per setting
    (target <= 0.15 for every setting);
  - measured: the settings tune timed over the grid's (target <= 0.5).

    tune_accuracy.py WEFT MODEL[::FLAGS] ...

FLAGS are extra arguments for both commands, separated by ',' (for
example model.onnx::--random-feeds). Prints one row per model and exits 1
when a target is missed.
"""
import json
import subprocess
import sys


def run_json(command):
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    return json.loads(done.stdout)


def measure(weft, model, flags):
    tuned = run_json([weft, "tune", model, "--json", *flags])
    inters = sorted({s["inter"] for s in tuned["settings"]})
    intras = sorted({s["intra"] for s in tuned["settings"]})
    bench = run_json([weft, "bench", model, "--json", "--in-turns", "--repeat", "9", "--warmup", "2",
                      "--inter", ",".join(map(str, inters)),
                      "--intra", ",".join(map(str, intras)), *flags])
    measured = {(r["inter"], r["intra"]): r["median_ms"] for r in bench["rows"]}
    best_ms = min(measured.values())
    chosen = (tuned["best"]["inter"], tuned["best"]["intra"])
    errors = {(s["inter"], s["intra"]):
              abs(s["predicted_ms"] - measured[(s["inter"], s["intra"])])
              / measured[(s["inter"], s["intra"])] for s in tuned["settings"]}
    timed = sum(s["measured_ms"] is not None for s in tuned["settings"])
    return {
        "model": model,
        "parallelism": tuned["parallelism"],
        "chosen": chosen,
        "bench_best": min(measured, key=measured.get),
        "choice": measured[chosen] / best_ms,
        "max_error": max(errors.values()),
        "worst": max(errors, key=errors.get),
        "measured": timed / len(tuned["settings"]),
    }


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    weft, failed = argv[1], False
    print("| model | parallelism | tune's choice | bench's best | choice / best | "
          "max prediction error (setting) | measured share |")
    print("|---|---|---|---|---|---|---|")
    for spec in argv[2:]:
        model, _, flag_text = spec.partition("::")
        flags = [f for f in flag_text.split(",") if f]
        r = measure(weft, model, flags)
        ok = r["choice"] <= 1.05 and r["max_error"] <= 0.15 and r["measured"] <= 0.5
        failed |= not ok
        print(f"| {model.split('/')[-1]} | {r['parallelism']:.2f} | {r['chosen']} | "
              f"{r['bench_best']} | {r['choice']:.3f} | {r['max_error']:.1%} "
              f"{r['worst']} | {r['measured']:.2f} |{'' if ok else ' MISSED'}",
              flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
