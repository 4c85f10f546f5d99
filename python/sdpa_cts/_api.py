"""The public API of sdpa_cts (re-exported by the package)."""

from __future__ import annotations

import dataclasses
import json
import sys
import warnings
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from . import _core
from ._frameworks import as_framework, normalize_outputs
from ._gradients import GRAD_STATE, make_grad_fn

Case = _core.Case


def _case_inputs(self: Case, framework: str = "numpy") -> dict:
    """The case's input tensors as a dict: ``q``, ``k``, ``v``, and ``mask`` (bool or additive)
    when the case has one, ``d_out`` for a backward case.

    Each is 4-D ``[B, H, rows, D]`` in the case's own strides and offsets (zero-copy where the
    framework allows; a packed case has B = 1 and its rows back to back). ``framework`` is
    ``"numpy"`` (bf16 as ``ml_dtypes.bfloat16`` when installed, else its bits as uint16),
    ``"torch"`` or ``"jax"``. While the case is being judged they view the judge's buffers:
    valid during the call, and must not be written.
    """
    state = GRAD_STATE.get(id(self))
    out = {k: as_framework(v, k, self.params["dtype"], framework)
           for k, v in self._inputs().items()}
    if state is not None:  # a gradient is being taken: q, k, v are the autograd leaves
        out.update(state.inputs(framework, out))
    return out


def _case_reference(self: Case) -> dict:
    """The reference outputs in f64: ``o`` [B, Hq, L, Dv], ``lse`` [B, Hq, L], and ``weights``
    [B, Hq, L, S] when the case asks for them (logical layouts, padding rows zero)."""
    return self._reference()


Case.inputs = _case_inputs
Case.reference = _case_reference


