#!/usr/bin/env bash
# @file gpu_bundle.sh
# Builds, on a machine without a GPU, what bench/gpu_check.sh runs, and packs it for a GPU
# machine that has no package registry: a Release build for one architecture (-lineinfo
# -Xptxas=-v, MPI off), the gpu test programs, multiverse and mv_bench_network stripped of
# host symbols, the build log (gpu_check.sh reads registers and spills from it as
# ptxas.log) and the shared libraries they need that a CUDA image may lack (yaml-cpp,
# protobuf, libgomp, cudart). About 50 MB; the GPU machine then runs
#   LD_LIBRARY_PATH=$PWD/BUNDLE/lib bash bench/gpu_check.sh --build-dir BUNDLE/build --steps query,tests,sweep,bench
# Usage: bench/gpu_bundle.sh [--arch SM] [--build-dir DIR] [--out BUNDLE]
#   --arch       CUDA architecture, as CMAKE_CUDA_ARCHITECTURES takes it (default 90: H100, H200)
#   --build-dir  the build tree (default build/gpu-bundle); an existing one is rebuilt
#   --out        the bundle folder, replaced (default gpurun, which .gitignore lists)
set -euo pipefail
cd "$(dirname "$0")/.."
arch=90
build=build/gpu-bundle
out=gpurun
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "gpu_bundle: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case "$arch" in ''|*[!0-9a-z]*) echo "gpu_bundle: --arch must look like 90 or 90a" >&2; exit 2 ;; esac
case "$out" in ''|/|.|..|./) echo "gpu_bundle: --out must name a folder of its own" >&2; exit 2 ;; esac
command -v nvcc > /dev/null || { echo "gpu_bundle: nvcc not found: the CUDA toolkit is needed" >&2; exit 2; }
bash scripts/install-deps.sh
# The commit the programs are built from ("+dirty" with local changes), taken before the
# build: the GPU machine's copy of the tree may have no history, and a bundle can outlive
# the commit it was built at.
commit="$(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo +dirty)"
programs=(tests/kernels/mv_test_kernels_cuda tests/kernels/mv_test_cuda_network tests/kernels/mv_test_cuda_flow
          tests/kernels/mv_test_cuda_training
          experiments/multiverse bench/mv_bench_network)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMV_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" \
  "-DCMAKE_CUDA_FLAGS=-lineinfo -Xptxas=-v" -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON > /dev/null
targets=()
for p in "${programs[@]}"; do targets+=(--target "$(basename "$p")"); done
if ! cmake --build "$build" --parallel "$(nproc)" "${targets[@]}" > "$build/bundle-build.log" 2>&1; then
  grep -E "error" "$build/bundle-build.log" | head -20 >&2
  echo "gpu_bundle: the build failed (see $build/bundle-build.log)" >&2
  exit 1
fi
rm -rf "$out"
mkdir -p "$out/lib"
for p in "${programs[@]}"; do
  mkdir -p "$out/build/$(dirname "$p")"
  strip -o "$out/build/$p" "$build/$p"
done
cp "$build/bundle-build.log" "$out/build/ptxas.log"
echo "$commit" > "$out/COMMIT"
for lib in $(ldd "$build/experiments/multiverse" "$build/tests/kernels/mv_test_cuda_training" |
             awk '/=> \// {print $3}' | grep -E 'yaml-cpp|protobuf|gomp|cudart' | sort -u); do
  cp -L "$lib" "$out/lib/"
done
echo "gpu_bundle: $(du -sh "$out" | cut -f1) in $out (built for sm_$arch); on the GPU machine:"
libs=$out/lib
[[ "$out" == /* ]] || libs="\$PWD/$out/lib"
echo "  LD_LIBRARY_PATH=$libs bash bench/gpu_check.sh --build-dir $out/build --steps query,tests,sweep,bench"
echo "  or, every check of a first call: bash bench/gpu_session.sh --bundle $out"
