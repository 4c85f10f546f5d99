"""The cause of a deviation (a record that is neither PASS nor NOT_SUPPORTED), from its judge
message: how the peers (peer_main.py) and plugins/torch/build_and_judge.sh group them. No
dependency beyond the standard library, so that any environment can import it."""

from __future__ import annotations

import re


def group(status: str, message: str) -> str:
    """The cause of a record that is neither PASS nor NOT_SUPPORTED, from its judge message."""
    if status != "FAIL":
        return status
    m = message
    if re.search(r"gradient error/tolerance \S+ at (d[qkv]|dbias)\[", m):
        if re.search(r"= -?(inf|nan)", m):
            return "FAIL: gradient not finite where a finite value is expected"
        return "FAIL: gradient over its bound"
    if " lse[" in m:
        return ("FAIL: LSE finite where -inf is expected" if "expected -inf" in m
                else "FAIL: LSE over its bound")
    if " o[" in m and re.search(r"= -?(inf|nan)", m):
        return "FAIL: O not finite where a finite value is expected"
    flushed = re.search(r" o\[[0-9,]*\] = -?0, expected (\S+) \(", m)
    if flushed and 0 < abs(float(flushed.group(1))) < 2.0**-126:
        return "FAIL: O flushed to 0 where the exact value is subnormal"
    if " o[" in m and ", expected 0 (" in m:
        return "FAIL: O not 0 where the exact value is 0"
    if " o[" in m and "expected nan" in m:
        return "FAIL: O finite where NaN is expected"
    if " o[" in m:
        return "FAIL: O over its bound"
    return "FAIL: other"