@dataclasses.dataclass(frozen=True)
class Contract:
    """What a function declares: how it rounds (the bound the judge applies) and what it
    accepts (a case outside it is NOT_SUPPORTED, never a failure).

    accumulate: type of the Q K^T and P V accumulators ("f32", or "f64").
    p_type: type P is rounded to before P V: "" (= accumulate), "input" (the input type, as
        PyTorch's math path rounds it), or a dtype name.
    ds_type: the backward's: type P and dS are rounded to before the gradient products ("",
        "input" as FlashAttention-2 and PyTorch's flash backward, or a dtype name).
    online_softmax, key_block: an online softmax over blocks of ``key_block`` keys.
    mma_block, mma_extra_bits: sums on tensor cores (block FMAs of ``mma_block`` products
        keeping ``mma_extra_bits`` alignment bits, truncated: 8 and 1 on A100, 16 and 2 on
        H100); 0 = sums rounded to nearest (docs/CONFORMANCE.md, "Tensor-core accumulation").
    dtypes: the input types it accepts.
    The boolean features are the suite's feature table (kernels/features.def, docs/KERNELS.md
    "The feature table"), by the same names, every one False unless declared, as for a C++
    backend or a plugin: a function declares what it takes (bool_mask, ..., empty_problems),
    what it returns (lse, weights: a case that asks for one the function does not return is
    judged on O and its gradients, the output recorded in ``Verdict.not_returned``), what it
    needs (last_dim_contiguous: stride 1 along the head
    dimension; backward_needs_lse: its gradient reads the forward's LSE) and what it claims
    (deterministic, batch_invariant: both verified by the judge). ``backward`` is not a field:
    a function has one when check() gets a ``grad``; d bias (``bias_gradient``) is not
    returned through this adapter.
    """

    accumulate: str = "f32"
    p_type: str = ""
    ds_type: str = ""
    online_softmax: bool = False
    key_block: int = 0
    mma_block: int = 0
    mma_extra_bits: int = 0
    dtypes: Sequence[str] = ("f32", "f16", "bf16")
    different_v_dim: bool = False
    bool_mask: bool = False
    additive_mask: bool = False
    causal_top_left: bool = False
    causal_bottom_right: bool = False
    window: bool = False
    softcap: bool = False
    dropout: bool = False
    gqa: bool = False
    padded_seqlens: bool = False
    packed_seqlens: bool = False
    lse: bool = False
    weights: bool = False
    empty_problems: bool = False
    last_dim_contiguous: bool = False
    backward_needs_lse: bool = False
    deterministic: bool = False
    batch_invariant: bool = False

    @classmethod
    def every_input(cls, **declared) -> "Contract":
        """A contract that takes every input the suite expresses (every feature of kind
        "accepts" but the outputs lse and weights), with no restriction and no claim; keyword
        arguments declare the rest (rounding, dtypes, lse=True, ...) or turn a feature off.
        The default of check(), judge() and assert_conforms(), which judge what a function
        computed whatever it takes."""
        accepts = {name: True for name, kind in _core._features()
                   if kind == "accepts" and name not in ("lse", "weights", "backward",
                                                         "bias_gradient")}
        accepts.update(declared)
        return cls(**accepts)

    def _native(self):
        flags = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                 if f.name not in ("accumulate", "p_type", "ds_type", "online_softmax",
                                   "key_block", "mma_block", "mma_extra_bits", "dtypes")}
        return _core._contract(self.accumulate, self.p_type, self.ds_type, self.online_softmax,
                               self.key_block, self.mma_block, self.mma_extra_bits,
                               list(self.dtypes), flags)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One judged case: ``status`` (PASS, FAIL, NOT_SUPPORTED, MISTRUSTED, ...), why
    (``message``), the largest error over its bound (``worst_ratio``, <= 1 passes) and where,
    per tensor (``tensor_ratios``), and the line that reproduces it (``repro``). ``expected``:
    the reason of the known-failures entry (``check(..., expect=FILE)``) that lists the case,
    "" when none does; a listed failure has status XFAIL. ``judged``: what was compared with its
    bound ("o", "lse", "weights", "dq", "dk", "dv"; empty when the case ended before, e.g.
    NOT_SUPPORTED); ``not_returned``: the outputs the case asks for that the function does not
    return by its contract (``lse``, ``weights``), so not judged."""

    case_id: str
    status: str
    message: str
    worst_ratio: float
    worst_where: str
    max_abs_error: float
    tensor_ratios: Mapping[str, float]
    seconds: float
    repro: str
    expected: str = ""
    judged: Sequence[str] = ()
    not_returned: Sequence[str] = ()

    @property
    def passed(self) -> bool:
        return self.status == "PASS"

    @classmethod
    def _from_json(cls, line: str) -> "Verdict":
        r = json.loads(line)
        # The records write a non-finite number as the string "inf" or "nan" (JSON has none).
        ratios = {k: float(x) for k, x in r.get("tensor_ratios", {}).items()}
        return cls(r["case_id"], r["status"], r["message"], float(r["worst_ratio"]),
                   r["worst_where"], float(r["max_abs_error"]), ratios, float(r["seconds"]),
                   r["repro"],
                   r.get("expected", ""), tuple(r.get("judged", ())),
                   tuple(r.get("not_returned", ())))

    def __str__(self) -> str:
        s = f"{self.status} {self.case_id}"
        if self.status not in ("PASS", "NOT_SUPPORTED"):
            s += f": {self.message}\n  repro: {self.repro}"
        return s


_FAILURES = ("FAIL", "CRASH", "TIMEOUT", "INVALID")


_QUANTITIES = ("o", "lse", "weights", "dq", "dk", "dv")


@dataclasses.dataclass(frozen=True)
class Summary:
    """The verdicts of a check, in case order, and their counts per status. ``passed``: no
    failure (FAIL, CRASH, TIMEOUT, INVALID), at least one PASS, and every judgement asked for
    made: ``unjudged`` lists what was asked and judged by no case (the gradients of
    ``grad=``, the hard generators' cases), each also a warning when check() returns."""

    verdicts: Sequence[Verdict]
    counts: Mapping[str, int]
    seconds: float
    report: Optional[str]
    unjudged: Sequence[str] = ()

    @property
    def passed(self) -> bool:
        return (self.counts.get("PASS", 0) > 0 and not self.unjudged
                and not any(self.counts.get(s, 0) for s in _FAILURES))

    @property
    def judged_counts(self) -> dict:
        """How many cases judged each quantity (o, lse, weights, dq, dk, dv)."""
        return {q: sum(q in v.judged for v in self.verdicts) for q in _QUANTITIES}

    @property
    def not_returned_counts(self) -> dict:
        """How many cases asked for an output the function does not return (lse, weights)."""
        out: dict = {}
        for v in self.verdicts:
            for q in v.not_returned:
                out[q] = out.get(q, 0) + 1
        return out

    @property
    def failures(self) -> list:
        """The verdicts that fail the check (FAIL, CRASH, TIMEOUT, INVALID): known failures
        (XFAIL) are not among them."""
        return [v for v in self.verdicts if v.status in _FAILURES]

    @property
    def unexpectedly_passing(self) -> list:
        """The verdicts that passed although the known-failures file lists them: an entry to
        take out of the file."""
        return [v for v in self.verdicts if v.expected and v.status == "PASS"]

    def __str__(self) -> str:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(self.counts.items()))
        judged = ", ".join(f"{q} {n}" for q, n in self.judged_counts.items())
        lines = [f"{len(self.verdicts)} cases: {counts} ({self.seconds:.1f} s)",
                 f"judged: {judged}"]
        if self.not_returned_counts:
            lines.append("asked for and not returned by the function, so not judged: " + ", ".join(
                f"{q} in {n} cases" for q, n in sorted(self.not_returned_counts.items())))
        lines += [f"NOT JUDGED: {u}" for u in self.unjudged]
        lines += [str(v) for v in self.failures[:20]]
        lines += [f"unexpectedly passing (listed as a known failure: {v.expected}): {v.case_id}"
                  for v in self.unexpectedly_passing[:20]]
        return "\n".join(lines)


