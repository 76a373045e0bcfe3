#!/usr/bin/env bash
# Regenerates a family of ONNX cases (newer_opsets, contrib_ops): models and
# inputs from FAMILY/make_cases.py, expected outputs from ONNX Runtime 1.30
# (npm onnxruntime-node, installed into a scratch folder; graph optimizations
# off), written into FAMILY/cases.
#   tests/onnx/regenerate_cases.sh FAMILY [SCRATCH]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
family=${1:?usage: regenerate_cases.sh FAMILY [SCRATCH]}
scratch=${2:-$(mktemp -d)}
if [[ ! -d "$scratch/node_modules/onnxruntime-node" ]]; then
  (cd "$scratch" && npm install --ignore-scripts --no-audit --no-fund \
     onnxruntime-node@1.30 >/dev/null)
fi
cases="$here/$family/cases"
/usr/bin/python3 "$here/$family/make_cases.py" models "$cases"
NODE_PATH="$scratch/node_modules" node "$here/ort_expected.js" "$cases"
/usr/bin/python3 "$here/$family/make_cases.py" outputs "$cases"
