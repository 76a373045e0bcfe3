#!/usr/bin/env bash
# Ctrl-C during a long weft command: starts `weft ARGS...`, sends SIGINT
# after SECONDS, and checks that it exits 130 with output matching REGEX
# (the statistics of what it completed).
#   interrupt.sh SECONDS REGEX WEFT ARGS...
set -u
set -m  # Job control: a background job keeps SIGINT (not ignored).
seconds=$1 regex=$2 weft=$3
shift 3
out=$(mktemp)
"$weft" "$@" >"$out" 2>&1 &
pid=$!
sleep "$seconds"
kill -INT "$pid"
# Bounded: a command that ignores the interrupt fails the test, not CI.
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
  kill -KILL "$pid"; echo "weft did not stop within 10 s of SIGINT"; cat "$out"; exit 1
fi
wait "$pid"
rc=$?
cat "$out"
if [ "$rc" -ne 130 ]; then echo "exit code $rc, expected 130"; exit 1; fi
if ! grep -Eq "$regex" "$out"; then echo "output does not match '$regex'"; exit 1; fi
rm -f "$out"
