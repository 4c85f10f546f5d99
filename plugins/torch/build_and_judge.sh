#!/usr/bin/env bash
# Judge PyTorch's CPU scaled_dot_product_attention with sdpa-cts, through the plugin in this
# folder (docs/PLUGINS.md, "PyTorch's CPU SDPA as a plugin"). Not part of CI: the pinned wheel
# (bench/requirements.txt, torch==2.15.0 with its CUDA dependencies) makes a virtual
# environment of about 5.4 GB.
#
#   plugins/torch/build_and_judge.sh [--venv DIR] [--report DIR] [--jobs N] [--sample N]
#                                    [--seed S] [--no-install]
#
# 1. creates the virtual environment (default .venv-torch) and installs bench/requirements.txt
#    into it (pip does nothing when it is already satisfied; --no-install skips pip);
# 2. builds the plugin, a standalone CMake project, into build/torch-plugin against the
#    wheel's TorchConfig.cmake (its RUNPATH points at the wheel's torch/lib: sdpa-cts's
#    worker processes dlopen it without LD_LIBRARY_PATH);
# 3. builds sdpa-cts if build/release has none (only that target, -j2);
# 4. runs, each with its reports under the report folder (default build/torch-report):
#      ci/              the ci tier on the three backends (torch.sdpa, torch.flash_cpu,
#                       torch.math), backward cases included
#      sample/          300 sampled cases, seed 7, on the three backends
#      ci-without-lse/  the public op (torch.sdpa) and the math path (torch.math) on the ci
#                       tier's generated cases that ask for the LSE, with the LSE request
#                       taken out of the ID (they cannot return the LSE, so they decline
#                       them in ci/; the backward cases among them are judged here)
#      nan-rows/        the public op on eight rows of NaN logits around the vector width
#    and writes versions.txt (PyTorch, its CPU capability, sdpa-cts, date, host), the status
#    counts per run and backend, and deviations.md (every record that is neither PASS nor
#    NOT_SUPPORTED, grouped, each with its repro line).
# Exit code: 0 when every run passed, 1 when a run reported FAIL, CRASH or TIMEOUT (the
# deviations docs/PLUGINS.md lists), 2 when something could not be built or run.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
venv=.venv-torch
report=build/torch-report
jobs=2
sample=300
seed=7
install=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --venv) venv=$2; shift 2 ;;
    --report) report=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --sample) sample=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --no-install) install=0; shift ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "build_and_judge.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
fail() { echo "build_and_judge.sh: $*" >&2; exit 2; }

# 1. the virtual environment
py="$venv/bin/python"
if [[ ! -x "$py" ]]; then
  python3 -m venv "$venv" || fail "python3 -m venv $venv failed"
fi
if [[ $install == 1 ]]; then
  "$venv/bin/pip" install --disable-pip-version-check -q -r bench/requirements.txt ||
    fail "pip install -r bench/requirements.txt failed"
fi
torch_prefix=$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)') ||
  fail "torch does not import in $venv"

# 2. the plugin
cmake -S plugins/torch -B build/torch-plugin -DCMAKE_PREFIX_PATH="$torch_prefix" \
  -DSDPA_CTS_INCLUDE_DIR="$root/include" >build/torch-plugin.configure.log 2>&1 ||
  { cat build/torch-plugin.configure.log >&2; fail "configuring plugins/torch failed"; }
cmake --build build/torch-plugin -j2 || fail "building plugins/torch failed"
plugin=build/torch-plugin/libsdpa_cts_torch_plugin.so
[[ -f $plugin ]] || fail "$plugin was not built"

# 3. sdpa-cts
cts=build/release/cli/sdpa-cts
if [[ ! -x $cts ]]; then
  [[ -f build/release/CMakeCache.txt ]] || cmake --preset release || fail "cmake --preset release failed"
  cmake --build --preset release -j2 --target sdpa-cts || fail "building sdpa-cts failed"
fi

# 4. the runs
mkdir -p "$report"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  "$py" -c 'import torch, platform; print("torch:", torch.__version__, "git", torch.version.git_version); print("torch CPU capability:", torch.backends.cpu.get_cpu_capability()); print("torch threads:", torch.get_num_threads()); print("python:", platform.python_version())'
  echo "sdpa-cts: $("$cts" --version 2>&1 | head -1), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) hardware threads"
  echo "venv: $venv, $(du -sh "$venv" | cut -f1)"
} >"$report/versions.txt"
cat "$report/versions.txt"

