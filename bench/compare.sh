#!/usr/bin/env bash
# Side-by-side CPU timings: every CPU backend of sdpa-cts (`sdpa-cts bench`) and PyTorch's
# CPU scaled_dot_product_attention (bench/peer_torch.py), on the same shapes, in one run,
# best of N. Prints the load average before each case (the machine may be shared), one
# Markdown table row per measurement, and keeps the raw JSON lines.
#
#   bench/compare.sh [--threads N] [--repeat N] [--build DIR] [--backends "cpu.math ..."] [CASE...]
#
# Defaults: 2 threads, best of 5, build/release, the docs/PERFORMANCE.md shapes. PyTorch is
# taken from .venv-bench (python3 -m venv .venv-bench && .venv-bench/bin/pip install torch).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
threads=2
repeat=5
build="$here/build/release"
backends="cpu.math cpu.mem_efficient cpu.flash"
cases=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --backends) backends=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
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
raw=$(mktemp)
row() {  # one Markdown row from a JSON line
  python3 -c 'import json,sys
j=json.loads(sys.argv[1])
print("| %s | %s | %d | %.4f | %.4f | %.1f | %.1f |" % (j["case"].split(".seed")[0], j["backend"], j["threads"],
      j["seconds_best"], j["seconds_median"], j["gflops_best"], j["kv_gbytes_per_s_best"]))' "$1"
}
echo "| case | backend | threads | best s | median s | GFLOP/s (best) | K+V GB/s (best) |"
echo "|---|---|---|---|---|---|---|"
for c in "${cases[@]}"; do
  echo "<!-- load before $c: $(cut -d' ' -f1-3 /proc/loadavg) -->"
  for b in $backends; do
    if out=$("$cts" bench --backend "$b" --case "$c" --threads "$threads" --repeat "$repeat" 2>&1); then
      echo "$out" >>"$raw"
      row "$out"
    else
      echo "| $c | $b | $threads | - | - | - | - |  <!-- ${out//$'\n'/ } -->"
    fi
  done
  if out=$("$py" "$here/bench/peer_torch.py" --case "$c" --threads "$threads" --repeat "$repeat" 2>&1); then
    echo "$out" >>"$raw"
    row "$out"
  else
    echo "| $c | torch | $threads | - | - | - | - |  <!-- ${out//$'\n'/ } -->"
  fi
done
echo "<!-- raw JSON lines: $raw -->"
