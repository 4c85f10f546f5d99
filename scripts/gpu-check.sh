#!/usr/bin/env bash
# The GPU check (docs/KERNELS.md, "The GPU check"), prepared for a short window on a GPU
# machine, the first checks a GPU should get, in this order:
#   1. build for the GPU present and describe it;
#   2. the fragment probe (`sdpa-cts probe --device cuda`): one warp's ldmatrix,
#      ldmatrix.trans and mma.sync (f16, bf16) on exact small integers, every lane's registers
#      against the emulator's bit for bit, and which tensor-core rounding model the GPU follows;
#   3. compute-sanitizer's memcheck, racecheck, synccheck and initcheck on a few small cases of
#      each fused kernel;
#   4. the tiers on the cuda.* backends with --device cuda, the ci tier twice (same output
#      bytes?), and the ci tier of the fused kernels on the host emulator with the GPU's
#      measured mma rounding, case by case beside the GPU's (scripts/gpu_side_by_side.py);
#   5. the benchmarks of docs/PERFORMANCE.md's GPU shapes with `sdpa-cts bench`, beside
#      PyTorch's SDPA backends (flash, efficient, cuDNN) in the same run when torch is
#      importable.
# Everything goes to one folder (commit it as the evidence); a summary is printed. Meant to
# finish within 8 minutes on an H200; run it with a timeout that leaves room for a rerun.
#
#   scripts/gpu-check.sh [--out DIR] [--build DIR] [--prebuilt] [--no-sanitize]
#                        [--backends B,...] [--jobs N] [--quick]
#
# --quick: the probe, the smoke tier only, and the 4k shapes. Exit code: 0 when the probe
# matched, the sanitizers found nothing and every tier run passed with no GPU-only failure or
# changed bytes.
# --prebuilt: use the sdpa-cts already built in --build DIR (for a GPU machine that lacks the
# build's Debian packages: build here with scripts/gpu-prebuild.sh, carry DIR). Libraries the
# binary cannot find are looked up in DIR/runtime-libs, then in the CUDA toolkit and the
# Python environment's NVIDIA wheels (cuBLAS).
set -uo pipefail
out=${OUT:-gpu-check}
build=build/gpu
backends=cuda.flash,cuda.mem_efficient,cuda.math
jobs=8
quick=0
prebuilt=0
sanitize=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --backends) backends=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --prebuilt) prebuilt=1; shift ;;
    --no-sanitize) sanitize=0; shift ;;
    --sanitize) sanitize=1; shift ;;
    *) echo "usage: $0 [--out DIR] [--build DIR] [--prebuilt] [--no-sanitize] [--backends B,...] [--jobs N] [--quick]" >&2; exit 2 ;;
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

if [ "$prebuilt" = 0 ]; then
  say "== build ($build, CUDA architectures of this GPU)"
  if ! { cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSDPA_CTS_CUDA=ON \
           -DCMAKE_CUDA_ARCHITECTURES=native -DSDPA_CTS_BUILD_TESTS=OFF &&
         cmake --build "$build" -j "$(nproc)" --target sdpa-cts; } > "$out/build.log" 2>&1; then
    tail -n 30 "$out/build.log" | tee -a "$summary"
    say "build FAILED after $(elapsed) s"
    exit 1
  fi
fi
cli=$build/cli/sdpa-cts
if [ "$prebuilt" = 1 ]; then
  [ -x "$cli" ] || { say "--prebuilt: no $cli (scripts/gpu-prebuild.sh makes it)"; exit 1; }
  if [ -f "$build/runtime-libs.tar.xz" ] && [ ! -d "$build/runtime-libs" ]; then
    tar -xJf "$build/runtime-libs.tar.xz" -C "$build"
  fi
  # The tiers and golden sets of this checkout, not of the tree the binary was built in.
  export SDPA_CTS_DATA_DIR=$PWD
fi
# Libraries the binary does not find on this machine: the carried ones first, then cuBLAS
# from the CUDA toolkit or from the NVIDIA wheels of the Python environment.
if ldd "$cli" 2>/dev/null | grep -q "not found"; then
  export LD_LIBRARY_PATH=$(cd "$build" && pwd)/runtime-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  for lib in $(ldd "$cli" | awk '/not found/ {print $1}'); do
    hit=$(find /usr/local/cuda*/ /opt /usr/lib /usr/local/lib -name "$lib" 2>/dev/null | head -n 1)
    if [ -n "$hit" ]; then LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$hit"); fi
  done
  say "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
