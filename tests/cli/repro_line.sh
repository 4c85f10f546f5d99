#!/usr/bin/env bash
# Runs one case on a simulated CPU with a chosen ISA target and prints its results.jsonl, so
# that the test can check the record's repro line. Usage: repro_line.sh SDPA_CTS REPORT_DIR
set -euo pipefail
"$1" run --report "$2" --backend cpu.math --device cpu-avx2:isa=scalar \
  --case b1.hq2.l9.s17.dqk8.f32.seed1.gen=normal >/dev/null
cat "$2/results.jsonl"
