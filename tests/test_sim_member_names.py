"""Member names holding '#' (review 10 F2).

A member's client id is "<name>#<incarnation>". The reference world and coordinator took the name
as the text before the first '#', so a member named "a#1" (client "a#1#1") was taken for "a": it
never received a response and its removal rows named "a"; the native core (the text before the
last '#') then differed from it. Both now take the text before the last '#': such a member is a
member like any other, on every core.
"""

from __future__ import annotations

import copy

import pytest

from kafka_rebalance.sim.api import simulate
from sim_native_runs import assert_same_run, require_native_build


def _doc(names: list[str], protocol: str = "classic", assignor: str | None = "range") -> dict:
    doc: dict = {
        "name": "hash",
        "seed": 3,
        "duration_ms": 60_000,
        "protocol": protocol,
        "group": {"id": "g", "assignors": [assignor]},
        "topics": [{"name": "t", "partitions": 6, "produce_rate": 60}],
        "members": {"list": [{"name": n} for n in names], "processing_ms_per_record": 1.0},
        "events": [
            {"at_ms": 20_000, "kind": "rolling_restart", "down_ms": 5_000, "every_ms": 10_000}
        ],
    }
    if protocol == "consumer":
        del doc["group"]["assignors"]  # the coordinator's own (uniform)
    return doc


NAMES = [["a#1", "b", "c"], ["x#y", "x"], ["#", "a#", "b#x#2"]]


@pytest.mark.parametrize("names", NAMES)
@pytest.mark.parametrize(
    "protocol, assignor",
    [("classic", "range"), ("classic", "cooperative-sticky"), ("consumer", None)],
)
def test_a_member_named_with_hash_joins_like_any_other(
    names: list[str], protocol: str, assignor: str | None
) -> None:
    """The same scenario with plain names gives the same numbers (names only relabel members:
    every member joins and is assigned partitions)."""
    plain = [f"m{i}" for i in range(len(names))]
    hashed = simulate(_doc(names, protocol, assignor), core="reference")
    ref = simulate(_doc(plain, protocol, assignor), core="reference")
    assert hashed.summary["rebalances"] == ref.summary["rebalances"]
    joined = {e["member"] for e in hashed.events if e["kind"] == "assigned"}
    assert joined == set(names)


@pytest.mark.parametrize("names", NAMES)
@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky", "sticky"])
def test_the_native_core_equals_the_reference(names: list[str], assignor: str) -> None:
    require_native_build()
    doc = _doc(names, assignor=assignor)
    nat = simulate(copy.deepcopy(doc), core="native")
    ref = simulate(copy.deepcopy(doc), core="reference")
    assert_same_run(nat, ref)
