"""The pytest plugin (entry point pytest11): the sdpa_case fixture and assert_conforms."""

import inspect

from conftest import numpy_sdpa

PLAIN_TEST = '''
import sdpa_cts
from sdpa_cts.testing import assert_conforms

PLAIN = sdpa_cts.Contract(different_v_dim=True, causal_top_left=True, causal_bottom_right=True,
                          gqa=True, empty_problems=True)

{impl}

def test_attention(sdpa_case):
    assert_conforms(sdpa_case, numpy_sdpa(sdpa_case, SCALE), PLAIN)
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
