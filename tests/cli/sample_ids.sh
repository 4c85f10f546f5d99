#!/bin/bash
# Usage: sample_ids.sh SDPA_CTS WORKDIR
# Runs `sdpa-cts run --sample 4` with seeds 0, 0 and 1 and compares the sampled case IDs:
# the same seed must give the same IDs, another seed other IDs.
set -u
cli=$1
dir=$2
rm -rf "$dir" && mkdir -p "$dir" || exit 2
for run in a:0 b:0 c:1; do
  "$cli" run --sample 4 --seed "${run#*:}" --backend cpu.math --report "$dir/${run%:*}" >/dev/null
  [ $? -le 1 ] || { echo "sdpa-cts run failed (seed ${run#*:})"; exit 1; }
done
ids() { grep -o '"case_id":"[^"]*"' "$dir/$1/results.jsonl" | sort -u; }
n=$(ids a | wc -l)
[ "$(ids a)" = "$(ids b)" ] && echo "same seed, same $n case IDs"
[ "$(ids a)" != "$(ids c)" ] && echo "another seed, other case IDs"
