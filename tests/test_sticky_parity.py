"""Parity with Apache Kafka's StickyAssignor and CooperativeStickyAssignor.

Every shared vector (assignors/ and assignors-large/), every round, fed back
with run_rounds; each member's partitions compared as a set, as the vectors'
README prescribes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_rebalance.assign.rounds import run_rounds
from kafka_rebalance.assign.sticky import CooperativeStickyAssignor, StickyAssignor
from kafka_rebalance.model import parse_group_scenario

VECTORS = Path(__file__).resolve().parent / "vectors"
ASSIGNORS = {"sticky": StickyAssignor, "cooperative-sticky": CooperativeStickyAssignor}


def _vector_files() -> list[Path]:
    return sorted((VECTORS / "assignors").glob("*.json")) + sorted(
        (VECTORS / "assignors-large").glob("*.json")
    )


_CACHE: dict[Path, dict] = {}


def _load(path: Path) -> dict:
    if path not in _CACHE:
        _CACHE.clear()  # at most one (possibly 3 MB) document in memory
        _CACHE[path] = json.loads(path.read_text(encoding="utf-8"))
    return _CACHE[path]


def _cases():
    for path in _vector_files():
        for name in ASSIGNORS:
            yield pytest.param(path, name, id=f"{path.parent.name}/{path.stem}-{name}")


def test_vectors_present(vectors_dir) -> None:
    assert len(_vector_files()) >= 200


@pytest.mark.parametrize("path,assignor_name", list(_cases()))
def test_vector(path: Path, assignor_name: str, vectors_dir) -> None:
    doc = _load(path)
    expected = doc["expected"][assignor_name]
    scenario = parse_group_scenario(doc)
    assert len(expected) == scenario.rounds
    assignor = ASSIGNORS[assignor_name]()
    assert assignor.name == assignor_name
    results = run_rounds(assignor, scenario.spec, scenario.rounds)
    for rnd, ((_, got), want) in enumerate(zip(results, expected), start=1):
        got_sets = {m: {(tp.topic, tp.partition) for tp in tps} for m, tps in got.items() if tps}
        want_sets = {m: {(t, p) for t, p in tps} for m, tps in want.items() if tps}
        assert got_sets == want_sets, f"{path.name} {assignor_name} round {rnd} differs"
        for tps in got.values():
            assert len(tps) == len(set(tps)), "a member got the same partition twice"
