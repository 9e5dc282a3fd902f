"""The machine line of every benchmark header: CPU, memory, Python (and Java when asked), and
whether the compiled kernels ran (a pure install is 1.5-4x slower on the kernels' paths, and a
stale build is silently not used: kafka_rebalance.native), so a table says what it measured."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

# (module, what it is) for every module setup.py compiles
COMPILED = (
    ("kafka_rebalance.assign.kernels", "assign/kernels.py"),
    ("kafka_rebalance.assign.kernels_heterogeneous", "assign/kernels_heterogeneous.py"),
    ("kafka_rebalance.assign.kernels_sticky", "assign/kernels_sticky.py"),
    ("kafka_rebalance.sim.compiled", "sim/poll_kernels.py"),
)


def kernels() -> str:
    """'kernels: compiled (mypyc)' when every compiled module runs its fresh build, else which do."""
    import importlib

    states = []
    for name, label in COMPILED:
        try:
            compiled = bool(importlib.import_module(name).is_compiled())
        except ImportError:
            return "kernels: unknown (kafka_rebalance not importable)"
        states.append((label, compiled))
    if all(c for _, c in states):
        return "kernels: compiled (mypyc)"
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
