"""The classic coordinator state machine: transitions, barrier, initial delay, static members, errors per state."""

from __future__ import annotations

import pytest

from classic_group_driver import (
    Driver,
    heartbeat_error,
    one,
    stable_group,
    static_stable,
    sync_all,
)
from kafka_rebalance.group.classic_group import ClassicGroup, ClassicGroupConfig
from kafka_rebalance.group.classic_messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberRemoved,
    StateChanged,
    SyncGroupRequest,
    SyncGroupResponse,
    heartbeat_key,
)
from kafka_rebalance.group.classic_state import ClassicGroupState as S
from kafka_rebalance.group.classic_state import IllegalStateTransition, check_transition
from kafka_rebalance.group.coordinator_location import partition_for
from kafka_rebalance.group.errors import Errors


def test_valid_previous_states_table():
    check_transition(S.EMPTY, S.PREPARING_REBALANCE)
    check_transition(S.STABLE, S.PREPARING_REBALANCE)
    check_transition(S.COMPLETING_REBALANCE, S.STABLE)
    with pytest.raises(IllegalStateTransition):
        check_transition(S.EMPTY, S.STABLE)
    with pytest.raises(IllegalStateTransition):
        check_transition(S.STABLE, S.COMPLETING_REBALANCE)
    assert S.DEAD.valid_previous_states == frozenset(S)


def test_coordinator_partition_matches_java_hashcode():
    # "hello".hashCode() == 99162322; "polygenelubricants".hashCode() == Integer.MIN_VALUE -> Utils.abs == 0
    assert partition_for("hello") == 99162322 % 50
    assert partition_for("polygenelubricants") == 0
    assert all(0 <= partition_for(f"group-{i}") < 50 for i in range(200))


def test_member_id_required_then_join():
    d = Driver()
    fx = d.join("c0", 0)
    r = one(fx, JoinGroupResponse)
    assert r.error is Errors.MEMBER_ID_REQUIRED and r.member_id
    assert d.g.state is S.EMPTY and r.member_id in d.g.pending_members
    d.join("c0", 5, r.member_id)
    assert d.g.state is S.PREPARING_REBALANCE and d.g.leader_id == r.member_id


def test_initial_delay_rearmed_by_new_joins_and_one_generation():
    """Behaviour 1: members joining an empty group within the delay make one rebalance, >= 3 s after the first join."""
    d = Driver()
    d.join_dynamic("c0", 0)
    d.join_dynamic("c1", 1000)
    d.join_dynamic("c2", 2500)
    d.advance(2999)
    assert d.g.state is S.PREPARING_REBALANCE
    d.advance(20_000)
    changes = [e for e in d.out if isinstance(e, StateChanged) and e.new is S.COMPLETING_REBALANCE]
    assert len(changes) == 1 and d.g.generation_id == 1
    joins = [e for e in d.out if isinstance(e, JoinGroupResponse) and e.error is Errors.NONE]
    assert len(joins) == 3 and all(j.generation_id == 1 for j in joins)
    # the delay was re-armed once (members added during the first window): completes at 6000
    assert d.g.state_timestamp_ms == 6000
    leader = [j for j in joins if j.member_id == j.leader]
    assert len(leader) == 1 and len(leader[0].members) == 3


def test_initial_delay_capped_by_rebalance_timeout():
    d = Driver()
    d.join("c0", 0, "", meta="a", rebalance_timeout=4000)
    mid = d.out[-1].member_id
    d.join("c0", 0, mid, meta="a", rebalance_timeout=4000)
    for i in range(1, 10):  # a new member every second keeps re-arming
        d.join_dynamic(f"c{i}", i * 1000)
    d.advance(20_000)
    # remaining = 4000 - 3000 = 1000: one extension of min(3000, 1000)
    assert d.g.state is S.COMPLETING_REBALANCE
    assert d.g.state_timestamp_ms == 4000


def test_barrier_waits_for_all_known_members_then_rebalance_timeout():
    d, ids = stable_group(3)
    # the leader rejoins: Stable -> PreparingRebalance
    d.join("c0", 20_000, ids[0])
    assert d.g.state is S.PREPARING_REBALANCE
    d.join("c1", 21_000, ids[1])
    for t in range(30_000, 320_001, 10_000):  # c2 keeps heartbeating but never rejoins
        d.advance(t)
        if d.g.state is S.PREPARING_REBALANCE:
            fx = d.apply(d.g.heartbeat(HeartbeatRequest("c2", ids[2], 1), t))
            assert one(fx, HeartbeatResponse).error is Errors.REBALANCE_IN_PROGRESS
        if t == 310_000:
            assert (
                d.g.state is S.PREPARING_REBALANCE
            )  # c2 may still come within the rebalance timeout
    # c2 never rejoined: removed at the rebalance timeout, generation 2 with two members
    assert d.g.state is S.COMPLETING_REBALANCE and d.g.generation_id == 2
    assert set(d.g.members) == {ids[0], ids[1]}


