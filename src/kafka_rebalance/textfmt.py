"""Numbers and tables for people: human units, no scientific notation, nothing cut off.

Every table a command prints goes through this module so that the same value reads the
same everywhere: bytes as B/KiB/MiB/GiB/TiB (binary, as Kafka's configs count them),
rates with the same units per second, durations as ms/s/min/h, counts with thousands
separators, ratios with 2-3 decimals, `n/a` where a resource has no data, `-` for an
absent value, yes/no for flags. `--format json` never comes here: it keeps raw numbers.

`print_table` never truncates a cell with an ellipsis: at the console's width it either
wraps cells at spaces (each column at least as wide as its longest word) or, when even
that cannot fit, prints every row as a vertical block of `key  value` lines.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

NA = "n/a"
DASH = "-"

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _real(x: Any) -> Any:
    """numpy scalars and the like become plain Python numbers."""
    if hasattr(x, "item") and not isinstance(x, (int, float, str)):
        try:
            return x.item()
        except (TypeError, ValueError):
            return x
    return x


def _fixed(x: float, decimals: int) -> str:
    """Fixed-point with thousands separators; never `e+`/`e-`, never `-0`."""
    s = f"{x:,.{decimals}f}"
    if s.lstrip("-").strip("0.,") == "":
        s = s.lstrip("-")
    return s


def count(n: Any, na: str = DASH) -> str:
    """1234567 -> `1,234,567`; a float count is rounded; None -> `-`."""
    n = _real(n)
    if n is None or not _finite(n):
        return na if n is None else _nonfinite(n)
    return _fixed(round(n), 0)


def ratio(x: Any, decimals: int = 3, na: str = NA) -> str:
    """1.0934 -> `1.093`; None/NaN -> `n/a`; infinity -> `inf`."""
    x = _real(x)
    if x is None:
        return na
    if not _finite(x):
        return na if isinstance(x, float) and math.isnan(x) else _nonfinite(x)
    return _fixed(float(x), decimals)


def percent(fraction: Any, decimals: int = 1, na: str = NA) -> str:
    """0.125 -> `12.5%`."""
    fraction = _real(fraction)
    if fraction is None or (isinstance(fraction, float) and math.isnan(fraction)):
        return na
    if not _finite(fraction):
        return _nonfinite(fraction)
    return _fixed(100.0 * fraction, decimals) + "%"


def bytes_(n: Any, na: str = NA) -> str:
    """1536 -> `1.50 KiB`; below 1 KiB whole bytes (`512 B`); None -> `n/a`."""
    n = _real(n)
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return na
    if not _finite(n):
        return _nonfinite(n)
    value, unit = _scale(float(n), 1024.0, _BYTE_UNITS)
    if unit == "B":
        return f"{_fixed(value, 0)} B"
    return f"{_three_digits(value)} {unit}"


def rate(bytes_per_second: Any, na: str = NA) -> str:
    """Bytes per second in the same units: `1.20 MiB/s`."""
    x = _real(bytes_per_second)
    s = bytes_(x, na=na)
    return s + "/s" if _finite(x) else s


def bytes_column(values: Sequence[Any], per_second: bool = False) -> tuple[str, list[str]]:
    """One unit for a whole column (the largest value's): (`MiB/s`, [`9.92`, `0`, ...]).

    Numbers in one unit compare at a glance and leave the header to say the unit.
    """
    vals = [_real(v) for v in values]
    finite = [abs(v) for v in vals if _finite(v)]
    top = max(finite, default=0.0)
    _, unit = _scale(float(top), 1024.0, _BYTE_UNITS)
    divisor = 1024.0 ** _BYTE_UNITS.index(unit)
    cells = []
    for v in vals:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            cells.append(NA)
        elif not _finite(v):
            cells.append(_nonfinite(v))
        elif v == 0:
            cells.append("0")
        else:
            cells.append(_fixed(v, 0) if unit == "B" else _three_digits(v / divisor))
    return unit + ("/s" if per_second else ""), cells


def per_second(n: Any, unit: str = "msg", na: str = NA) -> str:
    """A count per second: `1,234 msg/s`, `0.50 msg/s`."""
    n = _real(n)
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return na
    if not _finite(n):
        return _nonfinite(n)
    text = _fixed(n, 0) if abs(n) >= 100 else _fixed(n, 2)
    return f"{text} {unit}/s"


def duration_ms(ms: Any, na: str = DASH) -> str:
    """Milliseconds for people: `850 ms`, `1.25 s`, `3.50 min`, `2.10 h` (hours beyond)."""
    ms = _real(ms)
    if ms is None or (isinstance(ms, float) and math.isnan(ms)):
        return na
    if not _finite(ms):
        return _nonfinite(ms)
    a = abs(ms)
    if a < 1000:
        return f"{_fixed(ms, 0) if float(ms).is_integer() or a >= 10 else _fixed(ms, 1)} ms"
    if a < 60_000:
        return f"{_three_digits(ms / 1000)} s"
    if a < 3_600_000:
        return f"{_three_digits(ms / 60_000)} min"
    h = ms / 3_600_000
    return f"{_three_digits(h) if abs(h) < 1000 else _fixed(h, 0)} h"


def timestamp_ms(ms: Any, na: str = DASH) -> str:
    """Epoch milliseconds as UTC time (`2026-11-25 23:46:25 UTC`); small values are offsets."""
    ms = _real(ms)
    if ms is None or not _finite(ms):
        return na if ms is None else _nonfinite(ms)
    if abs(ms) < 100_000_000_000:  # before 1973: an offset on a virtual clock, not a date
        return duration_ms(ms)
    import datetime as _dt

    t = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.UTC)
    return t.strftime("%Y-%m-%d %H:%M:%S UTC")


def duration_s(seconds: Any, na: str = DASH) -> str:
    """Seconds for people, as `duration_ms`."""
    seconds = _real(seconds)
    if seconds is None:
        return na
    return duration_ms(seconds * 1000 if _finite(seconds) else seconds, na=na)


def number(x: Any, na: str = DASH) -> str:
    """Any number: ints with separators, floats to 3 significant digits (3 decimals below 1)."""
    x = _real(x)
    if x is None:
        return na
    if isinstance(x, bool):
        return yes_no(x)
    if isinstance(x, int):
        return count(x)
    if not _finite(x):
        return NA if isinstance(x, float) and math.isnan(x) else _nonfinite(x)
    if float(x).is_integer():
        return _fixed(x, 0)
    a = abs(x)
    if a >= 1:
        return _three_digits(x)
    if a >= 0.001:
        return _fixed(x, 3)
    return "< 0.001" if x > 0 else "> -0.001"


def by_name(field: str, v: Any) -> str:
    """A value formatted by what its JSON field name says it is (`*_ms`, `*bytes*`, ratios)."""
    v = _real(v)
    name = field.lower()
    if isinstance(v, Mapping) and v:
        return ", ".join(f"{k} {by_name(field, x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)) and v:
        return ", ".join(by_name(field, x) for x in v)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return cell(v)
    if name.endswith(("_ms", "_ms_s")) and abs(v) >= 100_000_000_000:
        return timestamp_ms(v)  # epoch milliseconds (after 1973), not a duration
    if name.endswith(("_at_ms", "ts_ms", "timestamp_ms", "time_ms")):
        return timestamp_ms(v)
    if name.endswith("_ms") or name == "ms":
        return duration_ms(v)
    if name.endswith(("_s", "_seconds")):
        return duration_s(v)
    if "bytes" in name:
        return rate(v) if name.startswith(("bytes_in", "bytes_out")) else bytes_(v)
    if any(w in name for w in ("ratio", "mean", "complete", "threshold", "band")):
        return ratio(v)
    return number(v)


def label(field: str) -> str:
    """A JSON field name as a table label: `wall_s` -> `wall`, `window_ms` -> `window` (the
    value carries the unit), other underscores become spaces."""
    for suffix in ("_ms", "_s", "_seconds"):
        if field.endswith(suffix) and len(field) > len(suffix):
            field = field[: -len(suffix)]
            break
    return field.replace("_", " ")


def yes_no(flag: Any) -> str:
    return "yes" if flag else "no"


def cell(v: Any) -> str:
    """Any value as a table cell: no Python repr ever shows (None, True, [...], {...})."""
    v = _real(v)
    if v is None:
        return DASH
    if isinstance(v, bool):
        return yes_no(v)
    if isinstance(v, (int, float)):
        return number(v)
    if isinstance(v, str):
        return v if v != "" else DASH
    if isinstance(v, Mapping):
        if not v:
            return DASH
        return ", ".join(f"{k} {cell(x)}" for k, x in v.items())
    if isinstance(v, (list, tuple, set, frozenset)):
        items = sorted(v, key=_sort_key) if isinstance(v, (set, frozenset)) else list(v)
        return ", ".join(cell(x) for x in items) if items else DASH
    return str(v)


_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Invisible format characters (Unicode Cf): bidi overrides and isolates, zero-width space/joiners,
# byte order mark, soft hyphen. A person sees nothing, or the rest of the line reversed.
_INVISIBLE = re.compile(
    r"[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb]"
)


def escape_controls(text: str) -> str:
    """`text` with terminal control characters (ESC, CSI, other C0/C1 but tab/newline) shown as
    `\\xNN`, and invisible format characters (bidi overrides, zero-width) as `\\uNNNN`.

    A topic, member id or file name could otherwise move the cursor, recolour or retitle the
    terminal of whoever reads the table, or hide or reorder what it shows. Idempotent:
    backslashes are left as they are.
    """
    text = _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def ids(values: Iterable[Any]) -> str:
    """Broker ids and the like: `1, 2, 5`, or `-` when there are none."""
    vals = list(values)
    return ", ".join(str(x) for x in vals) if vals else DASH


def _sort_key(x: Any) -> tuple:
    return (0, x, "") if isinstance(x, (int, float)) else (1, 0, str(x))


def _scale(x: float, base: float, units: Sequence[str]) -> tuple[float, str]:
    i = 0
    while abs(x) >= base and i < len(units) - 1:
        x /= base
        i += 1
    # rounding may reach the base: 1023.9 KiB prints as 1.00 MiB rather than 1,024 KiB
    if i > 0 and abs(round(x, max(0, 2 - _int_digits(x)))) >= base and i < len(units) - 1:
        x /= base
        i += 1
    return x, units[i]


def _int_digits(x: float) -> int:
    a = abs(x)
    return 1 if a < 10 else 2 if a < 100 else 3


def _three_digits(x: float) -> str:
    """Three significant digits without an exponent: 1.23, 12.3, 123, 1,234."""
    a = abs(x)
    if a >= 1000:
        return _fixed(x, 0)
    if round(a, 2) < 10:
        return _fixed(x, 2)
    if round(a, 1) < 100:
        return _fixed(x, 1)
    return _fixed(x, 0)


def _nonfinite(x: Any) -> str:
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return NA


# -- tables -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """A table column: its header and whether its cells align right (numbers)."""

    header: str
    right: bool = False


def columns(*spec: str | Column) -> list[Column]:
    """`columns("broker", ">replicas")`: a leading `>` aligns the column right."""
    out = []
    for s in spec:
        if isinstance(s, Column):
            out.append(s)
        elif s.startswith(">"):
            out.append(Column(s[1:], right=True))
        else:
            out.append(Column(s))
    return out


# The table's frame: one character per border and one space of padding each side of a cell;
# the compact layout (no borders, one space each side, none at the edges) costs 2 per column less 2.
_FRAME_PER_COLUMN = 3
_FRAME_FIXED = 1
_COMPACT_PER_COLUMN = 2
_COMPACT_FIXED = -2


def _longest_word(text: str) -> int:
    return max((cell_len(w) for w in text.split()), default=0)


def _longest_line(text: str) -> int:
    return max((cell_len(line) for line in text.splitlines()), default=0)


def column_widths(
    cols: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int,
    per_column: int = _FRAME_PER_COLUMN,
    fixed: int = _FRAME_FIXED,
) -> list[int]:
    """Widths that fit `width` without splitting a word, or [] when none exist.

    Each column gets at least its longest word (header included; a right-aligned column's
    cells are numbers with their unit and never wrap) and at most its longest line; the room
    left goes to the columns that want more, in proportion to what they want.
    """
    lo = [_longest_word(c.header) for c in cols]
    hi = [_longest_line(c.header) for c in cols]
    for row in rows:
        for i, v in enumerate(row):
            lo[i] = max(lo[i], _longest_line(v) if cols[i].right else _longest_word(v))
            hi[i] = max(hi[i], _longest_line(v))
    lo = [max(1, x) for x in lo]
    hi = [max(a, b) for a, b in zip(lo, hi)]
    room = width - fixed - per_column * len(cols)
    if sum(lo) > room:
        return []
    if sum(hi) <= room:
        return hi
    spare = room - sum(lo)
    want = [h - low for h, low in zip(hi, lo)]
    total = sum(want)
    widths = [low + (w * spare) // total for low, w in zip(lo, want)]
    # hand out what integer division left, widest wants first
    left = room - sum(widths)
    for i in sorted(range(len(cols)), key=lambda i: -want[i]):
        if left <= 0:
            break
        if widths[i] < hi[i]:
            widths[i] += 1
            left -= 1
    return widths


def print_table(
    console: Console,
    title: str | None,
    cols: Sequence[str | Column],
    rows: Iterable[Sequence[Any]],
    row_styles: Sequence[str | None] | None = None,
) -> None:
    """Print rows under `cols` at the console's width, wrapped or vertical, never truncated.

    Cells that are not strings go through `cell`; format numbers with the unit helpers first.
    """
    spec = columns(*cols)
    text_rows = [
        [escape_controls(v if isinstance(v, str) else cell(v)) for v in row] for row in rows
    ]
    styles = list(row_styles) if row_styles is not None else [None] * len(text_rows)
    widths = column_widths(spec, text_rows, console.width)
    compact = False
    if not widths:  # without borders, before giving up on columns
        widths = column_widths(spec, text_rows, console.width, _COMPACT_PER_COLUMN, _COMPACT_FIXED)
        compact = True
    if not widths:
        print_vertical(console, title, spec, text_rows, styles)
        return
    t = (
        Table(
            title=title,
            title_justify="left",
            box=None,
            padding=(0, 1),
            pad_edge=False,
            header_style="bold underline",
        )
        if compact
        else Table(title=title, title_justify="left")
    )
    for c, w in zip(spec, widths):
        t.add_column(
            Text(c.header), justify="right" if c.right else "left", width=w, overflow="fold"
        )
    for row, style in zip(text_rows, styles):
        t.add_row(*(Text(v) for v in row), style=style)
    console.print(t)


def print_vertical(
    console: Console,
    title: str | None,
    cols: Sequence[Column],
    rows: Sequence[Sequence[str]],
    styles: Sequence[str | None] | None = None,
) -> None:
    """Each row as a block: its first cell as a heading, then one `header  value` line per column."""
    if title:
        console.print(Text(title, style="italic"))
    key_width = min(max((cell_len(c.header) for c in cols[1:]), default=0), console.width // 2)
    styles = styles or [None] * len(rows)
    if not rows:
        console.print("  none")
    for row, style in zip(rows, styles):
        row = [escape_controls(v) for v in row]
        head = Text(f"{cols[0].header}: {row[0]}", style="bold")
        console.print(head, style=style)
        body = Table(show_header=False, box=None, padding=(0, 1, 0, 2))
        body.add_column(width=key_width, overflow="fold")
        body.add_column(overflow="fold")
        for c, v in zip(cols[1:], row[1:]):
            body.add_row(Text(c.header), Text(v))
        console.print(body, style=style)


def print_kv(console: Console, title: str | None, pairs: Iterable[tuple[str, Any]]) -> None:
    """A two-column `field  value` table (values already formatted, or passed through `cell`)."""
    print_table(console, title, ["field", "value"], [(k, v) for k, v in pairs])


__all__ = [
    "NA",
    "DASH",
    "Column",
    "by_name",
    "bytes_",
    "bytes_column",
    "cell",
    "column_widths",
    "columns",
    "count",
    "duration_ms",
    "duration_s",
    "escape_controls",
    "ids",
    "label",
    "timestamp_ms",
    "number",
    "per_second",
    "percent",
    "print_kv",
    "print_table",
    "print_vertical",
    "rate",
    "ratio",
    "yes_no",
]
