#!/usr/bin/env bash
# Side-by-side CPU timings: every CPU backend of sdpa-cts (`sdpa-cts bench`) and PyTorch's
# CPU scaled_dot_product_attention (bench/peer_torch.py), on the same shapes, in one run.
# Each round times every contender once per case (--repeat runs each, interleaved, so a load
# change on a shared machine hits all of them alike); the table keeps each contender's best
# over the rounds, its median run, and the load average seen before each round.
#
#   bench/compare.sh [--threads N] [--repeat N] [--rounds N] [--build DIR]
#                    [--backends "cpu.math cpu.mem_efficient cpu.flash"] [CASE...]
#
# Defaults: 2 threads, 3 rounds of best-of-3, build/release, the docs/PERFORMANCE.md shapes.
# A case with `bwd` also gets a second table: the backward alone (best seconds, GFLOP/s at
# 2.5 x the forward's FLOPs, and its time over the forward's), from the same runs.
# PyTorch comes from .venv-bench (python3 -m venv .venv-bench &&
# .venv-bench/bin/pip install -r bench/requirements.txt: pinned).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
threads=2
repeat=3
rounds=3
build="$here/build/release"
backends="cpu.math cpu.mem_efficient cpu.flash"
cases=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --backends) backends=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "compare.sh: unknown option $1" >&2; exit 2 ;;
    *) cases+=("$1"); shift ;;
  esac
done
if [[ ${#cases[@]} -eq 0 ]]; then
  cases=(b4.hq16.l2048.s2048.dqk128.f32 b4.hq16.l2048.s2048.dqk128.bf16 b1.hq32.l1.s8192.dqk128.bf16)
fi
cts="$build/cli/sdpa-cts"
[[ -x "$cts" ]] || { echo "compare.sh: $cts not built" >&2; exit 2; }
py="$here/.venv-bench/bin/python"
[[ -x "$py" ]] || { echo "compare.sh: $py missing (see the header)" >&2; exit 2; }
raw=$(mktemp /tmp/sdpa-compare.XXXXXX)
for ((r = 1; r <= rounds; ++r)); do
  for c in "${cases[@]}"; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    for b in $backends torch; do
      if [[ $b == torch ]]; then
        out=$("$py" "$here/bench/peer_torch.py" --case "$c" --threads "$threads" --repeat "$repeat" 2>&1) || out="ERROR ${out//$'\n'/ }"
      else
        out=$("$cts" bench --backend "$b" --case "$c" --threads "$threads" --repeat "$repeat" 2>&1) || out="ERROR ${out//$'\n'/ }"
      fi
      printf '%s\t%s\t%s\t%s\n' "$c" "$b" "$load" "$out" >>"$raw"
    done
  done
done
python3 - "$raw" <<'PY'
import json, sys
rows = {}
order = []
for line in open(sys.argv[1]):
    case, backend, load, out = line.rstrip("\n").split("\t", 3)
    key = (case, backend)
    if key not in rows:
        rows[key] = {"best": None, "medians": [], "loads": [], "error": None}
        order.append(key)
    r = rows[key]
    r["loads"].append(load)
    if out.startswith("ERROR"):
        r["error"] = out[6:]
        continue
    j = json.loads(out)
    r["medians"].append(j["seconds_median"])
    if r["best"] is None or j["seconds_best"] < r["best"]["seconds_best"]:
        r["best"] = j
print("| case | backend | best s | median s | GFLOP/s | K+V GB/s | CPU s (best run) | load (1 min) |")
print("|---|---|---|---|---|---|---|---|")
for key in order:
    r = rows[key]
    j = r["best"]
    loads = "/".join(r["loads"])
    if j is None:
        print(f"| {key[0]} | {key[1]} | - | - | - | - | - | {loads} |  <!-- {r['error']} -->")
        continue
    med = sorted(r["medians"])[len(r["medians"]) // 2]
    cpu = j.get("cpu_seconds_best")
    print(f"| {key[0]} | {j['backend']} | {j['seconds_best']:.4f} | {med:.4f} | "
          f"{j['gflops_best']:.1f} | {j['kv_gbytes_per_s_best']:.1f} | "
          f"{'-' if cpu is None else f'{cpu:.4f}'} | {loads} |")
backward = [k for k in order if rows[k]["best"] and "backward_seconds_best" in rows[k]["best"]]
if backward:
    print()
    print("| case | backend | backward best s | backward GFLOP/s | backward / forward |")
    print("|---|---|---|---|---|")
    for key in backward:
        j = rows[key]["best"]
        print(f"| {key[0]} | {j['backend']} | {j['backward_seconds_best']:.4f} | "
              f"{j['backward_gflops_best']:.2f} | {j['backward_over_forward']:.1f} |")
print(f"<!-- raw: {sys.argv[1]} -->")
PY
