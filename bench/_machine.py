"""The machine line of every benchmark header: CPU, memory, Python (and Java when asked), and
whether the compiled kernels ran, per user (a pure install is 1.5-4x slower on the kernels' paths,
and a stale build is silently not used: kafka_rebalance.native), so a table says what it measured."""

from __future__ import annotations

import ast
import os
import platform
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

SETUP = Path(__file__).resolve().parents[1] / "setup.py"


def compiled_sources(name: str = "COMPILED") -> list[str]:
    """setup.py's COMPILED list (mypyc, src/kafka_rebalance/...py) or, with name="CYTHON", its
    Cython kernels (.pyx), read from its text: the one list of what is compiled, so a module added
    there is reported here without a second edit."""
    tree = ast.parse(SETUP.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return [str(v) for v in ast.literal_eval(node.value)]
    raise LookupError(f"{SETUP}: no {name} list")


class User(NamedTuple):
    """Code that runs compiled builds: `sources` (setup.py's COMPILED entries, under
    src/kafka_rebalance/) when `switch()`, the flag it reads at run time, is on; else its sources."""

    label: str
    sources: tuple[str, ...]
    switch: Callable[[], bool]


NATIVE_WORLD = (
    "native_world_base",
    "native_member_messages",
    "native_world_client",
    "native_world_member",
    "native_coordinator",
    "native_world",
    "native_books",
    "native_batch_time",
    "native_group_core",
    "native_group_handlers",
)
NATIVE_PIECES = (
    "native_members",
    "native_group",
)


def users() -> list[User]:
    """Every user of a compiled module and the switch it reads: what runs, not whether a build's
    stamp matches (a stale model_fields build turns the assignors' kernels off while kernels.py's
    own build is fresh)."""
    from kafka_rebalance import group, model, model_fields, native, sim
    from kafka_rebalance.assign import range as range_mod
    from kafka_rebalance.assign import roundrobin, sticky, uniform
    from kafka_rebalance.sim import compiled, world_core

    kernels = (
        "assign/kernels.py",
        "assign/kernels_hashmap.py",
        "assign/kernels_heterogeneous.py",
        "model_fields.py",
    )
    return [
        User(
            "model fields",
            ("model_fields.py",),
            lambda: (
                model._MemberFields is model_fields.MemberFields
                and native.is_fresh_build(model_fields.__file__)
            ),
        ),
        User("range", kernels, lambda: range_mod.USE_COMPILED),
        User("roundrobin", kernels, lambda: roundrobin.USE_COMPILED),
        User("uniform", kernels, lambda: uniform.USE_COMPILED),
        # the Cython kernels (setup.py CYTHON), used on the compiled path only: range without
        # racks and server-range (their rank-order loop); uniform (both or neither)
        User(
            "range Cython",
            ("assign/range_native.pyx",),
            lambda: range_mod.USE_COMPILED and range_mod.NATIVE is not None,
        ),
        User(
            "uniform Cython",
            (
                "assign/uniform_native.pyx",
                "assign/uniform_native_plan.pyx",
                "assign/uniform_native_balance.pyx",
            ),
            lambda: uniform.USE_COMPILED and uniform.NATIVE is not None,
        ),
        User(
            "sticky", ("assign/kernels_sticky.py", "assign/kernels.py"), lambda: sticky.USE_COMPILED
        ),
        User(
            "sticky general",
            ("assign/sticky_general.py",),
            lambda: sticky.USE_COMPILED and native.is_compiled(sticky.general_compiled),
        ),
        User(
            "sticky general kernel",
            ("assign/kernels_sticky_general.py", "assign/kernels_sticky_moves.py"),
            lambda: sticky.USE_COMPILED and sticky.GENERAL_KERNEL,
        ),
        # run by the world and the coordinator (sim.compiled.KERNELS) and, in the set sim/__init__.py
        # builds or not as a whole, by the member
        User(
            "sim poll kernels",
            ("sim/poll_kernels.py",),
            lambda: native.is_compiled(world_core.KERNELS),
        ),
        # the event loop: the Cython heap when fresh, else engine.py's mypyc build (sim/compiled.py);
        # bench/sim_event_mix.py swaps the engine module for its interpreted counting class
        User(
            "sim engine",
            ("sim/engine.py",),
            lambda: compiled.engine_build(world_core.ENGINE) != "source",
        ),
        # the C heap is preferred to engine.py's mypyc build: a run on the latter says so (review 7 F4)
        User(
            "sim engine Cython",
            ("sim/native_engine.pyx",),
            lambda: compiled.engine_build(world_core.ENGINE) == "cython",
        ),
        User(
            "classic group",
            tuple(f"group/{name}.py" for name in group.CLASSIC_MODULES),
            lambda: group.CLASSIC_COMPILED,
        ),
        # the KIP-848 group: in the group's compiled set with the classic one (group/__init__.py)
        User(
            "KIP-848 group",
            tuple(f"group/{name}.py" for name in group.CONSUMER_MODULES),
            lambda: group.CONSUMER_COMPILED,
        ),
        # the coordinator with the world and its classic members: compiled together (sim/__init__.py)
        User(
            "sim coordinator",
            tuple(f"sim/{name}.py" for name in sim.COMPILED_TOGETHER if name != "poll_kernels"),
            lambda: sim.COORDINATOR_COMPILED,
        ),
        # the native classic core (docs/sim-native.md): what core="auto"/"native" runs (the world,
        # its members, books and batch times, the coordinator and the group twin's core)
        User(
            "sim native world",
            tuple(f"sim/{name}.pyx" for name in NATIVE_WORLD),
            lambda: all(native.cython_build("kafka_rebalance.sim", n) for n in NATIVE_WORLD),
        ),
        # its pieces no run calls yet (member arrays; the group twin's object API, for the tests)
        User(
            "sim native pieces",
            tuple(f"sim/{name}.pyx" for name in NATIVE_PIECES),
            lambda: all(native.cython_build("kafka_rebalance.sim", n) for n in NATIVE_PIECES),
        ),
    ]


ALL_COMPILED = "kernels: compiled (mypyc, Cython)"


def kernels() -> str:
    """'kernels: compiled (mypyc, Cython)' when every user runs compiled builds, 'pure Python' when none
    does, else each user's state ('range pure, ..., classic group compiled')."""
    try:
        states = [(user.label, user.switch()) for user in users()]
    except ImportError:
        return "kernels: unknown (kafka_rebalance not importable)"
    if all(c for _, c in states):
        return ALL_COMPILED
    if not any(c for _, c in states):
        return "kernels: pure Python (no fresh compiled build)"
    return "kernels: " + ", ".join(f"{label} {'compiled' if c else 'pure'}" for label, c in states)


def _cpu() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return cpu


def _memory() -> str:
    try:
        kib = int(Path("/proc/meminfo").read_text(encoding="utf-8").split()[1])
    except (OSError, ValueError, IndexError):
        return ""
    return f", {kib / 1024 / 1024:.0f} GiB"


def _java() -> str:
    if not shutil.which("java"):
        return "no java"
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        return (out.stderr or out.stdout).splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError, IndexError):
        return "java (version unknown)"


def machine(java: bool = False) -> str:
    """CPU model and count, memory, Python (and Java) versions, and the kernels line."""
    line = (
        f"{_cpu()}, {os.cpu_count()} CPUs ({platform.machine()}){_memory()}, "
        f"Python {platform.python_version()}"
    )
    if java:
        line += f", {_java()}"
    return f"{line}; {kernels()}"