def test_barrier_completes_when_all_rejoined():
    d, ids = stable_group(3)
    d.join("c1", 20_000, ids[1], meta="changed")  # follower with new metadata triggers a rebalance
    assert d.g.state is S.PREPARING_REBALANCE
    d.join("c0", 20_100, ids[0])
    fx = d.join("c2", 20_200, ids[2])
    assert d.g.state is S.COMPLETING_REBALANCE and d.g.generation_id == 2
    assert len([e for e in fx if isinstance(e, JoinGroupResponse)]) == 3


def test_leader_reelected_when_it_leaves():
    d, ids = stable_group(3)
    assert d.g.leader_id == ids[0]
    fx = d.apply(d.g.leave(LeaveGroupRequest("c0", ((ids[0], None),)), 20_000))
    assert d.g.state is S.PREPARING_REBALANCE and d.g.leader_id == ids[1]
    assert any(isinstance(e, StateChanged) and "LeaveGroup" in e.reason for e in fx)


def test_follower_unchanged_join_in_stable_returns_current_generation():
    d, ids = stable_group(2)
    fx = d.join("c1", 20_000, ids[1])
    r = one(fx, JoinGroupResponse)
    assert r.error is Errors.NONE and r.generation_id == 1 and d.g.state is S.STABLE


def test_session_expiry_removes_member_and_rebalances():
    d, ids = stable_group(2)
    d.apply(d.g.heartbeat(HeartbeatRequest("c0", ids[0], 1), 40_000))
    d.advance(56_000)  # c1's session (45 s from 10 s) expired; c0's did not
    assert ids[1] not in d.g.members and d.g.state is S.PREPARING_REBALANCE


def test_pending_sync_timeout_removes_silent_members():
    d = Driver()
    ids = [d.join_dynamic(f"c{i}", 0) for i in range(2)]
    d.advance(10_000)
    assert d.g.state is S.COMPLETING_REBALANCE
    # only the follower syncs; the leader never sends its assignment
    d.apply(d.g.sync(SyncGroupRequest("c1", ids[1], 1), 10_000))
    for t in range(20_000, 300_001, 20_000):  # both stay alive
        for i, m in enumerate(ids):
            d.apply(d.g.heartbeat(HeartbeatRequest(f"c{i}", m, 1), t))
        d.advance(t)
    d.advance(305_999)
    assert d.g.state is S.COMPLETING_REBALANCE
    d.advance(306_000)  # rebalance timeout after the join completed at 6000
    assert ids[0] not in d.g.members and d.g.state is S.PREPARING_REBALANCE


def test_group_max_size():
    d = Driver(ClassicGroupConfig(max_size=2))
    d.join_dynamic("c0", 0)
    d.join_dynamic("c1", 0)
    fx = d.join("c2", 0)  # two members already await the join: the third is turned away
    assert one(fx, JoinGroupResponse).error is Errors.GROUP_MAX_SIZE_REACHED
    assert len(d.g.members) == 2


def test_inconsistent_protocol_rejected():
    d, ids = stable_group(1)
    req = JoinGroupRequest("x", "", (("roundrobin", None),), 45_000, 300_000)
    assert one(d.g.join(req, 1), JoinGroupResponse).error is Errors.INCONSISTENT_GROUP_PROTOCOL


def _group_with(protocols: list[tuple[str, ...]]) -> ClassicGroup:
    """Dynamic members joining in order, each offering `protocols[i]`; the join phase completed."""
    d = Driver(ClassicGroupConfig(require_known_member_id=False))
    for i, names in enumerate(protocols):
        d.apply(
            d.g.join(
                JoinGroupRequest(f"c{i}", "", tuple((n, None) for n in names), 45_000, 300_000), 0
            )
        )
    d.advance(10_000)
    assert d.g.state is S.COMPLETING_REBALANCE
    return d.g


@pytest.mark.parametrize("first", [0, 1])
def test_select_protocol_tie_follows_java_hashmap_order_not_join_order(first):
    """ClassicGroup.selectProtocol: votes in a HashMap, `stream().max(...)` keeps the first of equal
    maxima in HashMap order. "range" (bin 9 of 16) precedes "cooperative-sticky" (bin 15), so a 1-1
    tie goes to range whichever member joined (and voted) first."""
    a, b = ("range", "cooperative-sticky"), ("cooperative-sticky", "range")
    g = _group_with([a, b] if first == 0 else [b, a])
    assert g.protocol_name == "range"