fi
ldd "$cli" > "$out/ldd.txt" 2>&1
if grep -q "not found" "$out/ldd.txt"; then
  grep "not found" "$out/ldd.txt" | tee -a "$summary"
  say "sdpa-cts cannot load on this machine"
  exit 1
fi
say "sdpa-cts ready at $(elapsed) s"

say "== device"
"$cli" explain --device cuda --case b1.hq32.l1.s8192.dqk128.bf16 2>&1 | tee "$out/device.txt" | head -n 3 | tee -a "$summary"

status=0
say "== fragment probe: ldmatrix and mma.sync on the GPU against the emulator, at $(elapsed) s"
if ! "$cli" probe --device cuda --json "$out/probe.json" > "$out/probe.txt" 2>&1; then
  status=1
fi
tee -a "$summary" < "$out/probe.txt"

if [ "$sanitize" = 1 ]; then
  say "== compute-sanitizer on small cases, at $(elapsed) s"
  # Tile edges, causal, split-KV decode, GQA with packed rows, dropout (f16 for cuda.flash;
  # mem_efficient takes the same IDs).
  san_cases=(b1.hq2.l17.s33.dqk64.f16.seed1.gen=normal
             b2.hq4.hkv2.l33.s47.dqk64.bf16.causal=br.lse.seed2.gen=normal
             b1.hq1.l1.s600.dqk128.bf16.seed10.gen=normal
             b2.hq2.l20.s30.dqk16.f16.qlen=20_5.kvlen=30_7.packed.seed5.gen=normal
             b1.hq2.l32.s32.dqk32.f16.p0.25.dseed9.seed6.gen=normal)
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
  [ -n "$sanitizer" ] || say "compute-sanitizer not found"
  case_flags=()
  for c in "${san_cases[@]}"; do case_flags+=(--case "$c"); done
  for tool in memcheck racecheck synccheck initcheck; do
    for b in cuda.flash cuda.mem_efficient; do
      log=$out/sanitize-$tool-$b.log
      timeout 45 "${sanitizer:-compute-sanitizer}" --tool "$tool" --target-processes all --error-exitcode 99 \
        "$cli" run --device cuda --backend "$b" "${case_flags[@]}" --jobs 1 --no-report > "$log" 2>&1
      rc=$?
      [ "$rc" = 0 ] || status=1
      say "$tool $b: rc $rc, $(grep -E -m1 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" || echo 'no summary')"
    done
  done
fi

backend_flags=()
IFS=, read -r -a names <<<"$backends"
for b in "${names[@]}"; do backend_flags+=(--backend "$b"); done
tiers=(smoke ci ci-again)
if [ "$quick" = 1 ]; then tiers=(smoke); fi
for tier in "${tiers[@]}"; do
  say "== ${tier} tier on ${backends} (--device cuda), at $(elapsed) s"
  if ! "$cli" run --device cuda "${backend_flags[@]}" --tier "${tier%-again}" --jobs "$jobs" \
        --timeout 120 --report "$out/report-$tier" > "$out/run-$tier.log" 2>&1; then
    status=1
  fi
  tail -n 3 "$out/run-$tier.log" | tee -a "$summary"
done
if [ "$quick" = 0 ]; then
  # The same tier on the emulator, with the GPU's measured tensor-core rounding when one is
  # published for its compute capability (else the ideal one), then case by case.
  sm=$(sed -n 's/.*CUDA sm\([0-9]*\).*/\1/p' "$out/device.txt" | head -n 1)
  emu="sm${sm}:emulate=1"
  "$cli" probe --device "$emu:mma=measured" > /dev/null 2>&1 && emu="$emu:mma=measured"
  say "== ci tier of the fused kernels on the emulator ($emu), at $(elapsed) s"
  "$cli" run --device "$emu" --backend cuda.flash --backend cuda.mem_efficient --tier ci \
    --jobs "$(nproc)" --report "$out/report-ci-emulated" > "$out/run-ci-emulated.log" 2>&1
  tail -n 2 "$out/run-ci-emulated.log" | tee -a "$summary"
  if ! python3 scripts/gpu_side_by_side.py "$out/report-ci" "$out/report-ci-again" \
        "$out/report-ci-emulated" "$out/side-by-side" >> "$summary"; then
    status=1
  fi
  cat "$out/side-by-side.md"
fi

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
