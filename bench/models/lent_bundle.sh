#!/usr/bin/env bash
# Makes the bundle lent_host.py runs on a lent host (the `device` tool's
# machine: no Debian packages, no Node, no network, 64 MiB of working tree
# a call): weft's binaries built for a generic AVX-512 CPU, the shared
# libraries they need from this machine, and the benchmark models thinned.
#   bench/models/lent_bundle.sh [MODELS_DIR] [OUT.tar.xz]
# MODELS_DIR (default build/bench-models) holds the float models
# (export_models.py) and their int8 forms (quantize_models.py); OUT defaults
# to .lent/bundle.tar.xz, which .git/info/exclude should name. Then, on the
# host, with OUT carried:
#   mkdir -p /tmp/b && tar -xJf .lent/bundle.tar.xz -C /tmp/b &&
#   python3 bench/models/lent_host.py /tmp/b $OUT --pairs 7
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
models=${1:-$root/build/bench-models}
out=${2:-$root/.lent/bundle.tar.xz}
build=$root/build-lent
binaries=(weft weft_unit_tests weft_scenario_tests weft_serve_tests
          weft_kernels_bench)
names=(resnet18 resnet18_b8 mobilenet_v2 bert_encoder two_towers
       resnet18_int8 resnet18_b8_int8 mobilenet_v2_int8 bert_encoder_int8)

# The kernels' VNNI, BF16 and AVX-VNNI paths are chosen at run time by
# CPUID, so x86-64-v4 loses none of them; -march=native would build for
# this CPU's extras (AMD's, say) and could fault on the host's.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=g++ \
  -DCMAKE_BUILD_TYPE=Release -DWEFT_NATIVE_ARCH=OFF -DWEFT_BUILD_PYTHON=OFF \
  "-DCMAKE_CXX_FLAGS=-march=x86-64-v4 -mprefer-vector-width=512" >/dev/null
ninja -C "$build" weft_cli "${binaries[@]:1}" >/dev/null

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
for b in "${binaries[@]}"; do strip -o "$stage/bin/$b" "$build/bin/$b"; done
# Every library the binaries load but the C library itself (the host's is
# as new or newer); libstdc++ travels, in case the host's is older.
for b in "$stage"/bin/*; do ldd "$b"; done | awk '/=>/ {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libpthread|libdl|librt)\.so|ld-linux' |
  xargs -I{} cp -L {} "$stage/lib/"
/usr/bin/python3 "$here/thin_models.py" thin "$models" "$stage/models" \
  "${names[@]}"
mkdir -p "$(dirname "$out")"
tar -C "$stage" -cf - . | xz -T0 -6 > "$out"
size=$(stat -c %s "$out")
echo "$out: $((size / 1048576)) MiB (with the working tree, at most 64 a call)"
