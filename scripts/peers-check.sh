#!/usr/bin/env bash
# Real peers judged from Python (docs/PYTHON.md, "Real peers"), as .ci/run runs them:
#
#   scripts/peers-check.sh VENV BUILD OUT
#
# VENV: a virtual environment with the sdpa_cts package installed (python/requirements.txt);
# BUILD: a build folder with cli/sdpa-cts; OUT: the report folders. It
# 1. installs JAX (python/peers/requirements-jax.txt) and PyTorch (bench/requirements.txt, about
#    5.4 GB with its CUDA libraries) into VENV;
# 2. judges jax.nn.dot_product_attention and PyTorch's three CPU SDPA calls on the ci tier,
#    backward included (a case that asks for the LSE is judged on O and the gradients of a
#    function that does not return it: docs/CONFORMANCE.md, "Requested outputs"): a deviation
#    not listed in python/peers/expected/*.expect, or a listed one that passes where its entry
#    applies, fails;
#    The README's Python example runs too, and its counts must be the README's;
# 3. builds the C plugin (plugins/torch) against the same wheel, runs it on the same cases and
#    compares: a case whose verdict differs between the two routes fails.
set -euo pipefail
venv=$1 build=$2 out=$3
py="$venv/bin/python"
cd "$(dirname "$0")/.."
mkdir -p "$out"

"$venv/bin/pip" install -q -r python/peers/requirements-jax.txt
"$venv/bin/pip" install -q -r bench/requirements.txt

echo "-- README's Python example: its numbers as the README states them"
"$py" scripts/check-readme-example.py README.md 2>&1 | grep "^check-readme-example"

for peer in jax_dpa torch_sdpa; do
  echo "-- $peer --tier ci --grad"
  "$py" "python/peers/$peer.py" --tier ci --grad --report "$out/$peer" \
    --expect "python/peers/expected/$peer.expect" 2>&1 | grep -E "^(jax_dpa|torch_sdpa)|^(FAIL|CRASH|TIMEOUT|INVALID|unexpectedly) "
done

torch_prefix=$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)')
cmake -S plugins/torch -B "$out/torch-plugin" -DCMAKE_PREFIX_PATH="$torch_prefix" \
  -DSDPA_CTS_INCLUDE_DIR="$PWD/include" > "$out/torch-plugin.log"
cmake --build "$out/torch-plugin" -j2 >> "$out/torch-plugin.log"
rc=0
"$build/cli/sdpa-cts" run --plugin "$out/torch-plugin/libsdpa_cts_torch_plugin.so" \
  --plugin-backends --tier ci --jobs 2 --report "$out/plugin" > "$out/plugin.log" 2>&1 || rc=$?
if [ "$rc" -gt 1 ]; then
  tail -n 20 "$out/plugin.log"
  echo "peers-check.sh: the C plugin's run failed (exit $rc)"
  exit 1
fi
echo "-- the C plugin and Python on the same cases (ci)"
"$py" python/peers/compare_with_plugin.py "$out/plugin" "$out/torch_sdpa"
