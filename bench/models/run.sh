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
# shellcheck source=rounds.sh
source "$here/rounds.sh"
install_ort_peer

for m in "${models[@]}"; do
  time_in_rounds "$m"
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
