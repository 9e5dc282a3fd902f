"""Typed fields of a decoded JSON/YAML document: one reader shared by every input format.

A wrong type in a nested field (`members[3].rack` as a list, a partition as a string, `true`
where a count goes), an id beyond Kafka's int32 or a negative size all get the same one-line
error naming the field path and the value, in every format. Kafka's own widths decide the
ranges: broker ids, partition numbers and partition counts are int32 (`Int32` in the
protocol), offsets, epochs and timestamps int64.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from .errors import InputError

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

T = TypeVar("T")


class _Missing:
    """No default: the field is required."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

_SHOW = 60  # an error line shows at most this much of a value


def show(v: Any) -> str:
    """A value as an error line shows it: as JSON writes it (`null`, `true`, `"6"`, `["a"]`),
    and short (a megabyte string or list stays one readable line, never rendered whole)."""
    cut = False
    if isinstance(v, list) and len(v) > 8:
        v, cut = v[:8], True
    elif isinstance(v, Mapping) and len(v) > 8:
        v, cut = dict(list(v.items())[:8]), True
    elif isinstance(v, str) and len(v) > _SHOW:
        v, cut = v[:_SHOW], True
    try:
        text = json.dumps(v, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(v)
    if cut and isinstance(v, (list, dict)):
        text = text[:-1] + ", ..." + text[-1]
    elif cut:
        text = text[:-1] + "..."
    return text if len(text) <= _SHOW else text[: _SHOW - 3] + "..."


def at(where: str, key: str | int) -> str:
    """The path of `key` inside `where`: `members[3]` + `rack` -> `members[3].rack`."""
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def expected(what: str, v: Any, field: str | None) -> InputError:
    return InputError(f"expected {what}, got {show(v)}", field=field or None)


def is_int(v: Any) -> bool:
    """An integer, and not a boolean (JSON's true is not 1)."""
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v: Any) -> bool:
    """A finite int or float, and not a boolean."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def mapping(v: Any, field: str) -> Mapping:
    if not isinstance(v, Mapping):
        raise expected("an object", v, field)
    return v


def check_keys(obj: Mapping, allowed: set[str] | frozenset[str], where: str) -> None:
    for key in obj:
        if key not in allowed:
            raise InputError(
                f"unknown field (allowed: {', '.join(sorted(allowed))})",
                field=at(where, str(key)),
            )


def integer(
    v: Any,
    field: str,
    *,
    lo: int | None = None,
    hi: int = INT64_MAX,
    what: str = "an integer",
) -> int:
    """An int in [lo, hi]; a float, string, boolean or null is refused naming the field."""
    if not is_int(v):
        raise expected(what, v, field)
    if lo is not None and v < lo:
        raise InputError(f"must be >= {lo}, got {show(v)}", field=field)
    if v > hi:
        raise InputError(f"must be <= {hi}, got {show(v)}", field=field)
    return v


def optional_integer(
    v: Any, field: str, *, lo: int | None = None, hi: int = INT64_MAX, what: str = "an integer"
) -> int | None:
    """An int in [lo, hi], or null."""
    if v is None:
        return None
    return integer(v, field, lo=lo, hi=hi, what=f"{what} or null")


def one_of(v: Any, field: str, choices: tuple[str, ...]) -> str:
    """One of a few fixed names (a state, a phase)."""
    if not isinstance(v, str) or v not in choices:
        raise expected(f"one of {', '.join(choices)}", v, field)
    return v


def int32(v: Any, field: str, *, lo: int | None = 0, what: str = "an integer") -> int:
    """An int32 field of Kafka's protocol (ids, partition numbers, counts), >= lo."""
    return integer(v, field, lo=lo, hi=INT32_MAX, what=what)


def broker_id(v: Any, field: str) -> int:
    """A broker (node) id: int32 >= 0 (-1 means "no broker" and is handled by the caller)."""
    return integer(v, field, lo=0, hi=INT32_MAX, what="a broker id (integer >= 0)")


