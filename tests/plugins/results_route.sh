#!/usr/bin/env bash
# The results-file route end to end: export the smoke tier's inputs, judge the unfilled file
# (every case NOT_SUPPORTED, naming the missing dataset), fill it with a correct backend's
# outputs (pass) and with a wrong one's (fail); backward cases with their dO and gradients.
# Usage: results_route.sh SDPA_CTS DIR FAULTY_PLUGIN
set -euo pipefail
cts=$1
dir=$2
rm -rf "$dir"
mkdir -p "$dir"
cd "$dir"
"$cts" cases export --tier smoke --out results.h5
"$cts" cases judge --results results.h5 --no-report --case b1.hq2.hkv2.l1.s1.dqk16.dv16.f32.seed1.gen=normal 2>&1 |
  tee unfilled.txt
grep -q "passed: 0 failed: 0 not_supported: 1 " unfilled.txt
cp results.h5 good.h5
"$cts" cases fill --results good.h5 --backend cpu.math
"$cts" cases judge --results good.h5 --contract acc=f32,p=f32 --report good-report | tee good.txt
grep -Eq "passed: [1-9][0-9]* failed: 0 .* crash: 0 timeout: 0" good.txt
grep -q '"backend":"results"' good-report/results.jsonl
cp results.h5 wrong.h5
"$cts" cases fill --results wrong.h5 --backend faulty.bottom_right_as_top_left --plugin "$3"
if "$cts" cases judge --results wrong.h5 --no-report > wrong.txt 2>&1; then
  echo "a wrong backend's outputs were judged correct"; exit 1
fi
grep -Eq "FAIL results .*causal=br.*error/tolerance" wrong.txt
grep -q "repro: sdpa-cts cases judge --results 'wrong.h5'" wrong.txt
# An implementation without LSE: with --no-lse its O is judged on the cases that ask for LSE.
"$cts" cases judge --results good.h5 --no-lse --no-report --case b2.hq4.hkv2.l33.s47.dqk64.dv32.f32.causal=br.lse.seed2.gen=normal |
  tee nolse.txt
grep -q "passed: 1 failed: 0" nolse.txt
# The ci tier includes smoke's golden set, which ci.h5 repeats: each case is exported once.
"$cts" cases export --tier ci --filter 'gen=golden$' --out golden_cases.h5 | tee export.txt
grep -Eq "^golden_cases.h5: [0-9]+ cases of ci \(inputs only" export.txt
# The backward: exported with dO, judged unfilled (NOT_SUPPORTED), filled with cpu.math's
# forward and gradients (pass, every gradient judged).
"$cts" cases export --tier ci --filter '\.bwd\.(seed5[0-2]|dbias\.seed66)\.' --out backward.h5 | tee bwd-export.txt
grep -q "dq, dk, dv for the backward cases" bwd-export.txt
"$cts" cases judge --results backward.h5 --no-report > bwd-unfilled.txt 2>&1 || true
grep -Eq "passed: 0 failed: 0 not_supported: [1-9][0-9]* " bwd-unfilled.txt
"$cts" cases fill --results backward.h5 --backend cpu.math
"$cts" cases judge --results backward.h5 --report bwd-report | tee bwd-good.txt
grep -Eq "passed: [1-9][0-9]* failed: 0 not_supported: 0 " bwd-good.txt
grep -q '"tensor_ratios":{"dk":' bwd-report/results.jsonl
# d bias (the dbias cases among them): filled and judged with the rest.
grep -q '"tensor_ratios":{"dbias":' bwd-report/results.jsonl
echo "results route: ok"
