# Shared by run.sh and int8.sh (sourced): the ONNX Runtime peer, a model's
# feeds, and the rounds that time weft and ONNX Runtime in turns. Expects
# $work, $here, $weft, $repeat and $rounds.

# onnxruntime-node 1.30 (its bundled CPU library) under $work/ort; with
# ORT_PEER=python, onnxruntime's Python package instead (ort_bench.py), for
# a host without Node whose Python has it (bench/models/lent_host.py).
install_ort_peer() {
  if [[ ${ORT_PEER:-node} == python ]]; then
    python3 -c 'import onnxruntime' || return 1
  elif [[ ! -d "$work/ort/node_modules/onnxruntime-node" ]]; then
    mkdir -p "$work/ort"
    (cd "$work/ort" && npm install --ignore-scripts --no-audit --no-fund \
       onnxruntime-node@1.30 >/dev/null)
  fi
}

feeds_of() {  # model -> NAME=FILE.npy arguments
  local m=$1 f
  for f in "$work/$m".*.npy; do
    case $f in *.reference.npy) continue ;; esac
    local name=${f#"$work/$m."}
    echo "${name%.npy}=$f"
  done
}

# Times model $1 with weft (at (inter, intra) in {1, 2}^2) and ONNX Runtime
# in $rounds rounds, taking turns which goes first, into
# $work/$1.weft.N.json and $work/$1.ort.N.json; sets feeds and feed_flags
# for the caller.
time_in_rounds() {
  local m=$1 round
  mapfile -t feeds < <(feeds_of "$m")
  feed_flags=()
  local f
  for f in "${feeds[@]}"; do feed_flags+=(--feed "$f"); done
  echo "== $m" >&2
  run_weft() {
    "$weft" bench "$work/$m.onnx" "${feed_flags[@]}" --inter 1,2 --intra 1,2 \
      --repeat "$repeat" --warmup 3 --json > "$work/$m.weft.$1.json" 2>/dev/null
  }
  run_ort() {
    if [[ ${ORT_PEER:-node} == python ]]; then
      python3 "$here/ort_bench.py" "$work/$m.onnx" "$repeat" "${feeds[@]}" \
        > "$work/$m.ort.$1.json"
    else
      NODE_PATH="$work/ort/node_modules" node "$here/ort_bench.js" \
        "$work/$m.onnx" "$repeat" "${feeds[@]}" > "$work/$m.ort.$1.json"
    fi
  }
  rm -f "$work/$m".weft.*.json "$work/$m".ort.*.json
  for ((round = 1; round <= rounds; ++round)); do
    if ((round % 2)); then
      run_weft "$round" && run_ort "$round"
    else
      run_ort "$round" && run_weft "$round"
    fi
  done
}
