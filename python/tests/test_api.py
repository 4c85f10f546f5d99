"""The Python API: cases, inputs, the reference, judge and check (docs/PYTHON.md)."""

import dataclasses
import json
import os
import warnings

import numpy as np
import pytest

import sdpa_cts
from conftest import PLAIN, PLAIN_IDS, numpy_sdpa


def test_cases_of_a_tier_and_by_id():
    smoke = sdpa_cts.cases("smoke")
    assert len(smoke) > 10
    assert all(isinstance(c.id, str) and c.id for c in smoke)
    one = sdpa_cts.cases(ids=[PLAIN_IDS[0]])
    assert [c.id for c in one] == [PLAIN_IDS[0]]
    kept = sdpa_cts.cases("smoke", filter=r"\.bf16\.")
    assert kept and all(".bf16." in c.id for c in kept)


def test_bad_selection_is_a_clear_error():
    with pytest.raises(ValueError, match="nosuchtier"):
        sdpa_cts.cases("nosuchtier")
    with pytest.raises(ValueError):
        sdpa_cts.cases(ids=["b1.hq2.bogus"])


def test_api_misuses_are_clear_errors():
    with pytest.raises(TypeError, match=r"ids= takes a list, and got the string 'b1"):
        sdpa_cts.cases(ids="b1.hq2.l8.s8.dqk8.f32.seed1")
    with pytest.raises(ValueError, match="unknown data generator 'normall'"):
        sdpa_cts.cases(ids=["b1.hq2.l8.s8.dqk8.f32.seed1.gen=normall"])
    with pytest.raises(ValueError, match="no cases named: give a tier"):
        sdpa_cts.check(numpy_sdpa, contract=PLAIN, progress=False)
    with pytest.raises(TypeError, match="judge\\(\\): case is a sdpa_cts.Case or a case ID"):
        sdpa_cts.judge(42, np.zeros(1))
    # A case ID stands for its case.
    c = sdpa_cts.cases(ids=[PLAIN_IDS[1]])[0]
    o = sdpa_cts.reference(c)["o"].astype(np.float32)
    assert sdpa_cts.judge(PLAIN_IDS[1], o, PLAIN).status == "PASS"


def test_params_and_inputs_in_the_case_layout():
    c = sdpa_cts.cases(ids=["b2.hq4.hkv2.l33.s47.dqk40.dv24.f32.lay=bshd.seed1"])[0]
    p = c.params
    assert (p["batch"], p["heads_q"], p["heads_kv"], p["len_q"], p["len_kv"]) == (2, 4, 2, 33, 47)
    assert p["dtype"] == "f32" and p["causal"] == "none"
    x = c.inputs()
    assert x["q"].shape == (2, 4, 33, 40) and x["v"].shape == (2, 2, 47, 24)
    assert x["q"].dtype == np.float32
    # bshd: the head stride is one row of D elements, the row stride H * D.
    assert x["q"].strides[1] == 40 * 4 and x["q"].strides[2] == 4 * 40 * 4
    assert not x["q"].flags.writeable


def test_reference_shapes():
    c = sdpa_cts.cases(ids=[PLAIN_IDS[0]])[0]
    r = sdpa_cts.reference(c)
    assert r["o"].shape == (2, 4, 33, 24) and r["o"].dtype == np.float64
    assert r["lse"].shape == (2, 4, 33)


def test_judge_passes_the_reference_and_fails_a_wrong_output():
    c = sdpa_cts.cases(ids=[PLAIN_IDS[0]])[0]
    o = sdpa_cts.reference(c)["o"].astype(np.float32)
    v = sdpa_cts.judge(c, o)
    assert v.status == "PASS", v
    assert v.worst_ratio <= 1
    bad = o.copy()
    bad[1, 2, 3, 4] += 1e-3
    w = sdpa_cts.judge(c, bad)
    assert w.status == "FAIL" and w.worst_ratio > 1
    assert "o[1,2,3,4]" in w.worst_where, w.worst_where
    assert PLAIN_IDS[0] in w.repro


def test_judge_names_a_shape_or_dtype_mismatch():
    c = sdpa_cts.cases(ids=[PLAIN_IDS[0]])[0]
    o = sdpa_cts.reference(c)["o"]
    v = sdpa_cts.judge(c, o[:, :, :-1].astype(np.float32))
    assert v.status == "FAIL" and "has shape (2, 4, 32, 24)" in v.message, v.message
    v = sdpa_cts.judge(c, o)  # f64 for an f32 case
    assert v.status == "FAIL" and "has dtype float64" in v.message, v.message


