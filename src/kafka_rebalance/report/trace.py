"""Which field of a results document a section builder was reading when it failed.

The builders read the tool's own outputs, shaped as docs/formats.md says; a hand-edited file can
put a list where a number goes, and the builder then fails deep inside arithmetic or formatting.
Only after such a failure is the build run again over a copy of the document whose dicts and lists
note each read, so the error names the last field read and its value. The normal path is untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

_MISSING = object()


class _Reads:
    """The path of the last value handed out, and the value."""

    def __init__(self) -> None:
        self.path = ""
        self.value: Any = _MISSING

    def note(self, path: str, value: Any) -> Any:
        self.path, self.value = path, value
        return _wrap(value, path, self)


def _wrap(value: Any, path: str, reads: _Reads) -> Any:
    if isinstance(value, dict) and not isinstance(value, _TracedDict):
        return _TracedDict(value, path, reads)
    if isinstance(value, list) and not isinstance(value, _TracedList):
        return _TracedList(value, path, reads)
    return value


def _join(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


class _TracedDict(dict):
    def __init__(self, data: dict, path: str, reads: _Reads) -> None:
        super().__init__(data)
        self._path, self._reads = path, reads

    def __getitem__(self, key: Any) -> Any:
        return self._reads.note(_join(self._path, key), super().__getitem__(key))

    def get(self, key: Any, default: Any = None) -> Any:
        if key in self:
            return self[key]
        return default

    def items(self) -> Iterator[tuple[Any, Any]]:  # type: ignore[override]
        for k in list(super().keys()):
            yield k, self[k]

    def values(self) -> Iterator[Any]:  # type: ignore[override]
        for k in list(super().keys()):
            yield self[k]


class _TracedList(list):
    def __init__(self, data: list, path: str, reads: _Reads) -> None:
        super().__init__(data)
        self._path, self._reads = path, reads

    def __getitem__(self, i: Any) -> Any:
        got = super().__getitem__(i)
        if isinstance(i, slice):
            return got
        return self._reads.note(_join(self._path, i if i >= 0 else len(self) + i), got)

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self[i]


def failing_field(build: Callable[[Any], object], doc: Any) -> tuple[str, Any] | None:
    """Run `build` over a traced copy of `doc`; when it fails, the last field it read and its value
    (None when it does not fail again, or failed before reading any field)."""
    reads = _Reads()
    try:
        build(_wrap(doc, "", reads))
    except Exception:  # the same failure the caller saw: only where it happened matters here
        if reads.value is _MISSING:
            return None
        return reads.path, reads.value
    return None
