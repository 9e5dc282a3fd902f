"""KIP-848 consumer protocol: group epochs, reconciliation, fencing, static members (issue 3, behaviour 9)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.group.consumer_group import (
    IllegalStateError,
    expire_timers,
    group_view,
    heartbeat,
    new_group,
    next_deadline,
    on_rebalance_timeout,
    on_session_timeout,
    update_topics,
)
from kafka_rebalance.group.consumer_group_member import (
    ClientState,
    ConsumerMember,
    complete_reconciliation,
    heartbeat_request,
    leave_request,
    on_heartbeat_response,
    on_left,
    revocation_done,
)
from kafka_rebalance.group.consumer_group_model import (
    ConsumerGroupConfig,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupState,
    GroupEpochBumped,
    MemberRemoved,
    MemberState,
    ScheduleRebalanceTimeout,
)
from kafka_rebalance.group.errors import Errors
from kafka_rebalance.group.offset_messages import OffsetCommitPartition, OffsetCommitRequest
from kafka_rebalance.group.offsets import commit_offsets
from kafka_rebalance.model import TopicMetadata, TopicPartition

TOPICS = {"t": TopicMetadata("t", 6)}
CFG = ConsumerGroupConfig(session_timeout_ms=45_000, heartbeat_interval_ms=5_000)
REBALANCE_TIMEOUT = 30_000


class Harness:
    """Drives the coordinator and clients by hand; records every client-side ownership change."""

    def __init__(self, topics=TOPICS, assignor: str | None = None) -> None:
        self.group = new_group("g", topics)
        self.clients: dict[str, ConsumerMember] = {}
        self.now = 0
        self.assignor = assignor
        self.revoked: dict[str, list[frozenset]] = {}
        self.effects: list = []

    def join(self, name: str, instance: str | None = None, member_id: str | None = None):
        self.clients[name] = ConsumerMember(
            "g",
            ("t",),
            member_id=member_id or name,
            instance_id=instance,
            rebalance_timeout_ms=REBALANCE_TIMEOUT,
            server_assignor=self.assignor,
        )
        self.revoked.setdefault(name, [])
        return self.hb(name)

    def hb(self, name: str):
        c = self.clients[name]
        self.group, resp, eff = heartbeat(self.group, heartbeat_request(c), self.now, CFG)
        self.effects += eff
        c, rec, _lost = on_heartbeat_response(c, resp)
        self.clients[name] = c
        if rec is not None:
            self.revoked[name].append(rec.revoke)
        check_invariants(self)
        return resp

    def finish(self, name: str) -> None:
        """The client completes its reconciliation (revocation callback and commit done)."""
        c, nxt = complete_reconciliation(self.clients[name])
        self.clients[name] = c
        if nxt is not None:
            self.revoked[name].append(nxt.revoke)
        check_invariants(self)

    def settle(self, rounds: int = 20) -> None:
        for _ in range(rounds):
            for name in list(self.clients):
                if self.clients[name].state is ClientState.RECONCILING:
                    self.finish(name)
                self.hb(name)
            if self.group.state is ConsumerGroupState.STABLE and all(
                c.state is ClientState.STABLE for c in self.clients.values()
            ):
                return
        raise AssertionError(f"did not settle: {self.group.state}")

    def owned(self, name: str) -> frozenset:
        return self.clients[name].owned


def check_invariants(h: Harness) -> None:
    """No partition held by two members, on the coordinator or on the clients it still counts."""
    seen: dict[TopicPartition, str] = {}
    for mid, m in h.group.members.items():
        for tp in m.owned:
            assert tp not in seen, f"{tp} owned by {seen[tp]} and {mid}"
            seen[tp] = mid
            assert h.group.partition_owners[tp] == mid
    assert set(seen) == set(h.group.partition_owners)
    # The incrementally kept count of unreconciled members matches a recount.
    recount = sum(
        1 for m in h.group.members.values() if not m.is_reconciled_to(h.group.assignment_epoch)
    )
    assert h.group.unreconciled in (None, recount)
    client_seen: dict[TopicPartition, str] = {}
    for name, c in h.clients.items():
        if c.member_id not in h.group.members or c.state is ClientState.LEFT:
            continue
        coord = h.group.members[c.member_id]
        if coord.member_epoch >= 0:
            assert c.owned <= coord.owned, (
                f"{name} holds {set(c.owned - coord.owned)} the coordinator gave away"
            )
        for tp in c.owned:
            assert tp not in client_seen, f"{tp} processed by {client_seen[tp]} and {name}"
            client_seen[tp] = name


def epoch_bumps(effects) -> list[int]:
    return [e.group_epoch for e in effects if isinstance(e, GroupEpochBumped)]


# --- behaviour 9 ----------------------------------------------------------------------------


def test_join_bumps_group_epoch_by_one():
    h = Harness()
    h.join("a")
    h.join("b")
    h.settle()
    before = h.group.group_epoch
    h.effects.clear()
    h.join("c")
    assert h.group.group_epoch == before + 1
    assert epoch_bumps(h.effects) == [before + 1]
    h.settle()
    assert h.group.group_epoch == before + 1  # reconciliation itself never bumps the group epoch
    assert h.group.assignment_epoch == before + 1
    assert all(m.member_epoch == before + 1 for m in h.group.members.values())
    assert sorted(len(h.owned(n)) for n in "abc") == [2, 2, 2]


def test_members_that_keep_partitions_never_pause():
    h = Harness()
    for n in "ab":
        h.join(n)
    h.settle()
    initial = {n: h.owned(n) for n in "ab"}
    for n in "ab":
        h.revoked[n].clear()
    h.join("c")
    kept_history: dict[str, list[frozenset]] = {n: [] for n in "ab"}
    for _ in range(10):
        for n in "abc":
            if h.clients[n].state is ClientState.RECONCILING:
                h.finish(n)
            h.hb(n)
            if n in kept_history:
                kept_history[n].append(h.owned(n))
    final = {n: h.owned(n) for n in "ab"}
    for n in "ab":
        kept = initial[n] & final[n]
        assert kept, "each old member keeps some partitions"
        # Kept partitions were never revoked and were held at every step: no pause for them.
        assert all(not (r & kept) for r in h.revoked[n])
        assert all(kept <= owned for owned in kept_history[n])
        # Only the partitions that moved were revoked.
        assert frozenset().union(*h.revoked[n]) == initial[n] - final[n]


def test_partition_reaches_new_owner_only_after_old_owner_stops_reporting_it():
    h = Harness()
    h.join("a")
    h.join("b")
    h.settle()
    resp = h.join("c")
    # c's target includes partitions a and b still hold: they are withheld.
    target_c = h.group.target_assignment["c"]
    assert len(target_c) == 2
    assert resp.assignment == frozenset()
    assert h.group.members["c"].state is MemberState.UNRELEASED_PARTITIONS
    # a and b learn what to revoke; they are UNREVOKED until they stop reporting it.
    h.hb("a")
    h.hb("b")
    moving = {n: h.clients[n].reconciling.revoke for n in "ab"}
    assert frozenset().union(*moving.values()) == target_c
    assert h.group.members["a"].state is MemberState.UNREVOKED_PARTITIONS
    # a still reports its revoked partition: c gets nothing of it.
    assert not h.hb("c").assignment
    # a releases; as soon as it reports so, c may take a's partition - but not b's.
    h.clients["a"] = revocation_done(h.clients["a"])
    h.finish("a")
    h.hb("a")
    assert h.group.members["a"].state is MemberState.STABLE
    resp = h.hb("c")
    assert resp.assignment == moving["a"]
    assert h.group.members["c"].state is MemberState.UNRELEASED_PARTITIONS
    h.finish("c")
    h.finish("b")
    h.hb("b")
    resp = h.hb("c")
    assert resp.assignment == target_c
    assert h.group.members["c"].state is MemberState.STABLE


def test_member_too_slow_to_revoke_is_fenced():
    h = Harness()
    h.join("a")
    h.join("b")
    h.settle()
    h.join("c")
    h.now = 1_000
    h.hb("a")  # a is told to revoke but never finishes
    sched = [e for e in h.effects if isinstance(e, ScheduleRebalanceTimeout) and e.member_id == "a"]
    assert sched and sched[-1].deadline_ms == 1_000 + REBALANCE_TIMEOUT
    epoch_a = h.group.members["a"].member_epoch
    # Before the deadline the timer does nothing; heartbeats still reporting the partition keep it pending.
    h.now = 1_000 + REBALANCE_TIMEOUT - 1
    h.hb("a")
    g, eff = on_rebalance_timeout(h.group, "a", epoch_a, h.now)
    assert g is h.group and eff == []
    h.now = 1_000 + REBALANCE_TIMEOUT
    epoch = h.group.group_epoch
    h.group, eff = on_rebalance_timeout(h.group, "a", epoch_a, h.now)
    assert MemberRemoved("a", "rebalance timeout") in eff
    assert h.group.group_epoch == epoch + 1
    assert "a" not in h.group.members
    # The zombie learns it on its next heartbeat and loses everything (onPartitionsLost).
    c = h.clients["a"]
    h.group, resp, _ = heartbeat(h.group, heartbeat_request(c), h.now, CFG)
    assert resp.error is Errors.UNKNOWN_MEMBER_ID
    c, _, lost = on_heartbeat_response(c, resp)
    assert lost and c.owned == frozenset() and c.state is ClientState.JOINING
    del h.clients["a"]
    h.settle()
    assert sorted(len(h.owned(n)) for n in "bc") == [3, 3]


def test_offset_commits_follow_member_epochs():
    h = Harness()
    h.join("a")
    h.settle()
    epoch = h.group.members["a"].member_epoch
    req = OffsetCommitRequest("g", (OffsetCommitPartition("t", 0, 5),), "a", epoch)
    assert commit_offsets(group_view(h.group), req, h.now).response.errors == {Errors.NONE}
    stale = dataclasses.replace(req, generation_id_or_member_epoch=epoch - 1)
    assert commit_offsets(group_view(h.group), stale, h.now).response.errors == {
        Errors.STALE_MEMBER_EPOCH
    }
    h.group, resp, _ = heartbeat(h.group, leave_request(h.clients["a"]), h.now, CFG)
    assert commit_offsets(group_view(h.group), req, h.now).response.errors == {
        Errors.UNKNOWN_MEMBER_ID
    }


# --- static members ------------------------------------------------------------------------------


def test_static_member_bounce_within_session_timeout_needs_no_rebalance():
    h = Harness()
    h.join("a", instance="ia", member_id="a-1")
    h.join("b", instance="ib")
    h.settle()
    epoch = h.group.group_epoch
    before = {n: h.owned(n) for n in "ab"}
    h.group, resp, _ = heartbeat(h.group, leave_request(h.clients["a"]), h.now, CFG)
    assert resp.member_epoch == -2
    assert h.group.members["a-1"].member_epoch == -2
    h.clients["a"] = on_left(h.clients["a"])
    h.now += 10_000
    h.hb("b")
    assert h.group.group_epoch == epoch and h.owned("b") == before["b"]
    # The restarted process has a new member id and takes over the instance's assignment.
    h.clients["a"] = ConsumerMember(
        "g", ("t",), member_id="a-2", instance_id="ia", rebalance_timeout_ms=REBALANCE_TIMEOUT
    )
    resp = h.hb("a")
    assert resp.error is Errors.NONE and resp.assignment == before["a"]
    assert "a-1" not in h.group.members and h.group.static_members["ia"] == "a-2"
    h.finish("a")
    h.settle()
    assert h.group.group_epoch == epoch
    assert h.owned("a") == before["a"] and h.owned("b") == before["b"]
    assert all(not r for r in h.revoked["b"][1:])


def test_static_instance_still_in_use_is_unreleased_and_fenced_ids_rejected():
    h = Harness()
    h.join("a", instance="ia", member_id="a-1")
    h.settle()
    intruder = ConsumerMember(
        "g", ("t",), member_id="a-2", instance_id="ia", rebalance_timeout_ms=1000
    )
    _, resp, _ = heartbeat(h.group, heartbeat_request(intruder), h.now, CFG)
    assert resp.error is Errors.UNRELEASED_INSTANCE_ID
    req = ConsumerGroupHeartbeatRequest(
        "g", "a-2", h.group.members["a-1"].member_epoch, instance_id="ia"
    )
    _, resp, _ = heartbeat(h.group, req, h.now, CFG)
    assert resp.error is Errors.FENCED_INSTANCE_ID


def test_static_member_gone_past_session_timeout_is_removed():
    h = Harness()
    h.join("a", instance="ia")
    h.join("b", instance="ib")
    h.settle()
    last_hb = h.now
    epoch = h.group.group_epoch
    h.group, _, _ = heartbeat(h.group, leave_request(h.clients["a"]), h.now, CFG)
    del h.clients["a"]
    h.now = last_hb + CFG.session_timeout_ms - 1
    h.group, eff = expire_timers(h.group, h.now)
    assert eff == []
    h.now = last_hb + CFG.session_timeout_ms
    h.group, eff = on_session_timeout(h.group, "a", h.now)
    assert MemberRemoved("a", "session timeout") in eff and h.group.group_epoch == epoch + 1
    h.settle()
    assert len(h.owned("b")) == 6


# --- sessions, fencing, validation, metadata ---------------------------------------------------


def test_dynamic_member_session_timeout_and_group_states():
    h = Harness()
    h.join("a")
    h.join("b")
    h.settle()
    assert h.group.state is ConsumerGroupState.STABLE
    del h.clients["b"]  # crash: no leave
    h.now = 40_000
    h.hb("a")
    # b last heartbeated at 0: its session timer (scheduled at each heartbeat, now + session.timeout.ms)
    # fires first; a's was just pushed to 85_000, and no rebalance timer runs in a stable group
    assert next_deadline(h.group) == 45_000
    assert h.group.session_deadlines["a"] == 85_000
    h.now = 45_000
    h.group, eff = expire_timers(h.group, h.now)
    assert [e.member_id for e in eff if isinstance(e, MemberRemoved)] == ["b"]
    assert h.group.state is ConsumerGroupState.ASSIGNING
    h.hb("a")
    assert h.group.state in (ConsumerGroupState.RECONCILING, ConsumerGroupState.STABLE)
    h.settle()
    assert len(h.owned("a")) == 6
    h.group, _, _ = heartbeat(h.group, leave_request(h.clients["a"]), h.now, CFG)
    assert h.group.state is ConsumerGroupState.EMPTY and h.group.state_timestamp_ms == h.now


def test_epoch_fencing_rules():
    h = Harness()
    h.join("a")
    h.settle()
    m = h.group.members["a"]
    ahead = ConsumerGroupHeartbeatRequest("g", "a", m.member_epoch + 1, owned_partitions=())
    assert heartbeat(h.group, ahead, 0, CFG)[1].error is Errors.FENCED_MEMBER_EPOCH
    h.join("b")
    h.settle()
    m = h.group.members["a"]
    # A lost response: the previous epoch with a subset of the assignment is accepted.
    prev = ConsumerGroupHeartbeatRequest(
        "g", "a", m.previous_member_epoch, owned_partitions=tuple(m.assigned)
    )
    assert heartbeat(h.group, prev, 0, CFG)[1].error is Errors.NONE
    assert m.previous_member_epoch < m.member_epoch
    # ... but not while reporting partitions it does not have.
    foreign = tuple(h.group.members["b"].assigned)
    wrong = ConsumerGroupHeartbeatRequest(
        "g", "a", m.previous_member_epoch, owned_partitions=foreign
    )
    assert heartbeat(h.group, wrong, 0, CFG)[1].error is Errors.FENCED_MEMBER_EPOCH
    unknown = ConsumerGroupHeartbeatRequest("g", "zz", 3, owned_partitions=())
    assert heartbeat(h.group, unknown, 0, CFG)[1].error is Errors.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize(
    "req,error",
    [
        (
            ConsumerGroupHeartbeatRequest(
                "g", "a", 0, subscribed_topic_names=("t",), owned_partitions=()
            ),
            Errors.INVALID_REQUEST,
        ),  # no rebalance timeout
        (
            ConsumerGroupHeartbeatRequest(
                "g", "a", 0, rebalance_timeout_ms=1, subscribed_topic_names=(), owned_partitions=()
            ),
            Errors.INVALID_REQUEST,
        ),
        (
            ConsumerGroupHeartbeatRequest(
                "g",
                "a",
                0,
                rebalance_timeout_ms=1,
                subscribed_topic_names=("t",),
                owned_partitions=(TopicPartition("t", 0),),
            ),
            Errors.INVALID_REQUEST,
        ),
        (ConsumerGroupHeartbeatRequest("g", "", 3), Errors.INVALID_REQUEST),
        (ConsumerGroupHeartbeatRequest("g", "a", -3), Errors.INVALID_REQUEST),
        (
            ConsumerGroupHeartbeatRequest("g", "a", -2),
            Errors.INVALID_REQUEST,
        ),  # static leave without instance
        (
            ConsumerGroupHeartbeatRequest(
                "g",
                "a",
                0,
                rebalance_timeout_ms=1,
                subscribed_topic_names=("t",),
                server_assignor="sticky",
                owned_partitions=(),
            ),
            Errors.UNSUPPORTED_ASSIGNOR,
        ),
    ],
)
def test_request_validation(req, error):
    group = new_group("g", TOPICS)
    g, resp, eff = heartbeat(group, req, 0, CFG)
    assert resp.error is error and g is group and eff == []


def test_group_max_size():
    cfg = dataclasses.replace(CFG, max_size=1)
    g = new_group("g", TOPICS)
    g, _, _ = heartbeat(g, heartbeat_request(ConsumerMember("g", ("t",), member_id="a")), 0, cfg)
    _, resp, _ = heartbeat(g, heartbeat_request(ConsumerMember("g", ("t",), member_id="b")), 0, cfg)
    assert resp.error is Errors.GROUP_MAX_SIZE_REACHED


def test_partitions_added_bump_the_epoch_on_next_heartbeat():
    h = Harness()
    h.join("a")
    h.join("b")
    h.settle()
    epoch = h.group.group_epoch
    h.group = update_topics(h.group, {"t": TopicMetadata("t", 8)})
    h.hb("a")
    assert h.group.group_epoch == epoch + 1
    h.settle()
    assert sorted(len(h.owned(n)) for n in "ab") == [4, 4]


def test_server_range_assignor_selected_by_members():
    h = Harness(assignor="range")
    h.join("a")
    h.join("b")
    h.settle()
    assert h.owned("a") | h.owned("b") == frozenset(TopicPartition("t", p) for p in range(6))
    assert {e.assignor for e in h.effects if type(e).__name__ == "TargetAssignmentComputed"} == {
        "range"
    }


def test_conflicting_ownership_is_refused():
    h = Harness()
    h.join("a")
    h.settle()
    from kafka_rebalance.group.consumer_group_tx import _Tx

    tx = _Tx(h.group)
    intruder = dataclasses.replace(h.group.members["a"], member_id="x", instance_id=None)
    with pytest.raises(IllegalStateError):
        tx.put_member(intruder)


# --- property: never two owners --------------------------------------------------------------------

ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "hb",
                "hb",
                "hb",
                "finish",
                "finish",
                "revoked",
                "join",
                "join",
                "leave",
                "crash",
                "tick",
                "wait",
                "grow",
            ]
        ),
        st.integers(0, 4),
    ),
    min_size=5,
    max_size=80,
)


@settings(max_examples=60, deadline=None)
@given(ACTIONS, st.sampled_from([None, "range"]), st.booleans())
def test_no_partition_ever_owned_by_two_members(actions, assignor, static):
    h = Harness(topics={"t": TopicMetadata("t", 7)}, assignor=assignor)
    names = [f"m{i}" for i in range(5)]
    incarnation = {n: 0 for n in names}
    for action, i in actions:
        n = names[i]
        c = h.clients.get(n)
        if action == "join" and (c is None or c.state is ClientState.LEFT):
            incarnation[n] += 1
            h.join(n, instance=f"i-{n}" if static else None, member_id=f"{n}-{incarnation[n]}")
        elif action == "grow":
            n_parts = h.group.topics["t"].partitions
            if n_parts < 10:
                h.group = update_topics(h.group, {"t": TopicMetadata("t", n_parts + 1)})
        elif c is None or c.state is ClientState.LEFT:
            continue
        elif action == "hb":
            h.hb(n)
        elif action == "finish" and c.state is ClientState.RECONCILING:
            h.finish(n)
        elif action == "revoked" and c.state is ClientState.RECONCILING:
            h.clients[n] = revocation_done(c)
        elif action == "leave":
            h.group, _, _ = heartbeat(h.group, leave_request(c), h.now, CFG)
            h.clients[n] = on_left(c)
        elif action == "crash":
            h.clients[n] = on_left(c)  # the process is gone; the coordinator finds out by timeout
        elif action in ("tick", "wait"):
            h.now += 20_000 if action == "tick" else 1_000
            h.group, eff = expire_timers(h.group, h.now)
            for e in eff:  # a fenced client stops processing when its own timers fire
                if isinstance(e, MemberRemoved):
                    for name, cl in h.clients.items():
                        if cl.member_id == e.member_id and cl.state is not ClientState.LEFT:
                            h.clients[name] = on_left(cl)
        check_invariants(h)


def test_coordinator_failover_within_session_timeout_keeps_the_group():
    from kafka_rebalance.group.consumer_group import on_loaded, persisted

    h = Harness()
    h.join("a")
    h.join("b")
    h.settle()
    epoch = h.group.group_epoch
    owned = {n: h.owned(n) for n in "ab"}
    stored = persisted(h.group)
    assert stored.session_deadlines == {}  # timers live in memory only
    assert all(m.rebalance_deadline_ms is None for m in stored.members.values())
    h.now += 30_000  # the old coordinator is gone for 30 s; the new one loads the group
    h.group, eff = on_loaded(stored, h.now, CFG)
    assert {e.member_id for e in eff} == {"a", "b"}
    h.now += 10_000  # members find the new coordinator within the session timeout
    h.group, eff = expire_timers(h.group, h.now)
    assert eff == []
    h.settle()
    assert h.group.group_epoch == epoch
    assert {n: h.owned(n) for n in "ab"} == owned
