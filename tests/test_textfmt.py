"""Human units and tables that never truncate (kafka_rebalance.textfmt)."""

from __future__ import annotations

import io
import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from kafka_rebalance import textfmt as f

SCI = re.compile(r"\d[eE][+-]?\d")
UNIT_BYTES = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4, "PiB": 1024**5}
UNIT_MS = {"ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000}


def parse_bytes(s: str) -> float:
    num, unit = s.split(" ")
    return float(num.replace(",", "")) * UNIT_BYTES[unit]


def parse_ms(s: str) -> float:
    num, unit = s.split(" ")
    return float(num.replace(",", "")) * UNIT_MS[unit]


@pytest.mark.parametrize(
    "n, text",
    [
        (0, "0 B"),
        (512, "512 B"),
        (1023, "1,023 B"),
        (1024, "1.00 KiB"),
        (1536, "1.50 KiB"),
        (10 * 1024 * 1024, "10.0 MiB"),
        (1023.999 * 1024, "1.00 MiB"),
        (3 * 1024**4, "3.00 TiB"),
        (None, "n/a"),
        (float("nan"), "n/a"),
    ],
)
def test_bytes(n, text):
    assert f.bytes_(n) == text


def test_rate_and_per_second():
    assert f.rate(1.5 * 1024 * 1024) == "1.50 MiB/s"
    assert f.rate(None) == "n/a"
    assert f.per_second(1234.4) == "1,234 msg/s"
    assert f.per_second(0.5, "rec") == "0.50 rec/s"


@pytest.mark.parametrize(
    "ms, text",
    [
        (0, "0 ms"),
        (850, "850 ms"),
        (0.25, "0.2 ms"),
        (1250, "1.25 s"),
        (59_940, "59.9 s"),
        (90_000, "1.50 min"),
        (2.1 * 3_600_000, "2.10 h"),
        (5_000 * 3_600_000, "5,000 h"),
        (None, "-"),
    ],
)
def test_duration(ms, text):
    assert f.duration_ms(ms) == text


def test_counts_ratios_cells():
    assert f.count(1234567) == "1,234,567"
    assert f.count(None) == "-"
    assert f.ratio(1.09349) == "1.093"
    assert f.ratio(1.5, 2) == "1.50"
    assert f.ratio(None) == "n/a"
    assert f.ratio(-0.0001) == "0.000"
    assert f.percent(0.125) == "12.5%"
    assert f.number(1.93e19) == "19,300,000,000,000,000,000"
    assert f.number(1e-9) == "< 0.001"
    assert f.cell(None) == "-"
    assert f.cell(True) == "yes" and f.cell(False) == "no"
    assert f.cell([1, 2, 3]) == "1, 2, 3"
    assert f.cell({"r1": 2, "r2": None}) == "r1 2, r2 -"
    assert f.cell({3, 1, 2}) == "1, 2, 3"
    assert f.cell("") == "-"
    assert f.ids([]) == "-"


def no_repr(s: str) -> None:
    assert not SCI.search(s), s
    for bad in ("None", "True", "False", "{", "[", "…"):
        assert bad not in s, (bad, s)


finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e30, max_value=1e30)


@given(finite)
def test_never_scientific(x):
    for fn in (f.bytes_, f.rate, f.duration_ms, f.count, f.ratio, f.number, f.percent, f.cell):
        no_repr(fn(x))


@given(st.floats(min_value=0, max_value=1e18, allow_nan=False))
def test_bytes_round_trip(n):
    back = parse_bytes(f.bytes_(n))
    # three significant digits, or whole bytes below 1 KiB
    assert abs(back - n) <= max(0.5, n * 0.005 + 0.5), (n, f.bytes_(n))


@given(st.floats(min_value=0, max_value=1e13, allow_nan=False))
def test_duration_round_trip(ms):
    back = parse_ms(f.duration_ms(ms))
    assert abs(back - ms) <= max(0.0501, ms * 0.005), (ms, f.duration_ms(ms))


