"""Properties of the simulator under random faults, and of its per-record bookkeeping."""

from __future__ import annotations

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kafka_rebalance.sim.api import simulate
from kafka_rebalance.sim.engine import EventLoop
from kafka_rebalance.sim.partitions import ProcessedOffsets


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 40)), max_size=30))
def test_processed_offsets_matches_a_set(ranges):
    po = ProcessedOffsets()
    seen: set[int] = set()
    dups = 0
    for a, n in ranges:
        dups_ref = sum(1 for x in range(a, a + n) if x in seen)
        assert po.add(a, a + n) == dups_ref
        seen.update(range(a, a + n))
        dups += dups_ref
        assert all(s < e for s, e in zip(po.starts, po.ends))
        assert all(e < s2 for e, s2 in zip(po.ends, po.starts[1:]))  # disjoint and not touching
    for limit in (0, 10, 150, 400):
        assert po.covered_below(limit) == sum(1 for x in seen if x < limit)


def test_event_loop_orders_by_time_then_insertion_and_moves_timers():
    loop = EventLoop()
    out = []
    loop.at(5, out.append, "b")
    loop.at(1, out.append, "a")
    loop.at(5, out.append, "c")
    loop.set_timer("k", 3, lambda k, p: out.append(p), "t1")
    loop.set_timer("k", 7, lambda k, p: out.append(p), "t2")  # moved later: fires once, at 7
    loop.set_timer("j", 4, lambda k, p: out.append(p), "gone")
    loop.cancel_timer("j")
    loop.run_until(100)
    assert out == ["a", "b", "c", "t2"]


MEMBERS = [f"m{i}" for i in range(4)]
fault = st.one_of(
    st.builds(
        lambda at, m: {"at_ms": at, "kind": "crash", "member": m},
        st.integers(20_000, 150_000),
        st.sampled_from(MEMBERS),
    ),
    st.builds(
        lambda at, m, d: {"at_ms": at, "kind": "restart", "member": m, "down_ms": d},
        st.integers(20_000, 150_000),
        st.sampled_from(MEMBERS),
        st.integers(0, 60_000),
    ),
    st.builds(
        lambda at, m: {"at_ms": at, "kind": "leave", "member": m},
        st.integers(20_000, 150_000),
        st.sampled_from(MEMBERS),
    ),
    st.builds(
        lambda at, m, f: {"at_ms": at, "kind": "pause", "member": m, "for_ms": f},
        st.integers(20_000, 150_000),
        st.sampled_from(MEMBERS),
        st.integers(1, 90_000),
    ),
    st.builds(
        lambda at, d: {"at_ms": at, "kind": "coordinator_failover", "down_ms": d},
        st.integers(20_000, 150_000),
        st.integers(1, 10_000),
    ),
    st.builds(
        lambda at: {"at_ms": at, "kind": "join", "member": "m9"}, st.integers(20_000, 150_000)
    ),
    st.builds(
        lambda at: {"at_ms": at, "kind": "add_partitions", "topic": "orders", "count": 2},
        st.integers(20_000, 150_000),
    ),
)


