"""The simulator drives the KIP-848 coordinator (group.consumer_group) behind the same driver."""

from __future__ import annotations

import copy
import json

import pytest

from kafka_rebalance.sim.api import compare, simulate

BASE = {
    "name": "kip848",
    "seed": 2,
    "duration_ms": 200_000,
    "protocol": "consumer",
    "group": {"id": "g", "server_assignor": "uniform"},
    "topics": [{"name": "orders", "partitions": 12, "produce_rate": 600}],
    "members": {"count": 3, "processing_ms_per_record": 1.0},
    "events": [],
}


SEEDS = [2, 5, 11]  # the behaviours hold whatever the seed draws (latencies, processing times)


def doc(**kw) -> dict:
    d = copy.deepcopy(BASE)
    for k, v in kw.items():
        if k == "group":
            d["group"].update(v)
        else:
            d[k] = v
    return d


def _owners_never_overlap(res) -> None:
    owner: dict[str, str] = {}
    for e in res.events:
        if e["kind"] == "assigned":
            for p in e["partitions"]:
                assert owner.get(p) in (None, e["member"]), (p, owner.get(p), e)
                owner[p] = e["member"]
        elif e["kind"] in ("revoked", "lost"):
            for p in e["partitions"]:
                if owner.get(p) == e["member"]:
                    del owner[p]
        elif e["kind"] == "crash" or e["kind"] == "member_removed":
            # removed by the coordinator (session or rebalance timeout): Kafka hands its partitions on at
            # once, and the member itself learns it only at its next heartbeat (a zombie meanwhile)
            for p in [p for p, m in owner.items() if m == e["member"]]:
                del owner[p]


@pytest.mark.parametrize("seed", SEEDS)
def test_join_bumps_group_epoch_once_and_keepers_never_pause(seed):
    res = simulate(doc(seed=seed, events=[{"at_ms": 100_000, "kind": "join", "member": "m3"}]))
    s = res.summary
    assert s["rebalance_protocol"] == "consumer"
    epochs_after = [t for t in s["timeline"] if t["ts_ms"] >= 100_000]
    assert len(epochs_after) == 1 and "m3" in epochs_after[0]["cause"]
    paused_after = {
        e["member"] for e in res.events if e["kind"] == "paused" and e["ts_ms"] >= 100_000
    }
    assert paused_after <= {"m3"}
    moved = [
        p
        for e in res.events
        if e["kind"] == "revoked" and e["ts_ms"] >= 100_000
        for p in e["partitions"]
    ]
    assert len(moved) == 3  # 12 partitions over 4 members: 3 move to the newcomer
    _owners_never_overlap(res)
    assert s["records"]["duplicates"] == 0 and s["records"]["lost"] == 0


@pytest.mark.parametrize("seed", SEEDS)
def test_partition_reaches_new_owner_only_after_old_owner_revoked(seed):
    res = simulate(doc(seed=seed, events=[{"at_ms": 100_000, "kind": "join", "member": "m3"}]))
    revoked_at = {
        p: e["ts_ms"]
        for e in res.events
        if e["kind"] == "revoked" and e["ts_ms"] >= 100_000
        for p in e["partitions"]
    }
    for e in res.events:
        if e["kind"] == "assigned" and e["member"] == "m3":
            for p in e["partitions"]:
                assert p in revoked_at and e["ts_ms"] >= revoked_at[p]


@pytest.mark.parametrize("seed", SEEDS)
def test_slow_revoker_is_fenced_after_rebalance_timeout(seed):
    res = simulate(
        doc(
            seed=seed,
            group={"rebalance_timeout_ms": 20_000},
            events=[
                {"at_ms": 99_000, "kind": "pause", "member": "m0", "for_ms": 60_000},
                {"at_ms": 100_000, "kind": "join", "member": "m3"},
            ],
        )
    )
    removed = [json.loads(e["detail"]) for e in res.events if e["kind"] == "member_removed"]
    assert any(d["reason"] == "rebalance timeout" for d in removed)
    _owners_never_overlap(res)


@pytest.mark.parametrize("seed", SEEDS)
def test_static_restart_within_session_no_epoch_bump(seed):
    res = simulate(
        doc(
            seed=seed,
            group={"static_membership": True},
            events=[{"at_ms": 100_000, "kind": "restart", "member": "m1", "down_ms": 10_000}],
        )
    )
    assert not [t for t in res.summary["timeline"] if t["ts_ms"] >= 100_000]


