"""`native.compiled_together` (group/__init__) and `native.builds_or_sources` (sim/__init__): the
group's compiled modules (the classic group and the KIP-848 group, one set) run all from their
builds or all from their sources, never a stale build
and never a mix, and a module loaded from source is bound on its package like an import. Importing
the group package itself reads nothing (the pure core's init does no I/O): the decision is made at
the first import of one of the classic modules.

Builds nothing: a copy of the package gets stand-in builds (not loadable) with stamps that match
their sources or not. The loader only looks builds up; importing a stand-in would fail loudly.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from compiled_legs import from_source
from kafka_rebalance import group, native

ROOT = Path(__file__).resolve().parent.parent
SUFFIX = ".cpython-311-x86_64-linux-gnu.so"
CLASSIC = group.COMPILED_MODULES  # the classic and the KIP-848 modules: one set


def _copy_with_stand_ins(tmp_path: Path, stale: set[str]) -> Path:
    """The package with a stand-in build for the classic modules and the coordinator; the stamps of
    the modules in `stale` do not match their sources, the others' do."""
    src = tmp_path / "src"
    shutil.copytree(
        ROOT / "src" / "kafka_rebalance",
        src / "kafka_rebalance",
        ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.build-sha256", "__pycache__"),
    )
    for folder, name in [("group", n) for n in CLASSIC] + [("sim", "coordinator")]:
        base = src / "kafka_rebalance" / folder
        (base / f"{name}{SUFFIX}").write_bytes(b"\x7fELF not a real build")
        digest = native.source_digest(base / f"{name}.py")
        (base / f"{name}{native.STAMP_SUFFIX}").write_text("0" * 64 if name in stale else digest)
    return src


def _run(src: Path, code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        cwd=src,
    )


SOURCES_RUN = """
    import pkgutil, sys
    from unittest import mock
    import kafka_rebalance.group, kafka_rebalance.sim
    import kafka_rebalance.group.classic_group
    import kafka_rebalance.group.consumer_group, kafka_rebalance.group.consumer_group_member
    import kafka_rebalance.sim.coordinator
    assert kafka_rebalance.group.CLASSIC_COMPILED is False
    assert kafka_rebalance.sim.COORDINATOR_COMPILED is False
    names = ["kafka_rebalance.group." + n for n in {classic}] + ["kafka_rebalance.sim.coordinator"]
    for name in names:
        assert sys.modules[name].__file__.endswith(".py"), sys.modules[name].__file__
        assert pkgutil.resolve_name(name) is sys.modules[name], name  # dotted access
    g = kafka_rebalance.group
    assert g.classic_group.ClassicGroup.__mro__[1:3] == (
        g.classic_group_join.ClassicGroupJoin, g.classic_group_base.ClassicGroupBase
    )
    assert g.classic_group_base.ClassicGroupMember is g.classic_member.ClassicGroupMember
    assert kafka_rebalance.sim.coordinator.ClassicGroup is g.classic_group.ClassicGroup
    with mock.patch("kafka_rebalance.group.classic_group.ClassicGroup.heartbeat") as hb:
        g.classic_group.ClassicGroup("x").heartbeat(None, 0)
    assert hb.call_count == 1
    print("sources")
""".replace("{classic}", repr(list(CLASSIC)))


@pytest.mark.parametrize(
    "stale",
    [set(CLASSIC)] + [{name} for name in CLASSIC],
    ids=lambda s: "+".join(sorted(s)),
)
def test_one_stale_build_runs_all_the_sources(tmp_path: Path, stale: set[str]) -> None:
    done = _run(_copy_with_stand_ins(tmp_path, stale), SOURCES_RUN)
    assert done.returncode == 0 and done.stdout.strip() == "sources", done.stderr


def test_all_fresh_builds_are_chosen(tmp_path: Path) -> None:
    """The control: with every stamp matching, the loader picks the (stand-in) builds, so the
    cases above ran the sources because of the one stale stamp."""
    src = _copy_with_stand_ins(tmp_path, set())
    chosen = _run(src, "import kafka_rebalance.group as g; print(g.CLASSIC_COMPILED)")
    assert chosen.returncode == 0 and chosen.stdout.strip() == "True", chosen.stderr
    loaded = _run(src, "import kafka_rebalance.group.classic_member")
    assert loaded.returncode != 0 and "ImportError" in loaded.stderr  # the stand-in, imported


