"""Which build of a compiled module runs: mypyc's, only when it was built from the source now here.

`setup.py` compiles a few modules with mypyc (COMPILED there) and writes, beside each built
module, a stamp `<name>.build-sha256` holding the SHA-256 of the source it compiled. A build is
used only when its stamp equals the digest of the `.py` beside it: decided by content, not by
modification time (pip writes a wheel's `.py` after its `.so`, and an edited source must not be
shadowed by an older build). A stale build, or one without a stamp, is not used: the source runs.

One loader for every module in setup.py's COMPILED list. It reads each build's stamp and hashes
its source (two small files per module, once, when that module is first looked up); no other I/O.
Modules compiled together that import one another run all their fresh builds or all their sources:
- `compiled_together` (the classic group, registered by group/__init__.py without any I/O): an
  import hook decides at the first import of one of them, so the pure core's package init reads
  nothing, and the sources are imported under their own names like any module;
- `builds_or_sources` (sim/coordinator.py): decided when the package's init calls it.
The Cython kernels (setup.py's CYTHON: a `.pyx` with a Python twin elsewhere) are stamped the same
way with their `.pyx`'s digest, which also covers the `.pxd` files the build read (`cython_digest`:
its own `.pxd` and those of the package's modules it `cimport`s, transitively); `cython_build`
imports one only when its build is fresh and so are the builds of the modules it cimports (a build
compiled against another's declarations is stale once that one is).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from types import ModuleType

# one copy for the loader and setup.py (which loads that file by its path)
from .cython_deps import cython_digest, pxd_dependencies, source_digest

STAMP_SUFFIX = ".build-sha256"


def stamp_for(built: Path) -> Path:
    """The stamp beside a built module: kernels.cpython-311-x86_64-linux-gnu.so -> kernels.build-sha256."""
    return built.with_name(built.name.split(".", 1)[0] + STAMP_SUFFIX)


def source_for(built: Path, suffix: str = ".py") -> Path:
    """The source beside a built module (`suffix` ".pyx" for a Cython kernel)."""
    return built.with_name(built.name.split(".", 1)[0] + suffix)


@cache
def _fresh(built: str, suffix: str = ".py") -> bool:
    path = Path(built)
    try:
        stamp = stamp_for(path).read_text(encoding="ascii").strip()
        if suffix != ".pyx":
            return stamp == source_digest(source_for(path, suffix))
        pyx = source_for(path, suffix)
        if not path.is_file() or stamp != cython_digest(pyx):
            return False
        # the modules it cimports (a `.pxd` with a `.pyx` beside it), transitively: their builds
        # stamped with their sources too (checked here, not by recursing: a cimport cycle ends)
        ext = path.name[len(path.name.split(".", 1)[0]) :]
        for pxd in pxd_dependencies(pyx):
            other = pxd.with_suffix(".pyx")
            if not other.is_file() or other.resolve() == pyx.resolve():
                continue
            dep = pxd.with_name(pxd.stem + ext)
            if not dep.is_file():
                return False
            if stamp_for(dep).read_text(encoding="ascii").strip() != cython_digest(other):
                return False
        return True
    except (OSError, UnicodeDecodeError):
        return False


def is_fresh_build(module_file: str | None, suffix: str = ".py") -> bool:
    """Is `module_file` (a module's __file__) a compiled build made from the source beside it
    (`<name><suffix>`)? A `.py` (or `.pyc`) is not a build: False."""
    if not module_file or module_file.endswith((".py", ".pyc")):
        return False
    return _fresh(module_file, suffix)


def cython_build(package: str, name: str) -> ModuleType | None:
    """The Cython kernel `package.name` (setup.py's CYTHON) when its build is fresh (its stamp
    matches the `.pyx` beside it), else None: not imported at all when absent or stale (its
    callers then run its Python twin, which is the reference)."""
    try:
        spec = importlib.util.find_spec(f"{package}.{name}")
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None or not is_fresh_build(spec.origin, ".pyx"):
        return None
    try:
        return importlib.import_module(f"{package}.{name}")
    except ImportError:  # built for another interpreter, or its library is missing
        return None


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
    keep their names. For a `compiled_together` set, all of it (in its order), whichever of its
    names are asked for: a source importing a build of the set could not subclass its classes."""
    together = _TOGETHER.get(package, ())
    if set(names) <= set(together):
        names = together
    full = [f"{package}.{name}" for name in names]
    saved = {n: sys.modules[n] for n in full if n in sys.modules}
    before = set(sys.modules)
    parent = sys.modules.get(package)
    attrs = {name: getattr(parent, name) for name in names if hasattr(parent, name)}
    loaded: dict[str, ModuleType] = {}
    try:
        loaded = _sources_under_real_names(package, names)
        return loaded
    finally:
        # another module of the package that the sources imported first and that took one of them
        # or what they define (sim/compiled.py binds the poll kernels' source) is forgotten too,
        # so a later import gets what a plain import gives (review 6 F1); one that took nothing of
        # them stays, or its classes would exist twice (review 6 F9)
        captured = _captured_by(loaded)
        side = [
            n
            for n in set(sys.modules) - before
            if n.startswith(f"{package}.")
            and n not in full
            and any(id(v) in captured for v in vars(sys.modules[n]).values())
        ]
        for n in full + side:
            sys.modules.pop(n, None)
        sys.modules.update(saved)
        for name in names:
            if name in attrs:
                setattr(parent, name, attrs[name])
            elif parent is not None and hasattr(parent, name):
                delattr(parent, name)
        for n in side:
            name = n[len(package) + 1 :]
            if parent is not None and "." not in name and hasattr(parent, name):
                delattr(parent, name)


def _captured_by(loaded: dict[str, ModuleType]) -> set[int]:
    """The ids of the loaded source modules and of what they define (their own functions and
    classes): a module holding one of them took the sources."""
    ids = {id(m) for m in loaded.values()}
    for m in loaded.values():
        ids.update(id(v) for v in vars(m).values() if getattr(v, "__module__", None) == m.__name__)
    return ids


# package -> its modules compiled together, in import order (`compiled_together`)
_TOGETHER: dict[str, tuple[str, ...]] = {}
# package -> whether their fresh builds run (decided at the first import of one of them)
_TOGETHER_BUILDS: dict[str, bool] = {}


def compiled_together(package: str, names: tuple[str, ...]) -> None:
    """Register modules of `package` compiled together that import each other by name (`names` in
    import order): either all their fresh builds run or all their sources, never a stale build and
    never a mix (a build calls the others' builds directly; a native class cannot be subclassed by
    an interpreted one). Call it from the package's `__init__`. It reads nothing: an import hook
    makes the decision when one of `names` is first imported (`together_compiled` reports it)."""
    _TOGETHER[package] = names
    if not any(isinstance(f, _TogetherFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _TogetherFinder())


def together_compiled(package: str) -> bool:
    """Do the fresh builds of `package`'s `compiled_together` modules run (else their sources)?
    Decided once, on first use (this, or the first import of one of them)."""
    if package not in _TOGETHER_BUILDS:
        parent = sys.modules.get(package)
        path = getattr(parent, "__path__", None)
        origins = [_default_origin(f"{package}.{name}", path) for name in _TOGETHER[package]]
        _TOGETHER_BUILDS[package] = all(is_fresh_build(o) for o in origins)
    return _TOGETHER_BUILDS[package]


def _default_origin(fullname: str, path: Sequence[str] | None) -> str | None:
    spec = importlib.machinery.PathFinder.find_spec(fullname, path)
    return spec.origin if spec is not None else None


class _TogetherFinder(importlib.abc.MetaPathFinder):
    """For a module of a `compiled_together` set: its build when the whole set's builds are
    fresh, else its `.py` (Python's own finder would take a build, stale or not, over the `.py`)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        package, _, name = fullname.rpartition(".")
        if name not in _TOGETHER.get(package, ()):
            return None
        if together_compiled(package):
            return None  # Python's own finder: the fresh build
        origin = _default_origin(fullname, path)
        if origin is None or origin.endswith((".py", ".pyc")):
            return None  # no build here: the source is what Python finds anyway
        return importlib.util.spec_from_file_location(fullname, source_for(Path(origin)))