def test_check_a_numpy_function(tmp_path):
    s = sdpa_cts.check(numpy_sdpa, ids=PLAIN_IDS, contract=PLAIN, report=str(tmp_path),
                       progress=False)
    assert s.passed, s
    assert s.counts == {"PASS": len(PLAIN_IDS)}, s
    for f in ("results.jsonl", "summary.json", "junit.xml", "summary.md", "report.html"):
        assert (tmp_path / f).exists(), f
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    assert [json.loads(x)["case_id"] for x in lines] == [c.id for c in sdpa_cts.cases(ids=PLAIN_IDS)]


def test_check_catches_a_wrong_scale():
    def wrong_scale(case):
        return numpy_sdpa(case, scale_factor=1.01)

    s = sdpa_cts.check(wrong_scale, ids=PLAIN_IDS, contract=PLAIN, progress=False)
    assert not s.passed
    assert s.counts.get("FAIL", 0) >= 3, s
    assert all("sdpa_cts.check(wrong_scale, ids=[" in v.repro for v in s.failures)


def test_known_failures_are_xfail_and_a_listed_pass_is_reported(tmp_path, capsys):
    # A wrong scale fails every case; the file lists the f32 ones (by glob) and one case that a
    # correct function passes.
    expect = tmp_path / "known.expect"
    expect.write_text("# known failures of wrong_scale\n"
                      "wrong_scale *.f32.* planted wrong scale #1\n"
                      f"numpy_sdpa {PLAIN_IDS[0]} listed although correct\n")

    def wrong_scale(case):
        return numpy_sdpa(case, scale_factor=1.01)

    s = sdpa_cts.check(wrong_scale, ids=PLAIN_IDS, contract=PLAIN, expect=str(expect),
                       report=str(tmp_path / "r"))
    printed = capsys.readouterr().err  # progress prints failures as they happen, not XFAIL
    ids = [c.id for c in sdpa_cts.cases(ids=PLAIN_IDS)]
    assert all(f"FAIL {c}" not in printed for c in ids if ".f32." in c), printed
    assert all(f"FAIL {c}" in printed for c in ids if ".f32." not in c), printed
    f32 = [c.id for c in sdpa_cts.cases(ids=PLAIN_IDS) if ".f32." in c.id]
    assert s.counts.get("XFAIL", 0) == len(f32), s
    assert {v.case_id for v in s.verdicts if v.status == "XFAIL"} == set(f32)
    assert all(v.expected == "planted wrong scale #1" for v in s.verdicts if v.status == "XFAIL")
    assert s.failures and all(".f32." not in v.case_id for v in s.failures), s
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["expectations"].endswith("known.expect"), summary

    s = sdpa_cts.check(numpy_sdpa, ids=PLAIN_IDS, contract=PLAIN, expect=str(expect),
                       progress=False)
    assert s.passed and [v.case_id for v in s.unexpectedly_passing] == [PLAIN_IDS[0]], s
    assert "unexpectedly passing" in str(s)

    bad = tmp_path / "bad.expect"
    bad.write_text("numpy_sdpa *\n")  # no reason
    with pytest.raises(ValueError, match="bad.expect"):
        sdpa_cts.check(numpy_sdpa, ids=PLAIN_IDS, contract=PLAIN, expect=str(bad), progress=False)


