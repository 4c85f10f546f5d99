"""The sdpa_cts pytest plugin (entry point ``pytest11``): a ``sdpa_case`` fixture parametrised
by case IDs, so test names are case IDs and ``-k``, ``-x``, ``--lf`` and pytest-xdist work.

    def test_my_attention(sdpa_case):
        sdpa_cts.testing.assert_conforms(sdpa_case, my_attention, CONTRACT, grad=True)

(the function itself, not its outputs: the case's contract is asked before it is called).

Options: ``--sdpa-tier`` (default smoke), ``--sdpa-sample N``, ``--sdpa-seed S``,
``--sdpa-filter REGEX``.
"""

from __future__ import annotations


def pytest_addoption(parser):
    g = parser.getgroup("sdpa_cts", "sdpa-cts conformance cases")
    g.addoption("--sdpa-tier", default="smoke", help="tier of the sdpa_case fixture (default smoke)")
    g.addoption("--sdpa-sample", type=int, default=0, help="sampled cases instead of a tier")
    g.addoption("--sdpa-seed", type=int, default=0, help="seed of the sampled cases")
    g.addoption("--sdpa-filter", default="", help="keep cases whose ID matches this regex")


def pytest_generate_tests(metafunc):
    if "sdpa_case" not in metafunc.fixturenames:
        return
    import sdpa_cts

    o = metafunc.config.option
    selected = sdpa_cts.cases("" if o.sdpa_sample else o.sdpa_tier, sample=o.sdpa_sample,
                              seed=o.sdpa_seed, filter=o.sdpa_filter)
    metafunc.parametrize("sdpa_case", selected, ids=[c.id for c in selected])