@given(
    st.floats(min_value=0, max_value=1e18, allow_nan=False),
    st.floats(min_value=0, max_value=1e18, allow_nan=False),
)
def test_bytes_units_monotonic(a, b):
    """A larger amount never prints in a smaller unit."""
    lo, hi = sorted((a, b))
    order = list(UNIT_BYTES)
    assert order.index(f.bytes_(lo).split(" ")[1]) <= order.index(f.bytes_(hi).split(" ")[1])
    assert parse_bytes(f.bytes_(lo)) <= parse_bytes(f.bytes_(hi))


@given(
    st.floats(min_value=0, max_value=1e12, allow_nan=False),
    st.floats(min_value=0, max_value=1e12, allow_nan=False),
)
def test_duration_units_monotonic(a, b):
    lo, hi = sorted((a, b))
    order = list(UNIT_MS)
    assert order.index(f.duration_ms(lo).split(" ")[1]) <= order.index(
        f.duration_ms(hi).split(" ")[1]
    )
    assert parse_ms(f.duration_ms(lo)) <= parse_ms(f.duration_ms(hi))


def test_nonfinite():
    assert f.ratio(math.inf) == "inf"
    assert f.bytes_(-math.inf) == "-inf"
    assert f.number(math.nan) == "n/a"


def render(width: int, title, cols, rows) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system=None)
    f.print_table(console, title, cols, rows)
    return buf.getvalue()


words = st.text(alphabet="abcdefghij-_.0123456789", min_size=1, max_size=14)
cells = st.lists(words, min_size=1, max_size=4).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=60, max_value=160),
    st.integers(min_value=1, max_value=9),
    st.data(),
)
def test_table_never_truncates(width, ncols, data):
    """Every word of every cell and header appears whole, and no line is wider than the console."""
    headers = [f"h{i} " + data.draw(words) for i in range(ncols)]
    rows = data.draw(st.lists(st.lists(cells, min_size=ncols, max_size=ncols), max_size=4))
    out = render(width, "t", headers, rows)
    assert "…" not in out
    assert all(len(line) <= width for line in out.splitlines())
    flat = re.findall(r"[^\s:]+", out)
    for text in [*(headers if rows else []), *(c for r in rows for c in r)]:
        for w in text.split():
            assert w in flat, (w, out)


def test_table_wraps_then_goes_vertical():
    cols = ["broker", "rack", ">replicas", ">bytes in/s", ">max/mean ratio of everything"]
    rows = [["1", "rack-one", "1,234", "1.43 MiB/s", "1.093"]]
    wide = render(120, "load", cols, rows)
    assert "┃ broker" in wide and "1.43 MiB/s" in wide
    narrow = render(
        60,
        "load",
        [*cols, "a long header here", "another long header"],
        [[*rows[0], "x" * 20, "y" * 20]],
    )
    assert "broker: 1" in narrow.splitlines()[1]  # vertical: the row's first cell heads its block
    assert "1.43 MiB/s" in narrow and "x" * 20 in narrow


def test_kv():
    buf = io.StringIO()
    f.print_kv(Console(file=buf, width=80), "cluster", [("has load", False), ("racks", None)])
    out = buf.getvalue()
    assert "no" in out and "-" in out
    no_repr(out)


def test_escape_controls_shows_invisible_format_characters():
    """A bidi override or zero-width space in a name is shown, not obeyed (it reversed or hid text)."""
    from kafka_rebalance.textfmt import escape_controls

    assert escape_controls("a\u202eb\u200bc\ufeff") == "a\\u202eb\\u200bc\\ufeff"
    assert escape_controls("\x1b[31m\x00") == "\\x1b[31m\\x00"
    assert escape_controls("é ü 日本 tab\tok") == "é ü 日本 tab\tok"  # printable text is left as is
    assert escape_controls(escape_controls("\u202e")) == "\\u202e"  # idempotent