def test_known_failures_conditioned_on_the_host_and_versions(tmp_path):
    # '[when ...]' entries apply where their condition holds: a CPU flag no CPU has, a version
    # given by expect_facts; elsewhere the case is judged as if unlisted (docs/PYTHON.md).
    ids = [c.id for c in sdpa_cts.cases(ids=PLAIN_IDS[:3])]  # canonical, as records name them
    expect = tmp_path / "hosts.expect"
    expect.write_text(f"[when cpu:no_such_flag] wrong_scale {ids[0]} on other hosts only\n"
                      f"[when !cpu:no_such_flag lib>=2.15] wrong_scale {ids[1]} from lib 2.15\n"
                      f"[when lib<2.15] numpy_sdpa {ids[2]} listed before lib 2.15 only\n")

    def wrong_scale(case):
        return numpy_sdpa(case, scale_factor=1.01)

    s = sdpa_cts.check(wrong_scale, ids=PLAIN_IDS[:2], contract=PLAIN, expect=str(expect),
                       expect_facts={"lib": "2.15.0+cpu"}, progress=False)
    assert [v.case_id for v in s.failures] == [ids[0]], s  # its entry does not apply here
    assert [v.case_id for v in s.verdicts if v.status == "XFAIL"] == [ids[1]], s
    s = sdpa_cts.check(wrong_scale, ids=PLAIN_IDS[:2], contract=PLAIN, expect=str(expect),
                       expect_facts={"lib": "2.14.9"}, progress=False)
    assert len(s.failures) == 2 and "XFAIL" not in s.counts, s
    # A listed case that passes is unexpectedly passing only where its entry applies.
    s = sdpa_cts.check(numpy_sdpa, ids=PLAIN_IDS[2:3], contract=PLAIN, expect=str(expect),
                       expect_facts={"lib": "2.9"}, progress=False)
    assert len(s.unexpectedly_passing) == 1, s
    s = sdpa_cts.check(numpy_sdpa, ids=PLAIN_IDS[2:3], contract=PLAIN, expect=str(expect),
                       expect_facts={"lib": "2.15"}, progress=False)
    assert s.passed and not s.unexpectedly_passing, s
    # The entries as the peers' --write-expect reads them.
    entries = sdpa_cts.expectations(str(expect), {"lib": "2.15"})
    assert [(e["line"], e["condition"], e["applies"]) for e in entries] == [
        (1, "cpu:no_such_flag", False), (2, "!cpu:no_such_flag lib>=2.15", True),
        (3, "lib<2.15", False)]
    assert entries[0]["text"].startswith("[when cpu:no_such_flag] wrong_scale ")
    # A version nobody gave, and a malformed condition: errors naming the line.
    with pytest.raises(ValueError, match=r"hosts.expect:2: .*'lib', which was not given"):
        sdpa_cts.check(numpy_sdpa, ids=PLAIN_IDS[:1], contract=PLAIN, expect=str(expect),
                       progress=False)
    bad = tmp_path / "bad.expect"
    bad.write_text("# c\n[when lib=2] numpy_sdpa * reason\n")
    with pytest.raises(ValueError, match=r"bad.expect:2: bad operator in 'lib=2'"):
        sdpa_cts.expectations(str(bad))
    with pytest.raises(ValueError, match="expect_facts needs expect=FILE"):
        sdpa_cts.check(numpy_sdpa, ids=PLAIN_IDS[:1], contract=PLAIN, expect_facts={"lib": "1"},
                       progress=False)


def test_declined_cases_are_not_supported_and_raising_is_a_failure():
    s = sdpa_cts.check(numpy_sdpa, ids=PLAIN_IDS, contract=dataclasses.replace(PLAIN, dtypes=("f32",)),
                       progress=False)
    assert s.counts == {"PASS": 2, "NOT_SUPPORTED": 2}, s

    def broken(case):
        raise RuntimeError("kernel exploded")

    s = sdpa_cts.check(broken, ids=PLAIN_IDS[:1], contract=PLAIN, progress=False)
    assert s.counts == {"FAIL": 1}
    assert "kernel exploded" in s.verdicts[0].message
    assert s.verdicts[0].message.startswith("on a case its contract accepts"), s.verdicts[0].message
    assert "supports()" not in s.verdicts[0].message
    assert "Traceback" in s.verdicts[0].message or "RuntimeError" in s.verdicts[0].message


def test_dict_outputs_with_the_lse():
    c = sdpa_cts.cases(ids=["b1.hq2.hkv2.l33.s65.dqk32.dv32.f32.lse.seed62.gen=sparse"])[0]
    r = sdpa_cts.reference(c)
    o, lse = r["o"].astype(np.float32), r["lse"].astype(np.float32)
    with_lse = sdpa_cts.Contract(lse=True)
    assert sdpa_cts.judge(c, {"o": o, "lse": lse}, with_lse).status == "PASS"
    assert sdpa_cts.judge(c, (o, lse), with_lse).status == "PASS"
    v = sdpa_cts.judge(c, {"o": o, "lse": lse + 1e-3}, with_lse)
    assert v.status == "FAIL" and "lse" in v.worst_where, v
    v = sdpa_cts.judge(c, {"o": o}, with_lse)
    assert v.status == "FAIL" and "asks for the LSE" in v.message, v.message
    v = sdpa_cts.judge(c, {"o": o, "out": lse}, with_lse)
    assert v.status == "FAIL" and "key 'out'" in v.message, v.message


def test_backward_through_an_explicit_gradient():
    from conftest import BWD_IDS, numpy_sdpa_backward

    s = sdpa_cts.check(numpy_sdpa, ids=BWD_IDS, contract=PLAIN, grad=numpy_sdpa_backward,
                       progress=False)
    assert s.counts == {"PASS": len(BWD_IDS)}, s
    assert all(set(v.tensor_ratios) >= {"dq", "dk", "dv"} for v in s.verdicts)

    def without_d(case):
        return numpy_sdpa_backward(case, d_term=False)

    s = sdpa_cts.check(numpy_sdpa, ids=BWD_IDS, contract=PLAIN, grad=without_d, progress=False)
    assert s.counts.get("FAIL", 0) == len(BWD_IDS), s
    # Without a gradient, a backward case is declined, with the reason.
    s = sdpa_cts.check(numpy_sdpa, ids=BWD_IDS[:1], contract=PLAIN, progress=False)
    assert s.counts == {"NOT_SUPPORTED": 1} and "backward" in s.verdicts[0].message


