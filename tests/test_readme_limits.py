"""The README's Limits table is limits.py's registry: every limit, its default and what it bounds.

The table is generated (`limits.markdown_table()`) and written between two markers;
`.venv/bin/python tests/test_readme_limits.py --update` rewrites it after limits.py changes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kafka_rebalance import limits

README = Path(__file__).resolve().parents[1] / "README.md"
BEGIN = (
    "<!-- limits table: generated from limits.py (python tests/test_readme_limits.py --update) -->"
)
END = "<!-- end of limits table -->"


def _split(text: str) -> tuple[str, str, str]:
    head, sep, rest = text.partition(BEGIN + "\n")
    assert sep, f"README.md has no line {BEGIN!r}"
    table, sep, tail = rest.partition("\n" + END)
    assert sep, f"README.md has no line {END!r} after the table"
    return head, table, tail


def _rows(table: str) -> dict[str, str]:
    """NAME -> default, as the README's table rows say."""
    out = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        out[cells[0].strip("`")] = cells[1]
    return out


def test_the_readme_limits_table_is_generated_from_limits_py():
    _, table, _ = _split(README.read_text(encoding="utf-8"))
    assert table == limits.markdown_table(), "run: python tests/test_readme_limits.py --update"


def test_the_readme_names_every_limit_with_its_default():
    _, table, _ = _split(README.read_text(encoding="utf-8"))
    rows = _rows(table)
    assert list(rows) == [lim.name for lim in limits.LIMITS] + ["memory"]
    for lim in limits.LIMITS:
        shown = rows[lim.name].replace(",", "")
        if lim.unit == "bytes":
            number, unit = shown.split()
            assert (
                int(number) * {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit] == lim.default
            )
        else:
            assert int(shown) == lim.default, lim.name
    assert rows["memory"] == "MemAvailable"


def test_every_limit_is_one_the_limit_flag_accepts():
    overrides, memory = limits.parse_overrides(
        [f"{lim.name}=7" for lim in limits.LIMITS], "--limit"
    )
    assert overrides == {lim.name: 7 for lim in limits.LIMITS} and memory is None
    assert limits.parse_overrides(["memory=1GiB"], "--limit") == ({}, 1 << 30)


def update() -> None:
    head, _, tail = _split(README.read_text(encoding="utf-8"))
    README.write_text(
        head + BEGIN + "\n" + limits.markdown_table() + "\n" + END + tail, encoding="utf-8"
    )


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_readme_limits.py --update")
    update()
