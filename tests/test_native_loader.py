"""`native.builds_or_sources` and the packages that use it (group/__init__, sim/__init__): the
classic group's three modules run all from their builds or all from their sources, never a stale
build and never a mix, and a module loaded from source is bound on its package like an import.

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

from kafka_rebalance import native

ROOT = Path(__file__).resolve().parent.parent
SUFFIX = ".cpython-311-x86_64-linux-gnu.so"
CLASSIC = ("classic_member", "classic_group_base", "classic_group")


def _copy_with_stand_ins(tmp_path: Path, stale: set[str]) -> Path:
    """The package with a stand-in build for the classic trio and the coordinator; the stamps of
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
    import kafka_rebalance.sim.coordinator
    assert kafka_rebalance.group.CLASSIC_COMPILED is False
    assert kafka_rebalance.sim.COORDINATOR_COMPILED is False
    names = ["kafka_rebalance.group." + n for n in {classic}] + ["kafka_rebalance.sim.coordinator"]
    for name in names:
        assert sys.modules[name].__file__.endswith(".py"), sys.modules[name].__file__
        assert pkgutil.resolve_name(name) is sys.modules[name], name  # dotted access
    g = kafka_rebalance.group
    assert g.classic_group.ClassicGroup.__mro__[1] is g.classic_group_base.ClassicGroupBase
    assert g.classic_group_base.ClassicGroupMember is g.classic_member.ClassicGroupMember
    assert kafka_rebalance.sim.coordinator.ClassicGroup is g.classic_group.ClassicGroup
    with mock.patch("kafka_rebalance.group.classic_group.ClassicGroup.heartbeat") as hb:
        g.classic_group.ClassicGroup("x").heartbeat(None, 0)
    assert hb.call_count == 1
    print("sources")
""".replace("{classic}", repr(list(CLASSIC)))


@pytest.mark.parametrize(
    "stale",
    [set(CLASSIC), {"classic_member"}, {"classic_group_base"}, {"classic_group"}],
    ids=lambda s: "+".join(sorted(s)),
)
def test_one_stale_build_runs_all_three_sources(tmp_path: Path, stale: set[str]) -> None:
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


def test_sources_of_leaves_the_package_as_it_was() -> None:
    """The reference modules load beside the running ones; the package's attributes and
    sys.modules keep the modules that run."""
    from kafka_rebalance import group
    from kafka_rebalance.group import classic_group

    before = {n: getattr(group, n) for n in CLASSIC}
    pure = native.sources_of("kafka_rebalance.group", CLASSIC)
    assert pure["classic_group"] is not classic_group
    assert pure["classic_group"].__file__.endswith("classic_group.py")
    assert {n: getattr(group, n) for n in CLASSIC} == before
    assert all(sys.modules[f"kafka_rebalance.group.{n}"] is before[n] for n in CLASSIC)