# The ci tier's generated cases that ask for the LSE, without the request: every `include`
# inlined, golden sets left out (their IDs are fixed by the file), family lines kept.
expand_tier() {
  local line
  while IFS= read -r line; do
    if [[ $line == include\ * ]]; then
      expand_tier "conformance/tiers/${line#include }.tier"
    else
      printf '%s\n' "$line"
    fi
  done <"$1"
}
expand_tier conformance/tiers/ci.tier |
  awk '/^# family:/ { print; next } /^#/ || /^golden / || NF == 0 { next } /\.lse\./ { gsub(/\.lse\./, "."); print }' \
  >"$report/ci-without-lse.tier"

status=0
judge() {
  local name=$1
  shift
  echo "== $name: sdpa-cts run --plugin $plugin $*"
  local start=$SECONDS rc=0
  "$cts" run --plugin "$plugin" "$@" --jobs "$jobs" --report "$report/$name" >"$report/$name.log" 2>&1 || rc=$?
  grep -E '^(FAIL|CRASH|TIMEOUT|QUALITY_WARNING|MISTRUSTED) |^  repro:' "$report/$name.log" || true
  tail -n 2 "$report/$name.log"
  echo "   exit code $rc, $((SECONDS - start)) s wall"
  if ((rc >= 2)); then status=2; elif ((rc == 1 && status == 0)); then status=1; fi
}
judge ci --plugin-backends --tier ci
judge sample --plugin-backends --sample "$sample" --seed "$seed"
judge ci-without-lse --backend torch.sdpa --backend torch.math --tier "$report/ci-without-lse.tier"

# The public op on rows whose every logit is NaN, with S around the vector width of the flash
# kernel's max reduction (16 f32 lanes / 8 f64 lanes with AVX-512): found through
# torch.flash_cpu's golden LSE cases, which torch.sdpa declines.
judge nan-rows --backend torch.sdpa \
  --case 'b1.hq2.l5.s7.dqk8.f32.seed1041.gen=nan_q' --case 'b1.hq2.l5.s15.dqk8.f32.seed1041.gen=nan_q' \
  --case 'b1.hq2.l5.s16.dqk8.f32.seed1041.gen=nan_q' --case 'b1.hq2.l5.s15.dqk8.bf16.seed1041.gen=nan_q' \
  --case 'b1.hq2.l5.s15.dqk8.f16.seed1041.gen=nan_q' --case 'b1.hq2.l5.s7.dqk8.f64.seed1041.gen=nan_q' \
  --case 'b1.hq2.l5.s8.dqk8.f64.seed1041.gen=nan_q' --case 'b1.hq2.l5.s7.dqk8.dv4.f32.seed1041.gen=nan_q'

# Statuses per run and backend (MISTRUSTED and NOT_SUPPORTED records print no line above), and
# every record that is neither PASS nor NOT_SUPPORTED in deviations.md, grouped by the form of
# its message, each with its repro line.
"$py" - "$report" ci sample ci-without-lse nan-rows <<'PY'
import collections, json, re, sys
report, runs = sys.argv[1], sys.argv[2:]
order = ["PASS", "FAIL", "QUALITY_WARNING", "CRASH", "TIMEOUT", "MISTRUSTED", "NOT_SUPPORTED", "INVALID"]
print("| run | backend | " + " | ".join(order) + " |")
print("|---|---|" + "---|" * len(order))
groups = collections.defaultdict(list)
sys.path.insert(0, "python/peers")
from deviations import group as cause
def group(r):
    return cause(r["status"], r["message"])
for run in runs:
    counts = collections.defaultdict(collections.Counter)
    for line in open(f"{report}/{run}/results.jsonl"):
        r = json.loads(line)
        counts[r["backend"]][r["status"]] += 1
        if r["status"] not in ("PASS", "NOT_SUPPORTED"):
            groups[group(r)].append((run, r))
    for backend in sorted(counts):
        print(f"| {run} | {backend} | " + " | ".join(str(counts[backend][s]) for s in order) + " |")
with open(f"{report}/deviations.md", "w") as out:
    out.write("# Records that are neither PASS nor NOT_SUPPORTED\n\n")
    for name in sorted(groups):
        out.write(f"## {name} ({len(groups[name])})\n\n")
        for run, r in groups[name]:
            out.write(f"- {run}, `{r['backend']}`: {r['message']}\n  `{r['repro']}`\n")
        out.write("\n")
print(f"every deviation with its repro line: {report}/deviations.md")
PY
exit $status
