#!/usr/bin/env bash
# ThreadSanitizer run of the threaded kernels (docs/FUZZING.md, "Threads"): builds sdpa-cts
# with Clang and -fsanitize=thread (the `tsan` preset, LLVM's OpenMP runtime), then runs the
# smoke tier on every CPU backend and SIMD target at 3 and 4 threads in this process, with
# LLVM's Archer tool loaded so that TSan understands OpenMP's barriers and reductions. Any
# data race report fails the run (halt_on_error). `.ci/run` runs the backward cases of the ci
# tier (`--filter '\.bwd\.' --simd scalar --threads 3`: the backward is one portable code path
# for every SIMD target).
#
#   scripts/tsan-check.sh [--tier T] [--threads "3 4"] [--simd all|T] [--filter REGEX]
set -euo pipefail
cd "$(dirname "$0")/.."
tier=smoke
threads="3 4"
simd=all
filter=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --tier) tier=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --simd) simd=$2; shift 2 ;;
    --filter) filter=(--filter "$2"); shift 2 ;;
    *) echo "usage: $0 [--tier T] [--threads \"3 4\"] [--simd all|T] [--filter REGEX]" >&2; exit 2 ;;
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
  echo "== tier $tier ${filter[*]}, $t threads, every CPU backend, SIMD $simd, under ThreadSanitizer"
  build/tsan/cli/sdpa-cts run --tier "$tier" "${filter[@]}" --simd "$simd" --threads "$t" \
    --no-isolate --no-report
done
echo "tsan-check: no data race reported"
