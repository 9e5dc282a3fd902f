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
VECTORS = Path(__file__).resolve().parent / "vectors"


def _vector_files() -> list[Path]:
    files = sorted((VECTORS / "assignors").glob("*.json")) + sorted(
        (VECTORS / "assignors-large").glob("*.json")
    )
    return files


_CACHE: dict[Path, dict] = {}


def _load(path: Path) -> dict:
    if path not in _CACHE:
        _CACHE.clear()  # keep at most one (possibly 3 MB) document in memory
        _CACHE[path] = json.loads(path.read_text(encoding="utf-8"))
    return _CACHE[path]


def _cases():
    """Every (vector, assignor) pair the vector has an expectation for.

    Conflict scenarios carry no server-side expectation (README: a target
    assignment never holds a conflict); every vector has all client ones.
    """
    for path in _vector_files():
        have = set(_load(path)["expected"])
        assert {"range", "roundrobin"} <= have, f"{path.name} lacks a client-side expectation"
        if path.stem.startswith("conflict"):
            assert not have & {"uniform", "server-range"}
        for name in ASSIGNORS:
            if name in have:
                yield pytest.param(path, name, id=f"{path.parent.name}/{path.stem}-{name}")


@pytest.mark.parametrize("path,assignor_name", list(_cases()))
def test_vector(path: Path, assignor_name: str, vectors_dir) -> None:
    doc = _load(path)
    expected = doc["expected"][assignor_name]
    scenario = parse_group_scenario(doc)
    results = run_rounds(get_assignor(assignor_name), scenario.spec, scenario.rounds)
    assert len(expected) == scenario.rounds
    for rnd, ((_, got), want) in enumerate(zip(results, expected), start=1):
        got_sets = {m: {(tp.topic, tp.partition) for tp in tps} for m, tps in got.items() if tps}
        want_sets = {m: {(t, p) for t, p in tps} for m, tps in want.items() if tps}
        assert got_sets == want_sets, f"{path.name} {assignor_name} round {rnd} differs"


# --------------------------------------------------------------------- Java details the server side relies on


@pytest.mark.parametrize(
    "name,uuid,msb,lsb,hash_code",
    [
        # from jshell (JDK 17): UUID.nameUUIDFromBytes(name.getBytes(UTF_8)), Kafka Uuid.hashCode()
        (
            "t0",
            "809d4580-aaed-3156-9abc-38d58f77f840",
            -9179104046585401002,
            -7296894806360852416,
            1069265987,
        ),
        (
            "orders",
            "12c500ed-0b78-3910-9fb4-6af0f246be87",
            1352488281194379536,
            -6938803542781673849,
            1951395210,
        ),
        (
            "t099",
            "216f33d0-bc25-3195-b99c-e7fb98cbdba2",
            2409201297269272981,
            -5071924012539716702,
            -1138934244,
        ),
        (
            "m\u00e9trics",
            "26871d11-5d68-387a-8423-a982f2d9a10e",
            2776219655715960954,
            -8925103656632999666,
            219491815,
        ),
    ],
)
def test_topic_ids_match_java(name, uuid, msb, lsb, hash_code):
    from kafka_rebalance.assign.uniform import topic_id, topic_id_hash, topic_id_string

    assert topic_id_string(name) == uuid
    assert topic_id(name) == (msb, lsb)
    assert topic_id_hash(name) == hash_code


def test_fast_member_order_equals_hashmap_emulation():
    """The numpy shortcut for a plain HashMap's order agrees with javacompat.JavaHashMap (or declines)."""
    import random

    from kafka_rebalance.assign.javacompat import JavaHashMap
    from kafka_rebalance.assign.uniform_group import _plain_hashmap_order

    rng = random.Random(7)
    declined = 0
    for _ in range(150):
        n = rng.choice([1, 3, 12, 13, 25, 97, 400, 1500])
        keys = list(
            dict.fromkeys(
                "".join(rng.choice("AaBB\u00e9c0-") for _ in range(rng.randint(1, 7)))
                for _ in range(n)
            )
        )
        m = JavaHashMap()
        for k in keys:
            m.put(k, True)
        fast = _plain_hashmap_order(keys)
        if fast is None:
            declined += 1
        else:
            assert fast == list(m.keys())
    assert declined < 150


def test_bulk_topic_partitions_are_ordinary():
    from kafka_rebalance.assign.range import new_topic_partitions
    from kafka_rebalance.model import TopicPartition

    tps = new_topic_partitions(["a", "b", "a"], [0, 5, 2])
    assert tps == [TopicPartition("a", 0), TopicPartition("b", 5), TopicPartition("a", 2)]
    assert {hash(tp) for tp in tps} == {
        hash(TopicPartition(t, p)) for t, p in (("a", 0), ("b", 5), ("a", 2))
    }
    assert new_topic_partitions("t", range(3)) == [TopicPartition("t", p) for p in range(3)]
    with pytest.raises(Exception):
        tps[0].partition = 9  # still frozen