def test_a_function_without_the_lse_is_judged_on_o_and_its_gradients():
    """A case that asks for the LSE is judged on O and the gradients of a function that returns
    O alone, the LSE listed as not returned (it was NOT_SUPPORTED: grad= judged nothing)."""
    from conftest import BWD_IDS, numpy_sdpa_backward

    ids = [i.replace(".bwd.", ".lse.bwd.") for i in BWD_IDS]
    s = sdpa_cts.check(numpy_sdpa, ids=ids, contract=PLAIN, grad=numpy_sdpa_backward,
                       progress=False)
    assert s.counts == {"PASS": len(ids)}, s
    assert all(v.judged == ("o", "dq", "dk", "dv") for v in s.verdicts), s.verdicts
    assert all(v.not_returned == ("lse",) for v in s.verdicts), s.verdicts
    assert s.judged_counts["dq"] == len(ids) and s.judged_counts["lse"] == 0
    assert s.not_returned_counts == {"lse": len(ids)}
    assert f"dq {len(ids)}" in str(s) and "lse in 3 cases" in str(s), str(s)
    assert s.passed and not s.unjudged
    # A wrong O is still a FAIL there (and its gradients are then not judged: said so).
    with pytest.warns(sdpa_cts.UnjudgedWarning, match=r"none of the 1 backward cases .*FAIL 1"):
        s = sdpa_cts.check(lambda c: numpy_sdpa(c, scale_factor=1.5), ids=ids[:1],
                           contract=PLAIN, grad=numpy_sdpa_backward, progress=False)
    assert s.counts == {"FAIL": 1}, s


def test_grad_that_judges_no_gradient_is_not_a_pass():
    """grad= on a run where no backward case was judged (here: its dtypes declined) fails the
    summary with the counts, and warns; so does a run whose hard generators were all declined."""
    from conftest import BWD_IDS, numpy_sdpa_backward

    only_f16 = dataclasses.replace(PLAIN, dtypes=("f16",))
    ids = BWD_IDS + ["b1.hq2.l9.s31.dqk16.f16.causal=br.seed3.gen=normal"]
    with pytest.warns(sdpa_cts.UnjudgedWarning, match="none of the 3 backward cases judged"):
        s = sdpa_cts.check(numpy_sdpa, ids=ids, contract=only_f16, grad=numpy_sdpa_backward,
                           progress=False)
    assert s.counts == {"PASS": 1, "NOT_SUPPORTED": 3}, s
    assert not s.passed and "NOT JUDGED: grad= asks for the gradients" in str(s), str(s)
    hard = ["b1.hq2.hkv2.l33.s65.dqk32.dv32.f32.seed45.gen=v_near_max",
            "b1.hq2.l9.s31.dqk16.f16.causal=br.seed3.gen=normal"]
    with pytest.warns(sdpa_cts.UnjudgedWarning, match="every one of the 1 cases of the hard"):
        s = sdpa_cts.check(numpy_sdpa, ids=hard, contract=only_f16, progress=False)
    assert not s.passed, s
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sdpa_cts.check(numpy_sdpa, ids=hard, contract=PLAIN, progress=False).passed


def test_isolation_a_crash_is_a_crash_record_and_the_run_goes_on():
    """isolate=True: the function runs in a forked worker; a crash on one case is its CRASH
    record, the next case runs in a new worker; other verdicts are those of the in-process
    run (this process has run the judge's OpenMP before: the workers must not wait for it)."""
    ids = [c.id for c in sdpa_cts.cases(ids=PLAIN_IDS)]

    def crashes_on_the_first(case):
        if case.id == ids[0]:
            os.abort()
        return numpy_sdpa(case, scale_factor=1.01 if case.id == ids[2] else 1.0)

    s = sdpa_cts.check(crashes_on_the_first, ids=ids, contract=PLAIN, isolate=True,
                       progress=False)
    assert [v.status for v in s.verdicts] == ["CRASH", "PASS", "FAIL", "PASS"], s
    assert "signal 6" in s.verdicts[0].message, s.verdicts[0].message
    assert s.verdicts[0].repro.endswith("isolate=True)"), s.verdicts[0].repro
    inproc = sdpa_cts.check(lambda c: numpy_sdpa(c, scale_factor=1.01 if c.id == ids[2] else 1.0),
                            ids=ids[1:], contract=PLAIN, progress=False)
    assert [v.status for v in inproc.verdicts] == [v.status for v in s.verdicts[1:]]
    assert [v.worst_ratio for v in inproc.verdicts] == [v.worst_ratio for v in s.verdicts[1:]]


