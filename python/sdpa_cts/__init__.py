"""sdpa_cts: judge any scaled dot-product attention function against a high-precision reference.

The same engine as the ``sdpa-cts`` command (one C++ library, bound with nanobind): the cases
(tiers, sampled cases, case IDs), the f64 reference, the per-element bound of the judge, and
the reports (JSONL, JUnit XML, Markdown, HTML). docs/PYTHON.md has the guide.

    import sdpa_cts, torch

    def sdpa(case):
        x = case.inputs(framework="torch")
        p = case.params
        return torch.nn.functional.scaled_dot_product_attention(
            x["q"], x["k"], x["v"], is_causal=p["causal"] == "tl", scale=p["scale"])

    contract = sdpa_cts.Contract(p_type="input", causal_top_left=True, gqa=True, ...)
    summary = sdpa_cts.check(sdpa, tier="ci", contract=contract, report="report-dir")
    assert summary.passed, summary
"""

from __future__ import annotations

import os as _os

_DATA = _os.path.join(_os.path.dirname(__file__), "data")
if _os.path.isdir(_DATA):  # an installed package: its tiers and golden sets
    _os.environ.setdefault("SDPA_CTS_DATA_DIR", _DATA)

from ._api import (  # noqa: E402
    Case,
    Certification,
    Contract,
    Summary,
    UnjudgedWarning,
    Verdict,
    cases,
    certify,
    check,
    expectations,
    judge,
    reference,
)

__all__ = ["Case", "Certification", "Contract", "Summary", "UnjudgedWarning", "Verdict", "cases",
           "certify", "check", "judge", "reference"]
__version__ = "0.1.0"
