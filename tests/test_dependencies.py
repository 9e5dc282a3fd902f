"""Every runtime dependency in pyproject.toml is imported by the package (issue 12, point 9)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# distribution name -> the module it is imported as, where they differ
IMPORT_NAME = {"kafka-python": "kafka", "confluent-kafka": "confluent_kafka", "pyyaml": "yaml"}


def _imported_modules() -> set[str]:
    names: set[str] = set()
    pattern = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)
    for path in (ROOT / "src" / "kafka_rebalance").rglob("*.py"):
        names.update(pattern.findall(path.read_text(encoding="utf-8")))
    return names


def test_every_dependency_is_imported():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    imported = _imported_modules()
    unused = []
    for dep in deps:
        dist = re.split(r"[<>=!~\[; ]", dep, maxsplit=1)[0].lower()
        if IMPORT_NAME.get(dist, dist.replace("-", "_")) not in imported:
            unused.append(dist)
    assert not unused, f"dependencies nothing imports: {unused}"
