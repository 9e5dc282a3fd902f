"""Layers point one way, modules stay small, and no import cycles.

An import is a dependency wherever it is written: at the top, inside a function,
under `if TYPE_CHECKING:`, or through `importlib.import_module("...")` with a
constant name (relative names resolved against `__package__`).

Rules (docs/architecture.md, "Layers"):
- core (`assign/`, `group/`, `cluster/`, `parallel/`, `model`, `errors`, `textfmt`) imports
  nothing from the shell (`sim/`, `kafka/`, `pipeline/`, `report/`, `ops/`, `commands/`,
  `demo/`, `cli`, `output`, `io_util`, the package's public API in `__init__`);
- nothing imports `commands/` except `cli` (and `commands/` itself);
- `demo/` imports only the public API (`kafka_rebalance`) and its own modules;
- no import cycles between modules;
- no module over 600 lines.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

PACKAGE = "kafka_rebalance"
SRC = Path(__file__).resolve().parents[1] / "src"
MAX_LINES = 600

CORE = ("assign", "group", "cluster", "parallel", "model", "errors", "textfmt", "fields", "limits")
SHELL = (
    "sim",
    "kafka",
    "pipeline",
    "report",
    "ops",
    "commands",
    "demo",
    "cli",
    "__main__",
    "output",
    "io_util",
    "io_publish",
    "io_temp",
)

# Known cycles that other pieces of work are removing; each entry names its owner. Remove an
# entry when its cycle is gone (the test fails on a stale entry, so the list cannot rot).
KNOWN_CYCLES: dict[frozenset[str], str] = {}

# Modules over MAX_LINES that other pieces of work are splitting; same rule as KNOWN_CYCLES.
KNOWN_OVERSIZE: dict[str, str] = {}


# -- the import graph ------------------------------------------------------------------


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str | None, level: int, current: str, is_package: bool) -> str | None:
    if level == 0:
        return module
    base = current.split(".") if is_package else current.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _const_str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def imports_of(source: str, current: str, is_package: bool, known: set[str]) -> set[str]:
    """Every module `source` imports (anywhere in it), among `known`."""
    found: set[str] = set()

    def add(name: str | None) -> None:
        # the deepest known module the name falls in: `a.b.c` (a function c of a.b) -> `a.b`
        while name:
            if name in known:
                found.add(name)
                return
            name = name.rpartition(".")[0]

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node.module, node.level, current, is_package)
            for alias in node.names:
                full = f"{base}.{alias.name}" if base else alias.name
                add(full if full in known else base)
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name not in ("import_module", "__import__") or not node.args:
                continue
            target = _const_str(node.args[0])
            if target is None:
                continue
            if target.startswith("."):
                level = len(target) - len(target.lstrip("."))
                add(_resolve(target[level:] or None, level, current, is_package))
            else:
                add(target)
    found.discard(current)
    return found


def build_graph(root: Path = SRC) -> dict[str, set[str]]:
    files = {module_name(p, root): p for p in (root / PACKAGE).rglob("*.py")}
    known = set(files)
    return {
        name: imports_of(path.read_text(encoding="utf-8"), name, path.name == "__init__.py", known)
        for name, path in files.items()
    }


# -- the rules -------------------------------------------------------------------------


def _area(module: str) -> str:
    """`kafka_rebalance.assign.range` -> `assign`; the package itself -> `__init__`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_violations(graph: Mapping[str, Iterable[str]]) -> list[str]:
    out = []
    for src, deps in sorted(graph.items()):
        a = _area(src)
        for dst in sorted(deps):
            b = _area(dst)
            if a in CORE and (b in SHELL or b == "__init__"):
                out.append(f"core {src} imports shell {dst}")
            if b == "commands" and a not in ("cli", "commands"):
                out.append(f"{src} imports {dst}: only cli imports commands/")
            if a == "demo" and b not in ("demo", "__init__"):
                out.append(f"demo {src} imports {dst}: demo uses the public API only")
    return out


