#!/usr/bin/env bash
# Detection power of coverage-guided fuzzing (docs/FUZZING.md, section 4): libFuzzer, with
# the `differential` target's decoding, against every mutant of the catalog, one at a time,
# until the first finding or the time budget. Each starts as `sdpa-cts fuzz --engine
# libfuzzer` does, from 64 random inputs of the seed, plus the committed corpus of the
# `differential` target, with libFuzzer's seed fixed. Prints one line per mutant and the
# median time to the first finding.
#
#   scripts/mutant-libfuzzer.sh [--seconds N] [--seed S] [--build DIR]
#
# Needs the `fuzz` preset's fuzz_mutant_differential:
#   cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_mutant_differential
set -euo pipefail
seconds=60
seed=1
build=build/fuzz
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "usage: $0 [--seconds N] [--seed S] [--build DIR]" >&2; exit 2 ;;
  esac
done
bin=$build/tests/fuzz/measure/fuzz_mutant_differential
if [ ! -x "$bin" ]; then
  echo "$bin not built: cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_mutant_differential" >&2
  exit 2
fi
# The catalog's names, as the target lists them when none is chosen.
names=$( (SDPA_CTS_MUTANT= "$bin" -runs=1 2>&1 || true) | sed -n 's/^set SDPA_CTS_MUTANT to a name of the mutant catalog: //p')
if [ -z "$names" ]; then
  echo "could not read the mutant catalog from $bin" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/seeds"
python3 - "$work/seeds" "$seed" <<'PY'
import random, sys
r = random.Random(int(sys.argv[2]))
for i in range(64):
    with open(f"{sys.argv[1]}/seed-{i}", "wb") as f:
        f.write(bytes(r.getrandbits(8) for _ in range(96)))
PY
corpus=$(dirname "$0")/../fuzz/corpus/differential
found=0
total=0
times=()
for m in $names; do
  total=$((total + 1))
  mkdir -p "$work/$m"
  start=$(date +%s.%N)
  SDPA_CTS_MUTANT=$m "$bin" -seed="$seed" -max_total_time="$seconds" -timeout=30 \
    -rss_limit_mb=0 -print_final_stats=1 -artifact_prefix="$work/$m/" "$work/$m" "$work/seeds" "$corpus" \
    > "$work/$m.log" 2>&1 || true
  end=$(date +%s.%N)
  t=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$m.log" | tail -n 1)
  if grep -q "^CONTROL" "$work/$m.log"; then
    grep "^CONTROL" "$work/$m.log"
    exit 1
  fi
  if grep -q "^FINDING: " "$work/$m.log"; then
    found=$((found + 1))
    times+=("$t")
    printf '%-28s found after %8s executions in %7.2f s: %s\n' "$m" "${execs:-?}" "$t" \
      "$(sed -n 's/^FINDING: mutant [^ ]* //p' "$work/$m.log" | head -n 1)"
  else
    printf '%-28s SURVIVED %s executions in %.2f s\n' "$m" "${execs:-?}" "$t"
  fi
done
median=$(printf '%s\n' "${times[@]:-0}" | sort -g | awk '{a[NR]=$1} END {if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2] + a[NR/2+1]) / 2}')
echo "found $found of $total mutants (libFuzzer, seed $seed, $seconds s each); median time to the first finding $median s"
