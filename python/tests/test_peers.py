"""The peers' shared parts (python/peers/): the deviation causes, the known-deviations file they
write (read back by check's expect=), and the comparison with the C plugin's reports."""

import json
import os
import sys

import sdpa_cts
from conftest import PLAIN, PLAIN_IDS, numpy_sdpa

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "peers"))
import compare_with_plugin  # noqa: E402
import peer_main  # noqa: E402


def test_deviation_causes():
    g = peer_main.group
    assert g("FAIL", "error/tolerance inf at lse[0,0,0] = 0, expected -inf (tolerance 0)") == \
        "FAIL: LSE finite where -inf is expected"
    assert g("FAIL", "error/tolerance 3 at lse[0,1,2] = 1.5, expected 1.2 (tolerance 0.1)") == \
        "FAIL: LSE over its bound"
    assert g("FAIL", "error/tolerance 13 at o[0,0,16,19] = 0, expected 1.68e-39 (tolerance 1e-40)") \
        == "FAIL: O flushed to 0 where the exact value is subnormal"
    assert g("FAIL", "error/tolerance 8e+42 at o[0,0,0,2] = 0.48, expected 0 (tolerance 5e-44)") == \
        "FAIL: O not 0 where the exact value is 0"
    assert g("FAIL", "error/tolerance inf at o[0,0,0,0] = -nan, expected 0 (tolerance 5e-44)") == \
        "FAIL: O not finite where a finite value is expected"
    assert g("FAIL", "gradient error/tolerance 9.8 at dv[0,2,22,15] = 0.0014, expected 0.0015 "
             "(tolerance 1e-05)") == "FAIL: gradient over its bound"
    assert g("MISTRUSTED", "anything") == "MISTRUSTED"


def test_written_deviations_gate_a_second_run(tmp_path):
    # A wrong scale's deviations, written as a known-deviations file, make the same run pass
    # (XFAIL) and a correct run list them as unexpectedly passing.
    def wrong_scale(case):
        return numpy_sdpa(case, scale_factor=1.01)

    s = sdpa_cts.check(wrong_scale, ids=PLAIN_IDS, contract=PLAIN, progress=False)
    lines = peer_main.expect_lines("wrong_scale", s)
    assert len(lines) == len(PLAIN_IDS) and all(x.startswith("wrong_scale b") for x in lines)
    expect = tmp_path / "known.expect"
    expect.write_text("\n".join(lines) + "\n")
    again = sdpa_cts.check(wrong_scale, ids=PLAIN_IDS, contract=PLAIN, expect=str(expect),
                           progress=False)
    assert not again.failures and again.counts == {"XFAIL": len(PLAIN_IDS)}, again
    assert peer_main.expect_lines("wrong_scale", again) == lines  # XFAIL keeps its cause


def test_write_expect_keeps_conditioned_entries_and_other_hosts_lines(tmp_path):
    # A conditioned entry that applies keeps its line (with its [when ...]); one whose
    # condition is false here is kept as written, not dropped (python/peers/peer_main.py).
    def wrong_scale(case):
        return numpy_sdpa(case, scale_factor=1.01)

    ids = [c.id for c in sdpa_cts.cases(ids=PLAIN_IDS[:2])]
    expect = tmp_path / "hosts.expect"
    expect.write_text(f"[when !cpu:no_such_flag] wrong_scale {ids[0]} kept as written #4\n"
                      f"[when cpu:no_such_flag] wrong_scale {ids[1]} only elsewhere\n"
                      f"[when cpu:no_such_flag] other_fn {ids[1]} another host's deviation\n")
    entries = sdpa_cts.expectations(str(expect))
    s = sdpa_cts.check(wrong_scale, ids=ids, contract=PLAIN, expect=str(expect), progress=False)
    assert [v.status for v in s.verdicts] == ["XFAIL", "FAIL"], s
    lines = peer_main.expect_lines("wrong_scale", s, entries)
    assert lines[0] == f"[when !cpu:no_such_flag] wrong_scale {ids[0]} kept as written #4"
    assert lines[1].startswith(f"wrong_scale {ids[1]} ")  # found here: written unconditioned
    assert peer_main.other_hosts_lines(entries) == [
        f"[when cpu:no_such_flag] wrong_scale {ids[1]} only elsewhere",
        f"[when cpu:no_such_flag] other_fn {ids[1]} another host's deviation"]


def test_a_listed_deviation_that_disappeared_fails_the_peer(tmp_path, capsys):
    # The gate fails both ways: a new deviation, and a listed one that passes where its entry
    # applies ("unexpectedly passing"); an entry whose condition is false here does neither.
    expect = tmp_path / "known.expect"
    expect.write_text(f"numpy_sdpa {PLAIN_IDS[0]} listed although correct\n"
                      f"[when cpu:no_such_flag] numpy_sdpa {PLAIN_IDS[1]} elsewhere only\n")
    s = sdpa_cts.check(numpy_sdpa, ids=PLAIN_IDS[:2], contract=PLAIN, expect=str(expect),
                       progress=False)
    messages = peer_main.unexpectedly_passing_lines("numpy_sdpa", s, str(expect))
    assert len(messages) == 1 and messages[0].startswith(
        f"unexpectedly passing: numpy_sdpa {s.verdicts[0].case_id} is listed in ")
    # The peer's exit code: 1 with the listed pass, 0 once the entry is conditioned away.
    tier = tmp_path / "two.tier"
    tier.write_text("\n".join(PLAIN_IDS[:2]) + "\n")
    capsys.readouterr()
    assert peer_main.main([(numpy_sdpa, PLAIN)], "t", ["--tier", str(tier), "--expect",
                                                       str(expect)]) == 1
    assert "unexpectedly passing: numpy_sdpa " in capsys.readouterr().err
    expect.write_text(f"[when cpu:no_such_flag] numpy_sdpa {PLAIN_IDS[0]} elsewhere only\n")
    assert peer_main.main([(numpy_sdpa, PLAIN)], "t", ["--tier", str(tier), "--expect",
                                                       str(expect)]) == 0


def _results(path, backend, statuses):
    path.mkdir(parents=True, exist_ok=True)
    with open(path / "results.jsonl", "a") as f:
        for case_id, status in statuses.items():
            f.write(json.dumps({"backend": backend, "case_id": case_id, "status": status}) + "\n")


def test_comparison_with_the_plugin_flags_every_disagreement(tmp_path, capsys):
    plugin, python = tmp_path / "plugin", tmp_path / "python"
    same = {"a": "PASS", "b": "FAIL", "c": "NOT_SUPPORTED", "d": "PASS"}
    for c_name, py_name in compare_with_plugin.PAIRS.items():
        _results(plugin, c_name, same)
        _results(python / py_name, py_name, dict(same, c="FAIL", d="NOT_SUPPORTED"))
    # Cases one side declined do not count; the rest agree.
    assert compare_with_plugin.main([str(plugin), str(python)]) == 0
    assert "2 cases judged by both, 1 deviations found by both" in capsys.readouterr().out

    _results(python / "torch_sdpa_flash", "torch_sdpa_flash", {"e": "FAIL"})
    _results(plugin, "torch.flash_cpu", {"e": "PASS", "f": "FAIL"})
    _results(python / "torch_sdpa_flash", "torch_sdpa_flash", {"f": "PASS"})
    assert compare_with_plugin.main([str(plugin), str(python)]) == 1
    out = capsys.readouterr().out
    assert "  Python alone: e" in out and "  plugin alone: f" in out
    assert compare_with_plugin.main([str(plugin), str(tmp_path / "absent")]) == 2
