#!/usr/bin/env bash
# Compile-checks the device adapters whose compilers exist here but whose devices do not (hip
# with hipcc, sycl with icpx or acpp): each adapter and the portable core compile; nothing runs.
# Exit 77 (skipped) when none of the compilers is installed.
set -euo pipefail
SRC=$(cd "$(dirname "$0")" && pwd)
ABI=$SRC/../runner/kforge_runner/abi
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
checked=0
if command -v hipcc >/dev/null; then
  hipcc -std=c++17 -O1 --offload-arch=gfx90a -Werror=return-type -I"$SRC" -I"$ABI" \
    -x hip -c "$SRC/hip_device.cc" -o "$OUT/hip_device.o"
  echo "hip adapter: compiles with $(command -v hipcc)"
  checked=$((checked + 1))
fi
for sycl in icpx acpp; do
  if command -v "$sycl" >/dev/null; then
    flags=(-fsycl)
    [ "$sycl" = acpp ] && flags=()
    "$sycl" -std=c++17 -O1 "${flags[@]}" -I"$SRC" -I"$ABI" -c "$SRC/sycl_device.cc" \
      -o "$OUT/sycl_device.o"
    echo "sycl adapter: compiles with $(command -v "$sycl")"
    checked=$((checked + 1))
    break
  fi
done
if [ "$checked" = 0 ]; then
  echo "no hipcc, icpx or acpp here: the hip and sycl adapters are not compile-checked"
  exit 77
fi