def test_compare_includes_consumer_protocol():
    d = doc(
        protocol="classic",
        group={"assignors": ["range"]},
        events=[{"at_ms": 60_000, "kind": "restart", "member": "m0", "down_ms": 10_000}],
        duration_ms=120_000,
    )
    out = compare(d, ["eager", "consumer"])
    assert out["consumer"]["rebalance_protocol"] == "consumer"
    assert out["consumer"]["member_paused_ms"] < out["eager"]["member_paused_ms"]


def test_consumer_protocol_deterministic():
    d = doc(
        events=[
            {"at_ms": 50_000, "kind": "rolling_restart", "down_ms": 5000, "every_ms": 20_000},
            {"at_ms": 150_000, "kind": "coordinator_failover", "down_ms": 3000},
        ]
    )
    a, b = simulate(d), simulate(copy.deepcopy(d))
    assert json.dumps(a.events) == json.dumps(b.events)


def test_consumer_protocol_seed_changes_the_event_log():
    d = doc(events=[{"at_ms": 100_000, "kind": "join", "member": "m3"}])
    a, b = simulate(doc(seed=2, events=d["events"])), simulate(doc(seed=3, events=d["events"]))
    assert json.dumps(a.events) != json.dumps(b.events)
    assert a.summary["rebalances"] == b.summary["rebalances"]


def test_close_while_a_revocation_is_pending_reports_those_partitions_revoked_twice():
    """AsyncKafkaConsumer (Kafka 1eb7644349cb): a reconciliation's onPartitionsRevoked leaves the
    subscription as it is until assignPartitions, which is skipped once close()'s leaveGroup has moved
    to PREPARE_LEAVING; leaveGroup then releases subscriptions.assignedPartitions(), the revoked ones
    among them: the user's callback sees them revoked twice. A close with nothing pending, once."""
    d = doc(
        duration_ms=40_000,
        events=[
            # m0 is stuck in processing when m3's join revokes one of its partitions, and closes so
            {"at_ms": 20_000, "kind": "pause", "member": "m0", "for_ms": 10_000},
            {"at_ms": 20_100, "kind": "join", "member": "m3"},
            {"at_ms": 28_000, "kind": "leave", "member": "m0"},
            {"at_ms": 34_000, "kind": "leave", "member": "m1"},
        ],
    )
    res = simulate(d)
    revoked = [
        (e["member"], json.loads(e["detail"])["reason"], e["partitions"])
        for e in res.events
        if e["kind"] == "revoked" and e["member"] in ("m0", "m1") and e["ts_ms"] >= 28_000
    ]
    assert [(m, why) for m, why, _ in revoked] == [
        ("m0", "reconciliation"),
        ("m0", "close"),
        ("m1", "close"),
    ], revoked
    pending, closed = set(revoked[0][2]), set(revoked[1][2])
    assert pending and pending < closed


def _reconciliation_revokes_ms(poll_timeout_ms: int, produce_rate: int) -> list[int]:
    d = doc(
        duration_ms=30_000,
        topics=[{"name": "orders", "partitions": 12, "produce_rate": produce_rate}],
        simulation={"poll_timeout_ms": poll_timeout_ms},
        events=[{"at_ms": 20_000, "kind": "join", "member": "m3"}],
    )
    return [
        e["ts_ms"]
        for e in simulate(d).events
        if e["kind"] == "revoked"
        and e["ts_ms"] >= 20_000
        and json.loads(e["detail"])["reason"] == "reconciliation"
    ]


def test_reconciliation_callbacks_wait_for_poll_to_return():
    """AsyncKafkaConsumer (Kafka 1eb7644349cb): the callbacks run on the application thread in poll();
    a heartbeat response does not end poll()'s fetch wait (pollForFetches), records or its timeout do.
    The join's targets reach the keepers within a heartbeat interval (about 1 s here). Nothing produced:
    each keeper revokes only when its 3 s poll timeout ends; with records landing every 10 ms on each
    partition, its poll returns with the next one, long before."""
    idle = _reconciliation_revokes_ms(3_000, 0)
    assert len(idle) == 3 and min(idle) >= 23_000, idle
    fed = _reconciliation_revokes_ms(3_000, 1_200)  # 100 records/s on each partition
    assert len(fed) == 3 and max(fed) < 23_000, fed


def test_poll_timeout_ms_must_be_a_positive_integer():
    with pytest.raises(Exception, match="simulation.poll_timeout_ms"):
        simulate(doc(simulation={"poll_timeout_ms": 0}))
