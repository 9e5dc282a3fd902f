"""Which `.pxd` files a Cython build reads, and the digest that stamps it (`cython_digest`).

One copy for both users: `kafka_rebalance.native` (the loader) imports it, and setup.py, which
runs without the package (a build environment has none of its dependencies), loads this file by
its path. So it imports the standard library only.

A `.pyx` is compiled with its own `.pxd` and those of the package's modules it cimports, theirs
too; a `.pxd` edited alone must make every build that read it stale, so the stamp covers them.
Every cimport form Cython takes names a module: `cimport a.b.c, d.e as f`, `from .x cimport y`,
`from . cimport a, b` and `from .pkg cimport (m, n)` (a name after `cimport` is a module when the
`.pxd` of that name is there, else a name inside the module before it).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

# a statement `from X cimport names` (names to the end of the line, or a parenthesized list over
# several lines) or `cimport names`, at the start of a line
_CIMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+([.\w]+)[ \t]+cimport[ \t]*(\([^)]*\)|[^\n#]*)|cimport[ \t]+([^\n#]*))",
    re.M,
)
_NAME = re.compile(r"[A-Za-z_][\w.]*")


def source_digest(source: Path) -> str:
    """The SHA-256 (hex) of a module's source, as setup.py stamps it."""
    return hashlib.sha256(source.read_bytes()).hexdigest()


def _package_root(folder: Path) -> Path:
    """The folder holding the top-level package that `folder` (a package's folder) is in."""
    while (folder / "__init__.py").exists():
        folder = folder.parent
    return folder


def _names(text: str) -> list[str]:
    """The imported names of `a, b as c, (d, e)`: a, b, d, e (an `as` alias is not a module)."""
    out = []
    text = re.sub(r"#[^\n]*", "", text).replace("\\\n", " ")
    for item in text.strip().strip("()").split(","):
        match = _NAME.match(item.strip())
        if match:
            out.append(match.group())
    return out


def cimported_modules(source: Path) -> list[tuple[Path, list[str]]]:
    """For each module a Cython source (`.pyx` or `.pxd`) may cimport: (its folder, its dotted
    path's parts), candidates in the order written (a name after `from X cimport` may be a module
    of package X or a name inside module X: both are candidates)."""
    found: list[tuple[Path, list[str]]] = []
    for origin, names, absolute in _CIMPORT.findall(source.read_text(encoding="utf-8")):
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
