"""File helpers for the shell: read JSON/YAML with clear errors, write atomically."""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from .errors import InputError
from .io_temp import clean_stale, fsync_dir, is_temp, temp_name


def read_text(path: str | os.PathLike) -> str:
    """A UTF-8 text file the user named; InputError naming it when it is missing or unreadable.

    A file above the `input_bytes` limit is refused before it is read (its parsed form would
    take several times its size in memory).
    """
    from . import limits

    p = Path(path)
    try:
        size = p.stat().st_size
    except FileNotFoundError:
        raise InputError("file not found", source=str(p)) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=str(p)) from None
    limits.check("input_bytes", size, source=str(p))
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", source=str(p)) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=str(p)) from None
    except UnicodeDecodeError as exc:
        raise InputError(
            f"not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})",
            source=str(p),
        ) from None


# Bounds on what a user's JSON/YAML may hold: no real input nests deeper or needs longer
# integers (Kafka's ids and offsets are int64: 19 digits); beyond them a parser spends
# unbounded time, memory or stack on a hostile file.
MAX_DEPTH = 100
MAX_INT_DIGITS = 100


class _TooLong:
    """An integer literal past MAX_INT_DIGITS, kept unparsed until its field path is known."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits


def _json_int(s: str) -> Any:
    return _TooLong(len(s)) if len(s) > MAX_INT_DIGITS else int(s)


def _json_constant(s: str) -> float:
    return float(s)  # NaN / Infinity / -Infinity: refused by _check with their field path


def loads_json(text: str, source: str | os.PathLike) -> Any:
    """Parse JSON text from `source` within the bounds; InputError naming source and field."""
    try:
        doc = json.loads(text, parse_int=_json_int, parse_constant=_json_constant)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
            source=str(source),
        ) from None
    except RecursionError:
        raise InputError(f"nested deeper than {MAX_DEPTH} levels", source=str(source)) from None
    _check(doc, str(source))
    return doc


def loads_yaml(text: str, source: str | os.PathLike) -> Any:
    """Parse YAML text from `source` within the bounds: no aliases, bounded depth and integers."""
    import yaml

    loader = _bounded_loader()(text)
    try:
        doc = loader.get_single_data()
    except _YamlRefused as exc:
        raise InputError(str(exc), source=str(source)) from None
    except yaml.YAMLError as exc:
        raise InputError(f"malformed YAML: {exc}", source=str(source)) from None
    except RecursionError:
        raise InputError(f"nested deeper than {MAX_DEPTH} levels", source=str(source)) from None
    finally:
        loader.dispose()
    _check(doc, str(source))
    return doc


def read_structured(path: str | os.PathLike) -> Any:
    """Load a JSON or YAML file; errors name the file and the position or field.

    Bounded: nesting past MAX_DEPTH, integers past MAX_INT_DIGITS digits, YAML aliases
    (the "billion laughs" expansion) and NaN/infinity are refused as bad input.
    """
    p = Path(path)
    text = read_text(p)
    if p.suffix.lower() in (".yaml", ".yml"):
        return loads_yaml(text, p)
    return loads_json(text, p)


class _YamlRefused(Exception):
    """A YAML construct refused before it is built (alias, depth)."""


_LOADER: Any = None


def _bounded_loader() -> Any:
    """A SafeLoader that refuses aliases, nesting past MAX_DEPTH and over-long integers."""
    global _LOADER
    if _LOADER is not None:
        return _LOADER
    import yaml

    class BoundedLoader(yaml.SafeLoader):
        _depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                ev = self.peek_event()
                raise _YamlRefused(
                    f"YAML alias *{ev.anchor} at line {ev.start_mark.line + 1} is not accepted "
                    "(write the value out)"
                )
            self._depth += 1
            try:
                if self._depth > MAX_DEPTH:
                    ev = self.peek_event()
                    raise _YamlRefused(
                        f"nested deeper than {MAX_DEPTH} levels at line {ev.start_mark.line + 1}"
                    )
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def construct_yaml_int(self, node: Any) -> Any:
            if len(str(node.value)) > MAX_INT_DIGITS:
                return _TooLong(len(str(node.value)))
            return super().construct_yaml_int(node)

    BoundedLoader.add_constructor("tag:yaml.org,2002:int", BoundedLoader.construct_yaml_int)
    _LOADER = BoundedLoader
    return _LOADER


def _check(doc: Any, source: str) -> None:
    """Walk the parsed document (no recursion): depth, over-long integers, NaN and infinity."""
    stack: list[tuple[Any, str, int]] = [(doc, "", 0)]
    while stack:
        v, where, depth = stack.pop()
        if isinstance(v, (dict, list)) and depth >= MAX_DEPTH:
            raise InputError(
                f"nested deeper than {MAX_DEPTH} levels", source=source, field=_short(where) or None
            )
        if isinstance(v, dict):
            for k, x in v.items():
                _check_scalar(k, source, where or None)
                stack.append((x, f"{where}.{k}" if where else str(k), depth + 1))
        elif isinstance(v, list):
            for i, x in enumerate(v):
                stack.append((x, f"{where}[{i}]", depth + 1))
        else:
            _check_scalar(v, source, where or None)


def _short(where: str) -> str:
    return where if len(where) <= 80 else where[:77] + "..."


def _check_scalar(v: Any, source: str, where: str | None) -> None:
    if isinstance(v, _TooLong):
        raise InputError(
            f"integer of {v.digits} characters (at most {MAX_INT_DIGITS})",
            source=source,
            field=where,
        )
    if isinstance(v, float) and not math.isfinite(v):
        raise InputError(f"{v} is not a finite number", source=source, field=where)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write to a temporary file beside the target, then rename: never half-written."""
    write_files([(path, text)])