def partition(v: Any, field: str) -> int:
    """A partition number: int32 >= 0."""
    return integer(v, field, lo=0, hi=INT32_MAX, what="a partition number (integer >= 0)")


def offset(v: Any, field: str) -> int:
    """An offset (log end, committed): int64 >= 0."""
    return integer(v, field, lo=0, hi=INT64_MAX, what="an offset (integer >= 0)")


def number(
    v: Any,
    field: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    what: str = "a number",
) -> float:
    """A finite number in [lo, hi] (an int is accepted); NaN, infinity, strings refused."""
    if not is_number(v):
        raise expected(what, v, field)
    if lo is not None and v < lo:
        raise InputError(f"must be >= {lo:g}, got {show(v)}", field=field)
    if hi is not None and v > hi:
        raise InputError(f"must be <= {hi:g}, got {show(v)}", field=field)
    return float(v)


def string(v: Any, field: str, *, empty: bool = False, what: str = "a string") -> str:
    if not isinstance(v, str):
        raise expected(what, v, field)
    if not empty and not v:
        raise expected(f"{what} (not empty)", v, field)
    return v


def optional_string(v: Any, field: str, *, what: str = "a string") -> str | None:
    """A non-empty string or null."""
    if v is None:
        return None
    if not isinstance(v, str) or not v:
        raise expected(f"{what} or null", v, field)
    return v


def boolean(v: Any, field: str) -> bool:
    if not isinstance(v, bool):
        raise expected("true or false", v, field)
    return v


def array(v: Any, field: str, *, empty: bool = True, what: str = "a list") -> list:
    if not isinstance(v, list):
        raise expected(what, v, field)
    if not empty and not v:
        raise expected(f"{what} (not empty)", v, field)
    return v


def strings(v: Any, field: str, *, what: str = "names", unique: bool = False) -> list[str]:
    """A list of non-empty strings (topic names, rack names); `unique` refuses repeats."""
    items = array(v, field, what=f"a list of {what}")
    for i, x in enumerate(items):
        if not isinstance(x, str) or not x:
            raise expected(f"a name (non-empty string) in a list of {what}", x, at(field, i))
    if unique and len(set(items)) != len(items):
        raise InputError(f"{show(_first_repeat(items))} listed twice", field=field)
    return items


def int_list(
    v: Any,
    field: str,
    item: Callable[[Any, str], int],
    *,
    what: str = "ids",
    unique: bool = True,
    empty: bool = True,
) -> list[int]:
    """A list of ints, each read by `item` (e.g. `broker_id`); repeats refused when `unique`."""
    items = array(v, field, what=f"a list of {what}", empty=empty)
    out = [item(x, at(field, i)) for i, x in enumerate(items)]
    if unique and len(set(out)) != len(out):
        raise InputError(
            f"duplicate {what[:-1] if what.endswith('s') else what} "
            f"{_first_repeat(out)} in {show(items)}",
            field=field,
        )
    return out


def _first_repeat(items: list) -> Any:
    seen = set()
    for x in items:
        if x in seen:
            return x
        seen.add(x)
    return None


def get(
    obj: Mapping,
    key: str,
    where: str,
    reader: Callable[..., T],
    default: Any = MISSING,
    **kw: Any,
) -> T:
    """`reader` applied to `obj[key]` with the field path; `default` when absent (MISSING: required).

    A present `null` is read by `reader` (so `optional_string` accepts it, `integer` refuses it).
    """
    if key not in obj:
        if default is MISSING:
            raise InputError("missing", field=at(where, key))
        return default
    return reader(obj[key], at(where, key), **kw)


__all__ = [
    "INT32_MAX",
    "INT32_MIN",
    "INT64_MAX",
    "INT64_MIN",
    "MISSING",
    "array",
    "at",
    "boolean",
    "broker_id",
    "check_keys",
    "expected",
    "get",
    "int32",
    "int_list",
    "integer",
    "is_int",
    "is_number",
    "mapping",
    "number",
    "offset",
    "one_of",
    "optional_integer",
    "optional_string",
    "partition",
    "show",
    "string",
    "strings",
]
