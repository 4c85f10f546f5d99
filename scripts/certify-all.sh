#!/usr/bin/env bash
# Certify backends against profiles and tabulate the verdicts (docs/CERTIFICATION.md,
# "Verdicts of the backends in this repository").
#
#   scripts/certify-all.sh [--out DIR] [--jobs N] [--profiles "P ..."] [--backends "B ..."]
#                          [--plugin FILE]... [--device D]
#
# For each backend and profile: `sdpa-cts certify --backend B --profile P --out DIR/B/P`,
# then `sdpa-cts bundle verify DIR/B/P`. Writes DIR/verdicts.md: one row per backend and
# profile with the verdict, required cases passed, records outside the profile's features,
# the run time and the first reasons of an unmet profile. Default: the built-in CPU backends
# against every built-in profile. Exit code: 0 when every bundle verified (whatever the
# verdicts), 1 when one did not, 2 on bad usage.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cts=${SDPA_CTS:-$root/build/release/cli/sdpa-cts}
out=build/certification
jobs=2
profiles="inference-core training full long-context"
backends="cpu.math cpu.flash cpu.mem_efficient"
device=cpu
plugins=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --profiles) profiles=$2; shift 2 ;;
    --backends) backends=$2; shift 2 ;;
    --plugin) plugins+=(--plugin "$2"); shift 2 ;;
    --device) device=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "certify-all.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -x $cts ]] || { echo "certify-all.sh: $cts not built" >&2; exit 2; }
mkdir -p "$out"
table="$out/verdicts.md"
{
  echo "| backend | profile | verdict | required passed | outside (failures) | seconds | first reasons |"
  echo "|---|---|---|---|---|---|---|"
} >"$table"
status=0
for b in $backends; do
  for p in $profiles; do
    dir="$out/$b/$p"
    rm -rf "$dir"
    echo "== certify $b $p" >&2
    "$cts" certify --backend "$b" --profile "$p" --device "$device" --jobs "$jobs" \
      "${plugins[@]}" --out "$dir" >"$out/$b.$p.log" 2>&1 || true
    if ! "$cts" bundle verify "$dir" >"$out/$b.$p.verify.log" 2>&1; then
      echo "certify-all.sh: bundle $dir did not verify (see $out/$b.$p.verify.log)" >&2
      status=1
    fi
    python3 - "$dir/manifest.json" "$b" "$p" >>"$table" <<'PY'
import collections, json, sys
m = json.load(open(sys.argv[1]))
v = m["verdict"]
# Reasons grouped by status and why (the case IDs differ), most frequent first.
groups = collections.Counter()
for r in v["reasons"]:
    status, rest = r.split(" ", 1)
    why = rest.split(": ", 1)[1] if ": " in rest else rest
    why = why.replace("declines a required feature: ", "").replace("only expected to fail: ", "")
    groups[f"{status}: {why[:100]}"] += 1
reasons = "; ".join(f"{n} x {g}" for g, n in groups.most_common(3))
if len(groups) > 3:
    reasons += f"; ... ({len(groups)} kinds)"
print(f"| {sys.argv[2]} | {sys.argv[3]} | {'MET' if v['met'] else 'NOT MET'} | "
      f"{v['required_passed']}/{v['required']} | {v['outside']} ({v['outside_failures']}) | "
      f"{m['run']['seconds']:.0f} | {reasons.replace('|', '/')} |")
PY
    tail -1 "$table" >&2
  done
done
echo "verdicts: $table" >&2
exit $status
