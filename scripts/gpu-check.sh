#!/usr/bin/env bash
# The GPU check (docs/KERNELS.md, "CUDA"), prepared for a short window on a GPU machine:
# builds for the GPU present, describes it, runs the smoke and ci tiers on the cuda.*
# backends that have kernels with --device cuda, times the GPU shapes of docs/PERFORMANCE.md
# with `sdpa-cts bench`, and PyTorch's SDPA backends (flash, efficient, cuDNN) on the same
# shapes in the same run when torch is importable. Everything goes to one folder; a summary
# is printed. Meant to finish within 8 minutes on an H200; run it with a timeout that leaves
# room for a rerun.
#
#   scripts/gpu-check.sh [--out DIR] [--build DIR] [--backends B,...] [--jobs N] [--quick]
#
# --quick: the smoke tier only, and the 4k shapes. Exit code: 0 when every tier run passed.
set -uo pipefail
out=${OUT:-gpu-check}
build=build/gpu
backends=cuda.flash,cuda.mem_efficient,cuda.math
jobs=8
quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --backends) backends=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    *) echo "usage: $0 [--out DIR] [--build DIR] [--backends B,...] [--jobs N] [--quick]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
summary=$out/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
t0=$(date +%s)
elapsed() { echo $(( $(date +%s) - t0 )); }

say "== gpu-check $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || say "nvidia-smi failed (see nvidia-smi.txt)"
head -n 15 "$out/nvidia-smi.txt" >> "$summary"

say "== build ($build, CUDA architectures of this GPU)"
if ! { cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSDPA_CTS_CUDA=ON \
         -DCMAKE_CUDA_ARCHITECTURES=native -DSDPA_CTS_BUILD_TESTS=OFF &&
       cmake --build "$build" -j "$(nproc)" --target sdpa-cts; } > "$out/build.log" 2>&1; then
  tail -n 30 "$out/build.log" | tee -a "$summary"
  say "build FAILED after $(elapsed) s"
  exit 1
fi
cli=$build/cli/sdpa-cts
say "built in $(elapsed) s"

say "== device"
"$cli" explain --device cuda --case b1.hq32.l1.s8192.dqk128.bf16 2>&1 | tee "$out/device.txt" | head -n 3 | tee -a "$summary"

status=0
backend_flags=()
IFS=, read -r -a names <<<"$backends"
for b in "${names[@]}"; do backend_flags+=(--backend "$b"); done
tiers=(smoke ci)
if [ "$quick" = 1 ]; then tiers=(smoke); fi
for tier in "${tiers[@]}"; do
  say "== $tier tier on ${backends} (--device cuda), at $(elapsed) s"
  if ! "$cli" run --device cuda "${backend_flags[@]}" --tier "$tier" --jobs "$jobs" --timeout 120 \
        --report "$out/report-$tier" > "$out/run-$tier.log" 2>&1; then
    status=1
  fi
  tail -n 3 "$out/run-$tier.log" | tee -a "$summary"
done

say "== bench (docs/PERFORMANCE.md's GPU shapes), at $(elapsed) s"
shapes=(b1.hq16.l4096.s4096.dqk128.bf16 b1.hq16.l4096.s4096.dqk128.bf16.causal=tl)
if [ "$quick" = 0 ]; then
  shapes+=(b1.hq16.l16384.s16384.dqk128.bf16 b1.hq16.l16384.s16384.dqk128.bf16.causal=tl
           b1.hq32.l1.s8192.dqk128.bf16)
fi
: > "$out/bench.jsonl"
for b in "${names[@]}"; do
  for c in "${shapes[@]}"; do
    "$cli" bench --device cuda --backend "$b" --case "$c" --repeat 5 --warmup 2 \
      >> "$out/bench.jsonl" 2>> "$out/bench.err" || echo "{\"backend\":\"$b\",\"case\":\"$c\",\"error\":true}" >> "$out/bench.jsonl"
  done
done
cat "$out/bench.jsonl" | tee -a "$summary"

if python3 -c "import torch; assert torch.cuda.is_available()" 2> /dev/null; then
  say "== PyTorch's SDPA backends on the same shapes, at $(elapsed) s"
  python3 scripts/gpu_torch_sdpa.py "${shapes[@]}" > "$out/torch.jsonl" 2> "$out/torch.err" || status=1
  cat "$out/torch.jsonl" | tee -a "$summary"
else
  say "PyTorch with CUDA is not importable here: no side-by-side figures"
fi

# One archive of the reports (a device run returns a few files only).
tar -czf "$out/reports.tar.gz" -C "$out" $(cd "$out" && ls -d report-* 2>/dev/null) 2> /dev/null || true
rm -rf "$out"/report-*
say "== done in $(elapsed) s, status $status"
exit $status