def named_os_error(exc: OSError, path: str | os.PathLike) -> OSError:
    """`exc` naming the user's `path`: a failed write (full disk, file too large) names no file.

    The errno is kept (from the text of a library's message when it carries none, as pyarrow's
    `[errno 27] File too large`), so the CLI tells a full disk (exit 1) from bad input (exit 2).
    """
    code = exc.errno
    if code is None:
        import re

        m = re.search(r"\[errno (\d+)\]", str(exc))
        code = int(m.group(1)) if m else None
    reason = os.strerror(code) if code is not None else (exc.strerror or str(exc))
    return OSError(code, reason, os.fspath(path))


_MEMINFO = "/proc/meminfo"


def mem_available(meminfo: str | os.PathLike = _MEMINFO) -> int | None:
    """MemAvailable of /proc/meminfo in bytes (what a new job can use without swapping); None
    where there is no such file (not Linux): then no memory check is made."""
    try:
        with open(meminfo, "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    parts = line.split()
                    return int(parts[1]) * (1024 if parts[2:3] == [b"kB"] else 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


_PROC_STATUS = "/proc/self/status"


def _umask() -> int:
    """The process umask, read without changing it.

    `os.umask` reads only by setting: between its two calls another thread
    creating a file would get the temporary mask. Linux (4.7+) reports it in
    /proc/self/status, read on every call (nothing cached: the process may
    change its umask later; one small read is nothing beside the fsync).
    Elsewhere set-and-restore remains, with the most restrictive temporary
    mask, so a file created in that window is private, not world-writable.
    """
    try:
        with open(_PROC_STATUS, "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o777)
    os.umask(mask)
    return mask


def atomic_write_json(path: str | os.PathLike, obj: Any, indent: int | None = 2) -> None:
    """Write `obj` as JSON to `path`: a temporary file beside it, then a rename (never half-written)."""
    atomic_write_text(path, dumps_json(obj, indent=indent, source=path) + "\n")


def write_json_files(
    items: Sequence[tuple[str | os.PathLike, Any, int | None]],
    remove: Sequence[str | os.PathLike] = (),
) -> None:
    """Several JSON outputs (path, value, indent) published as one set (write_files)."""
    write_files(
        [(p, dumps_json(obj, indent=indent, source=p) + "\n") for p, obj, indent in items], remove
    )


class OutputError(RuntimeError):
    """A result that cannot be written as output: exit 1."""


def dumps_json(
    obj: Any, indent: int | None = 2, source: str | os.PathLike | None = None, **kw: Any
) -> str:
    """`json.dumps` that never writes the invalid tokens NaN/Infinity: a non-finite number is
    written as null (no value), as tables show n/a; the JSON stays valid for every parser."""
    try:
        return json.dumps(obj, indent=indent, allow_nan=False, **kw)
    except ValueError as exc:
        if "Out of range float" not in str(exc):
            raise
    return json.dumps(_finite_or_null(obj, kw.get("default")), indent=indent, allow_nan=False, **kw)


def _finite_or_null(v: Any, default: Any) -> Any:
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _finite_or_null(x, default) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite_or_null(x, default) for x in v]
    if default is not None and not isinstance(v, (str, int, bool, type(None))):
        try:
            return _finite_or_null(default(v), None)
        except TypeError:
            return v
    return v


# -- publishing several files as one set ---------------------------------------------------------
#
# Every output is first written to a hidden temporary beside its target (io_temp.temp_name), then
# renamed over it; the next run that writes into the same folder cleans what a killed run left
# (io_temp.clean_stale, one rule for every writer). Several outputs of one command are published
# as a set: all are written and synced, then a journal `.NAME.kr-PID-RAND.publish` listing the
# renames is written (atomically), then the renames run, then the journal goes. A kill between two
# renames leaves the journal; the next run finishes the renames from it before anything else, so
# the set ends complete. io_publish.py checks output paths and switches folders.


def _make_parents(folder: Path, created: list[Path]) -> None:
    missing = []
    probe = folder
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:
            continue
        created.append(d)


def _drop_created(created: list[Path]) -> None:
    for d in reversed(created):
        try:
            d.rmdir()
        except OSError:
            break


def write_files(
    items: Iterable[tuple[str | os.PathLike, str | bytes]],
    remove: Iterable[str | os.PathLike] = (),
) -> None:
    """Write every (path, content) as one set: all or none, old or new, never half a file.

    `remove` names files of an earlier set that this one replaces without rewriting (a plan
    with fewer batches than the last): they go with the set, through the same journal.
    A failure (a full disk, a file too large, no permission) removes the temporaries and the
    folders this call created, and raises the OSError naming the user's path, not a temporary.
    """
    todo = [(Path(p), c) for p, c in items]
    removes = [Path(r) for r in remove]
    created: list[Path] = []
    temps: list[tuple[Path, Path]] = []
    inodes: list[int] = []
    journal: Path | None = None
    aside: dict[Path, Path] = {}
    current = todo[0][0] if todo else Path()
    try:
        for folder in dict.fromkeys(p.parent for p, _ in todo):
            _make_parents(folder, created)
            clean_stale(folder)
        for target, _ in todo:  # every target before any temporary: a set is written whole or not
            current = target
            if target.is_dir():
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(target))
            if not os.access(target.parent, os.W_OK | os.X_OK):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(target))
        for target, content in todo:
            current = target
            tmp = temp_name(target)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 & ~_umask())
            temps.append((tmp, target))
            inodes.append(os.fstat(fd).st_ino)
            with os.fdopen(fd, "wb") as fh:
                fh.write(content.encode("utf-8") if isinstance(content, str) else content)
                fh.flush()
                os.fsync(fh.fileno())
        if len(temps) > 1:
            aside = _set_aside([t for _, t in temps])
        if len(temps) > 1 or (temps and removes):
            current = todo[0][0]
            journal = temp_name(todo[0][0], "publish")
            here = journal.parent

            def rel(p: Path) -> str:
                return os.path.relpath(p, here)

            body = json.dumps(
                {
                    "renames": [[rel(t), rel(g), i] for (t, g), i in zip(temps, inodes)],
                    "removes": [rel(r) for r in removes],
                }
            )
            staged = temp_name(todo[0][0])
            with open(staged, "w", encoding="utf-8") as jf:
                jf.write(body)
                jf.flush()
                os.fsync(jf.fileno())
            os.replace(staged, journal)
    except BaseException as exc:
        for tmp in [*(t for t, _ in temps), *aside.values()]:
            tmp.unlink(missing_ok=True)
        _drop_created(created)
        if isinstance(exc, OSError) and (
            exc.filename is None or is_temp(Path(os.fsdecode(exc.filename)).name)
        ):
            raise named_os_error(exc, current) from None
        raise
    done = 0
    try:
        for tmp, target in temps:
            os.replace(tmp, target)  # fails only on a target the checks could not see coming
            done += 1
    except OSError as exc:
        # (a directory made meanwhile): the renames done are undone from the copies set aside,
        # so the set stays the old one; the temporaries and the journal go; the error names it
        for _, target in temps[:done]:
            if target in aside:
                os.replace(aside.pop(target), target)
            else:
                target.unlink(missing_ok=True)  # it was new with this set
        for tmp, _ in temps[done:]:
            tmp.unlink(missing_ok=True)
        if journal is not None:
            journal.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, os.fspath(temps[done][1])) from None
    finally:
        for old in aside.values():
            old.unlink(missing_ok=True)
    for gone in removes:
        gone.unlink(missing_ok=True)
    for folder in dict.fromkeys(t.parent for _, t in [*temps, *((r, r) for r in removes)]):
        fsync_dir(folder)
    if journal is not None:
        journal.unlink(missing_ok=True)


