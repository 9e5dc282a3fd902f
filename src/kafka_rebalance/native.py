"""Which build of a compiled module runs: mypyc's, only when it was built from the source now here.

`setup.py` compiles a few modules with mypyc (COMPILED there) and writes, beside each built
module, a stamp `<name>.build-sha256` holding the SHA-256 of the source it compiled. A build is
used only when its stamp equals the digest of the `.py` beside it: decided by content, not by
modification time (pip writes a wheel's `.py` after its `.so`, and an edited source must not be
shadowed by an older build). A stale build, or one without a stamp, is not used: the source runs.

One loader for every module in setup.py's COMPILED list. At import it reads each build's stamp
and hashes its source (two small files per module, once); for modules that import one another
(group/classic_*.py, sim/coordinator.py) `builds_or_sources` runs all fresh builds or all sources,
loading the sources under their own names in `sys.modules`. No other I/O.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
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


def _from_source(fullname: str, source: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(fullname, source)
    if spec is None or spec.loader is None:  # pragma: no cover - a source always has a loader
        raise ImportError(f"cannot load {source}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[fullname] = module
    spec.loader.exec_module(module)
    # as an import does: the package's attribute too (dotted access, mock.patch by name)
    package, _, name = fullname.rpartition(".")
    if package in sys.modules:
        setattr(sys.modules[package], name, module)
    return module


def _sources_under_real_names(package: str, names: tuple[str, ...]) -> dict[str, ModuleType]:
    """Each of `names` (submodules of `package`, in import order) loaded from its `.py` under its
    own name, so that their imports of each other resolve to the sources too."""
    loaded: dict[str, ModuleType] = {}
    for name in names:
        spec = importlib.util.find_spec(f"{package}.{name}")
        if spec is None or spec.origin is None:  # pragma: no cover - the package ships them
            raise ImportError(f"no module {package}.{name}")
        loaded[name] = _from_source(f"{package}.{name}", source_for(Path(spec.origin)))
    return loaded


def builds_or_sources(package: str, names: tuple[str, ...], with_builds: bool = True) -> bool:
    """For modules compiled together that import each other by name (`group/classic_*.py`): run
    either all their fresh builds or all their sources, never a stale build. Call it from the
    package's `__init__`, before any of them is imported; `names` in import order. Returns whether
    the builds run. (A stale build would shadow its `.py` on a plain import, and a native class
    cannot be subclassed by an interpreted one.) `with_builds=False`: the sources run, fresh builds
    or not (a build that calls into other builds directly runs only when those are fresh too)."""
    origins = []
    for name in names:
        spec = importlib.util.find_spec(f"{package}.{name}")
        origins.append(spec.origin if spec is not None else None)
    if with_builds and all(is_fresh_build(o) for o in origins):
        return True
    if any(o and not o.endswith((".py", ".pyc")) for o in origins):
        _sources_under_real_names(package, names)
    return False


def sources_of(package: str, names: tuple[str, ...]) -> dict[str, ModuleType]:
    """The sources of modules compiled together (see `builds_or_sources`), loaded beside whichever
    build runs: the reference path, for tests that compare both. The modules already imported
    keep their names."""
    full = [f"{package}.{name}" for name in names]
    saved = {n: sys.modules[n] for n in full if n in sys.modules}
    parent = sys.modules.get(package)
    attrs = {name: getattr(parent, name) for name in names if hasattr(parent, name)}
    try:
        return _sources_under_real_names(package, names)
    finally:
        for n in full:
            sys.modules.pop(n, None)
        sys.modules.update(saved)
        for name in names:
            if name in attrs:
                setattr(parent, name, attrs[name])
            elif parent is not None and hasattr(parent, name):
                delattr(parent, name)
