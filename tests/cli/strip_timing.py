#!/usr/bin/env python3
"""Prints a report file of `sdpa-cts run` without its timings, so that the reports of two runs
of the same cases can be compared with diff. Usage: strip_timing.py FILE

Timings (docs/REPORTS.md) are: each record's "seconds" in results.jsonl; "started_at",
"seconds", "case_seconds" and "cases_per_second" in summary.json; every time= and timestamp=
attribute and the started_at property in junit.xml; the wall time, results per second and start
time of the summary.md sentence and of the report.html header table.
"""
import json
import re
import sys

path = sys.argv[1]
text = open(path, encoding="utf-8").read()
name = path.rsplit("/", 1)[-1]
if name == "results.jsonl":
    out = []
    for line in text.splitlines():
        record = json.loads(line)
        record.pop("seconds")
        out.append(json.dumps(record))
    text = "\n".join(out) + "\n"
elif name == "summary.json":
    summary = json.loads(text)
    for key in ("started_at", "seconds", "case_seconds", "cases_per_second"):
        summary.pop(key)
    text = json.dumps(summary, indent=1) + "\n"
elif name == "junit.xml":
    text = re.sub(r' (time|timestamp)="[^"]*"', "", text)
    text = re.sub(r'<property name="started_at" value="[^"]*"/>', "", text)
elif name == "summary.md":
    text = re.sub(r"\) in \S+ s( \(\S+ results/s\))?,", ") in (time),", text)
    text = re.sub(r", started \S+\.\n", ", started (time).\n", text)
elif name == "report.html":
    text = re.sub(r"<tr><th>(wall time|results per second|started at)</th><td>[^<]*</td></tr>",
                  r"<tr><th>\1</th><td>(time)</td></tr>", text)
else:
    sys.exit("strip_timing.py: unknown report file " + path)
sys.stdout.write(text)
