#!/usr/bin/env bash
# @file check_no_fma.sh
# Fails when device code contains a fused multiply-add: CPU and GPU agree bit for bit only
# while nvcc contracts nothing (--fmad=false, kernels/cuda/CMakeLists.txt). Reads PTX files,
# where a contraction shows as fma.rn.f32 / fma.rn.f64: those nvcc keeps while it compiles
# systems/cuda (the training and network megakernels the backend runs; a folder stands for
# every .ptx file in it).
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: check_no_fma.sh FILE.ptx|FOLDER... (CMake lists separated by ';' too)"; exit 2; }
files=()
for arg in "$@"; do
  IFS=';' read -r -a parts <<< "$arg"
  for part in "${parts[@]}"; do
    if [ -d "$part" ]; then
      found=("$part"/*.ptx)
      [ -e "${found[0]}" ] || { echo "FAIL: no .ptx file in $part"; exit 1; }
      files+=("${found[@]}")
    else
      files+=("$part")
    fi
  done
done
for ptx in "${files[@]}"; do
  grep -q "^\.version" "$ptx" || { echo "FAIL: $ptx is not PTX"; exit 1; }
  entries=$(grep -c "\.entry" "$ptx" || true)
  [ "$entries" -gt 0 ] || { echo "FAIL: $ptx has no kernel entry"; exit 1; }
  count=$(grep -c "fma\.rn\.f" "$ptx" || true)
  if [ "$count" -gt 0 ]; then
    echo "FAIL: $count fused multiply-adds in $ptx (is --fmad=false gone?):"
    grep -m5 "fma\.rn\.f" "$ptx"
    exit 1
  fi
  echo "$(basename "$ptx"): $entries kernel entries, no fused multiply-add"
done