def cases(tier: str = "", *, sample: int = 0, seed: int = 0, ids: Optional[Iterable[str]] = None,
          golden: Optional[Iterable[str]] = None, filter: str = "") -> list:
    """The cases of a tier (``"smoke"``, ``"ci"``, ``"nightly"`` or a tier file), ``sample``
    sampled cases, or the given case IDs (``ids``; with ``golden`` files, their cases), kept
    when their ID matches the regular expression ``filter``; ``seed`` re-seeds them. Raises
    ValueError for a bad tier, ID (a misspelt data generator included), file or filter, or
    when nothing is named (no default tier: say ``"smoke"``)."""
    for arg, value in (("ids", ids), ("golden", golden)):
        if isinstance(value, (str, bytes)):
            raise TypeError(f"{arg}= takes a list, and got the string {value!r}: "
                            f"{arg}=[{value!r}]")
    if not tier and not sample and not ids and not golden:
        raise ValueError("no cases named: give a tier (\"smoke\", \"ci\", \"nightly\" or a tier "
                         "file), sample=N, ids=[...] or golden=[...]")
    return _core._select(tier, sample, seed, list(ids or []), list(golden or []), filter)


def reference(case: Case) -> dict:
    """The reference outputs of ``case`` in f64 (see Case.reference)."""
    return case.reference()


def _progress_printer(total_hint: int):
    tty = sys.stderr.isatty()
    counts: dict = {}

    def progress(done: int, total: int, line: str) -> None:
        v = Verdict._from_json(line)
        counts[v.status] = counts.get(v.status, 0) + 1
        if v.status in _FAILURES:
            print(("\r\033[K" if tty else "") + str(v), file=sys.stderr)
        if tty:
            print(f"\r\033[K[{done}/{total}] pass {counts.get('PASS', 0)} fail "
                  f"{counts.get('FAIL', 0)}  {v.case_id[:60]}", end="", file=sys.stderr,
                  flush=True)
            if done == total:
                print(file=sys.stderr)

    return progress


