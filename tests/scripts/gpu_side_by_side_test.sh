#!/usr/bin/env bash
# scripts/gpu_side_by_side.py, the GPU check's comparison, on emulated runs standing in for the
# GPU's (no GPU here): two runs of the same tier give the same output bytes and the check passes;
# a second run whose bytes (one record's digest) or status differ, and a case that fails only
# on the "GPU", each make it fail naming the case.
#   gpu_side_by_side_test.sh SDPA_CTS SOURCE_DIR WORK_DIR
set -euo pipefail
cli=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
run() { "$cli" run --device "$1" --backend cuda.flash --backend cuda.mem_efficient --tier smoke \
          --jobs 2 --report "$work/$2" > /dev/null; }
run sm80:emulate=1 gpu
run sm80:emulate=1 again
run sm80:emulate=1:mma=measured emu
python3 "$src/scripts/gpu_side_by_side.py" "$work/gpu" "$work/again" "$work/emu" "$work/ok" \
  > "$work/ok.txt"
grep -q "same output bytes on the second run" "$work/ok.txt"
if grep -q "same output bytes on the second run 0/0" "$work/ok.txt"; then
  echo "no digests compared"; exit 1
fi
# Planted differences in copies of the second run and of the GPU run.
python3 - "$work" <<'PY'
import json, shutil, sys
w = sys.argv[1]
def edit(src, dst, fn):
    shutil.copytree(f"{w}/{src}", f"{w}/{dst}")
    rows = [json.loads(l) for l in open(f"{w}/{src}/results.jsonl")]
    first = next(i for i, r in enumerate(rows) if r["status"] == "PASS" and r.get("output_digest"))
    fn(rows[first])
    with open(f"{w}/{dst}/results.jsonl", "w") as f:
        for r in rows: f.write(json.dumps(r) + "\n")
edit("again", "again_bytes", lambda r: r.update(output_digest="fnv1a64:0000000000000000"))
edit("again", "again_status", lambda r: r.update(status="FAIL"))
edit("gpu", "gpu_fails", lambda r: r.update(status="FAIL", message="planted"))
PY
expect_fail() {  # what the check must print, then its arguments
  local want=$1; shift
  if python3 "$src/scripts/gpu_side_by_side.py" "$@" > "$work/out.txt"; then
    echo "passed with a planted difference ($want)"; exit 1
  fi
  grep -q "$want" "$work/out.txt" || { cat "$work/out.txt"; exit 1; }
}
expect_fail "DIFFERENT OUTPUT BYTES" "$work/gpu" "$work/again_bytes" "$work/emu" "$work/x"
expect_fail "STATUS CHANGED" "$work/gpu" "$work/again_status" "$work/emu" "$work/x"
expect_fail "FAILS ON THE GPU, passes on the emulator" "$work/gpu_fails" "$work/again" "$work/emu" "$work/x"
echo "gpu_side_by_side: ok"
