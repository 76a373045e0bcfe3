#!/usr/bin/env bash
# Regenerates the cases of this folder: models and inputs from
# make_cases.py, expected outputs from ONNX Runtime 1.30 (npm
# onnxruntime-node, installed into a scratch folder).
#   tests/onnx/newer_opsets/regenerate.sh [SCRATCH]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
scratch=${1:-$(mktemp -d)}
if [[ ! -d "$scratch/node_modules/onnxruntime-node" ]]; then
  (cd "$scratch" && npm install --ignore-scripts --no-audit --no-fund \
     onnxruntime-node@1.30 >/dev/null)
fi
/usr/bin/python3 "$here/make_cases.py" models "$here/cases"
NODE_PATH="$scratch/node_modules" node "$here/ort_expected.js" "$here/cases"
/usr/bin/python3 "$here/make_cases.py" outputs "$here/cases"
