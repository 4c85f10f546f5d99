#!/usr/bin/env bash
# Builds sdpa-cts with CUDA on this (GPU-less) machine for a GPU machine that lacks the build's
# Debian packages (docs/KERNELS.md, "Running on a GPU machine"): build/gpu holds the binary,
# and build/gpu/runtime-libs.tar.xz the shared libraries it loads, except the C runtime, libstdc++
# and the CUDA libraries, which the GPU machine's own system and toolkit provide (glibc is
# backward compatible, so libraries from an older Debian load on a newer distribution).
# Carry those two files to the GPU machine and run scripts/gpu-check.sh --prebuilt there.
#
#   scripts/gpu-prebuild.sh [--arch 90] [--build DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
arch=90
build=build/gpu
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "usage: $0 [--arch 90] [--build DIR]" >&2; exit 2 ;;
  esac
done
command -v nvcc > /dev/null || { echo "gpu-prebuild: nvcc is not on PATH" >&2; exit 1; }
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSDPA_CTS_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$arch" -DSDPA_CTS_BUILD_TESTS=OFF > /dev/null
cmake --build "$build" -j "$(nproc)" --target sdpa-cts
# Only what the GPU machine needs travels: the binary and its libraries (the object files
# stay behind, or the carried folder outgrows what a device call takes).
rm -rf "$build/runtime-libs"
mkdir -p "$build/runtime-libs"
system='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt)\.'
ldd "$build/cli/sdpa-cts" | awk '$3 ~ /^\// {print $1, $3}' | while read -r name path; do
  if ! [[ $name =~ $system ]]; then cp -L "$path" "$build/runtime-libs/$name"; fi
done
# One compressed archive (about 12 MB against 58 MB): a device call carries 64 MiB at most.
tar -cJf "$build/runtime-libs.tar.xz" -C "$build" runtime-libs
du -sh "$build/cli/sdpa-cts" "$build/runtime-libs.tar.xz"
echo "carry: $build/cli/sdpa-cts $build/runtime-libs.tar.xz; run: scripts/gpu-check.sh --prebuilt --build $build"
