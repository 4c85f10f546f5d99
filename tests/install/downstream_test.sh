#!/usr/bin/env bash
# Installs this build into a scratch prefix, builds the downstream project against it (with
# only the installed tree on CMAKE_PREFIX_PATH) and runs its CTest: the gate a downstream CI
# would run. Usage: downstream_test.sh BUILD_DIR SOURCE_DIR SCRATCH_DIR
set -euo pipefail
build=$1
src=$2
scratch=$3
rm -rf "$scratch"
mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
# The installed command finds its tiers and golden sets next to itself, not in the sources.
test -f "$scratch/prefix/share/sdpa-cts/conformance/tiers/ci.tier"
test -f "$scratch/prefix/share/sdpa-cts/conformance/profiles/inference-core.profile"
test -f "$scratch/prefix/share/sdpa-cts/golden/data/ci.h5"
test -f "$scratch/prefix/include/sdpa_cts/plugin.h"
test -f "$scratch/prefix/include/sdpa_cts/params.h"  # plugin.h includes it
cmake -S "$src/tests/install/downstream" -B "$scratch/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/build" >/dev/null
ctest --test-dir "$scratch/build" --output-on-failure
