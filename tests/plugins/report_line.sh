#!/usr/bin/env bash
# Runs `sdpa-cts run --report DIR ARGS...` and prints its results.jsonl (one record per line),
# for tests of what a record says. Usage: report_line.sh SDPA_CTS DIR ARGS...
set -euo pipefail
cts=$1
dir=$2
shift 2
"$cts" run --report "$dir" "$@" >/dev/null || true
cat "$dir/results.jsonl"
