#!/usr/bin/env bash
# Quantized models side by side: weft and ONNX Runtime 1.30 on the int8
# forms weft.quantize writes (quantize_models.py: QDQ for the CNNs, dynamic
# for the encoder), each beside its float model, at (inter, intra) in
# {1, 2}^2, in ROUNDS rounds taking turns which runtime goes first.
#   bench/models/int8.sh [WORK_DIR] [REPEAT] [ROUNDS]
# Prints per model the best latencies, weft / ONNX Runtime, weft int8 /
# weft float, and how far weft's output is from ONNX Runtime's on the same
# int8 model (int8_compare.py). Fails if weft's outputs differ between
# thread settings.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${1:-$root/build/bench-models}
repeat=${2:-20}
rounds=${3:-3}
weft=${WEFT:-$root/build/bin/weft}
python=/usr/bin/python3
mkdir -p "$work"

# The float models and the ONNX Runtime peer, as run.sh installs them.
float_models=(resnet18 resnet18_b8 mobilenet_v2 bert_encoder)
missing=()
for m in "${float_models[@]}"; do
  [[ -f "$work/$m.onnx" ]] || missing+=("$m")
done
if ((${#missing[@]})); then
  "$python" "$here/export_models.py" "$work" "${missing[@]}"
fi
# shellcheck source=rounds.sh
source "$here/rounds.sh"
install_ort_peer
PYTHONPATH="$root/build/python${PYTHONPATH:+:$PYTHONPATH}" \
  "$python" "$here/quantize_models.py" "$work" "${float_models[@]}"

models=()
for m in "${float_models[@]}"; do models+=("${m}_int8" "$m"); done
for m in "${models[@]}"; do
  time_in_rounds "$m"
  if [[ $m == *_int8 ]]; then
    rm -rf "$work/$m.weft"
    "$weft" run "$work/$m.onnx" "${feed_flags[@]}" --save "$work/$m.weft" \
      > /dev/null
    NODE_PATH="$work/ort/node_modules" node "$here/ort_run.js" \
      "$work/$m.onnx" "$work/${m}_ort_output.npy" "${feeds[@]}"
  fi
done
"$python" "$here/int8_compare.py" "$work" "${float_models[@]}"