def cycles(graph: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(frozenset(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def oversize(root: Path = SRC) -> dict[str, int]:
    """Modules over MAX_LINES: Python sources and the Cython kernels (.pyx) alike."""
    out = {}
    for p in sorted([*(root / PACKAGE).rglob("*.py"), *(root / PACKAGE).rglob("*.pyx")]):
        n = len(p.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES:
            out[module_name(p, root)] = n
    return out


# -- the tests on the package ----------------------------------------------------------


def test_layers_point_one_way():
    assert layer_violations(build_graph()) == []


def test_no_import_cycles():
    found = cycles(build_graph())
    unexpected = [sorted(c) for c in found if c not in KNOWN_CYCLES]
    assert unexpected == [], "import cycles"
    stale = [owner for c, owner in KNOWN_CYCLES.items() if c not in found]
    assert stale == [], "KNOWN_CYCLES lists cycles that are gone: remove them"


def test_no_module_over_600_lines():
    found = oversize()
    unexpected = {m: n for m, n in found.items() if m not in KNOWN_OVERSIZE}
    assert unexpected == {}, f"modules over {MAX_LINES} lines"
    stale = [m for m in KNOWN_OVERSIZE if m not in found]
    assert stale == [], "KNOWN_OVERSIZE lists modules now small enough: remove them"


def test_the_line_limit_sees_cython_kernels(tmp_path: Path) -> None:
    kernel = tmp_path / PACKAGE / "assign" / "big.pyx"
    kernel.parent.mkdir(parents=True)
    kernel.write_text("x = 1\n" * (MAX_LINES + 1), encoding="utf-8")
    assert oversize(tmp_path) == {"kafka_rebalance.assign.big": MAX_LINES + 1}


def test_the_graph_sees_every_kind_of_import():
    """Sanity: the real package's known dependencies are found (top-level, in a function, lazy)."""
    g = build_graph()
    assert "kafka_rebalance.commands.cluster_cmd" in g["kafka_rebalance.cli"] or any(
        d.startswith("kafka_rebalance.commands") for d in g["kafka_rebalance.cli"]
    )
    assert "kafka_rebalance.model" in g["kafka_rebalance.cluster.snapshot"]


# -- the checks would fail -------------------------------------------------------------


def _graph_of(tmp_path: Path, files: dict[str, str]) -> dict[str, set[str]]:
    for rel, text in files.items():
        p = tmp_path / PACKAGE / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    for d in [p for p in (tmp_path / PACKAGE).rglob("*") if p.is_dir()] + [tmp_path / PACKAGE]:
        (d / "__init__.py").touch()
    return build_graph(tmp_path)


def test_a_core_module_importing_the_shell_fails(tmp_path):
    g = _graph_of(
        tmp_path,
        {
            "assign/top.py": "from ..sim import world\n",
            "group/lazy.py": "def f():\n    from ..kafka.admin import x\n",
            "cluster/typing_only.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from kafka_rebalance.pipeline import lag\n"
            ),
            "parallel/dynamic.py": (
                "import importlib\ndef f():\n"
                "    return importlib.import_module('..report.html', __package__)\n"
            ),
            "sim/world.py": "",
            "kafka/admin.py": "",
            "pipeline/lag.py": "",
            "report/html.py": "",
        },
    )
    v = layer_violations(g)
    assert "core kafka_rebalance.assign.top imports shell kafka_rebalance.sim.world" in v
    assert "core kafka_rebalance.group.lazy imports shell kafka_rebalance.kafka.admin" in v
    assert (
        "core kafka_rebalance.cluster.typing_only imports shell kafka_rebalance.pipeline.lag" in v
    )
    assert "core kafka_rebalance.parallel.dynamic imports shell kafka_rebalance.report.html" in v


def test_importing_commands_or_private_modules_from_demo_fails(tmp_path):
    g = _graph_of(
        tmp_path,
        {
            "commands/cluster_cmd.py": "",
            "ops/cluster.py": "",
            "demo/run.py": "from ..commands.cluster_cmd import plan\nfrom ..ops import cluster\n",
            "demo/ok.py": "import kafka_rebalance\nfrom . import run\n",
            "sim/api.py": "from kafka_rebalance.commands import cluster_cmd\n",
        },
    )
    v = layer_violations(g)
    assert any("sim.api imports kafka_rebalance.commands" in x for x in v)
    assert any("demo kafka_rebalance.demo.run imports kafka_rebalance.commands" in x for x in v)
    assert any("demo kafka_rebalance.demo.run imports kafka_rebalance.ops.cluster" in x for x in v)
    assert not any("demo.ok" in x for x in v)


def test_an_import_cycle_fails(tmp_path):
    g = _graph_of(
        tmp_path,
        {
            "sim/a.py": "from . import b\n",
            "sim/b.py": "def f():\n    from .c import x\n",
            "sim/c.py": "import importlib\nimportlib.import_module('kafka_rebalance.sim.a')\n",
            "sim/d.py": "from . import a\n",
        },
    )
    assert cycles(g) == [
        frozenset({"kafka_rebalance.sim.a", "kafka_rebalance.sim.b", "kafka_rebalance.sim.c"})
    ]


def test_a_long_module_fails(tmp_path):
    _graph_of(tmp_path, {"group/big.py": "x = 1\n" * (MAX_LINES + 1), "group/ok.py": "x = 1\n"})
    assert oversize(tmp_path) == {"kafka_rebalance.group.big": MAX_LINES + 1}
