"""Compares the deviations that the Python peer (python/peers/torch_sdpa.py) and the C plugin
(plugins/torch) find in PyTorch on the same cases, from their report folders:

    python python/peers/compare_with_plugin.py PLUGIN_REPORT PYTHON_REPORT

PLUGIN_REPORT holds the results.jsonl of `sdpa-cts run --plugin libsdpa_cts_torch_plugin.so
--plugin-backends ...`; PYTHON_REPORT the folders torch_sdpa, torch_sdpa_flash, torch_sdpa_math
that `torch_sdpa.py --report PYTHON_REPORT` writes for the same selection. For each pair of
backends it counts the cases both judged (neither declined) and lists every case that one of
them judged a deviation (not PASS) and the other passed. Exit code 0 when the two agree on every
case both judged, 1 otherwise, 2 when a report is missing.
"""

from __future__ import annotations

import json
import os
import sys

# The C plugin's backends and the Python functions that call PyTorch the same way.
PAIRS = {"torch.sdpa": "torch_sdpa", "torch.flash_cpu": "torch_sdpa_flash",
         "torch.math": "torch_sdpa_math"}


def statuses(path: str, backend: str = "") -> dict:
    """case ID -> status of one backend's records in a results.jsonl."""
    out = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if not backend or r["backend"] == backend:
                out[r["case_id"]] = r["status"]
    return out


def compare(plugin: dict, python: dict) -> dict:
    """The cases both judged, and those where one found a deviation and the other did not."""
    judged = [c for c in plugin if c in python and "NOT_SUPPORTED" not in (plugin[c], python[c])]
    deviates = lambda s: s != "PASS"  # noqa: E731
    return {
        "judged": len(judged),
        "both": sorted(c for c in judged if deviates(plugin[c]) and deviates(python[c])),
        "plugin_only": sorted(c for c in judged if deviates(plugin[c]) and not deviates(python[c])),
        "python_only": sorted(c for c in judged if deviates(python[c]) and not deviates(plugin[c])),
    }


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    plugin_dir, python_dir = argv
    agree = True
    for c_name, py_name in PAIRS.items():
        c_file = os.path.join(plugin_dir, "results.jsonl")
        py_file = os.path.join(python_dir, py_name, "results.jsonl")
        for f in (c_file, py_file):
            if not os.path.exists(f):
                print(f"compare_with_plugin: no {f}", file=sys.stderr)
                return 2
        r = compare(statuses(c_file, c_name), statuses(py_file))
        print(f"{c_name} / {py_name}: {r['judged']} cases judged by both, {len(r['both'])} "
              f"deviations found by both, {len(r['plugin_only'])} by the plugin alone, "
              f"{len(r['python_only'])} by Python alone")
        for c in r["plugin_only"]:
            print(f"  plugin alone: {c}")
        for c in r["python_only"]:
            print(f"  Python alone: {c}")
        agree = agree and not r["plugin_only"] and not r["python_only"]
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
