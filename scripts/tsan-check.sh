#!/usr/bin/env bash
# ThreadSanitizer run of the threaded kernels (docs/FUZZING.md, "Threads"): builds sdpa-cts
# with Clang and -fsanitize=thread (the `tsan` preset, LLVM's OpenMP runtime), then runs the
# smoke tier on every CPU backend and SIMD target at 3 and 4 threads in this process, with
# LLVM's Archer tool loaded so that TSan understands OpenMP's barriers and reductions. Any
# data race report fails the run (halt_on_error).
#
#   scripts/tsan-check.sh [--tier T] [--threads "3 4"]
set -euo pipefail
cd "$(dirname "$0")/.."
tier=smoke
threads="3 4"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --tier) tier=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) echo "usage: $0 [--tier T] [--threads \"3 4\"]" >&2; exit 2 ;;
  esac
done
cmake --preset tsan > /dev/null
cmake --build --preset tsan -j2 --target sdpa-cts
archer="$(dirname "$(readlink -f "$(command -v clang)")")/../lib/libarcher.so"
if [[ ! -f "$archer" ]]; then
  echo "tsan-check: LLVM's Archer tool not found at $archer (package libomp-dev)" >&2
  exit 2
fi
export OMP_TOOL_LIBRARIES="$archer"
# ignore_noninstrumented_modules: the OpenMP runtime itself is not instrumented (Archer asks
# for it, else its internal hand-offs are reported as races).
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ignore_noninstrumented_modules=1"
for t in $threads; do
  echo "== tier $tier, $t threads, every CPU backend and SIMD target, under ThreadSanitizer"
  build/tsan/cli/sdpa-cts run --tier "$tier" --simd all --threads "$t" --no-isolate --no-report
done
echo "tsan-check: no data race reported"
