#!/usr/bin/env bash
# The ONNX backend node tests as one ctest case: generate the suite into the
# build tree, run `weft test-onnx` on it, and fail if any case fails or any
# case of the must-pass list does not pass.
#   run_node_suite.sh WEFT SOURCE_DIR SCRATCH_DIR
set -euo pipefail
weft=$1 source=$2 scratch=$3
"$source/scripts/onnx-node-tests" "$scratch" >/dev/null
status=0
"$weft" test-onnx "$scratch/node" \
  --must-pass "$source/tests/onnx/node_must_pass.txt" \
  > "$scratch/results.txt" || status=$?
grep -E '^(failed|must pass)' "$scratch/results.txt" || true
tail -n 1 "$scratch/results.txt"
exit $status
