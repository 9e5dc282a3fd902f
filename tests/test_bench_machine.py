"""bench/_machine.py: every benchmark header says what ran, per user of the compiled modules (the
assignors, the simulator's engine and poll kernels, the classic group and coordinator), read from
the switches those users read (review 2 F12), for every module setup.py compiles (its COMPILED
list is the one list)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from compiled_legs import from_source, no_compiled_leg
from kafka_rebalance import group, model_fields, native, sim
from kafka_rebalance.assign import kernels, roundrobin, sticky, uniform
from kafka_rebalance.assign import range as range_mod
from kafka_rebalance.sim import compiled

ROOT = Path(__file__).resolve().parents[1]
MACHINE = from_source(ROOT / "bench" / "_machine.py", "bench_machine")
SETUP = from_source(ROOT / "setup.py", "setup_for_machine")
PREFIX = "src/kafka_rebalance/"


def test_the_list_is_setup_pys() -> None:
    assert MACHINE.compiled_sources() == SETUP.COMPILED


def test_every_compiled_module_has_a_user() -> None:
    """Each COMPILED module is run by at least one reported user, and each user's modules are
    compiled ones: a module added to setup.py without a user here fails."""
    used = {source for user in MACHINE.users() for source in user.sources}
    assert used == {s.removeprefix(PREFIX) for s in SETUP.COMPILED + SETUP.CYTHON}


def test_the_cython_list_is_setup_pys() -> None:
    assert MACHINE.compiled_sources("CYTHON") == SETUP.CYTHON


def test_each_user_is_reported_by_the_switch_it_reads() -> None:
    by_label = {user.label: user.switch() for user in MACHINE.users()}
    assert by_label == {
        "model fields": native.is_fresh_build(model_fields.__file__),
        "range": range_mod.USE_COMPILED,
        "roundrobin": roundrobin.USE_COMPILED,
        "uniform": uniform.USE_COMPILED,
        "range Cython": range_mod.USE_COMPILED and range_mod.NATIVE is not None,
        "uniform Cython": uniform.USE_COMPILED and uniform.NATIVE is not None,
        "sticky": sticky.USE_COMPILED,
        "sticky general": sticky.USE_COMPILED and sticky.GENERAL_COMPILED,
        "sticky general kernel": sticky.USE_COMPILED and sticky.GENERAL_KERNEL,
        "sim poll kernels": native.is_compiled(compiled.KERNELS),
        "sim engine": compiled.engine_build() != "source",
        "sim engine Cython": compiled.engine_build() == "cython",
        "classic group": group.CLASSIC_COMPILED,
        "KIP-848 group": group.CONSUMER_COMPILED,
        "sim coordinator": sim.COORDINATOR_COMPILED,
        "sim native world": all(
            native.cython_build("kafka_rebalance.sim", n) for n in MACHINE.NATIVE_WORLD
        ),
        "sim native pieces": all(
            native.cython_build("kafka_rebalance.sim", n) for n in MACHINE.NATIVE_PIECES
        ),
    }


def test_a_switch_turned_off_is_reported_pure(monkeypatch: pytest.MonkeyPatch) -> None:
    """What runs, not what was built: the assignors' switch off (as a stale model_fields build
    turns it off) makes the line say so, whatever kernels.py's own build is."""
    for module in (range_mod, roundrobin, uniform):
        monkeypatch.setattr(module, "USE_COMPILED", False)
    line = MACHINE.kernels()
    if line != "kernels: pure Python (no fresh compiled build)":
        assert "range pure, roundrobin pure, uniform pure" in line, line
    monkeypatch.setattr(sticky, "USE_COMPILED", False)
    assert "sticky compiled" not in MACHINE.kernels()


def test_the_machine_line_says_how_the_kernels_ran() -> None:
    states = [user.switch() for user in MACHINE.users()]
    line = MACHINE.machine()
    if all(states):
        assert line.endswith("; kernels: compiled (mypyc, Cython)")
    elif not any(states):
        assert line.endswith("; kernels: pure Python (no fresh compiled build)")
    else:
        assert "pure" in line and "compiled" in line
    assert "Python " in line and "CPUs" in line


def test_a_mixed_run_names_each_user(monkeypatch: pytest.MonkeyPatch) -> None:
    users = [MACHINE.User("a", (), lambda: True), MACHINE.User("b c", (), lambda: False)]
    monkeypatch.setattr(MACHINE, "users", lambda: users)
    assert MACHINE.kernels() == "kernels: a compiled, b c pure"


def test_no_build_at_all_is_pure(monkeypatch: pytest.MonkeyPatch) -> None:
    users = [MACHINE.User("a", (), lambda: False)]
    monkeypatch.setattr(MACHINE, "users", lambda: users)
    assert MACHINE.kernels() == "kernels: pure Python (no fresh compiled build)"


def test_a_stale_model_fields_build_reports_the_assignors_pure(tmp_path: Path) -> None:
    """The case of review 2 F12 on a copy of the built package: model_fields' stamp no longer
    matches, kernels.py's build is still fresh (the old header said "compiled"), and the
    assignors run their reference paths: the line says so."""
    if not kernels.is_compiled():
        no_compiled_leg("no fresh compiled build to copy")
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (src / "kafka_rebalance" / f"model_fields{native.STAMP_SUFFIX}").write_text("0" * 64)
    code = f"""
        import sys
        sys.path.insert(0, {str(ROOT / "bench")!r})
        import _machine
        from kafka_rebalance import native
        from kafka_rebalance.assign import kernels
        assert kernels.__file__.startswith({str(src)!r}), kernels.__file__
        print(native.is_fresh_build(kernels.__file__))
        print(_machine.kernels())
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, "PYTHONPATH": str(src)},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    fresh, line = done.stdout.strip().splitlines()
    assert fresh == "True"  # kernels.py's own build: what the old header reported
    assert "model fields pure, range pure, roundrobin pure, uniform pure" in line, line
    assert "classic group compiled" in line, line  # the other users still run their builds