def check(fn: Callable[[Case], Any], tier: str = "", *, contract: Optional[Contract] = None,
          sample: int = 0, seed: int = 0, ids: Optional[Iterable[str]] = None,
          golden: Optional[Iterable[str]] = None, filter: str = "", report: Optional[str] = None,
          threads: int = 0, progress: bool = True, grad: Any = False,
          expect: Optional[str] = None, expect_facts: Optional[dict] = None,
          isolate: bool = False, timeout: Optional[float] = None) -> Summary:
    """Runs ``fn(case)`` on every selected case (``tier``, ``sample``, ``ids``, ``golden``,
    ``filter``: as ``cases``) and judges what it returns against the reference with the bound
    of ``contract``. ``fn`` returns O (any host array: numpy, PyTorch, JAX), or a dict with
    ``"o"`` and, when the case asks for them, ``"lse"`` and ``"weights"``. A case outside the
    contract is NOT_SUPPORTED; an exception raised by ``fn`` on a case it declared is a FAIL
    with the traceback. ``report``: a folder for the reports of ``sdpa-cts run``.

    ``grad``: also judge the backward of the backward cases (``bwd``): dQ, dK, dV of ``fn``'s O
    for the case's dO, taken by the framework's own autograd (``torch.autograd.grad`` for the
    tensors of ``case.inputs(framework="torch")``, ``jax.vjp`` for ``framework="jax"``);
    ``True`` finds the framework from ``fn``'s call, ``"torch"`` or ``"jax"`` names it; a
    function ``grad(case) -> {"dq": ..., "dk": ..., "dv": ...}`` is an explicit backward. The
    inputs then include ``d_out``.

    ``expect``: a known-failures file (the grammar of ``sdpa-cts run --expect``, with the
    function's name as the backend): a listed failure is XFAIL, which does not fail the check,
    and a listed case that passes is in ``Summary.unexpectedly_passing``. An entry may hold on
    some hosts only (``[when cpu:amx_bf16]``, ``[when torch>=2.15]``: the grammar of
    ``--expect``): ``expect_facts`` gives the library versions such conditions compare with,
    ``{"torch": torch.__version__}``; this host's CPU flags and ISA target are found here.

    ``isolate``: run ``fn`` in a worker process forked from this one (as ``sdpa-cts run``
    does), so that a crash on a case (a segfault in a kernel, ``os.abort()``) is that case's
    CRASH record and the run goes on in a new worker. ``timeout``: seconds per case, after
    which the worker is killed and the case is TIMEOUT (a timeout needs a process to kill: it
    implies ``isolate``). docs/PYTHON.md, "Isolation and timeouts", says what they cost and
    where fork() is not safe (JAX)."""
    selected = cases(tier, sample=sample, seed=seed, ids=ids, golden=golden, filter=filter)
    if timeout is not None and not timeout > 0:
        raise ValueError(f"check(): timeout={timeout!r}: a number of seconds above 0")
    if (isolate or timeout is not None) and "jax" in sys.modules:
        warnings.warn("check(isolate=True / timeout=): JAX is imported, and its runtime is not "
                      "fork-safe: a JAX function in a forked worker hangs (every case TIMEOUT; "
                      "docs/PYTHON.md, \"Isolation and timeouts\")", RuntimeWarning, stacklevel=2)
    verdicts = _run(fn, selected, contract, grad, threads=threads, tier=tier or "custom",
                    seed=seed, report=report or "", expect=expect or "", expect_facts=expect_facts,
                    progress=_progress_printer(len(selected)) if progress else None,
                    isolate=isolate or timeout is not None, timeout=timeout or 0.0)
    counts: dict = {}
    for v in verdicts:
        counts[v.status] = counts.get(v.status, 0) + 1
    unjudged = _unjudged(selected, verdicts, bool(grad))
    for u in unjudged:
        warnings.warn(f"sdpa_cts.check: {u}", UnjudgedWarning, stacklevel=2)
    return Summary(verdicts, counts, sum(v.seconds for v in verdicts), report, tuple(unjudged))


def _run(fn, selected, contract, grad, *, threads=0, tier="custom", seed=0, report="",
         expect="", expect_facts=None, progress=None, isolate=False, timeout=0.0) -> list:
    """The verdicts of ``fn`` on the Case objects ``selected``, through the engine: each case's
    contract is asked before ``fn`` is called (a case outside it is NOT_SUPPORTED)."""
    name = getattr(fn, "__name__", "fn")

    def call(case):
        return normalize_outputs(fn(case))

    grad_fn = make_grad_fn(fn, grad) if grad else None
    contract = contract if contract is not None else Contract.every_input()
    lines = _core._run_cases(call, grad_fn, name, contract._native(), list(selected), threads,
                             tier, seed, report, expect,
                             {k: str(v) for k, v in (expect_facts or {}).items()}, progress,
                             isolate, float(timeout))
    return [Verdict._from_json(x) for x in lines]


class UnjudgedWarning(UserWarning):
    """A judgement check() was asked for and no case made (Summary.unjudged)."""


# The generators whose cases exercise the numerics' hard corners (docs/CONFORMANCE.md): a run
# that judged none of them says nothing about overflow, underflow or NaN handling.
_HARD_GENERATORS = ("large_logits", "logits_88", "v_near_max", "denormals", "nan_beyond",
                    "negative_logits")


def _generator(case_id: str) -> str:
    for field in case_id.split("."):
        if field.startswith("gen="):
            return field[4:]
    return ""


def _statuses(vs) -> str:
    counts: dict = {}
    for v in vs:
        counts[v.status] = counts.get(v.status, 0) + 1
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items()))


