"""Which `.pxd` files a Cython build reads, and the digest that stamps it (`cython_digest`).

One copy for both users: `kafka_rebalance.native` (the loader) imports it, and setup.py, which
runs without the package (a build environment has none of its dependencies), loads this file by
its path. So it imports the standard library only.

A `.pyx` is compiled with its own `.pxd` and those of the package's modules it cimports, theirs
too; a `.pxd` edited alone must make every build that read it stale, so the stamp covers them.
Every cimport form Cython takes names a module: `cimport a.b.c, d.e as f`, `from .x cimport y`,
`from . cimport a, b` and `from .pkg cimport (m, n)` (a name after `cimport` is a module when the
`.pxd` of that name is there, else a name inside the module before it), wherever the statement is:
continued over lines by a backslash or a parenthesis, or after a `;` (the source is read as logical
statements first, with comments and string literals left out).
"""

from __future__ import annotations

import hashlib
import os
import re
from functools import lru_cache
from pathlib import Path

# one logical statement: `from X cimport names` or `cimport names`
_CIMPORT = re.compile(r"(?:from(?:\s+|(?=\.))([.\w]+)\s+cimport\b\s*(.*)|cimport\s+(.*))", re.S)
_NAME = re.compile(r"[A-Za-z_][\w.]*")


def source_digest(source: Path) -> str:
    """The SHA-256 (hex) of a module's source, as setup.py stamps it."""
    return hashlib.sha256(source.read_bytes()).hexdigest()


def _package_root(folder: Path) -> Path:
    """The folder holding the top-level package that `folder` (a package's folder) is in."""
    while (folder / "__init__.py").exists():
        folder = folder.parent
    return folder


# the pieces `statements` reads, longest first: a string literal (triple-quoted, or single-quoted
# to its line's end, whose newline it takes), a comment, a backslash continuation, a run of plain
# text, or one character (a bracket, `;`, a newline, a lone backslash)
_PIECE = re.compile(
    r'''"""[^"\\]*(?:(?:\\[\s\S]?|"(?!""))[^"\\]*)*(?:""")?'''
    r"""|'''[^'\\]*(?:(?:\\[\s\S]?|'(?!''))[^'\\]*)*(?:''')?"""
    r"""|"[^"\\\n]*(?:\\[\s\S]?[^"\\\n]*)*["\n]?"""
    r"""|'[^'\\\n]*(?:\\[\s\S]?[^'\\\n]*)*['\n]?"""
    r"|#[^\n]*"
    r"|\\\n"
    r"|[^\"'#\\()\[\]{};\n]+"
    r"|[\s\S]"
)


def statements(text: str) -> list[str]:
    """The logical statements of a Cython source, each stripped: a line ends one unless a backslash
    continues it or a bracket is open; a `;` ends one too. Comments are left out and each string
    literal is an empty one (a `;`, `#` or "cimport" inside it is text, not code). Read piece by
    piece (`_PIECE`), not character by character: the same statements, a fraction of the work at
    every import (tests/test_native_stamps.py compares it with the per-character reading)."""
    out: list[str] = []
    current: list[str] = []
    depth = 0
    for piece in _PIECE.findall(text.replace("\r\n", "\n").replace("\r", "\n")):
        ch = piece[0]
        if ch == '"' or ch == "'":
            current.append('""')
        elif ch == "#":
            continue
        elif ch == ";" or ch == "\n" and depth == 0:
            out.append("".join(current).strip())
            current = []
        elif piece == "\\\n":
            current.append(" ")
        else:
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth = max(depth - 1, 0)
            current.append(piece)
    out.append("".join(current).strip())
    return [st for st in out if st]


def _names(text: str) -> list[str]:
    """The imported names of `a, b as c, (d, e)`: a, b, d, e (an `as` alias is not a module)."""
    out = []
    for item in text.strip().strip("()").split(","):
        match = _NAME.match(item.strip())
        if match:
            out.append(match.group())
    return out


@lru_cache(maxsize=256)
def _cimports(text: str) -> tuple[tuple[str, str, str], ...]:
    """A source's cimport statements as `_CIMPORT`'s groups (origin, names, absolute), "" for one
    absent. Cached by the text itself: a process's freshness checks read the same `.pxd` files
    once per build that depends on them, and an edited file is new text."""
    found = []
    for statement in statements(text):
        match = _CIMPORT.fullmatch(statement)
        if match is not None:
            origin, names, absolute = (group or "" for group in match.groups())
            found.append((origin, names, absolute))
    return tuple(found)


def cimported_modules(source: Path) -> list[tuple[Path, list[str]]]:
    """For each module a Cython source (`.pyx` or `.pxd`) may cimport: (its folder, its dotted
    path's parts), candidates in the order written (a name after `from X cimport` may be a module
    of package X or a name inside module X: both are candidates)."""
    found: list[tuple[Path, list[str]]] = []
    for origin, names, absolute in _cimports(source.read_text(encoding="utf-8")):
        if not origin:  # cimport a.b.c, d: each from the package root
            found.extend((_package_root(source.parent), n.split(".")) for n in _names(absolute))
            continue
        dots = len(origin) - len(origin.lstrip("."))
        parts = origin[dots:].split(".") if origin[dots:] else []
        base = source.parent
        if dots:
            for _ in range(dots - 1):
                base = base.parent
        else:
            base = _package_root(source.parent)
        if parts:
            found.append((base, parts))
        found.extend((base, [*parts, n]) for n in _names(names) if "." not in n)
    return found


def cimported_pxds(source: Path) -> list[Path]:
    """The `.pxd` files of the source tree that a Cython source (`.pyx` or `.pxd`) cimports
    (a cimport of anything else, `libc.stdint`, `cpython.mem`, has no `.pxd` here: skipped)."""
    found: list[Path] = []
    for base, parts in cimported_modules(source):
        pxd = base.joinpath(*parts).with_suffix(".pxd")
        if pxd.is_file() and pxd not in found:
            found.append(pxd)
    return found


def pxd_dependencies(pyx: Path) -> list[Path]:
    """Every `.pxd` a build of `pyx` reads: its own (`<name>.pxd` beside it) and those it cimports,
    theirs too (transitively: a cycle is followed once), once each, sorted."""
    seen: set[Path] = set()
    todo = [pyx]
    own = pyx.with_suffix(".pxd")
    if own.is_file():
        todo.append(own)
        seen.add(own.resolve())
    while todo:
        for pxd in cimported_pxds(todo.pop()):
            key = pxd.resolve()
            if key not in seen:
                seen.add(key)
                todo.append(pxd)
    return sorted(seen)


def cython_digest(pyx: Path) -> str:
    """A Cython module's stamp: the SHA-256 of its `.pyx` alone when no `.pxd` is involved, else of
    the `.pyx` followed by each `.pxd` it depends on (`pxd_dependencies`), each under its path
    relative to the `.pyx`'s folder: a `.pxd` edited alone changes it."""
    deps = pxd_dependencies(pyx)
    if not deps:
        return source_digest(pyx)
    h = hashlib.sha256(pyx.read_bytes())
    folder = pyx.resolve().parent
    for pxd in deps:
        h.update(b"\0" + os.path.relpath(pxd, folder).replace(os.sep, "/").encode() + b"\0")
        h.update(pxd.read_bytes())
    return h.hexdigest()
