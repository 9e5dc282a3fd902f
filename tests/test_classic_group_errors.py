"""The classic coordinator's answers per state (OffsetCommit and Heartbeat errors in Empty,
PreparingRebalance, CompletingRebalance, Stable, Dead, with static fencing), a group loaded from its
snapshot, random traffic keeping the books consistent, and `handle`'s dispatch."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from classic_group_driver import (
    Driver,
    commit_error,
    heartbeat_error,
    one,
    stable_group,
    static_stable,
)
from kafka_rebalance.group.classic_group import ClassicGroup
from kafka_rebalance.group.classic_messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    ScheduleTimer,
    StateChanged,
    SyncGroupRequest,
    SyncGroupResponse,
    heartbeat_key,
)
from kafka_rebalance.group.classic_state import ClassicGroupState as S
from kafka_rebalance.group.errors import Errors


def test_errors_in_empty_state():
    d = Driver()
    g = d.g
    assert g.state is S.EMPTY
    assert heartbeat_error(g, "nobody", 0) is Errors.UNKNOWN_MEMBER_ID
    assert (
        one(g.sync(SyncGroupRequest("c", "nobody", 0), 1), SyncGroupResponse).error
        is Errors.UNKNOWN_MEMBER_ID
    )
    assert commit_error(g, "nobody", 1) is Errors.UNKNOWN_MEMBER_ID
    assert (
        commit_error(g, "", -1) is Errors.NONE
    )  # admin / manual assignment commits are allowed on an empty group
    lr = g.leave(LeaveGroupRequest("c", (("nobody", None),)), 1)[-1]
    assert lr.member_errors == (("nobody", Errors.UNKNOWN_MEMBER_ID),)


def test_errors_in_preparing_rebalance():
    d, ids = stable_group(2)
    d.join("c0", 20_000, ids[0])  # leader rejoin
    g = d.g
    assert g.state is S.PREPARING_REBALANCE
    assert heartbeat_error(g, ids[1], 1) is Errors.REBALANCE_IN_PROGRESS
    assert heartbeat_error(g, ids[1], 0) is Errors.ILLEGAL_GENERATION
    assert heartbeat_error(g, "nobody", 1) is Errors.UNKNOWN_MEMBER_ID
    assert (
        one(g.sync(SyncGroupRequest("c", ids[1], 1), 1), SyncGroupResponse).error
        is Errors.REBALANCE_IN_PROGRESS
    )
    assert (
        commit_error(g, ids[1], 1) is Errors.NONE
    )  # commits of the current generation still allowed
    assert commit_error(g, ids[1], 0) is Errors.ILLEGAL_GENERATION


def test_errors_in_completing_rebalance():
    d = Driver()
    ids = [d.join_dynamic(f"c{i}", 0) for i in range(2)]
    d.advance(10_000)
    g = d.g
    assert g.state is S.COMPLETING_REBALANCE
    assert heartbeat_error(g, ids[1], 1) is Errors.NONE
    assert commit_error(g, ids[1], 1) is Errors.REBALANCE_IN_PROGRESS
    assert commit_error(g, ids[1], 0) is Errors.ILLEGAL_GENERATION
    assert (
        one(g.sync(SyncGroupRequest("c", ids[1], 2), 1), SyncGroupResponse).error
        is Errors.ILLEGAL_GENERATION
    )
    # a follower's sync is parked until the leader's arrives
    assert not [
        e for e in g.sync(SyncGroupRequest("c1", ids[1], 1), 1) if isinstance(e, SyncGroupResponse)
    ]


def test_errors_in_stable():
    d, ids = stable_group(2)
    g = d.g
    assert heartbeat_error(g, ids[1], 1) is Errors.NONE
    assert heartbeat_error(g, ids[1], 0) is Errors.ILLEGAL_GENERATION
    assert heartbeat_error(g, "nobody", 1) is Errors.UNKNOWN_MEMBER_ID
    assert commit_error(g, ids[1], 1) is Errors.NONE
    assert commit_error(g, ids[1], 2) is Errors.ILLEGAL_GENERATION
    assert commit_error(g, "nobody", 1) is Errors.UNKNOWN_MEMBER_ID
    assert commit_error(g, "", -1) is Errors.UNKNOWN_MEMBER_ID  # v0 commits only on an empty group


def test_errors_with_static_fencing():
    d, ids = static_stable(2)
    g = d.g
    assert heartbeat_error(g, "someone-else", 1, "i1") is Errors.FENCED_INSTANCE_ID
    assert heartbeat_error(g, ids[1], 1, "unknown-instance") is Errors.UNKNOWN_MEMBER_ID
    assert commit_error(g, "someone-else", 1, "i1") is Errors.FENCED_INSTANCE_ID


def test_errors_in_dead():
    d, ids = stable_group(2)
    g = d.g
    d.apply(g.mark_dead(20_000))
    assert g.state is S.DEAD
    assert heartbeat_error(g, ids[1], 1) is Errors.COORDINATOR_NOT_AVAILABLE
    assert commit_error(g, ids[1], 1) is Errors.COORDINATOR_NOT_AVAILABLE
    assert (
        one(g.sync(SyncGroupRequest("c", ids[1], 1), 1), SyncGroupResponse).error
        is Errors.COORDINATOR_NOT_AVAILABLE
    )
    assert (
        one(
            g.join(JoinGroupRequest("c", "", (("range", 1),), 45_000, 1), 1), JoinGroupResponse
        ).error
        is Errors.COORDINATOR_NOT_AVAILABLE
    )


def test_load_from_snapshot_is_stable_with_fresh_session_timers():
    d, ids = stable_group(3)
    snap = d.g.snapshot()
    g2, fx = ClassicGroup.load(snap, None, 50_000)
    assert g2.state is S.STABLE and g2.generation_id == 1 and g2.leader_id == ids[0]
    deadlines = {e.key: e.deadline_ms for e in fx if isinstance(e, ScheduleTimer)}
    assert deadlines == {heartbeat_key(m): 95_000 for m in ids}
    assert one(g2.sync(SyncGroupRequest("c", ids[2], 1), 50_001), SyncGroupResponse).assignment == [
        ids[2]
    ]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["join", "leave", "hb", "tick"]),
            st.integers(0, 4),
            st.integers(1, 20_000),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_random_traffic_keeps_invariants(ops):
    """Whatever members do, the state machine keeps its books consistent and only makes legal moves."""
    d = Driver()
    now = 0
    known: dict[int, str] = {}
    for op, who, dt in ops:
        now += dt
        d.advance(now)
        client = f"c{who}"
        if op == "join":
            fx = d.join(client, now, known.get(who, ""))
            for r in (e for e in fx if isinstance(e, JoinGroupResponse)):
                if r.client == client and r.error in (Errors.MEMBER_ID_REQUIRED, Errors.NONE):
                    known[who] = r.member_id
        elif op == "leave" and who in known:
            d.apply(d.g.leave(LeaveGroupRequest(client, ((known.pop(who), None),)), now))
        elif op == "hb" and who in known:
            d.apply(d.g.heartbeat(HeartbeatRequest(client, known[who], d.g.generation_id), now))
        g = d.g
        assert g.num_awaiting_join == sum(
            1 for m in g.members.values() if m.awaiting_join is not None
        )
        assert (g.leader_id is None) == (not g.members) or g.leader_id in g.members
        assert g.state is not S.STABLE or g.members
        for e in d.out:
            if isinstance(e, StateChanged):
                assert e.old in e.new.valid_previous_states


def test_handle_dispatches_requests_and_timers():
    d = Driver()
    g = d.g
    fx = g.handle(JoinGroupRequest("c0", "", (("range", 1),), 45_000, 300_000), 0)
    mid = one(fx, JoinGroupResponse).member_id
    fx = d.apply(g.handle(JoinGroupRequest("c0", mid, (("range", 1),), 45_000, 300_000), 1))
    timer = next(e for e in fx if isinstance(e, ScheduleTimer) and e.key[0] == "join")
    fx = g.handle((timer.key, timer.payload), timer.deadline_ms)
    assert g.state is S.COMPLETING_REBALANCE and one(fx, JoinGroupResponse).generation_id == 1
    with pytest.raises(TypeError):
        g.handle("nonsense", 1)
