#!/usr/bin/env bash
# The bf16 mode against fp32, weft alone (issue 43, item 6): for each model,
# `weft bench` at (1, 1) and (1, 2), timed in turns, once per precision;
# prints the medians, bf16 / fp32 at each setting and at each precision's
# best, and the error `weft bench --precision bf16` reports against fp32.
#   bench/models/bf16.sh [WORK_DIR] [REPEAT]
# Exits 2 where the CPU has no AVX-512 BF16 (weft refuses the mode there).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${1:-$root/build/bench-models}
repeat=${2:-20}
weft=${WEFT:-$root/build/bin/weft}
python=${PYTHON:-/usr/bin/python3}
models=(resnet18 resnet18_b8 mobilenet_v2 bert_encoder two_towers)
if ! grep -q avx512_bf16 /proc/cpuinfo; then
  echo "this CPU has no AVX-512 BF16: weft refuses precision bf16 here" >&2
  exit 2
fi
missing=()
for m in "${models[@]}"; do [[ -f "$work/$m.onnx" ]] || missing+=("$m"); done
if ((${#missing[@]})); then
  "$python" "$here/export_models.py" "$work" "${missing[@]}"
fi
# shellcheck source=rounds.sh
source "$here/rounds.sh"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
"$weft" info | grep '^bf16 units:' || true
printf '%-14s %-16s %-16s %-12s %-9s %s\n' model "fp32 (1,1) (1,2)" \
  "bf16 (1,1) (1,2)" "bf16/fp32" best "relative error"
for m in "${models[@]}"; do
  mapfile -t feeds < <(feeds_of "$m")
  feed_flags=()
  for f in "${feeds[@]}"; do feed_flags+=(--feed "$f"); done
  for p in fp32 bf16; do
    "$weft" bench "$work/$m.onnx" "${feed_flags[@]}" --inter 1 --intra 1,2 \
      --repeat "$repeat" --warmup 3 --in-turns --precision "$p" --json \
      > "$work/$m.$p.json"
  done
  "$python" - "$m" "$work/$m.fp32.json" "$work/$m.bf16.json" <<'PY'
import json, sys
name, fp32, bf16 = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
f = [r["median_ms"] for r in fp32["rows"]]
b = [r["median_ms"] for r in bf16["rows"]]
errors = [e["relative_error"] for e in bf16.get("error_against_fp32", [])
          if "relative_error" in e]
print(f"{name:<14} {f[0]:7.2f} {f[1]:7.2f}  {b[0]:7.2f} {b[1]:7.2f}  "
      f"{b[0] / f[0]:.2f} {b[1] / f[1]:.2f}    {min(b) / min(f):.2f}     "
      + ", ".join(f"{e:.1e}" for e in errors))
PY
done