def _unjudged(selected, verdicts, grad: bool) -> list:
    """What the run was asked to judge and no case judged, each a sentence with the counts."""
    out = []
    if grad:
        backward = [v for c, v in zip(selected, verdicts) if c.params["backward"]]
        if not backward:
            out.append("grad= asks for the gradients, and no selected case is a backward case "
                       "(bwd)")
        elif not any("dq" in v.judged for v in backward):
            first = next((v for v in backward if v.message), None)
            out.append(f"grad= asks for the gradients, and none of the {len(backward)} backward "
                       f"cases judged them ({_statuses(backward)})" +
                       (f"; e.g. {first.case_id}: {first.message}" if first else ""))
    hard = [v for c, v in zip(selected, verdicts)
            if _generator(c.id) in _HARD_GENERATORS or getattr(c, "golden", "")]
    if hard and not any(v.judged for v in hard):
        first = next((v for v in hard if v.message), None)
        out.append(f"every one of the {len(hard)} cases of the hard generators (overflow, "
                   f"underflow, NaN, golden) was left unjudged ({_statuses(hard)})" +
                   (f"; e.g. {first.case_id}: {first.message}" if first else ""))
    return out


def expectations(path: str, facts: Optional[dict] = None) -> list:
    """The entries of a known-failures file (the grammar of ``sdpa-cts run --expect``), as dicts
    in file order: ``line``, ``text`` (the line as written), ``backend``, ``cases``, ``reason``,
    ``issue``, ``condition`` (the terms of its ``[when ...]``, ``""`` for none) and ``applies``
    (whether the condition holds on this host, with ``facts`` as for ``check(expect_facts=)``).
    Raises ValueError naming the line of a malformed entry or condition."""
    return list(_core._expectations(path, {k: str(v) for k, v in (facts or {}).items()}))


def judge(case: Case, outputs: Any, contract: Optional[Contract] = None) -> Verdict:
    """Judges ``outputs`` (O, or a dict with ``"o"``, ``"lse"``, ``"weights"``) as the outputs
    of ``case`` (a Case, or a case ID) under ``contract``."""
    if isinstance(case, str):
        case = cases(ids=[case])[0]
    elif not isinstance(case, Case):
        raise TypeError(f"judge(): case is a sdpa_cts.Case or a case ID, not "
                        f"{type(case).__name__}")
    outputs = normalize_outputs(outputs)

    def recorded(_case):
        return outputs

    contract = contract if contract is not None else Contract.every_input()
    lines = _core._run_cases(recorded, None, "outputs", contract._native(), [case], 0, "custom",
                             0, "", "", {}, None)
    return Verdict._from_json(lines[0])


@dataclasses.dataclass(frozen=True)
class Certification:
    """A certification's verdict: ``met`` when every required case of the profile passed;
    ``required`` / ``required_passed`` / ``required_mistrusted`` count its required records,
    ``outside`` those outside the features it declares; ``reasons``: why it is not met, a line
    per failing case; ``out``: the bundle (``sdpa-cts bundle verify OUT`` checks it)."""

    met: bool
    required: int
    required_passed: int
    required_mistrusted: int
    outside: int
    reasons: Sequence[str]
    out: str

    def __str__(self) -> str:
        head = (f"{'MET' if self.met else 'NOT MET'} ({self.required_passed}/{self.required} "
                f"required cases pass, {self.outside} outside its features); bundle: {self.out}")
        return "\n".join([head] + [f"  {r}" for r in self.reasons[:20]])


def certify(fn: Callable[[Case], Any], profile: str, *, out: str,
            contract: Optional[Contract] = None, seed: Optional[int] = None, threads: int = 0,
            progress: bool = True, grad: Any = False) -> Certification:
    """Runs a certification profile (``"inference-core"``, ``"training"``, ``"long-context"``,
    ``"full"`` or a profile file) on ``fn`` as ``check`` does, and writes the bundle that
    ``sdpa-cts certify`` writes into ``out`` (absent, empty or an earlier bundle; the manifest
    names the function and its contract). ``seed``: the profile's sampled cases' seed (default:
    the profile's). ``grad``: as ``check``'s, for the profiles that require the backward."""
    name = getattr(fn, "__name__", "fn")

    def call(case):
        return normalize_outputs(fn(case))

    grad_fn = make_grad_fn(fn, grad) if grad else None
    contract = contract if contract is not None else Contract.every_input()
    v = _core._certify(call, grad_fn, name, contract._native(), profile, seed, out, threads,
                       _progress_printer(0) if progress else None)
    return Certification(v["met"], v["required"], v["required_passed"], v["required_mistrusted"],
                         v["outside"], list(v["reasons"]), out)