def test_select_protocol_majority_and_vote_is_first_candidate_in_member_order():
    # ClassicGroupMember.vote: the member's first protocol that every member supports
    g = _group_with(
        [
            ("roundrobin", "cooperative-sticky", "range"),
            ("cooperative-sticky", "range"),
            ("cooperative-sticky", "range", "roundrobin"),
        ]
    )
    assert g.protocol_name == "cooperative-sticky"  # roundrobin is not a candidate; 3 votes
    # a majority beats HashMap order: cooperative-sticky comes after range there but has 2 votes to 1
    g = _group_with(
        [
            ("range", "cooperative-sticky"),
            ("cooperative-sticky", "range"),
            ("cooperative-sticky", "range"),
        ]
    )
    assert g.protocol_name == "cooperative-sticky"


def test_empty_member_list_in_preparing_rebalance_keeps_protocol_type():
    """ClassicGroup.supportsProtocols tests the Empty *state*: a group whose only (static) member left
    during the initial delay is PreparingRebalance with no members and still of type "consumer"."""
    d = Driver()
    d.join("c0", 0, instance="i0")
    assert d.g.state is S.PREPARING_REBALANCE and d.g.protocol_type == "consumer"
    d.apply(d.g.leave(LeaveGroupRequest("c0", (("", "i0"),)), 1000))
    assert d.g.state is S.PREPARING_REBALANCE and not d.g.members
    req = JoinGroupRequest("k0", "", (("range", None),), 45_000, 300_000, protocol_type="connect")
    assert (
        one(d.apply(d.g.join(req, 1500)), JoinGroupResponse).error
        is Errors.INCONSISTENT_GROUP_PROTOCOL
    )
    assert d.g.protocol_type == "consumer" and not d.g.pending_members and not d.g.members
    # the same type with any protocol is accepted: no member constrains the protocols
    fx = d.apply(
        d.g.join(JoinGroupRequest("c1", "", (("roundrobin", None),), 45_000, 300_000), 1600)
    )
    assert one(fx, JoinGroupResponse).error is Errors.MEMBER_ID_REQUIRED
    d.advance(10_000)  # the initial delay ends with nobody joined: Empty, the type is kept
    assert d.g.state is S.EMPTY and d.g.protocol_type == "consumer" and d.g.generation_id == 1
    # in Empty any non-empty type is accepted and the first member added sets the group's type
    fx = d.apply(d.g.join(req, 11_000))
    mid = one(fx, JoinGroupResponse).member_id
    d.apply(
        d.g.join(
            JoinGroupRequest(
                "k0", mid, (("range", None),), 45_000, 300_000, protocol_type="connect"
            ),
            11_001,
        )
    )
    assert d.g.state is S.PREPARING_REBALANCE and d.g.protocol_type == "connect"
    empty = JoinGroupRequest("k1", "", (("range", None),), 45_000, 300_000, protocol_type="")
    assert (
        one(Driver().g.join(empty, 0), JoinGroupResponse).error
        is Errors.INCONSISTENT_GROUP_PROTOCOL
    )


def test_invalid_session_timeout():
    d = Driver()
    req = JoinGroupRequest("x", "", (("range", None),), 1000, 300_000)
    assert one(d.g.join(req, 1), JoinGroupResponse).error is Errors.INVALID_SESSION_TIMEOUT


# ----------------------------------------------------------------------------- static membership (KIP-345)


def test_static_member_rejoin_replaces_old_id_without_rebalance():
    d, ids = static_stable(2)
    fx = d.join("c1-new", 20_000, instance="i1", meta="m1")
    r = one(fx, JoinGroupResponse)
    assert r.error is Errors.NONE and r.generation_id == 1 and r.member_id != ids[1]
    assert d.g.state is S.STABLE and d.g.generation_id == 1
    assert d.g.static_members["i1"] == r.member_id and ids[1] not in d.g.members
    # it syncs and gets its previous assignment back
    fx = d.apply(d.g.sync(SyncGroupRequest("c1-new", r.member_id, 1, "i1"), 20_001))
    assert one(fx, SyncGroupResponse).assignment == [ids[1]]
    # the old member id is fenced
    fx = d.g.heartbeat(HeartbeatRequest("c1", ids[1], 1, "i1"), 20_002)
    assert one(fx, HeartbeatResponse).error is Errors.FENCED_INSTANCE_ID


def test_static_member_rejoin_with_unsupported_new_protocol_keeps_stable():
    d, ids = static_stable(2)
    req = JoinGroupRequest(
        "c1-new", "", (("roundrobin", "m1"), ("range", "m1")), 45_000, 300_000, "i1"
    )
    d.apply(d.g.join(req, 20_000))
    # roundrobin is not supported by every member, so the selected protocol (range) is unchanged: no rebalance
    assert d.g.state is S.STABLE and d.g.generation_id == 1


