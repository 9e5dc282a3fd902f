"""Every table a command renders, checked at 60, 80 and 120 columns (issue 12, points 2 and 3).

`conftest.py` wraps `kafka_rebalance.output.emit` for every test: each in-process CLI run that
prints a result (as a table or as JSON) has its table renderer run again at each width, and
what it prints is checked here. Nothing in a table may be cut off or read like Python.

Widths are measured in terminal cells (rich's `cell_len`), not code points: a combining accent
takes none, a CJK character two. Text the test's own input holds (a hostile topic or rack name
registered with `input_text`, shown escaped as the renderer shows it) may contain `[`, `None` or
`…` without that being a repr or a cut: only what the renderer adds is judged.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable
from typing import Any

from rich.cells import cell_len
from rich.console import Console

from kafka_rebalance.textfmt import escape_controls

WIDTHS = (60, 80, 120)
# a number in E notation, starting at a token boundary: not the hex of an escape shown for a
# control or format character (`\\x1e-5`, `\\u202e-5` where a topic ends in one)
SCIENTIFIC = re.compile(r"(?<![\w.\\])\d\.?\d*[eE][+-]\d")
FORBIDDEN = ("…", "None", "True", "False", "{", "[")
INPUT_TEXT: set[str] = set()  # cleared by conftest before every test


def input_text(doc: Any) -> None:
    """Register every string in a test's input document (keys and values) as shown verbatim."""
    for s in _strings(doc):
        shown = escape_controls(s)
        if SCIENTIFIC.search(shown) or any(bad in shown for bad in FORBIDDEN):
            INPUT_TEXT.add(shown)


def _strings(doc: Any) -> Iterable[str]:
    if isinstance(doc, str):
        yield doc
    elif isinstance(doc, dict):
        for k, v in doc.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(doc, (list, tuple)):
        for v in doc:
            yield from _strings(v)


def render(table, obj, width: int) -> str:
    buf = io.StringIO()
    table(Console(file=buf, width=width, color_system=None, force_terminal=False), obj)
    return buf.getvalue()


def problems(text: str, width: int) -> list[str]:
    """What is wrong with one rendering: forbidden text, or a line wider than the terminal."""
    out = []
    for i, line in enumerate(text.splitlines()):
        if cell_len(line) > width:
            out.append(f"line {i} is {cell_len(line)} > {width} columns: {line!r}")
        rendered = line
        for given in sorted(INPUT_TEXT, key=len, reverse=True):
            rendered = rendered.replace(given, " ")
        if SCIENTIFIC.search(rendered):
            out.append(f"scientific notation in line {i}: {line!r}")
        for bad in FORBIDDEN:
            if bad in rendered:
                out.append(f"{bad!r} in line {i}: {line!r}")
    return out


def check_all_widths(table, obj) -> list[str]:
    found = []
    for w in WIDTHS:
        found += [f"at {w} columns: {p}" for p in problems(render(table, obj, w), w)]
    return found