@settings(max_examples=12, deadline=None)
@example(
    events=[
        {"at_ms": 20000, "kind": "restart", "member": "m0", "down_ms": 0},
        {"at_ms": 20000, "kind": "pause", "member": "m1", "for_ms": 60000},
    ],
    assignor="cooperative-sticky",
    static=False,
    delivery="at-least-once",
    seed=3,
)  # a member kicked mid-batch
@example(
    events=[
        {"at_ms": 20000, "kind": "join", "member": "m9"},
        {"at_ms": 20017, "kind": "pause", "member": "m0", "for_ms": 59485},
    ],
    assignor="cooperative-sticky",
    static=True,
    delivery="at-least-once",
    seed=3,
)  # a static member that misses the join phase keeps its partitions while m9 is given one of them
@example(
    events=[
        {"at_ms": 20000, "kind": "join", "member": "m9"},
        {"at_ms": 20017, "kind": "pause", "member": "m0", "for_ms": 59990},
    ],
    assignor="range",
    static=True,
    delivery="at-least-once",
    seed=3,
)  # the same, eager, m0 back after the join phase: its commit fails, it loses all and rejoins
@given(
    events=st.lists(fault, max_size=5),
    assignor=st.sampled_from(["range", "cooperative-sticky"]),
    static=st.booleans(),
    delivery=st.sampled_from(["at-least-once", "at-most-once"]),
    seed=st.integers(0, 2**31 - 1),
)
def test_random_faults_keep_invariants(events, assignor, static, delivery, seed):
    doc = {
        "name": "prop",
        "seed": seed,
        "duration_ms": 200_000,
        "group": {
            "id": "g",
            "assignors": [assignor],
            "static_membership": static,
            "delivery": delivery,
            "max_poll_interval_ms": 60_000,
            "metadata_max_age_ms": 30_000,
        },
        "topics": [{"name": "orders", "partitions": 8, "produce_rate": 400}],
        "members": {"count": 4, "processing_ms_per_record": 1.0},
        "events": sorted(events, key=lambda e: e["at_ms"]),
    }
    res = simulate(doc)
    s = res.summary
    r = s["records"]
    assert r["processed"] - r["duplicates"] <= r["produced"]
    if delivery == "at-least-once":
        assert r["lost"] == 0
    # the coordinator never hands a partition to a member while another group member holds it
    owner: dict[str, str] = {}
    joined_at: dict[str, int] = {}  # when each member last sent a JoinGroup
    phase_done_at = -1  # when the last join phase completed
    # a static member that missed a join phase -> the partitions it held then and still holds
    zombies: dict[str, set[str]] = {}
    rejoined: set[str] = set()  # zombies that sent a JoinGroup since

    def drop(members: set[str]) -> list[tuple[str, str]]:
        """Forget what `members` hold: they may no longer process it. The (partition, member)s."""
        gone = [(p, m) for p, m in owner.items() if m in members]
        for p, _ in gone:
            del owner[p]
        return gone

    for e in res.events:
        if e["kind"] == "join":
            joined_at[e["member"]] = e["ts_ms"]
            if e["member"] in zombies:
                rejoined.add(e["member"])
        elif e["kind"] == "group_state" and json.loads(e["detail"])["to"] == "CompletingRebalance":
            if static:
                # Kafka removes only dynamic members that miss the join phase (GroupMetadataManager's
                # completeClassicGroupJoin; KIP-345): a static one stays in the generation with the
                # subscription of its last JoinGroup, so the leader assigns without knowing what it
                # still holds. Like a removed member, it is a zombie until it rejoins.
                stale = {m for m in owner.values() if joined_at.get(m, -1) < phase_done_at}
                for p, m in drop(stale):
                    zombies.setdefault(m, set()).add(p)
            phase_done_at = e["ts_ms"]
        elif e["kind"] == "assigned":
            m = e["member"]
            if m in rejoined:
                # ... and no longer: by the end of the rebalance it rejoined (eager: before its
                # JoinGroup, cooperative: after its SyncGroup) it has revoked or lost each partition
                # it held as a zombie that another member was given
                kept = {p for p in zombies.pop(m) if owner.get(p) not in (None, m)}
                assert not kept, (m, kept, e)
                rejoined.discard(m)
            for p in e["partitions"]:
                assert owner.get(p) in (None, m), (p, e)
                owner[p] = m
        elif e["kind"] in ("revoked", "lost"):
            for p in e["partitions"]:
                if owner.get(p) == e["member"]:
                    del owner[p]
                zombies.get(e["member"], set()).discard(p)
        elif e["kind"] in ("crash", "fatal", "poll_timeout", "member_removed"):
            # a stuck member processes nothing; a removed one is a zombie until it finds out, no
            # longer a group member
            drop({e["member"]})
            zombies.pop(e["member"], None)
            rejoined.discard(e["member"])
    # generations only go up, one per timeline entry
    gens = [t["generation"] for t in s["timeline"]]
    assert gens == sorted(gens) and len(gens) == s["rebalances"]
    # same input, same bytes
    assert json.dumps(simulate(doc).events) == json.dumps(res.events)