def _static_stable_with(protocols: list[tuple[str, ...]]) -> tuple[Driver, list[str]]:
    """A Stable group of static members i0, i1, ... each offering `protocols[i]` (names, preference order)."""
    d = Driver()
    for i, names in enumerate(protocols):
        d.apply(
            d.g.join(
                JoinGroupRequest(
                    f"c{i}", "", tuple((n, f"m{i}") for n in names), 45_000, 300_000, f"i{i}"
                ),
                0,
            )
        )
    ids = [d.g.static_members[f"i{i}"] for i in range(len(protocols))]
    sync_all(d, ids)
    return d, ids


def test_static_member_rejoin_changing_the_selected_protocol_triggers_rebalance():
    """updateStaticMemberThenRebalanceOrCompleteJoin: in Stable, a rejoin whose new vote changes the
    protocol the next generation would select starts a rebalance (KIP-345 keeps the group consistent)."""
    d, ids = _static_stable_with(
        [("roundrobin", "range"), ("range", "roundrobin"), ("range", "roundrobin")]
    )
    assert d.g.protocol_name == "range"  # two votes to one
    req = JoinGroupRequest(
        "c1-new", "", (("roundrobin", "m1"), ("range", "m1")), 45_000, 300_000, "i1"
    )
    fx = d.apply(d.g.join(req, 20_000))
    assert d.g.state is S.PREPARING_REBALANCE
    assert any(isinstance(e, StateChanged) and "changed protocol" in e.reason for e in fx)
    new_id = d.g.static_members["i1"]
    assert new_id != ids[1] and ids[1] not in d.g.members
    # the other members rejoin: the new generation selects roundrobin (two votes to one)
    d.apply(
        d.g.join(
            JoinGroupRequest(
                "c0", ids[0], (("roundrobin", "m0"), ("range", "m0")), 45_000, 300_000, "i0"
            ),
            20_100,
        )
    )
    d.apply(
        d.g.join(
            JoinGroupRequest(
                "c2", ids[2], (("range", "m2"), ("roundrobin", "m2")), 45_000, 300_000, "i2"
            ),
            20_200,
        )
    )
    assert (
        d.g.state is S.COMPLETING_REBALANCE
        and d.g.generation_id == 2
        and d.g.protocol_name == "roundrobin"
    )


def test_static_member_not_removed_at_rebalance_timeout():
    """KIP-345: completing the join phase removes only *dynamic* members that did not rejoin; a static
    member that keeps heartbeating but does not rejoin stays, is handed to the leader for assignment
    and is pending sync; it leaves only when its session expires."""
    d, ids = static_stable(2)
    d.join(
        "c0", 20_000, ids[0], instance="i0", meta="changed"
    )  # the leader rejoins: PreparingRebalance
    assert d.g.state is S.PREPARING_REBALANCE
    for t in range(20_000, 320_000, 10_000):  # i1 keeps its session alive but never rejoins
        d.advance(t)
        assert (
            one(d.g.heartbeat(HeartbeatRequest("c1", ids[1], 1, "i1"), t), HeartbeatResponse).error
            is Errors.REBALANCE_IN_PROGRESS
        )
        d.apply(d.g.heartbeat(HeartbeatRequest("c1", ids[1], 1, "i1"), t))
    assert d.g.state is S.PREPARING_REBALANCE
    d.advance(320_000)  # the join timer: rebalance timeout after the leader's rejoin
    assert d.g.state is S.COMPLETING_REBALANCE and d.g.generation_id == 2
    assert ids[1] in d.g.members and d.g.static_members["i1"] == ids[1]
    assert ids[1] in d.g.pending_sync
    assert not any(isinstance(e, MemberRemoved) for e in d.out)
    leader_join = [e for e in d.out if isinstance(e, JoinGroupResponse) and e.generation_id == 2]
    assert len(leader_join) == 1 and leader_join[0].member_id == ids[0]
    assert {m.member_id: m.metadata for m in leader_join[0].members} == {
        ids[0]: "changed",
        ids[1]: "m1",
    }
    # its old generation no longer heartbeats: it must rejoin; its session timer restarted at the join
    assert heartbeat_error(d.g, ids[1], 1, "i1", 320_001) is Errors.ILLEGAL_GENERATION
    assert d.timers[heartbeat_key(ids[1])][0] == 365_000
    d.apply(
        d.g.sync(
            SyncGroupRequest("c0", ids[0], 2, "i0", assignments={ids[0]: [1], ids[1]: [2]}), 320_010
        )
    )
    assert d.g.state is S.STABLE
    d.advance(364_999)
    assert ids[1] in d.g.members
    d.advance(365_000)  # only the session timeout removes it, and that starts a rebalance
    assert ids[1] not in d.g.members and "i1" not in d.g.static_members
    assert [e.reason for e in d.out if isinstance(e, MemberRemoved)] == ["session timeout"]
    assert d.g.state is S.PREPARING_REBALANCE
