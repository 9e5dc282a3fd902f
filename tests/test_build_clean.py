"""setup.py removes every compiled module's artefacts before a build, and after a failed or pure one
(F1): a leftover mypyc module shim without its shared library makes its package unimportable.

Builds nothing: a copy of the package gets stand-in artefacts, which the import must trip over
before the clean-up and not after.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from compiled_legs import from_source
from kafka_rebalance import native

ROOT = Path(__file__).resolve().parent.parent
SETUP: ModuleType = from_source(
    ROOT / "setup.py", "kafka_rebalance_setup"
)  # not __main__: no build
SUFFIX = ".cpython-311-x86_64-linux-gnu.so"


def _copy_package(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(
        ROOT / "src" / "kafka_rebalance",
        src / "kafka_rebalance",
        ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.build-sha256", "__pycache__"),
    )
    return src


def _leftovers(src: Path) -> list[Path]:
    """What a compiled build leaves: a module (here a stand-in) and a stamp per compiled source,
    and mypyc's shared library."""
    made = [src / "0123abcd__mypyc.cpython-311-x86_64-linux-gnu.so"]
    for source in SETUP.COMPILED:
        rel = Path(source).relative_to("src")
        made.append(src / rel.parent / f"{rel.stem}{SUFFIX}")
        made.append(src / rel.parent / f"{rel.stem}.build-sha256")
    for path in made:
        path.write_bytes(b"\x7fELF not a real build")
    return made


def _import_simulator(src: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [sys.executable, "-c", "import kafka_rebalance.sim.member, kafka_rebalance.assign.uniform"],
        env=env,
        capture_output=True,
        text=True,
        cwd=src,
    )


def test_the_compiled_list_names_the_simulator_kernels() -> None:
    assert "src/kafka_rebalance/sim/poll_kernels.py" in SETUP.COMPILED
    makefile = (ROOT / "Makefile").read_text()
    for source in SETUP.COMPILED + SETUP.CYTHON:  # editing any of them rebuilds (KERNELS)
        assert source in makefile or Path(source).parent.as_posix() + "/kernels*.py" in makefile
    # setup.py loads cython_deps.py to stamp every Cython build: an edit to it must rebuild too
    kernels = next(line for line in makefile.splitlines() if line.startswith("KERNELS :="))
    assert "src/kafka_rebalance/cython_deps.py" in kernels.split()


def test_every_compiled_artefact_is_found_and_removed(tmp_path: Path) -> None:
    src = _copy_package(tmp_path)
    made = _leftovers(src)
    assert SETUP.compiled_artefacts(src) == sorted(made)
    sources = sorted(p for p in src.rglob("*.py"))
    SETUP.remove_compiled([src])
    assert SETUP.compiled_artefacts(src) == []
    assert not any(p.exists() for p in made)
    assert sorted(p for p in src.rglob("*.py")) == sources  # no source touched


def test_a_build_no_list_names_is_removed_too(tmp_path: Path) -> None:
    """Review 5 F3: a module taken off COMPILED keeps its old build and stamp beside its .py (where
    the build shadows the source); the clean-up removes them as well, and no source."""
    src = _copy_package(tmp_path)
    folder = src / "kafka_rebalance" / "group"
    made = [
        folder / f"consumer_group_records{SUFFIX}",
        folder / "consumer_group_records.build-sha256",
    ]
    assert not any("group/consumer_group_records" in s for s in SETUP.COMPILED)
    for path in made:
        path.write_bytes(b"\x7fELF not a real build")
    assert set(made) <= set(SETUP.compiled_artefacts(src))
    SETUP.remove_compiled([src])
    assert not any(p.exists() for p in made)
    assert (folder / "consumer_group_records.py").exists()


def test_after_the_clean_up_the_simulator_imports_again(tmp_path: Path) -> None:
    """The F1 case: the simulator's module shim left behind broke `import kafka_rebalance.sim`."""
    src = _copy_package(tmp_path)
    _leftovers(src)
    before = _import_simulator(src)
    assert before.returncode != 0 and "ImportError" in before.stderr, before.stderr
    SETUP.remove_compiled([src])
    after = _import_simulator(src)
    assert after.returncode == 0, after.stderr


def test_stamps_hold_the_digests_taken_before_the_compile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review 2 F5: a source edited during the (minutes long) compile must not get the stamp of
    its new text beside a build of the old one; the stamp is the digest taken before mypyc read
    the sources, so such a build is seen as stale and not used."""
    from setuptools import Distribution, Extension

    monkeypatch.chdir(ROOT)  # COMPILED names sources relative to the project
    before = SETUP.source_digests()
    assert before == {
        **{s: hashlib.sha256((ROOT / s).read_bytes()).hexdigest() for s in SETUP.COMPILED},
        **{s: native.cython_digest(ROOT / s) for s in SETUP.CYTHON},  # .pyx and its .pxd files
    }
    cmd = SETUP.OptionalMypycBuild(Distribution())
    every = SETUP.COMPILED + SETUP.CYTHON
    cmd.source_digests = {s: f"{i:064x}" for i, s in enumerate(every)}  # "then"
    cmd.extensions = [Extension(SETUP._module_name(s), []) for s in every]
    cmd.build_lib, cmd.inplace = str(tmp_path), False
    for ext in cmd.extensions:
        built = tmp_path / cmd.get_ext_filename(cmd.get_ext_fullname(ext.name))
        built.parent.mkdir(parents=True, exist_ok=True)
        built.write_bytes(b"")
    cmd._write_stamps()
    for i, source in enumerate(every):
        rel = Path(source).relative_to("src")
        stamp = tmp_path / rel.parent / (rel.stem + SETUP.STAMP_SUFFIX)
        assert stamp.read_text(encoding="ascii") == f"{i:064x}\n", source


def test_every_native_simulator_module_is_compiled_without_fused_multiply_add(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`-ffp-contract=off` reaches the compile of every sim/native_*.pyx (review 8 S3): a `cdef
    inline` of a `.pxd` compiles into each module that cimports it with that module's flags, so
    a module without doubles of its own gets it too (docs/sim-native.md, "Floats"). Translates
    nothing: cythonize is replaced by a stand-in that returns the extensions it is given."""
    import types

    stub = types.ModuleType("Cython.Build")
    stub.cythonize = lambda extensions, **_: list(extensions)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "Cython.Build", stub)
    monkeypatch.delenv(SETUP.CHECKED_ENV, raising=False)
    args = {
        ext.name: ext.extra_compile_args for ext in SETUP.OptionalMypycBuild._cython_extensions()
    }
    native_sim = [
        SETUP._module_name(s)
        for s in SETUP.CYTHON
        if Path(s).parent.name == "sim" and Path(s).name.startswith("native_")
    ]
    assert len(native_sim) >= 9 and set(native_sim) <= set(args)
    for name in native_sim:
        assert "-ffp-contract=off" in args[name], name
    for pyx in (ROOT / "src" / "kafka_rebalance" / "sim").glob("native_*.pyx"):
        assert str(pyx.relative_to(ROOT)) in SETUP.CYTHON, pyx  # none left out of the build
