"""How commands print: one JSON object alone on stdout, or rich tables for people."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from rich.console import Console

# Progress, logs and tables for people go to stderr when stdout carries JSON. soft_wrap: a message
# is one line however long (a path folded at the terminal's width breaks scripts and copy-paste);
# tables still fit the width.
stderr = Console(stderr=True, soft_wrap=True)


def emit(obj: Any, fmt: str, table: Callable[[Console, Any], None] | None = None) -> None:
    """Print `obj` as JSON (alone on stdout) or render it with `table`."""
    if fmt == "json" or table is None:
        from .io_util import dumps_json

        text = dumps_json(obj, indent=None if fmt == "json" else 2, default=_jsonable)
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
        return
    table(Console(), obj)


def _jsonable(o: Any) -> Any:
    if hasattr(o, "item"):
        return o.item()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def add_format_flag(parser) -> None:
    parser.add_argument(
        "--format",
        choices=("table", "json"),
        default="table",
        help="table for people (default) or one JSON object on stdout",
    )
