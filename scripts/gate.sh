#!/usr/bin/env bash
# The gate: the conformance runs whose exit codes decide whether CI passes a change. .ci/run
# runs this script, and so does the source-mutant driver (tests/source_mutants/run.py), so a
# mutant counts as killed exactly when CI would fail it.
#   scripts/gate.sh BUILD_DIR [REPORT_DIR]   (no REPORT_DIR: the reports go to a temporary
#                                             folder, removed at the end)
# GATE_STEPS (default "ci pairs emulated") orders the steps; the gate fails when any fails, so
# the order changes only how soon a failing gate stops (the driver puts a mutant's likely step
# first). Every step runs unless one fails first. Pair coverage is checked last, from the
# results of the ci and pairs runs (their SIMD targets and thread counts as they ran).
set -euo pipefail
cts="$1/cli/sdpa-cts"
reports="${2:-}"
if [ -z "$reports" ]; then
  reports="$(mktemp -d)"
  trap 'rm -rf "$reports"' EXIT
fi
steps="${GATE_STEPS:-ci pairs emulated}"
for s in ci pairs emulated; do
  case " $steps " in *" $s "*) ;; *) echo "gate.sh: GATE_STEPS must name every step (ci pairs emulated), got '$steps'" >&2; exit 2 ;; esac
done

for step in $steps; do
  case "$step" in
    ci)
      echo "== the gate: ci tier on every CPU backend and every SIMD target this machine has"
      "$cts" run --tier ci --simd all --jobs 2 --report "$reports/report-ci" ;;
    pairs)
      echo "== the gate at one thread: the pairs tier (the ci tier includes it), for pair coverage"
      "$cts" run --tier pairs --simd all --threads 1 --jobs 2 --report "$reports/report-pairs" ;;
    emulated)
      echo "== the fused CUDA kernels' code on the host emulator (docs/KERNELS.md, \"The emulator\"): the ci tier"
      "$cts" run --device sm80:emulate=1:mma=measured --backend cuda.flash --backend cuda.mem_efficient \
        --tier ci --jobs 2 --report "$reports/report-ci-emulated-sm80" ;;
    *) echo "gate.sh: unknown step '$step' in GATE_STEPS (known: ci pairs emulated)" >&2; exit 2 ;;
  esac
done

echo "== pair coverage of the ci and pairs runs, read from their results"
"$cts" pairs --results "$reports/report-ci" --results "$reports/report-pairs"
