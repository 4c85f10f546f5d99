#!/usr/bin/env bash
# A tier run whole and in three shards gives the same reports once the shards are merged
# (docs/SCALE-OUT.md): runs the smoke tier unsharded into A, then as shards 0/3, 1/3 and 2/3
# into B0, B1, B2 (shard 1 through the TEST_* environment of a test runner, whose status file
# must get touched), merges them into M with `report merge`, and compares every report file
# of M with A's after strip_timing.py has removed the timings. Prints the differences and
# fails on any. Usage: shard_merge.sh SDPA_CTS WORK_DIR
set -uo pipefail
cli=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work" || exit 1
cd "$work" || exit 1

fail() { echo "shard_merge: FAILED: $*"; exit 1; }

"$cli" run --tier smoke --jobs 2 --report A > A.log 2>&1
whole_rc=$?
[ "$whole_rc" -le 1 ] || fail "the unsharded run exited $whole_rc: $(cat A.log)"
"$cli" run --tier smoke --jobs 2 --shard 0/3 --report B0 > B0.log 2>&1
rc=$?; [ "$rc" -le 1 ] || fail "shard 0/3 exited $rc: $(cat B0.log)"
TEST_TOTAL_SHARDS=3 TEST_SHARD_INDEX=1 TEST_SHARD_STATUS_FILE="$work/status" \
  "$cli" run --tier smoke --jobs 2 --report B1 > B1.log 2>&1
rc=$?; [ "$rc" -le 1 ] || fail "shard 1/3 (TEST_SHARD_INDEX=1) exited $rc: $(cat B1.log)"
[ -e "$work/status" ] || fail "TEST_SHARD_STATUS_FILE was not touched"
grep -q "shard 1/3 of" B1.log || fail "the run did not take its shard from TEST_*: $(cat B1.log)"
"$cli" run --tier smoke --jobs 2 --shard 2/3 --report B2 > B2.log 2>&1
rc=$?; [ "$rc" -le 1 ] || fail "shard 2/3 exited $rc: $(cat B2.log)"
for s in A B0 B1 B2; do echo "$s: $(head -n 1 $s.log)"; done

"$cli" report merge B2 B0 B1 --out M > M.log 2>&1
rc=$?
cat M.log
[ "$rc" = "$whole_rc" ] || fail "report merge exited $rc, the unsharded run $whole_rc"

same=1
for f in results.jsonl summary.json junit.xml summary.md report.html; do
  python3 "$here/strip_timing.py" "A/$f" > "A.$f.stripped" || fail "cannot read A/$f"
  python3 "$here/strip_timing.py" "M/$f" > "M.$f.stripped" || fail "cannot read M/$f"
  if ! cmp -s "A.$f.stripped" "M.$f.stripped"; then
    echo "differs: $f (first 40 lines of the diff, without timings)"
    diff -u "A.$f.stripped" "M.$f.stripped" | head -n 40
    same=0
  fi
done
[ "$same" = 1 ] || fail "the merged reports differ from the unsharded run's (above)"
echo "merged reports equal the unsharded run's apart from timings"