def _set_aside(targets: list[Path]) -> dict[Path, Path]:
    """Hard links (else copies) of the existing targets, to put back if the set fails midway;
    named `.old` temporaries, so a killed run's are removed by the next (its targets exist)."""
    aside: dict[Path, Path] = {}
    for target in targets:
        if target.is_file():
            old = temp_name(target, "old")
            try:
                os.link(target, old)
            except OSError:
                shutil.copy2(target, old)
            aside[target] = old
    return aside


def write_file_with(path: str | os.PathLike, write: Callable[[str], object]) -> None:
    """Publish a file a library writes by name (pyarrow's `write_table(table, name)`): `write`
    gets a temporary beside `path`, renamed over it once written and synced. On a failure the
    temporary and the folders made for it go, and the OSError names `path`."""
    target = Path(path)
    created: list[Path] = []
    tmp = temp_name(target)
    try:
        _make_parents(target.parent, created)
        clean_stale(target.parent)
        write(os.fspath(tmp))
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        _drop_created(created)
        if isinstance(exc, OSError) and exc.filename2 is not None:
            raise OSError(exc.errno, exc.strerror, os.fspath(target)) from None
        if isinstance(exc, OSError):
            name = exc.filename2 if exc.filename2 is not None else exc.filename
            if name is None or is_temp(Path(os.fsdecode(name)).name):
                raise named_os_error(exc, target) from None
        raise
    fsync_dir(target.parent)
