#!/usr/bin/env bash
# The QOperator form of the quantized CNNs (qoperator_form.py: QLinearConv
# and com.microsoft's QLinearAdd, QLinearGlobalAveragePool), as ONNX
# Runtime's quantizer writes it with QuantFormat.QOperator, beside the QDQ
# form it is made from: weft and ONNX Runtime 1.30 on both, at
# (inter, intra) in {1, 2}^2, in ROUNDS rounds taking turns which runtime
# goes first. Run int8.sh first (it writes the QDQ models).
#   bench/models/qoperator.sh [WORK_DIR] [REPEAT] [ROUNDS]
# Prints per model and form the best latencies and weft / ONNX Runtime,
# and fails when weft's output on the QOperator form is not bit for bit its
# output on the QDQ form.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${1:-$root/build/bench-models}
repeat=${2:-20}
rounds=${3:-3}
weft=${WEFT:-$root/build/bin/weft}
python=/usr/bin/python3

# shellcheck source=rounds.sh
source "$here/rounds.sh"
install_ort_peer

models=()
for m in resnet18 resnet18_b8 mobilenet_v2; do
  qdq=${m}_int8
  if [[ ! -f "$work/$qdq.onnx" ]]; then
    echo "qoperator.sh: $work/$qdq.onnx is missing: run int8.sh first" >&2
    exit 2
  fi
  qop=${m}_int8_qoperator
  "$python" "$here/qoperator_form.py" "$work/$qdq.onnx" "$work/$qop.onnx"
  for f in "$work/$qdq".*.npy; do
    case $f in *.reference.npy) continue ;; esac
    cp "$f" "$work/$qop.${f#"$work/$qdq."}"
  done
  models+=("$qdq" "$qop")
done

for m in "${models[@]}"; do
  time_in_rounds "$m"
  rm -rf "$work/$m.weft"
  "$weft" run "$work/$m.onnx" "${feed_flags[@]}" --save "$work/$m.weft" \
    > /dev/null
done
"$python" - "$work" "${models[@]}" <<'SUMMARY'
import glob, json, os, statistics, sys
work, ok = sys.argv[1], True
print(f"{'model':<28} {'best weft':>10} {'best ORT':>10} {'ratio':>7} "
      f"{'ratio per round':>16}")
for model in sys.argv[2:]:
    def rounds(kind):
        return [json.load(open(f)) for f in sorted(
            glob.glob(os.path.join(work, f"{model}.{kind}.*.json")))]
    weft, ort = rounds("weft"), rounds("ort")
    ok = ok and all(r["outputs_match"] for w in weft for r in w["rows"])
    settings = [(r["inter"], r["intra"]) for r in weft[0]["rows"]]
    best_weft = min(statistics.median(
        r["median_ms"] for w in weft for r in w["rows"]
        if (r["inter"], r["intra"]) == s) for s in settings)
    best_ort = min(statistics.median(o[k] for o in ort) for k in ort[0])
    per_round = [min(r["median_ms"] for r in w["rows"]) / min(o.values())
                 for w, o in zip(weft, ort)]
    print(f"{model:<28} {best_weft:>10.2f} {best_ort:>10.2f} "
          f"{best_weft / best_ort:>6.2f}x "
          f"{min(per_round):>8.2f}-{max(per_round):.2f}x")
sys.exit(0 if ok else 1)
SUMMARY
for m in resnet18 resnet18_b8 mobilenet_v2; do
  cmp "$work/${m}_int8.weft/output.npy" \
      "$work/${m}_int8_qoperator.weft/output.npy"
  echo "${m}: weft's output on the QOperator form is its QDQ form's, bit for bit"
done
