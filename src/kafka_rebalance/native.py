"""Which build of a compiled module runs: mypyc's, only when it was built from the source now here.

`setup.py` compiles a few modules with mypyc (COMPILED there) and writes, beside each built
module, a stamp `<name>.build-sha256` holding the SHA-256 of the source it compiled. A build is
used only when its stamp equals the digest of the `.py` beside it: decided by content, not by
modification time (pip writes a wheel's `.py` after its `.so`, and an edited source must not be
shadowed by an older build). A stale build, or one without a stamp, is not used: the source runs.

One loader for every compiled module (assign/kernels*.py, sim/poll_kernels.py). It reads two
small files once per module, at import; no other I/O.
"""

from __future__ import annotations

import hashlib
import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType

STAMP_SUFFIX = ".build-sha256"


def source_digest(source: Path) -> str:
    """The SHA-256 (hex) of a module's source, as setup.py stamps it."""
    return hashlib.sha256(source.read_bytes()).hexdigest()


def stamp_for(built: Path) -> Path:
    """The stamp beside a built module: kernels.cpython-311-x86_64-linux-gnu.so -> kernels.build-sha256."""
    return built.with_name(built.name.split(".", 1)[0] + STAMP_SUFFIX)


def source_for(built: Path) -> Path:
    """The source beside a built module."""
    return built.with_name(built.name.split(".", 1)[0] + ".py")


@cache
def _fresh(built: str) -> bool:
    path = Path(built)
    try:
        stamp = stamp_for(path).read_text(encoding="ascii").strip()
        return stamp == source_digest(source_for(path))
    except (OSError, UnicodeDecodeError):
        return False


def is_fresh_build(module_file: str | None) -> bool:
    """Is `module_file` (a module's __file__) a compiled build made from the source beside it?
    A `.py` (or `.pyc`) is not a build: False."""
    if not module_file or module_file.endswith((".py", ".pyc")):
        return False
    return _fresh(module_file)


def siblings_fresh(module_file: str | None, *names: str) -> bool:
    """Are `module_file` and the builds of `names` beside it (same package, same extension suffix)
    all fresh? For modules used together (kernels.py with kernels_heterogeneous.py)."""
    if not is_fresh_build(module_file):
        return False
    built = Path(module_file or "")
    suffix = built.name[len(built.name.split(".", 1)[0]) :]
    return all(is_fresh_build(str(built.with_name(name + suffix))) for name in names)


def load(module: ModuleType) -> ModuleType:
    """`module` when it is a fresh build or plain Python; else its source, loaded under another
    name (`<package>._<name>_source`) so that the stale build stays out of the way."""
    file = module.__file__
    if not file or file.endswith((".py", ".pyc")) or is_fresh_build(file):
        return module
    return source_module(module)


def source_module(module: ModuleType) -> ModuleType:
    """`module` as plain Python: itself when it is a `.py`, else its source loaded under another
    name (`<package>._<name>_source`). The reference beside a compiled build."""
    file = module.__file__
    if not file or file.endswith((".py", ".pyc")):
        return module
    source = source_for(Path(file))
    package, _, name = module.__name__.rpartition(".")
    spec = importlib.util.spec_from_file_location(f"{package}._{name}_source", source)
    if spec is None or spec.loader is None:  # pragma: no cover - a source always has a loader
        return module
    pure = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pure)
    return pure


def is_compiled(module: ModuleType) -> bool:
    """Does `module` (as returned by `load`) run compiled code?"""
    return is_fresh_build(module.__file__)
