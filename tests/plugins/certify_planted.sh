#!/usr/bin/env bash
# A plugin with a planted bug does not meet a profile that requires causal bottom-right and
# per-batch lengths, for a reason in the profile's fixed part, whatever the seed
# (docs/CERTIFICATION.md, "The fixed part"). planted.br_padded (planted_plugin.c) takes the
# bottom-right offset from the padded S - L instead of each sequence's S_b - L_b;
# planted.control is the same code without the bug.
#   1. The fixed part alone (a copy of the profile with `sample: 0`): NOT MET, with FAIL
#      records, each on a case with causal bottom-right and per-batch lengths (the bug
#      touches nothing else); planted.control passes each of those cases.
#   2. The profile itself with --seed S, for each SEED: NOT MET; its fixed part is the case
#      list of 1, and the cases that failed in 1 fail again.
# A profile that does not require both features is reported as skipped.
# Usage: certify_planted.sh SDPA_CTS PLANTED_PLUGIN PROFILE_FILE WORK_DIR SEED...
set -uo pipefail
cli=$1
plugin=$2
profile=$3
work=$4
shift 4
seeds=("$@")
name=$(basename "$profile" .profile)
src=$(cd "$(dirname "$profile")/../.." && pwd)  # golden files are relative to it
rm -rf "$work" && mkdir -p "$work/fixed" || exit 1
cd "$work" || exit 1

fail() { echo "certify_planted $name: FAILED: $*"; exit 1; }
[ ${#seeds[@]} -ge 1 ] || fail "no seed given"

# The FAIL records of a bundle, checked: "<case ID> <in the fixed part: 1 or 0> <golden file
# relative to the source directory, or ->" per line.
failures() {
  python3 - "$1" << 'EOF'
import json, sys
bundle = sys.argv[1]
manifest = json.load(open(bundle + "/manifest.json"))
rows = [line.split("\t") for line in open(bundle + "/cases.txt").read().splitlines()]
fixed = set(row[0] for row in rows[: manifest["profile"]["frozen_cases"]])
golden = dict((row[0], row[1]) for row in rows)
for line in open(bundle + "/results.jsonl"):
    r = json.loads(line)
    if r["status"] in ("FAIL", "CRASH", "TIMEOUT"):
        # The planted bug changes causal bottom-right with per-batch lengths, nothing else.
        if r["status"] != "FAIL" or not {"causal=br", "varlen=padded"} <= set(r["features"]):
            sys.exit("%s %s: not the planted bug: %s" % (r["status"], r["case_id"], r["message"]))
        print(r["case_id"], 1 if r["case_id"] in fixed else 0, golden[r["case_id"]])
EOF
}

# 1. The fixed part alone.
sed -E 's/^sample:[[:space:]]*[0-9]+/sample: 0/' "$profile" > "fixed/$name.profile"
grep -q '^sample: 0' "fixed/$name.profile" || fail "no sample line to empty in $profile"
"$cli" certify --plugin "$plugin" --backend planted.br_padded --profile "fixed/$name.profile" \
  --jobs 2 --out fixed_only > fixed_only.log 2>&1
rc=$?
require=$(python3 -c 'import json, sys; print(" ".join(json.load(open(sys.argv[1]))["profile"]["require"]))' \
  fixed_only/manifest.json) || fail "no bundle: $(tail -5 fixed_only.log)"
for tag in causal=br varlen=padded; do
  case " $require " in
    *" $tag "*) ;;
    *) echo "certify_planted $name: skipped (requires: $require)"; exit 0 ;;
  esac
done
[ "$rc" = 1 ] || fail "fixed part only: exit code $rc, expected 1 (NOT MET): $(tail -5 fixed_only.log)"
grep -q "NOT MET" fixed_only.log || fail "fixed part only: no NOT MET in $(tail -5 fixed_only.log)"
failures fixed_only > fixed_failures.txt 2>&1 || fail "fixed part only: $(cat fixed_failures.txt)"
[ -s fixed_failures.txt ] || fail "fixed part only: no FAIL record: the fixed part misses the bug"
awk '$2 != 1 { exit 1 }' fixed_failures.txt || fail "a sampled case in a run without samples"
cut -d' ' -f1 fixed_failures.txt | sort > fixed_ids.txt
# The same cases pass without the bug: the failures are the bug's. One run per golden file.
for file in $(cut -d' ' -f3 fixed_failures.txt | sort -u); do
  cases=()
  golden=()
  [ "$file" = - ] || golden=(--golden "$src/$file")
  while read -r id _ f; do
    [ "$f" = "$file" ] && cases+=(--case "$id")
  done < <(sort -u fixed_failures.txt)
  "$cli" run --plugin "$plugin" --backend planted.control "${golden[@]}" "${cases[@]}" --jobs 2 \
    --no-report > control.log 2>&1
  rc=$?
  [ "$rc" = 0 ] && grep -Eq "passed: $((${#cases[@]} / 2)) failed: 0 " control.log ||
    fail "planted.control does not pass the failing cases ($file): $(tail -5 control.log)"
done

# 2. The profile with its sampled part, for each seed.
for seed in "${seeds[@]}"; do
  "$cli" certify --plugin "$plugin" --backend planted.br_padded --profile "$profile" \
    --seed "$seed" --jobs 2 --out "seed$seed" > "seed$seed.log" 2>&1
  rc=$?
  [ "$rc" = 1 ] || fail "--seed $seed: exit code $rc, expected 1 (NOT MET): $(tail -5 "seed$seed.log")"
  n=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["profile"]["frozen_cases"])' \
    "seed$seed/manifest.json")
  cmp -s fixed_only/cases.txt <(head -n "$n" "seed$seed/cases.txt") ||
    fail "--seed $seed: the fixed part is not the case list of the run without samples"
  failures "seed$seed" > "seed${seed}_failures.txt" 2>&1 || fail "--seed $seed: $(cat "seed${seed}_failures.txt")"
  awk '$2 == 1 { print $1 }' "seed${seed}_failures.txt" | sort > "seed${seed}_ids.txt"
  cmp -s fixed_ids.txt "seed${seed}_ids.txt" ||
    fail "--seed $seed: other fixed cases fail: $(diff fixed_ids.txt "seed${seed}_ids.txt" | head)"
  echo "certify_planted $name: --seed $seed: NOT MET, $(wc -l < "seed${seed}_ids.txt") fixed and" \
    "$(awk '$2 == 0' "seed${seed}_failures.txt" | wc -l) sampled cases FAIL"
done
echo "certify_planted $name: NOT MET in the fixed part ($(wc -l < fixed_ids.txt) FAIL:" \
  "$(head -1 fixed_ids.txt) ...), whatever the seed (${seeds[*]}); planted.control passes them"
