#!/usr/bin/env bash
# Real models side by side: weft, ONNX Runtime 1.30 (npm onnxruntime-node,
# its bundled CPU library) and PyTorch 1.13, at (inter, intra) in {1, 2}^2.
#   bench/models/run.sh [WORK_DIR] [REPEAT] [ROUNDS]
# Exports the models (export_models.py, random weights from a fixed seed),
# installs onnxruntime-node into WORK_DIR, runs each runtime, and prints per
# model and setting the median latencies and weft's relative L2 error
# against PyTorch's output. weft and ONNX Runtime run in ROUNDS rounds
# (default 3), taking turns which goes first, and each setting's latency is
# the median over rounds of the per-round medians: a burst of load on this
# shared host then lands on one round of each, not on one runtime. Fails if that error exceeds 1e-4 on any model
# or if weft's outputs differ between settings.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${1:-$root/build/bench-models}
repeat=${2:-10}
rounds=${3:-3}
weft=${WEFT:-$root/build/bin/weft}
python=/usr/bin/python3  # Debian's, with python3-torch (not a pyenv one).
mkdir -p "$work"

# The peers: Debian's PyTorch and torchvision (installed when missing, as
# root), and node/npm for onnxruntime-node.
missing=()
"$python" -c 'import torch, torchvision' 2>/dev/null ||
  missing+=(python3-torch python3-torchvision)
"$python" -c 'import onnx' 2>/dev/null || missing+=(python3-onnx)
# node and npm may come from outside Debian (they do on the project's
# machines); Debian's packages would conflict with them.
command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  echo "installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

models=(resnet18 resnet18_b8 mobilenet_v2 squeezenet1_1 bert_encoder two_towers)
missing_models=()
for m in "${models[@]}"; do
  [[ -f "$work/$m.onnx" ]] || missing_models+=("$m")
done
if ((${#missing_models[@]})); then
  "$python" "$here/export_models.py" "$work" "${missing_models[@]}"
fi
if [[ ! -d "$work/ort/node_modules/onnxruntime-node" ]]; then
  mkdir -p "$work/ort"
  (cd "$work/ort" && npm install --ignore-scripts --no-audit --no-fund \
     onnxruntime-node@1.30 >/dev/null)
fi

feeds_of() {  # model -> NAME=FILE.npy arguments
  local m=$1 f
  for f in "$work/$m".*.npy; do
    case $f in *.reference.npy) continue ;; esac
    local name=${f#"$work/$m."}
    echo "${name%.npy}=$f"
  done
}

for m in "${models[@]}"; do
  mapfile -t feeds < <(feeds_of "$m")
  feed_flags=()
  for f in "${feeds[@]}"; do feed_flags+=(--feed "$f"); done
  echo "== $m" >&2
  run_weft() {
    "$weft" bench "$work/$m.onnx" "${feed_flags[@]}" --inter 1,2 --intra 1,2 \
      --repeat "$repeat" --warmup 3 --json > "$work/$m.weft.$1.json" 2>/dev/null
  }
  run_ort() {
    NODE_PATH="$work/ort/node_modules" node "$here/ort_bench.js" \
      "$work/$m.onnx" "$repeat" "${feeds[@]}" > "$work/$m.ort.$1.json"
  }
  rm -f "$work/$m".weft.*.json "$work/$m".ort.*.json
  for ((round = 1; round <= rounds; ++round)); do
    if ((round % 2)); then
      run_weft "$round" && run_ort "$round"
    else
      run_ort "$round" && run_weft "$round"
    fi
  done
  "$weft" run "$work/$m.onnx" "${feed_flags[@]}" --save "$work/$m.weft" \
    > /dev/null
  : > "$work/$m.torch.txt"
  for inter in 1 2; do
    for intra in 1 2; do
      echo "$inter,$intra $(cd "$here" && "$python" torch_bench.py "$m" \
        "$inter" "$intra" "$repeat")" >> "$work/$m.torch.txt"
    done
  done
done
"$python" "$here/compare.py" "$work" "${models[@]}"
