"""A Cython build's stamp covers the `.pxd` files it was compiled against (review S3/S5 of session 12).

A `.pyx` is compiled with its own `.pxd` and those of the modules it cimports; the stamp used to be
the `.pyx`'s digest alone, so a `.pxd` edited alone left every build that read it looking fresh. Now
setup.py stamps `cython_digest` (the `.pyx` and its `.pxd` dependencies, transitively), and
`kafka_rebalance.native` checks the same digest at load and also that the builds of the modules a
build cimports are fresh: a stale one makes its dependants stale too.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
from collections.abc import Iterator
from pathlib import Path

import pytest

from compiled_legs import from_source, no_compiled_leg
from kafka_rebalance import native

ROOT = Path(__file__).resolve().parent.parent
SETUP = from_source(ROOT / "setup.py", "kafka_rebalance_setup_stamps")
SIM = ROOT / "src" / "kafka_rebalance" / "sim"
EXT = importlib.machinery.EXTENSION_SUFFIXES[0]


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    native._fresh.cache_clear()
    yield
    native._fresh.cache_clear()


def test_setup_and_the_loader_take_the_same_digest() -> None:
    for source in SETUP.CYTHON:
        pyx = ROOT / source
        assert SETUP.cython_digest(pyx) == native.cython_digest(pyx), source
        if not native.pxd_dependencies(pyx):  # no .pxd: the .pyx's digest, as before
            assert native.cython_digest(pyx) == hashlib.sha256(pyx.read_bytes()).hexdigest()


def test_make_rebuilds_when_a_pxd_changes() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert (
        "$(wildcard src/kafka_rebalance/*/*.pxd)"
        in makefile.split("KERNELS :=", 1)[1].split("\n")[0]
    )
    for source in SETUP.CYTHON:
        for pxd in native.pxd_dependencies(ROOT / source):
            assert pxd.parent.parent.name == "kafka_rebalance", pxd  # the wildcard's depth


def test_the_group_twin_depends_on_its_pxd_files() -> None:
    core, handlers = SIM / "native_group_core.pxd", SIM / "native_group_handlers.pxd"
    assert native.pxd_dependencies(SIM / "native_group_core.pyx") == [core]
    assert native.pxd_dependencies(SIM / "native_group_handlers.pyx") == sorted([core, handlers])
    # native_group.pyx cimports both; the handlers' .pxd cimports the core's (transitively)
    assert native.pxd_dependencies(SIM / "native_group.pyx") == sorted([core, handlers])


def _package(tmp_path: Path) -> Path:
    """pkg/a.pyx with its a.pxd, pkg/b.pyx cimporting a (relative) and pkg/c.pyx cimporting b's
    module absolutely; each "built" (an empty file with the extension suffix) and stamped."""
    pkg = tmp_path / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.pxd").write_text("cdef class A:\n    cdef int x\n")
    (pkg / "a.pyx").write_text("cdef class A:\n    pass\n")
    (pkg / "b.pxd").write_text("from .a cimport A\ncdef class B(A):\n    pass\n")
    (pkg / "b.pyx").write_text("from libc.stdint cimport int64_t\ncdef class B(A):\n    pass\n")
    (pkg / "c.pyx").write_text("cimport pkg.b\nfrom cpython.mem cimport PyMem_Free\n")
    for name in ("a", "b", "c"):
        (pkg / f"{name}{EXT}").write_bytes(b"")
        digest = SETUP.cython_digest(pkg / f"{name}.pyx")
        (pkg / f"{name}{native.STAMP_SUFFIX}").write_text(digest + "\n", encoding="ascii")
    return pkg


def _fresh(pkg: Path) -> dict[str, bool]:
    native._fresh.cache_clear()
    return {n: native.is_fresh_build(str(pkg / f"{n}{EXT}"), ".pyx") for n in ("a", "b", "c")}


def test_a_pxd_edited_alone_makes_every_build_that_read_it_stale(tmp_path: Path) -> None:
    pkg = _package(tmp_path)
    assert native.pxd_dependencies(pkg / "c.pyx") == sorted([pkg / "a.pxd", pkg / "b.pxd"])
    assert _fresh(pkg) == {"a": True, "b": True, "c": True}
    text = (pkg / "a.pxd").read_text()
    (pkg / "a.pxd").write_text(text + "    cdef int y\n")
    assert _fresh(pkg) == {"a": False, "b": False, "c": False}
    (pkg / "a.pxd").write_text(text)
    assert _fresh(pkg) == {"a": True, "b": True, "c": True}
    (pkg / "b.pxd").write_text((pkg / "b.pxd").read_text() + "\n")
    assert _fresh(pkg) == {"a": True, "b": False, "c": False}


def test_a_build_cimporting_a_stale_build_is_stale(tmp_path: Path) -> None:
    pkg = _package(tmp_path)
    (pkg / "a.pyx").write_text("cdef class A:\n    x = 1\n")  # a's .pyx edited, its .pxd not
    assert _fresh(pkg) == {"a": False, "b": False, "c": False}
    pkg = _package(tmp_path / "again")
    (pkg / f"b{EXT}").unlink()  # b's build missing: c, built against it, is not used either
    assert _fresh(pkg) == {"a": True, "b": False, "c": False}


def test_the_installed_group_builds_are_stamped_with_their_pxd_files() -> None:
    """The builds beside the sources (when built) carry the new digest: a build stamped with the
    `.pyx` alone is stale now, whatever its age."""
    for name in ("native_group_core", "native_group_handlers", "native_group"):
        stamp = SIM / f"{name}{native.STAMP_SUFFIX}"
        if not stamp.exists():
            no_compiled_leg(f"sim/{name}.pyx is not built")
        digest = native.cython_digest(SIM / f"{name}.pyx")
        assert stamp.read_text(encoding="ascii").strip() == digest
        assert digest != hashlib.sha256((SIM / f"{name}.pyx").read_bytes()).hexdigest()
        assert native.cython_build("kafka_rebalance.sim", name) is not None
