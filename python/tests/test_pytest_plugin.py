"""The pytest plugin (entry point pytest11): the sdpa_case fixture and assert_conforms."""

import inspect

import dataclasses

import numpy as np
import pytest

import sdpa_cts
from conftest import BWD_IDS, PLAIN, numpy_sdpa, numpy_sdpa_backward
from sdpa_cts.testing import assert_conforms

PLAIN_TEST = '''
import sdpa_cts
from sdpa_cts.testing import assert_conforms

PLAIN = sdpa_cts.Contract(different_v_dim=True, causal_top_left=True, causal_bottom_right=True,
                          gqa=True, empty_problems=True)

{impl}

def test_attention(sdpa_case):
    assert_conforms(sdpa_case, lambda case: numpy_sdpa(case, SCALE), PLAIN)
'''


def make(pytester, scale):
    impl = "import numpy as np\nimport ml_dtypes\n" + inspect.getsource(numpy_sdpa)
    pytester.makepyfile(PLAIN_TEST.format(impl=impl) + f"\nSCALE = {scale}\n")


def test_test_names_are_case_ids_and_k_selects(pytester):
    make(pytester, 1.0)
    r = pytester.runpytest("--sdpa-tier", "smoke", "--collect-only", "-q")
    names = [x for x in r.outlines if "test_attention[" in x]
    assert len(names) > 10
    assert any("test_attention[b1.hq" in x for x in names)
    r = pytester.runpytest("--sdpa-tier", "smoke", "-q", "-k", "f32 and not mask and not win")
    outcomes = r.parseoutcomes()
    assert outcomes.get("passed", 0) > 0 and "failed" not in outcomes, r.outlines[-5:]


def test_a_wrong_function_fails_with_the_repro(pytester):
    make(pytester, 1.05)
    r = pytester.runpytest("--sdpa-tier", "smoke", "-q", "-x", "-k", "f32 and not mask and not win")
    assert r.parseoutcomes().get("failed") == 1
    out = "\n".join(r.outlines)
    assert "worst error/bound" in out and "repro: sdpa_cts.check(" in out


def test_xdist_shards_the_cases(pytester):
    # pytest-xdist: every worker collects the same case IDs in the same order, so -n 2 runs the
    # selection once, split between two processes, and a wrong function still fails.
    make(pytester, 1.0)
    args = ("--sdpa-tier", "smoke", "-q", "-p", "xdist", "-k", "f32 and not mask and not win")
    serial = pytester.runpytest_subprocess(*args).parseoutcomes()
    sharded = pytester.runpytest_subprocess(*args, "-n", "2")
    assert sharded.parseoutcomes().get("passed") == serial.get("passed") > 0, sharded.outlines[-5:]
    assert "bringing up nodes" in "\n".join(sharded.outlines)  # xdist's workers ran them
    make(pytester, 1.05)
    wrong = pytester.runpytest_subprocess(*args, "-n", "2").parseoutcomes()
    assert wrong.get("failed", 0) > 0, wrong


def test_the_contract_is_asked_before_the_function_runs():
    """A case outside the contract is skipped without calling the function (it was called
    first, and its exception on such a case was the test's failure)."""
    calls = []

    def f32_only(case):
        calls.append(case.id)
        if case.params["dtype"] != "f32":
            raise TypeError("this kernel takes f32 only")
        return numpy_sdpa(case)

    f32 = dataclasses.replace(PLAIN, dtypes=("f32",))
    f16 = sdpa_cts.cases(ids=["b1.hq2.l9.s31.dqk16.f16.causal=br.seed3.gen=normal"])[0]
    with pytest.raises(pytest.skip.Exception, match="outside the contract"):
        assert_conforms(f16, f32_only, f32)
    assert calls == []
    assert_conforms(sdpa_cts.cases(ids=["b1.hq2.l17.s17.dqk16.f32.causal=tl.seed2.gen=normal"])[0],
                    f32_only, f32)
    assert len(calls) == 1


def test_a_non_finite_error_fails_with_the_repro_and_mistrusted_is_a_skip():
    case = sdpa_cts.cases(ids=["b1.hq2.l17.s17.dqk16.f32.causal=tl.seed2.gen=normal"])[0]

    def infinite(c):
        return np.full_like(numpy_sdpa(c), np.inf)

    with pytest.raises(AssertionError, match=r"FAIL .*worst error/bound inf(.|\n)*repro: "):
        assert_conforms(case, infinite, PLAIN)
    zeros = sdpa_cts.cases(ids=["b1.hq2.l8.s8.dqk8.f32.seed1.gen=zeros"])[0]
    with pytest.raises(pytest.skip.Exception, match="MISTRUSTED"):
        assert_conforms(zeros, numpy_sdpa, PLAIN)


def test_the_backward_through_assert_conforms():
    case = sdpa_cts.cases(ids=BWD_IDS[:1])[0]
    assert_conforms(case, numpy_sdpa, PLAIN, grad=numpy_sdpa_backward)
    with pytest.raises(AssertionError, match="gradient error/tolerance"):
        assert_conforms(case, numpy_sdpa, PLAIN,
                        grad=lambda c: numpy_sdpa_backward(c, d_term=False))
    with pytest.raises(TypeError, match="grad= needs the function"):
        assert_conforms(case, numpy_sdpa(case), PLAIN, grad=numpy_sdpa_backward)
