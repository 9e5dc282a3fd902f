"""Every table a command renders, checked at 60, 80 and 120 columns (issue 12, points 2 and 3).

`conftest.py` wraps `kafka_rebalance.output.emit` for every test: each in-process CLI run that
prints a result (as a table or as JSON) has its table renderer run again at each width, and
what it prints is checked here. Nothing in a table may be cut off or read like Python.
"""

from __future__ import annotations

import io
import re

from rich.console import Console

WIDTHS = (60, 80, 120)
SCIENTIFIC = re.compile(r"\d\.?\d*[eE][+-]\d")
FORBIDDEN = ("…", "None", "True", "False", "{", "[")


def render(table, obj, width: int) -> str:
    buf = io.StringIO()
    table(Console(file=buf, width=width, color_system=None, force_terminal=False), obj)
    return buf.getvalue()


def problems(text: str, width: int) -> list[str]:
    """What is wrong with one rendering: forbidden text, or a line wider than the terminal."""
    out = []
    for i, line in enumerate(text.splitlines()):
        if len(line) > width:
            out.append(f"line {i} is {len(line)} > {width} columns: {line!r}")
        if SCIENTIFIC.search(line):
            out.append(f"scientific notation in line {i}: {line!r}")
        for bad in FORBIDDEN:
            if bad in line:
                out.append(f"{bad!r} in line {i}: {line!r}")
    return out


def check_all_widths(table, obj) -> list[str]:
    found = []
    for w in WIDTHS:
        found += [f"at {w} columns: {p}" for p in problems(render(table, obj, w), w)]
    return found
