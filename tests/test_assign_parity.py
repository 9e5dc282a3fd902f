"""Parity with Apache Kafka: every shared vector, every round, for range, roundrobin, uniform, server-range.

Each member's partitions are compared as a set (the vectors' README: order
within a member carries no meaning). Rounds are fed back with run_rounds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_rebalance.assign.registry import get_assignor
from kafka_rebalance.assign.rounds import run_rounds
from kafka_rebalance.model import parse_group_scenario

ASSIGNORS = ("range", "roundrobin", "uniform", "server-range")
VECTORS = Path(__file__).resolve().parents[1].parent / "shared" / "vectors"


def _vector_files() -> list[Path]:
    files = sorted((VECTORS / "assignors").glob("*.json")) + sorted((VECTORS / "assignors-large").glob("*.json"))
    return files


_CACHE: dict[Path, dict] = {}


def _load(path: Path) -> dict:
    if path not in _CACHE:
        _CACHE.clear()  # keep at most one (possibly 3 MB) document in memory
        _CACHE[path] = json.loads(path.read_text(encoding="utf-8"))
    return _CACHE[path]


def _cases():
    for path in _vector_files():
        for name in ASSIGNORS:
            yield pytest.param(path, name, id=f"{path.parent.name}/{path.stem}-{name}")


@pytest.mark.parametrize("path,assignor_name", list(_cases()))
def test_vector(path: Path, assignor_name: str, vectors_dir) -> None:
    doc = _load(path)
    expected = doc["expected"].get(assignor_name)
    if expected is None:
        # Conflict scenarios carry no server-side expectation (README: a target
        # assignment never holds a conflict); the client ones always have one.
        assert assignor_name in ("uniform", "server-range"), f"{path.name} lacks {assignor_name}"
        pytest.skip(f"{path.name}: no {assignor_name} expectation in the vector")
    scenario = parse_group_scenario(doc)
    results = run_rounds(get_assignor(assignor_name), scenario.spec, scenario.rounds)
    assert len(expected) == scenario.rounds
    for rnd, ((_, got), want) in enumerate(zip(results, expected), start=1):
        got_sets = {m: {(tp.topic, tp.partition) for tp in tps} for m, tps in got.items() if tps}
        want_sets = {m: {(t, p) for t, p in tps} for m, tps in want.items() if tps}
        assert got_sets == want_sets, f"{path.name} {assignor_name} round {rnd} differs"
