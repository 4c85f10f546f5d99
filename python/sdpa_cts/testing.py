"""Assertions for test suites (pytest or unittest)."""

from __future__ import annotations

from typing import Any, Optional

from ._api import Case, Contract, judge


def assert_conforms(case: Case, outputs: Any, contract: Optional[Contract] = None) -> None:
    """Raises AssertionError unless ``outputs`` pass the judge for ``case`` (NOT_SUPPORTED, a
    case outside ``contract``, raises pytest's skip when pytest is running). The message is
    the repro line, then where and by how much the bound was broken."""
    v = judge(case, outputs, contract)
    if v.status == "NOT_SUPPORTED":
        try:
            import pytest
        except ImportError:
            return
        pytest.skip(f"outside the contract: {v.message}")
    if not v.passed and v.status != "MISTRUSTED":
        raise AssertionError(f"{v.status} {case.id}: worst error/bound {v.worst_ratio:.3g} at "
                             f"{v.worst_where}\n{v.message}\nrepro: {v.repro}")