NO_IO_AT_PACKAGE_IMPORT = """
    import sys
    opened = []
    sys.addaudithook(lambda event, args: event == "open" and opened.append(str(args[0])))
    import kafka_rebalance.group as g
    group_dir = g.__path__[0]
    at_init = [p for p in opened if p.startswith(group_dir) and "__init__" not in p]
    assert at_init == [], at_init  # no stamp read, no source hashed by the package's init
    assert not [m for m in sys.modules if ".classic_" in m and "messages" not in m]
    before = len(opened)
    import kafka_rebalance.group.classic_group
    stamps = sorted(p.rsplit("/", 1)[1] for p in opened[before:] if p.endswith(".build-sha256"))
    print(" ".join(stamps))
    print(g.CLASSIC_COMPILED, g.classic_group.__file__.endswith(".py"))
"""


def test_the_group_package_reads_nothing_at_import(tmp_path: Path) -> None:
    """F14: `import kafka_rebalance.group` opens no file of the package but its own init; the
    stamps are read, and the stale one seen, when the first classic module is imported."""
    done = _run(_copy_with_stand_ins(tmp_path, {CLASSIC[-1]}), NO_IO_AT_PACKAGE_IMPORT)
    assert done.returncode == 0, done.stderr
    stamps, state = done.stdout.strip().splitlines()
    assert stamps.split() == sorted(f"{n}{native.STAMP_SUFFIX}" for n in CLASSIC)
    assert state == "False True"  # the sources run


def test_the_set_is_every_compiled_module_of_group() -> None:
    """The all-or-nothing rule covers exactly group/'s modules in setup.py's COMPILED list."""
    setup = from_source(ROOT / "setup.py", "setup_for_native_loader")
    prefix = "src/kafka_rebalance/group/"
    compiled = [s.removeprefix(prefix)[:-3] for s in setup.COMPILED if s.startswith(prefix)]
    assert sorted(compiled) == sorted(CLASSIC)


def test_sources_of_leaves_the_package_as_it_was() -> None:
    """The reference modules load beside the running ones; the package's attributes and
    sys.modules keep the modules that run."""
    from kafka_rebalance.group import classic_group, consumer_group, consumer_group_member  # noqa: F401

    before = {n: getattr(group, n) for n in CLASSIC}
    pure = native.sources_of("kafka_rebalance.group", ("classic_group",))  # and the rest of the set
    assert list(pure) == list(CLASSIC)
    assert pure["classic_group"] is not classic_group
    assert pure["classic_group"].__file__.endswith("classic_group.py")
    assert {n: getattr(group, n) for n in CLASSIC} == before
    assert all(sys.modules[f"kafka_rebalance.group.{n}"] is before[n] for n in CLASSIC)


def test_a_module_the_sources_imported_first_is_forgotten_with_them() -> None:
    """Review 6 F1, F9: loading the simulator's sources imported sim/compiled.py for the first time,
    which bound the poll kernels' *source* (then in sys.modules) for the rest of the process, and
    the compiled world took its kernels from it. A fresh interpreter, so nothing imported
    sim/compiled.py before."""
    code = """
        from kafka_rebalance import native, sim
        import sys
        # the sources are the first to import sim/compiled.py and sim/scenario.py
        assert "kafka_rebalance.sim.compiled" not in sys.modules
        assert "kafka_rebalance.sim.scenario" not in sys.modules
        pure = native.sources_of("kafka_rebalance.sim", sim.COMPILED_TOGETHER)
        assert pure["coordinator"].KERNELS is pure["world_core"].KERNELS
        assert pure["world_core"].KERNELS.__file__.endswith("poll_kernels.py")
        from kafka_rebalance.sim import compiled, world_core
        assert world_core.KERNELS is compiled.KERNELS
        assert (compiled.KERNELS is pure["world_core"].KERNELS) is False
        # a module that took nothing of the sources stays: its classes exist once (review 6 F9)
        from kafka_rebalance.sim import scenario
        assert pure["world_core"].Scenario is scenario.Scenario
        print(native.is_compiled(compiled.KERNELS), sim.COORDINATOR_COMPILED)
    """
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, cwd=ROOT
    )
    assert run.returncode == 0, run.stderr
    kernels_compiled, set_compiled = run.stdout.split()
    assert kernels_compiled == set_compiled  # the build when the set's builds run, else the source
