"""The machine line of every benchmark header: CPU, memory, Python (and Java when asked), and
whether the compiled kernels ran (a pure install is 1.5-4x slower on the kernels' paths, and a
stale build is silently not used: kafka_rebalance.native), so a table says what it measured."""

from __future__ import annotations

import ast
import importlib.util
import os
import platform
import shutil
import subprocess
from pathlib import Path

SETUP = Path(__file__).resolve().parents[1] / "setup.py"


def compiled_sources() -> list[str]:
    """setup.py's COMPILED list (src/kafka_rebalance/...py), read from its text: the one list of
    what is compiled, so a module added there is reported here without a second edit."""
    tree = ast.parse(SETUP.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "COMPILED" for t in node.targets
        ):
            return [str(v) for v in ast.literal_eval(node.value)]
    raise LookupError(f"{SETUP}: no COMPILED list")


def runs_compiled(source: str) -> bool:
    """Does importing the module of `source` give its fresh compiled build (kafka_rebalance.native's
    rule: a build whose stamp matches the source; a stale one is not used)?"""
    from kafka_rebalance import native

    name = ".".join(Path(source).relative_to("src").with_suffix("").parts)
    spec = importlib.util.find_spec(name)
    return spec is not None and native.is_fresh_build(spec.origin)


def kernels() -> str:
    """'kernels: compiled (mypyc)' when every compiled module runs its fresh build, else which do."""
    try:
        states = [
            (source.removeprefix("src/kafka_rebalance/"), runs_compiled(source))
            for source in compiled_sources()
        ]
    except ImportError:
        return "kernels: unknown (kafka_rebalance not importable)"
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