def test_a_hanging_function_is_a_timeout_and_the_run_goes_on():
    import time

    ids = [c.id for c in sdpa_cts.cases(ids=PLAIN_IDS[:2])]

    def hangs_on_the_first(case):
        if case.id == ids[0]:
            time.sleep(600)
        return numpy_sdpa(case)

    t0 = time.monotonic()
    s = sdpa_cts.check(hangs_on_the_first, ids=ids, contract=PLAIN, timeout=2, progress=False)
    assert [v.status for v in s.verdicts] == ["TIMEOUT", "PASS"], s
    assert "timeout of 2" in s.verdicts[0].message, s.verdicts[0].message
    assert time.monotonic() - t0 < 60
    with pytest.raises(ValueError, match="timeout=0"):
        sdpa_cts.check(numpy_sdpa, ids=ids, contract=PLAIN, timeout=0, progress=False)


def test_the_reference_inside_the_judged_function():
    """A function may call sdpa_cts.reference on the case it is given (it then reads the case's
    own inputs, which equal the run's)."""

    def reference_as_fn(case):
        return sdpa_cts.reference(case)["o"].astype(np.float32)

    s = sdpa_cts.check(reference_as_fn, ids=PLAIN_IDS[:2], contract=PLAIN, progress=False)
    assert s.counts == {"PASS": 2}, s


def test_certify_writes_a_bundle_that_verifies(tmp_path):
    import sdpa_cts._core as core

    out = tmp_path / "bundle"
    c = sdpa_cts.certify(numpy_sdpa, "inference-core", out=str(out), contract=PLAIN,
                         progress=False)
    assert not c.met and c.required > 0 and c.required_passed > 0, c
    assert c.reasons and all(isinstance(r, str) for r in c.reasons)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["backend"]["python"] == {"function": "numpy_sdpa"}
    assert manifest["verdict"]["met"] is False
    assert core._bundle_problems(str(out)) == []
    results = out / "results.jsonl"
    results.write_text(results.read_text().replace('"PASS"', '"FAIL"', 1))
    assert core._bundle_problems(str(out)), "an edited bundle must not verify"


def test_tensor_core_accumulation_widens_the_bound_of_long_sums():
    # V all positive, 16384 keys: an output 1.1e-3 off (relative) breaks the bound of sums
    # rounded to nearest, and is within the worst case of A100's truncating block FMAs
    # (docs/CONFORMANCE.md, "Tensor-core accumulation").
    c = sdpa_cts.cases(ids=["b1.hq1.hkv1.l2.s16384.dqk16.dv16.f16.seed3.gen=v_positive"])[0]
    o = (sdpa_cts.reference(c)["o"] * (1 + 1.1e-3)).astype(np.float16)
    assert sdpa_cts.judge(c, o, sdpa_cts.Contract()).status == "FAIL"
    tc = sdpa_cts.Contract(mma_block=8, mma_extra_bits=1)
    assert sdpa_cts.judge(c, o, tc).status == "PASS"
    with pytest.raises(ValueError, match="mma_block 100"):
        sdpa_cts.Contract(mma_block=100, mma_extra_bits=1)._native()


def test_the_contract_is_the_feature_table():
    # One name and one default per feature (kernels/features.def): the Contract's boolean
    # fields are the table's features, in its order, each False unless declared; `backward`
    # comes from grad= and d bias is not returned through this adapter.
    table = [name for name, _ in sdpa_cts._api._core._features()]
    derived = {"backward", "bias_gradient"}
    rounding = {"online_softmax"}
    flags = [f for f in dataclasses.fields(sdpa_cts.Contract)
             if f.type in (bool, "bool") and f.name not in rounding]
    assert [f.name for f in flags] == [n for n in table if n not in derived]
    assert all(f.default is False for f in flags)
    sdpa_cts.Contract()._native()  # every field is a feature the native side knows
    every = sdpa_cts.Contract.every_input()
    assert every.gqa and every.dropout and not every.lse and not every.deterministic
    with pytest.raises(ValueError, match="'backward' is not declared"):
        sdpa_cts._api._core._contract("f32", "", "", False, 0, 0, 0, ["f32"], {"backward": True})
