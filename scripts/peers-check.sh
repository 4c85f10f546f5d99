#!/usr/bin/env bash
# Real peers judged from Python (docs/PYTHON.md, "Real peers"), as .ci/run runs them:
#
#   scripts/peers-check.sh VENV BUILD OUT
#
# VENV: a virtual environment with the sdpa_cts package installed (python/requirements.txt);
# BUILD: a build folder with cli/sdpa-cts; OUT: the report folders. It
# 1. installs JAX (python/peers/requirements-jax.txt) and PyTorch (bench/requirements.txt, about
#    5.4 GB with its CUDA libraries) into VENV;
# 2. judges jax.nn.dot_product_attention and PyTorch's three CPU SDPA calls on the ci tier, and
#    on its cases that ask for the LSE with that request taken out (--without-lse), backward
#    included: a deviation not listed in python/peers/expected/*.expect fails;
# 3. builds the C plugin (plugins/torch) against the same wheel, runs it on the same cases and
#    compares: a case whose verdict differs between the two routes fails.
set -euo pipefail
venv=$1 build=$2 out=$3
py="$venv/bin/python"
cd "$(dirname "$0")/.."
mkdir -p "$out"

"$venv/bin/pip" install -q -r python/peers/requirements-jax.txt
"$venv/bin/pip" install -q -r bench/requirements.txt

for peer in jax_dpa torch_sdpa; do
  for mode in "" --without-lse; do
    echo "-- $peer --tier ci $mode --grad"
    "$py" "python/peers/$peer.py" --tier ci $mode --grad --report "$out/$peer$mode" \
      --expect "python/peers/expected/$peer.expect" 2>&1 | grep -E "^(jax_dpa|torch_sdpa)|^(FAIL|CRASH|TIMEOUT|INVALID|unexpectedly) "
  done
done

torch_prefix=$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)')
cmake -S plugins/torch -B "$out/torch-plugin" -DCMAKE_PREFIX_PATH="$torch_prefix" \
  -DSDPA_CTS_INCLUDE_DIR="$PWD/include" > "$out/torch-plugin.log"
cmake --build "$out/torch-plugin" -j2 >> "$out/torch-plugin.log"
"$py" -c 'import sys; sys.path.insert(0, "python/peers"); import peer_main
print("\n".join(peer_main.without_lse_ids("ci")))' > "$out/ci-without-lse.tier"
for mode in "" --without-lse; do
  tier=ci
  if [ -n "$mode" ]; then tier="$out/ci-without-lse.tier"; fi
  rc=0
  "$build/cli/sdpa-cts" run --plugin "$out/torch-plugin/libsdpa_cts_torch_plugin.so" \
    --plugin-backends --tier "$tier" --jobs 2 --report "$out/plugin$mode" > "$out/plugin$mode.log" 2>&1 || rc=$?
  if [ "$rc" -gt 1 ]; then
    tail -n 20 "$out/plugin$mode.log"
    echo "peers-check.sh: the C plugin's run failed (exit $rc)"
    exit 1
  fi
  echo "-- the C plugin and Python on the same cases (ci $mode)"
  "$py" python/peers/compare_with_plugin.py "$out/plugin$mode" "$out/torch_sdpa$mode"
done
