"""Kafka's int32/int64 bounds are written once, in fields.py: no module restates them.

A restated bound (`2**31 - 1`, `9223372036854775807`, `1 << 63`) is a second place to keep
right; every check and default takes INT32_MIN/INT32_MAX/INT64_MIN/INT64_MAX from fields.py.
Comments and strings do not count, only code.
"""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

from kafka_rebalance import fields

SRC = Path(__file__).resolve().parents[1] / "src" / "kafka_rebalance"
_LITERALS = {2**31 - 1, 2**31, 2**63 - 1, 2**63}


def _number(tok: tokenize.TokenInfo) -> int | None:
    if tok.type != tokenize.NUMBER or tok.string[:2].lower() in ("0x", "0b", "0o"):
        return None  # a hex, binary or octal literal is a bit mask, not a bound
    try:
        return int(tok.string.replace("_", ""), 0)
    except ValueError:
        return None  # a float or complex literal


def restated_bounds(source: str) -> list[str]:
    """`line N: text` for each int32/int64 bound written out in code (not comments or strings)."""
    toks = [
        t
        for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE)
    ]
    out = []
    for i, t in enumerate(toks):
        n = _number(t)
        hit = n in _LITERALS
        if not hit and i + 2 < len(toks) and toks[i + 1].string in ("**", "<<"):
            base, exp = n, _number(toks[i + 2])
            hit = exp in (31, 63) and (base, toks[i + 1].string) in ((2, "**"), (1, "<<"))
        j = i - 1
        while j >= 0 and toks[j].string == "(":
            j -= 1
        if hit and not (j >= 0 and toks[j].string in ("&", "|", "^")):  # a mask, not a bound
            out.append(f"line {t.start[0]}: {t.line.strip()}")
    return out


def test_the_checker_finds_each_way_of_writing_a_bound():
    src = (
        "A = 2**31 - 1\nB = 1 << 63\nC = 9_223_372_036_854_775_807\nD = 2147483648\n"
        "E = -(2 ** 63)\n# 2**31 in a comment\nF = '2**63'\nG = 2**32\nH = 2.0**31\n"
        "I = x & 0x80000000\nJ = v & (1 << 63)\n"
    )
    found = restated_bounds(src)
    assert [f.split(":")[0] for f in found] == ["line 1", "line 2", "line 3", "line 4", "line 5"]


# Sources restating a bound, not yet mended (remove an entry once mended; natpoll mended
# native_engine.pyx and native_members.pyx in session 15). In Cython the C bounds are
# `from libc.stdint cimport INT64_MAX, INT64_MIN`; Python-level code takes fields'.
PENDING: dict[str, list[str]] = {}


def _restated() -> dict[str, list[str]]:
    """{module: the code lines restating a bound} over every Python and Cython source but fields."""
    sources = [*SRC.rglob("*.py"), *SRC.rglob("*.pyx"), *SRC.rglob("*.pxd")]
    found: dict[str, list[str]] = {}
    for p in sorted(sources):
        hits = [hit.split(": ", 1)[1] for hit in restated_bounds(p.read_text())]
        if hits and p.name != "fields.py":
            found[p.relative_to(SRC).as_posix()] = hits
    return found


def test_no_module_but_fields_restates_an_int32_or_int64_bound():
    """Cython sources too: native_group_core.pyx restated INT32_MAX while this test read `.py`
    files only (note 14)."""
    found = {name: hits for name, hits in _restated().items() if name not in PENDING}
    assert found == {}, "use fields.INT32_MIN/INT32_MAX/INT64_MIN/INT64_MAX or libc.stdint's"


def test_the_pending_restatements_are_still_there():
    found = _restated()
    for name, hits in PENDING.items():
        assert found.get(name) == hits, f"{name} changed: update PENDING (remove what was mended)"


def test_the_checker_reads_cython():
    src = (
        "cdef int64_t LIMIT = 1 << 61\ncdef int64_t M = 9223372036854775807\n"
        "cdef int f(int64_t x) except? -1:\n    return x & (1 << 63)\nINT32_MAX = 2**31 - 1\n"
    )
    assert [f.split(":")[0] for f in restated_bounds(src)] == ["line 2", "line 5"]


def test_fields_bounds_are_kafkas_widths():
    assert (fields.INT32_MIN, fields.INT32_MAX) == (-(2**31), 2**31 - 1)
    assert (fields.INT64_MIN, fields.INT64_MAX) == (-(2**63), 2**63 - 1)
