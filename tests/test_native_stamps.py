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
from kafka_rebalance.cython_deps import cimported_modules, statements

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
    # one copy: setup.py loads the loader's module by its path (it runs without the package)
    deps = ROOT / "src" / "kafka_rebalance" / "cython_deps.py"
    assert SETUP.cython_digest.__code__.co_filename == str(deps)
    assert native.cython_digest.__code__.co_filename == str(deps)
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
    checked = SIM / "native_checked.pxd"  # inline helpers: no .pyx, in the stamp all the same
    assert native.pxd_dependencies(SIM / "native_group_core.pyx") == sorted([checked, core])
    assert native.pxd_dependencies(SIM / "native_group_handlers.pyx") == sorted(
        [checked, core, handlers]
    )
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


# ------------------------------------------- every cimport form Cython takes (review 8 F6)


def _forms(tmp_path: Path) -> Path:
    """top/sub/ with b.pxd, c.pxd, d.pxd, f.pxd and sub/pkg/g.pxd, and a `.pyx` per cimport form."""
    sub = tmp_path / "top" / "sub"
    (sub / "pkg").mkdir(parents=True)
    for init in (tmp_path / "top", sub, sub / "pkg"):
        (init / "__init__.py").write_text("")
    for name in ("b", "c", "d", "f"):
        (sub / f"{name}.pxd").write_text(f"cdef int {name}_x\n")
    (sub / "pkg" / "g.pxd").write_text("cdef int g_x\n")
    forms = {
        "relative_dot": "from . cimport b\n",
        "relative_dot_list": "from . cimport b, c as cc\n",
        "absolute_list": "cimport top.sub.c, top.sub.d\n",
        "absolute_alias": "cimport top.sub.c as cc, top.sub.d\n",
        "package_module": "from .pkg cimport g\n",
        "parenthesized": "from . cimport (\n    b,  # the first\n    c,\n)\n",
        "names_of_a_module": "from .f cimport f_x\nfrom libc.stdint cimport int64_t\n",
        # review 9 F5: a backslash continuation and `;`-separated statements were cut short
        "continued": "from . cimport b, \\\n    c\n",
        "continued_absolute": "cimport top.sub.c, \\\n    top.sub.d as dd\n",
        "continued_before_cimport": "from . \\\n    cimport b\n",
        "continued_crlf": "from . cimport b, \\\r\n    c\r\n",
        "semicolons": "from . cimport b; from . cimport c\n",
        "semicolon_absolute": "cdef int x = 1; cimport top.sub.d  # ; cimport top.sub.b\n",
        "semicolon_in_parentheses": "from . cimport (b,\n    c); from .pkg cimport g\n",
        "no_space_after_from": "from.f cimport f_x\n",
    }
    for name, text in forms.items():
        (sub / f"{name}.pyx").write_text(text)
    return sub


def test_every_cimport_form_names_its_pxd(tmp_path: Path) -> None:
    """`from . cimport b` used to find nothing and `cimport x.c, x.d` only c: a `.pxd` read by the
    build but outside its stamp (the build stays "fresh" when it is edited)."""
    sub = _forms(tmp_path)
    want = {
        "relative_dot": ["b"],
        "relative_dot_list": ["b", "c"],
        "absolute_list": ["c", "d"],
        "absolute_alias": ["c", "d"],
        "package_module": ["pkg/g"],
        "parenthesized": ["b", "c"],
        "names_of_a_module": ["f"],
        "continued": ["b", "c"],
        "continued_absolute": ["c", "d"],
        "continued_before_cimport": ["b"],
        "continued_crlf": ["b", "c"],
        "semicolons": ["b", "c"],
        "semicolon_absolute": ["d"],
        "semicolon_in_parentheses": ["b", "c", "pkg/g"],
        "no_space_after_from": ["f"],
    }
    for name, pxds in want.items():
        pyx = sub / f"{name}.pyx"
        assert native.pxd_dependencies(pyx) == sorted(sub / f"{p}.pxd" for p in pxds), name
        digest = native.cython_digest(pyx)
        assert digest != native.source_digest(pyx), name  # the .pxd files are in the stamp
        assert SETUP.cython_digest(pyx) == digest, name
        for p in pxds:  # each one edited alone changes it
            pxd = sub / f"{p}.pxd"
            text = pxd.read_text()
            pxd.write_text(text + "cdef int more\n")
            assert native.cython_digest(pyx) != digest, (name, p)
            pxd.write_text(text)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ('s = "from . cimport b"\n', ['s = ""']),  # a string is not code
        ("x = 'a;b' ; y = 2\n", ['x = ""', "y = 2"]),
        ('"""doc\ncimport b\n"""\nfrom . cimport c\n', ['""', "from . cimport c"]),
        ("a = (1,\n  2)  # (\nb = 3\n", ["a = (1,\n  2)", "b = 3"]),
        ("s = 'it\\'s; #'; cimport c\n", ['s = ""', "cimport c"]),
        ("cdef extern from 'x.h':\n    int f()\n", ['cdef extern from "":', "int f()"]),
    ],
)
def test_statements_leave_out_strings_and_comments(text: str, want: list[str]) -> None:
    """What the scan reads as a statement: a `;`, `#` or "cimport" inside a string or a comment is
    not one; a bracket spans lines."""
    assert statements(text) == want


def test_a_cimport_cycle_ends(tmp_path: Path) -> None:
    """a.pxd and b.pxd cimport each other (Cython takes it for declarations): the scan and the
    freshness check follow each once (the check used to recurse without end: RecursionError)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.pxd").write_text("from .b cimport B\ncdef class A:\n    cdef B b\n")
    (pkg / "b.pxd").write_text("from .a cimport A\ncdef class B:\n    cdef A a\n")
    for name in ("a", "b"):
        (pkg / f"{name}.pyx").write_text(f"cdef class {name.upper()}:\n    pass\n")
        (pkg / f"{name}{EXT}").write_bytes(b"")
        digest = native.cython_digest(pkg / f"{name}.pyx")
        (pkg / f"{name}{native.STAMP_SUFFIX}").write_text(digest + "\n", encoding="ascii")
    assert native.pxd_dependencies(pkg / "a.pyx") == [pkg / "a.pxd", pkg / "b.pxd"]
    assert native.is_fresh_build(str(pkg / f"a{EXT}"), ".pyx")
    (pkg / "b.pyx").write_text("cdef class B:\n    x = 1\n")  # b's build is stale now, so is a's
    native._fresh.cache_clear()
    assert not native.is_fresh_build(str(pkg / f"a{EXT}"), ".pyx")


EXTERNAL = ("libc", "libcpp", "cpython", "cython", "numpy", "posix")


def test_every_cimport_of_the_package_is_understood() -> None:
    """Each cimport statement of every CYTHON source and `.pxd` names a module the scan resolves to
    a `.pxd` of the package, or one outside it (libc, cpython, cython): none is silently missed."""
    sources = [ROOT / s for s in SETUP.CYTHON]
    sources += sorted((ROOT / "src").rglob("*.pxd"))
    for source in sources:
        for base, parts in cimported_modules(source):
            pxd = base.joinpath(*parts).with_suffix(".pxd")
            assert (
                pxd.is_file()
                or parts[0] in EXTERNAL
                or len(parts) > 1
                and (base.joinpath(*parts[:-1]).with_suffix(".pxd").is_file())
            ), (source, parts)
