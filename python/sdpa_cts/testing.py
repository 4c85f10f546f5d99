"""Assertions for test suites (pytest or unittest)."""

from __future__ import annotations

import warnings
from typing import Any, Callable, Optional

from ._api import Case, Contract, UnjudgedWarning, Verdict, _run, judge


def _is_function(x: Any) -> bool:
    """A function to call, not an output (arrays expose __array__ or __dlpack__)."""
    return callable(x) and not hasattr(x, "__dlpack__") and not hasattr(x, "__array__")


def _skip(reason: str) -> None:
    try:
        import pytest
    except ImportError:  # unittest and plain scripts: a warning, not a pass that hides it
        warnings.warn(reason, UnjudgedWarning, stacklevel=3)
        return
    pytest.skip(reason)


def assert_conforms(case: Case, fn: Any, contract: Optional[Contract] = None, *,
                    grad: Any = None) -> None:
    """Raises AssertionError unless the judge passes ``case``.

    ``fn``: the attention function itself (the route to use): it is called only when the case
    is inside ``contract``, as ``check()`` does, and with ``grad=`` (as ``check()``'s) its
    backward is judged too. The older form passes what the function returned for the case;
    the function then ran before the contract was asked, and a case outside it that made the
    function raise never gets here.

    A case outside the contract (NOT_SUPPORTED) and a case that cannot discriminate
    (MISTRUSTED: its exact output is zero on every attended row; the command reports it and
    does not fail on it) are pytest skips with the reason (a warning outside pytest). A
    backward case of ``grad=`` whose gradients were not judged fails. The message is the
    verdict, where and by how much the bound was broken, and the repro line."""
    if _is_function(fn):
        v: Verdict = _run(fn, [case], contract, grad or False)[0]
    else:
        if grad:
            raise TypeError("assert_conforms: grad= needs the function (fn), not its outputs")
        v = judge(case, fn, contract)
    if v.status == "NOT_SUPPORTED":
        return _skip(f"outside the contract: {v.message}")
    if v.status == "MISTRUSTED":
        return _skip(f"MISTRUSTED (the case cannot discriminate): {v.message}")
    if v.status == "QUALITY_WARNING":  # within the bound: the command does not fail on it
        warnings.warn(f"{case.id}: QUALITY_WARNING: {v.message}", stacklevel=2)
    elif not v.passed:
        raise AssertionError(f"{v.status} {case.id}: worst error/bound {v.worst_ratio:.3g} at "
                             f"{v.worst_where or '-'}\n{v.message}\nrepro: {v.repro}")
    if grad and case.params["backward"] and "dq" not in v.judged:
        raise AssertionError(f"{case.id}: grad= asks for the gradients and they were not "
                             f"judged ({v.status}: {v.message})\nrepro: {v.repro}")
