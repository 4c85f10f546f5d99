#!/usr/bin/env python3
"""Source mutants: what the suite catches when the product's own code is wrong.

Each mutant in catalog.json is a small patch of one source file of the product (a kernel, the
SIMD layer, a CUDA body run on the host emulator, a dispatcher rule, the judge, a reference
helper shared with the kernels). For each one this driver applies the patch in a scratch copy
of the repository, rebuilds incrementally, runs the chosen mechanisms and puts the file back:

  gate    scripts/gate.sh, the conformance runs .ci/run uses to pass or fail a change. Killed
          means its exit code says failure. The driver stops it at its first FAIL, CRASH or
          TIMEOUT line: the gate runs with no expectations file, so that result alone makes
          its exit code 1 (--full-gate runs it to the end and reads the exit code).
  pairs   the pairs tier alone, as the gate runs it (one thread, every SIMD target).
  ctest   ctest over the labels of --ctest-labels (default "unit|kernels"), --stop-on-failure;
          with --ctest-areas only on the mutants of those areas (the others: "not run").
  fuzz    `sdpa-cts fuzz --seconds N --seed 1` on the backends of the mutant's area
          (on the emulator for CUDA areas); killed means a finding (exit code 1).

A mutant that does not build is listed as such and counted in no denominator's kills.
  python3 tests/source_mutants/run.py                      # gate over the whole catalog
  python3 tests/source_mutants/run.py --mechanisms gate --markdown docs/MUTANTS.md  # its gate table
  python3 tests/source_mutants/run.py --mechanisms pairs,fuzz --markdown docs/MUTANTS.md --block pairs-fuzz
  python3 tests/source_mutants/run.py --only ID [--only ID]  # some mutants
  python3 tests/source_mutants/run.py --in-place --only ID   # CI: in this checkout, files restored
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

full_gate = False  # --full-gate: run the gate to its end, read its exit code

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CATALOG = HERE / "catalog.json"
MECHANISMS = ("gate", "pairs", "ctest", "fuzz")
# What the gate prints for a result that fails it (conformance_run.cpp prints every such
# result as "<STATUS> <backend> <case>: <message>").
FAILING_LINE = re.compile(r"^(FAIL|CRASH|TIMEOUT) (\S+) (\S+)")
# The backends a mutant of each area is fuzzed on, with the device option.
FUZZ_TARGETS = {
    "cpu.flash": [("cpu.flash", [])],
    "cpu.math": [("cpu.math", [])],
    "backward": [("cpu.math", []), ("cpu.flash", [])],
    "cpu.mem_efficient": [("cpu.mem_efficient", [])],
    "cuda.flash": [("cuda.flash", ["--device", "sm80:emulate=1"])],
    "cuda.mem_efficient": [("cuda.mem_efficient", ["--device", "sm80:emulate=1"])],
}
ALL_CPU = [("cpu.flash", []), ("cpu.math", []), ("cpu.mem_efficient", [])]
ALL_EMULATED = [("cuda.flash", ["--device", "sm80:emulate=1"]),
                ("cuda.mem_efficient", ["--device", "sm80:emulate=1"])]
AREAS = ("cpu.flash", "cpu.math", "cpu.mem_efficient", "simd", "cuda.flash",
         "cuda.mem_efficient", "cuda.shared", "lowering", "reference_shared", "dispatcher",
         "judge", "reference", "backward")


def fuzz_targets(area):
    if area in FUZZ_TARGETS:
        return FUZZ_TARGETS[area]
    if area == "simd":
        return [("cpu.flash", []), ("cpu.mem_efficient", [])]
    if area in ("cuda.shared",):
        return ALL_EMULATED
    return ALL_CPU + ALL_EMULATED if area == "lowering" else ALL_CPU


def fail(msg):
    print(f"source mutants: {msg}", file=sys.stderr)
    sys.exit(2)


def load_catalog(path, root):
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        fail(f"cannot read the catalog {path}: {e}")
    if data.get("format") != 1:
        fail(f"{path}: format {data.get('format')!r} is not 1")
    seen = set()
    for m in data["mutants"]:
        for key in ("id", "area", "file", "find", "replace", "breaks"):  # and an optional "note"
            if key not in m:
                fail(f"{path}: mutant {m.get('id', '?')} has no '{key}'")
        if m["id"] in seen:
            fail(f"{path}: mutant id {m['id']} appears twice")
        seen.add(m["id"])
        if m["area"] not in AREAS:
            fail(f"{path}: mutant {m['id']}: unknown area '{m['area']}' (known: {', '.join(AREAS)})")
        src = root / m["file"]
        if not src.is_file():
            fail(f"{path}: mutant {m['id']}: no file {m['file']}")
        n = src.read_text().count(m["find"])
        want = m.get("occurrence")
        if (want is None and n != 1) or (want is not None and n < want):
            fail(f"{path}: mutant {m['id']}: its text occurs {n} times in {m['file']}"
                 f" (expected {'exactly once' if want is None else f'at least {want}'})")
        if m["find"] == m["replace"]:
            fail(f"{path}: mutant {m['id']}: replace equals find")
    return data["mutants"]


def mutated(text, m):
    """The file's text with the mutant's patch applied."""
    k = m.get("occurrence", 1)
    at = -1
    for _ in range(k):
        at = text.index(m["find"], at + 1)
    return text[:at] + m["replace"] + text[at + len(m["find"]):]


def sync_scratch(root, dest):
    """Copies the repository's files (tracked, and untracked not ignored) into dest, writing
    only those that differ so the scratch build stays incremental."""
    files = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], check=True, capture_output=True).stdout
    for name in files.decode().split("\0"):
        if not name or not (root / name).is_file():
            continue
        s, d = root / name, dest / name
        data = s.read_bytes()
        if d.is_file() and d.read_bytes() == data:
            continue
        d.parent.mkdir(parents=True, exist_ok=True)
        d.write_bytes(data)
        shutil.copymode(s, d)


def run_logged(cmd, cwd, log, stop_at=None, stop=True, env=None):
    """Runs cmd, appending its output to log; returns (exit code, first line matching stop_at).
    With stop, the command is stopped at that line and the exit code is None."""
    with open(log, "a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, errors="replace", start_new_session=True, env=env)
        first = None
        for line in p.stdout:
            out.write(line)
            if stop_at and first is None and stop_at.match(line):
                first = line.strip()
                if stop:
                    os.killpg(p.pid, signal.SIGTERM)
                    p.wait()
                    out.write("[stopped at the first failing result]\n")
                    return None, first
        return p.wait(), first


def build(build_dir, targets, log):
    cmd = ["cmake", "--build", str(build_dir), "-j2"]
    for t in targets:
        cmd += ["--target", t]
    code, _ = run_logged(cmd, None, log)
    return code == 0


def first_error(log):
    for line in Path(log).read_text(errors="replace").splitlines():
        if "error:" in line:
            return line.strip()[:200]
    return "the build failed"


def gate(src, build_dir, log, area="cpu.flash"):
    t0 = time.time()
    # The emulator's step first for mutants of the CUDA code: the verdict is the same (the gate
    # fails when any step fails), a killed mutant stops sooner.
    steps = "emulated ci pairs" if area.startswith("cuda") else "ci pairs emulated"
    code, line = run_logged(["bash", "scripts/gate.sh", str(build_dir)], src, log, FAILING_LINE,
                            stop=not full_gate, env=dict(os.environ, GATE_STEPS=steps))
    seconds = time.time() - t0
    if code is None or code != 0:
        return {"killed": True, "by": line or f"gate exit code {code}", "seconds": seconds}
    return {"killed": False, "by": "", "seconds": seconds}


def pairs(src, build_dir, log):
    t0 = time.time()
    cts = str(build_dir / "cli" / "sdpa-cts")
    code, line = run_logged([cts, "run", "--tier", "pairs", "--simd", "all", "--threads", "1",
                             "--jobs", "2", "--no-report"], src, log, FAILING_LINE,
                            stop=not full_gate)
    killed = code is None or code != 0
    return {"killed": killed, "by": (line or f"exit code {code}") if killed else "",
            "seconds": time.time() - t0}


def ctest(src, build_dir, log, labels, regex=""):
    t0 = time.time()
    code, _ = run_logged(["ctest", "--test-dir", str(build_dir), "-L", labels, "-j2",
                          "--stop-on-failure"] + (["-R", regex] if regex else []), src, log)
    by = ""
    if code != 0:
        m = re.findall(r"\d+ - (\S+) \(", Path(log).read_text(errors="replace"))
        by = m[-1] if m else f"ctest exit code {code}"
    return {"killed": code != 0, "by": by, "seconds": time.time() - t0}


def fuzz(src, build_dir, log, area, seconds):
    t0 = time.time()
    cts = str(build_dir / "cli" / "sdpa-cts")
    for backend, device in fuzz_targets(area):
        code, line = run_logged([cts, "fuzz", "--backend", backend, *device, "--engine", "search",
                                 "--seconds", str(seconds), "--seed", "1", "--jobs", "2",
                                 "--max-findings", "1"], src, log, re.compile(r"^FINDING "))
        if code is None or code == 1:
            return {"killed": True, "by": line or backend, "seconds": time.time() - t0}
        if code != 0:
            return {"killed": True, "by": f"fuzz {backend} exit code {code}",
                    "seconds": time.time() - t0}
    return {"killed": False, "by": "", "seconds": time.time() - t0}


def markdown(results, mechanisms, command, notes):
    """The kill tables; notes: a survivor's explanation by mutant ID (the catalog's "note")."""
    lines = [f"Generated by `{command}` on {time.strftime('%Y-%m-%d')} "
             f"(host: {os.uname().nodename}, {os.cpu_count()} cores).", ""]
    built = [r for r in results if r["built"]]
    lines.append("| area | mutants | " + " | ".join(f"killed by {m}" for m in mechanisms) + " |")
    lines.append("|---|---|" + "---|" * len(mechanisms))
    areas = [a for a in AREAS if any(r["area"] == a for r in built)]
    for a in areas + ["all"]:
        rs = [r for r in built if a == "all" or r["area"] == a]
        cells = []
        for m in mechanisms:
            ran = [r for r in rs if not r[m].get("not_run")]
            k = sum(1 for r in ran if r[m]["killed"])
            cells.append(f"{k} / {len(ran)}" if ran else "not run")
        name = "**all**" if a == "all" else f"`{a}`"
        lines.append(f"| {name} | {len(rs)} | " + " | ".join(cells) + " |")
    lines += ["", "| mutant | what it breaks | " + " | ".join(mechanisms) + " |",
              "|---|---|" + "---|" * len(mechanisms)]
    for r in results:
        if not r["built"]:
            cells = ["did not build"] * len(mechanisms)
        else:
            survived = "**survived**" + (f" ({notes[r['id']]})" if notes.get(r["id"]) else "")
            cells = ["not run" if r[m].get("not_run")
                     else ("killed: " + r[m]["by"].replace("|", "\\|")[:90]) if r[m]["killed"]
                     else survived for m in mechanisms]
        lines.append(f"| `{r['id']}` | {r['breaks']} | " + " | ".join(cells) + " |")
    unbuilt = [r for r in results if not r["built"]]
    if unbuilt:
        lines += ["", "Did not build (not counted): " +
                  "; ".join(f"`{r['id']}` ({r['error']})" for r in unbuilt)]
    return "\n".join(lines) + "\n"


def markers(block):
    """The markers of a generated block: "<!-- source-mutants:begin[ NAME] -->" and its end."""
    name = f" {block}" if block else ""
    return f"<!-- source-mutants:begin{name} -->", f"<!-- source-mutants:end{name} -->"


def write_tables(path, tables, block=""):
    """Writes the tables between the markers of `block` in path (the prose around them
    stays), or the whole file when it has no markers at all."""
    text = path.read_text() if path.is_file() else ""
    BEGIN, END = markers(block)
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        text = f"{head}{BEGIN}\n{tables}{END}{tail}"
    elif "<!-- source-mutants:begin" in text:
        fail(f"{path} has no block '{block}' (markers {BEGIN} ... {END})")
    else:
        text = tables
    path.write_text(text)


def main():
    global full_gate
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--catalog", default=str(CATALOG))
    ap.add_argument("--scratch", default=str(REPO / "build" / "source-mutants"),
                    help="scratch folder: a copy of the repository and its build")
    ap.add_argument("--in-place", action="store_true",
                    help="mutate this checkout and rebuild build/release (each file restored)")
    ap.add_argument("--mechanisms", default="gate",
                    help=f"comma-separated, of {', '.join(MECHANISMS)}")
    ap.add_argument("--only", action="append", default=[], help="mutant ID (repeatable)")
    ap.add_argument("--areas", default="",
                    help=f"comma-separated areas whose mutants to run (of {', '.join(AREAS)})")
    ap.add_argument("--fuzz-seconds", type=float, default=20)
    ap.add_argument("--ctest-labels", default="unit|kernels")
    ap.add_argument("--ctest-regex", default="",
                    help="only the tests of --ctest-labels whose names match (ctest -R): a "
                         "mutant a subset kills, the whole set kills too")
    ap.add_argument("--ctest-targets", default="",
                    help="comma-separated build targets for the ctest mechanism (default: every "
                         "target); the tests --ctest-regex selects must be among them")
    ap.add_argument("--ctest-areas", default="",
                    help="comma-separated areas whose mutants ctest runs on (default: all); "
                         "the others build sdpa-cts alone and show 'not run'")
    ap.add_argument("--full-gate", action="store_true",
                    help="run the gate to its end for killed mutants too")
    ap.add_argument("--control-passed", action="store_true",
                    help="skip the control run: the mechanisms just passed on this same code "
                         "(CI, right after the gate)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--update", metavar="JSON",
                    help="the results file of an earlier run (same mechanisms): this run's "
                         "mutants replace or join its rows, and it and --markdown are rewritten "
                         "from all of them")
    ap.add_argument("--markdown", help="write the kill tables here (a file of docs/)")
    ap.add_argument("--block", default="",
                    help="the named block of --markdown to write (its markers name it; "
                         "default: the unnamed one)")
    ap.add_argument("--render", metavar="JSON",
                    help="only write --markdown from the results file of an earlier run")
    ap.add_argument("--expect-all-killed", action="store_true",
                    help="exit 1 when a mutant survives a mechanism (for CI's sample)")
    args = ap.parse_args()
    # A stopped run (SIGTERM) unwinds like an error, so the mutated file is put back.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    full_gate = args.full_gate
    mechanisms = [m for m in args.mechanisms.split(",") if m]
    for m in mechanisms:
        if m not in MECHANISMS:
            fail(f"unknown mechanism '{m}' (known: {', '.join(MECHANISMS)})")
    catalog = load_catalog(args.catalog, REPO)
    order = [m["id"] for m in catalog]
    notes = {m["id"]: m.get("note", "") for m in catalog}
    if args.only:
        known = {m["id"] for m in catalog}
        for i in args.only:
            if i not in known:
                fail(f"no mutant '{i}' in {args.catalog}")
        catalog = [m for m in catalog if m["id"] in args.only]
    areas = [a for a in args.areas.split(",") if a]
    for a in areas:
        if a not in AREAS:
            fail(f"unknown area '{a}' (known: {', '.join(AREAS)})")
    if areas:
        catalog = [m for m in catalog if m["area"] in areas]
    ctest_areas = [a for a in args.ctest_areas.split(",") if a]
    for a in ctest_areas:
        if a not in AREAS:
            fail(f"unknown area '{a}' in --ctest-areas (known: {', '.join(AREAS)})")

    def runs(mech, m):
        """Whether mechanism mech runs on mutant m."""
        return mech != "ctest" or not ctest_areas or m["area"] in ctest_areas

    if args.render:
        data = json.loads(Path(args.render).read_text())
        if not args.markdown:
            fail("--render needs --markdown")
        note = "" if data.get("complete") else \
            f" (partial: {len(data['results'])} of {len(catalog)} mutants)"
        write_tables(Path(args.markdown), markdown(data["results"], data["mechanisms"],
                                                   data.get("command", "?") + note, notes),
                     args.block)
        return 0

    if args.in_place:
        src, build_dir = REPO, REPO / "build" / "release"
        if not (build_dir / "build.ninja").is_file():
            fail(f"--in-place needs a configured {build_dir} (cmake --preset release)")
    else:
        src = Path(args.scratch).resolve() / "src"
        src.mkdir(parents=True, exist_ok=True)
        sync_scratch(REPO, src)
        build_dir = src / "build" / "release"
        if not (build_dir / "build.ninja").is_file():
            cmd = ["cmake", "--preset", "release"]
            if shutil.which("ccache"):
                cmd += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_C_COMPILER_LAUNCHER=ccache"]
            subprocess.run(cmd, cwd=src, check=True, stdout=subprocess.DEVNULL)
    logs = Path(args.scratch).resolve() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    ctest_targets = [t for t in args.ctest_targets.split(",") if t]
    if ctest_targets and "sdpa-cts" not in ctest_targets:
        ctest_targets.append("sdpa-cts")
    targets = ctest_targets if "ctest" in mechanisms else ["sdpa-cts"]

    control_log = logs / "control.log"
    control_log.write_text("")
    print("control: building and running the unmutated code", flush=True)
    if not build(build_dir, targets, control_log):
        fail(f"the unmutated code does not build (log: {control_log})")
    for mech in ([] if args.control_passed else mechanisms):
        if mech == "gate":
            r = gate(src, build_dir, control_log)
        elif mech == "pairs":
            r = pairs(src, build_dir, control_log)
        elif mech == "ctest":
            r = ctest(src, build_dir, control_log, args.ctest_labels, args.ctest_regex)
        else:
            r = {"killed": False}  # the fuzzer's control: the unmutated backends (CI fuzzes them)
        if r["killed"]:
            fail(f"{mech} fails without a mutant ({r['by']}; log: {control_log})")

    command = f"python3 tests/source_mutants/run.py --mechanisms {','.join(mechanisms)}"
    if "fuzz" in mechanisms:
        command += f" --fuzz-seconds {args.fuzz_seconds:g}"
    if "ctest" in mechanisms:
        command += f" --ctest-labels '{args.ctest_labels}'"
        if args.ctest_regex:
            command += f" --ctest-regex '{args.ctest_regex}'"
        if args.ctest_targets:
            command += f" --ctest-targets {args.ctest_targets}"
        if ctest_areas:
            command += f" --ctest-areas {','.join(ctest_areas)}"
    if areas:
        command += f" --areas {','.join(areas)}"
    command += "".join(f" --only {i}" for i in args.only)
    if args.block:
        command += f" --block {args.block}"

    def save(done):
        """Writes what is measured so far (after every mutant: a stopped run keeps it)."""
        note = "" if done else f" (partial: {len(results)} of {len(catalog)} mutants so far)"
        if args.update:
            earlier = json.loads(Path(args.update).read_text())
            if earlier["mechanisms"] != mechanisms:
                fail(f"{args.update} has mechanisms {earlier['mechanisms']}, this run {mechanisms}")
            rows = {r["id"]: r for r in earlier["results"]}
            rows.update({r["id"]: r for r in results})
            merged = sorted(rows.values(), key=lambda r: order.index(r["id"])
                            if r["id"] in order else len(order))
            Path(args.update).write_text(json.dumps(
                {"mechanisms": mechanisms, "command": earlier.get("command", "?"),
                 "complete": set(order) <= set(rows),
                 "results": merged}, indent=1) + "\n")
            if args.markdown:
                base = f"python3 tests/source_mutants/run.py --mechanisms {','.join(mechanisms)}"
                write_tables(Path(args.markdown), markdown(
                    merged, mechanisms, base + f"`; rows re-run on {time.strftime('%Y-%m-%d')} by `"
                    + command + " --update JSON" + note, notes), args.block)
            return
        if args.json:
            Path(args.json).write_text(json.dumps(
                {"mechanisms": mechanisms, "command": command, "complete": done,
                 "results": results}, indent=1) + "\n")
        if args.markdown:
            write_tables(Path(args.markdown), markdown(results, mechanisms, command + note, notes),
                         args.block)

    results = []
    for n, m in enumerate(catalog, 1):
        path = src / m["file"]
        original = path.read_text()
        log = logs / f"{m['id']}.log"
        log.write_text("")
        r = {"id": m["id"], "area": m["area"], "breaks": m["breaks"], "built": False}
        try:
            path.write_text(mutated(original, m))
            # Every target (the tests too) only where ctest runs on this mutant.
            mine = ctest_targets if "ctest" in mechanisms and runs("ctest", m) else ["sdpa-cts"]
            if not build(build_dir, mine, log):
                r["error"] = first_error(log)
            else:
                r["built"] = True
                for mech in mechanisms:
                    if not runs(mech, m):
                        r[mech] = {"killed": False, "not_run": True, "by": "", "seconds": 0}
                    elif mech == "gate":
                        r[mech] = gate(src, build_dir, log, m["area"])
                    elif mech == "pairs":
                        r[mech] = pairs(src, build_dir, log)
                    elif mech == "ctest":
                        r[mech] = ctest(src, build_dir, log, args.ctest_labels, args.ctest_regex)
                    else:
                        r[mech] = fuzz(src, build_dir, log, m["area"], args.fuzz_seconds)
        finally:
            path.write_text(original)
        verdicts = ", ".join(f"{k}: " + ("not run" if r[k].get("not_run") else
                                         "killed" if r[k]["killed"] else "SURVIVED")
                             for k in mechanisms if k in r) or f"did not build: {r.get('error')}"
        print(f"[{n}/{len(catalog)}] {m['id']}: {verdicts}", flush=True)
        results.append(r)
        save(False)
    print("restoring the build of the unmutated code", flush=True)
    # Sources are restored; make the build match them again (the mutated objects are stale).
    for m in catalog:
        (src / m["file"]).touch()
    build(build_dir, targets, logs / "restore.log")

    built = [r for r in results if r["built"]]
    for mech in mechanisms:
        ran = [r for r in built if not r[mech].get("not_run")]
        k = sum(1 for r in ran if r[mech]["killed"])
        print(f"{mech}: {k} of {len(ran)} mutants killed"
              f" ({len(results) - len(built)} did not build)")
    save(True)
    if args.expect_all_killed:
        missed = [f"{r['id']} ({'did not build' if not r['built'] else m + ': survived'})"
                  for r in results for m in (mechanisms if r["built"] else mechanisms[:1])
                  if not r["built"] or not (r[m]["killed"] or r[m].get("not_run"))]
        if missed:
            print("not killed: " + ", ".join(missed))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
