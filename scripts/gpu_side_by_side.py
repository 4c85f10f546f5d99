#!/usr/bin/env python3
"""The GPU check's comparison (scripts/gpu-check.sh; docs/KERNELS.md, "The GPU check"): one
tier run on a GPU, a second run of it, and the same tier on the host emulator, case by case.

    gpu_side_by_side.py GPU_REPORT GPU_REPORT_AGAIN EMULATOR_REPORT OUT_PREFIX

Writes OUT_PREFIX.tsv (one line per backend and case: status and error/tolerance on the GPU
and on the emulator, whether the second GPU run gave the same output bytes) and
OUT_PREFIX.md (the summary), and prints the summary. Exit 1 when a case the emulator passes
fails on the GPU, when a status differs between the two GPU runs, or when the second run gave
different output bytes (the records' output_digest) for the same inputs: the fused kernels'
sums have a fixed order (no atomics), so their forward is meant to be bitwise reproducible.
"""
import json
import sys


def load(report):
    out = {}
    with open(f"{report}/results.jsonl") as f:
        for line in f:
            r = json.loads(line)
            out[(r["backend"], r["case_id"])] = r
    return out


def ratio(r):
    x = r.get("worst_ratio", 0)
    return x if isinstance(x, (int, float)) else float("inf")


def main(argv):
    if len(argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    gpu, again, emu = (load(a) for a in argv[1:4])
    prefix = argv[4]
    judged = ("PASS", "FAIL", "QUALITY_WARNING", "MISTRUSTED", "XFAIL")
    rows, worse, unstable, differing, missing = [], [], [], [], []
    for key in sorted(gpu):
        g = gpu[key]
        a = again.get(key)
        # The emulator runs the fused kernels under the GPU's backend names.
        e = emu.get(key)
        same = ""
        if a is None:
            missing.append(key)
        else:
            if a["status"] != g["status"]:
                unstable.append((key, g["status"], a["status"]))
            dg, da = g.get("output_digest", ""), a.get("output_digest", "")
            if dg and da:
                same = "yes" if dg == da else "NO"
                if dg != da:
                    differing.append(key)
        if e is not None and e["status"] == "PASS" and g["status"] in ("FAIL", "CRASH", "TIMEOUT"):
            worse.append((key, g["message"]))
        rows.append((key[0], key[1], g["status"], ratio(g) if g["status"] in judged else "",
                     e["status"] if e else "", ratio(e) if e and e["status"] in judged else "",
                     same))
    with open(prefix + ".tsv", "w") as f:
        f.write("backend\tcase\tgpu_status\tgpu_err_over_tol\temulator_status\t"
                "emulator_err_over_tol\tsame_bytes_second_run\n")
        for r in rows:
            f.write("\t".join(f"{x:.4g}" if isinstance(x, float) else str(x) for x in r) + "\n")
    lines = [f"# GPU against the emulator: {len(rows)} results"]
    for backend in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == backend]
        both = [r for r in mine if r[3] != "" and r[5] != ""]
        gmax = max((r[3] for r in both), default=0)
        emax = max((r[5] for r in both), default=0)
        checked = [r for r in mine if r[6]]
        same = sum(1 for r in checked if r[6] == "yes")
        lines.append(f"- {backend}: judged on both {len(both)}, max err/tol GPU {gmax:.3g}, "
                     f"emulator {emax:.3g}; same output bytes on the second run "
                     f"{same}/{len(checked)}; statuses GPU "
                     + ", ".join(f"{s} {sum(1 for r in mine if r[2] == s)}"
                                 for s in sorted({r[2] for r in mine})))
    for key, msg in worse:
        lines.append(f"- FAILS ON THE GPU, passes on the emulator: {key[0]} {key[1]}: {msg}")
    for key, s1, s2 in unstable:
        lines.append(f"- STATUS CHANGED between the two GPU runs: {key[0]} {key[1]}: {s1} then {s2}")
    for key in differing:
        lines.append(f"- DIFFERENT OUTPUT BYTES on the second GPU run: {key[0]} {key[1]}")
    for key in missing:
        lines.append(f"- missing from the second GPU run: {key[0]} {key[1]}")
    text = "\n".join(lines) + "\n"
    with open(prefix + ".md", "w") as f:
        f.write(text)
    print(text, end="")
    return 1 if worse or unstable or differing or missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
