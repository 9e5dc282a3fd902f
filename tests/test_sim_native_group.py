"""sim/native_group*.pyx (the classic group's native twin) against group/classic_group.py's
`ClassicGroup`, the reference: random request and timer sequences, dynamic and static members, fed to
both; every answer, every effect and the group's visible state equal step by step, and every state and
effect kind reached (a coverage check, so the sequences cannot pass by staying trivial)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_rebalance.group.classic_group import ClassicGroupConfig
from kafka_rebalance.group.classic_messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from kafka_rebalance.group.errors import Errors

# the derandomized draws hash their test's source: `_run_members` as it was named there
from sim_native_group_pair import FOREIGN_ID, Pair, native_group
from sim_native_group_pair import run_members as _run_members

CLIENTS = ("a#1", "a#2", "b#1", "c#1", "d#1")
INSTANCES = (None, None, "i0", "i1", "i2")
# protocol lists in one global order (range before roundrobin): every member votes alike
PROTOCOLS = (
    (("range", b"r1"),),
    (("range", b"r2"),),
    (("range", b"r1"), ("roundrobin", b"x")),
    (("roundrobin", b"x"),),
)


def _member(data: st.DataObject, pair: Pair) -> tuple[str, str | None]:
    """A (member id, instance id) pair: mostly a present member as it is, else anything."""
    members = pair.ref.members
    if members and data.draw(st.integers(0, 2)):
        mid = data.draw(st.sampled_from(list(members)))
        return mid, members[mid].group_instance_id
    mid = data.draw(st.sampled_from(["", FOREIGN_ID, *pair.ids[-6:]]))
    return mid, data.draw(st.sampled_from(INSTANCES))


def step(data: st.DataObject, pair: Pair, now: int) -> None:
    kind = data.draw(
        st.sampled_from(["join"] * 5 + ["sync"] * 4 + ["heartbeat"] * 2 + ["leave", "timer"] * 2)
    )
    client = data.draw(st.sampled_from(CLIENTS))
    mid, inst = _member(data, pair)
    gen = pair.ref.generation_id - data.draw(st.sampled_from([0, 0, 0, 1]))
    if kind == "join":
        req = JoinGroupRequest(
            client,
            mid if data.draw(st.integers(0, 2)) else "",
            data.draw(st.sampled_from(PROTOCOLS + (PROTOCOLS[2],) * 3)),
            data.draw(st.sampled_from([10_000, 10_000, 30_000, 1_000])),
            data.draw(st.sampled_from([20_000, 30_000])),
            inst,
            data.draw(st.sampled_from(["consumer"] * 6 + ["connect"])),
        )
        pair.call("join", req, now)
    elif kind == "sync":
        members = list(pair.ref.members)
        assignments = None
        if data.draw(st.booleans()):
            assignments = {m: (m, gen, i) for i, m in enumerate(members)}
        req = SyncGroupRequest(
            client,
            mid,
            gen,
            inst,
            data.draw(st.sampled_from(["consumer"] * 5 + [None, "connect"])),
            data.draw(st.sampled_from([None] * 3 + ["range", "roundrobin"])),
            assignments,
        )
        pair.call("sync", req, now)
    elif kind == "heartbeat":
        pair.call("heartbeat", HeartbeatRequest(client, mid, gen, inst), now)
    elif kind == "leave":
        n = data.draw(st.integers(1, 2))
        leaving = tuple(
            (m if data.draw(st.integers(0, 2)) else "", i)
            for m, i in (_member(data, pair) for _ in range(n))
        )
        pair.call("leave", LeaveGroupRequest(client, leaving), now)
    elif pair.timers:
        key = data.draw(st.sampled_from(sorted(pair.timers, key=repr)))
        _, payload = pair.timers.pop(key)
        pair.call("on_timer", key, payload, now)
    else:
        key = data.draw(st.sampled_from([("join",), ("sync",), ("heartbeat", FOREIGN_ID)]))
        pair.call("on_timer", key, None, now)


def _run(data: st.DataObject, seen: set) -> None:
    config = ClassicGroupConfig(
        initial_rebalance_delay_ms=data.draw(st.sampled_from([0, 3000])),
        require_known_member_id=data.draw(st.booleans()),
    )
    pair = Pair(config)
    now = 0
    for _ in range(data.draw(st.integers(1, 70))):
        # fire the due timers first, as the simulator's loop would, mostly
        due = sorted((d, repr(k), k) for k, (d, _) in pair.timers.items() if d <= now)
        if due and data.draw(st.integers(0, 3)):
            d, _, key = due[0]
            _, payload = pair.timers.pop(key)
            pair.call("on_timer", key, payload, max(d, 0))
        else:
            step(data, pair, now)
        now += data.draw(st.sampled_from([0, 0, 1, 500, 3_000, 11_000]))
        if data.draw(st.integers(0, 150)) == 0:
            pair.call("mark_dead", now)
    seen.update(pair.seen)


def test_a_copy_of_the_group_answers_as_the_group() -> None:
    """Every call made on a copy of the twin as it was (`NativeClassicGroup.copy`, the state a
    refused call goes back to): every answer still the reference's, over the paths of
    `_run_members` (a field the copy missed shows in a later answer)."""
    native_group()
    seen: set = set()

    @settings(
        max_examples=80,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    @given(st.data())
    def run(data: st.DataObject) -> None:
        _run_members(data, seen, copying=True)

    run()
    assert ("SyncGroupResponse", Errors.NONE) in seen and ("timer", "sync") in seen
    assert {("state", s) for s in ("Empty", "PreparingRebalance", "CompletingRebalance")} <= seen
    assert ("parked sync answered", "join", "REBALANCE_IN_PROGRESS") in seen
    for why in ("did not rejoin before the rebalance timeout", "session timeout", "LeaveGroup"):
        assert ("removed", why) in seen
    assert ("removed", "replaced by a rejoining static member") in seen


def test_random_requests_and_timers_answer_as_the_reference() -> None:
    native_group()
    seen: set = set()

    # derandomized: the coverage asserted below must not depend on the run's draw (a CI run once
    # missed 'explicit LeaveGroup from i0')
    @settings(
        max_examples=400,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    @given(st.data())
    def run(data: st.DataObject) -> None:
        _run(data, seen)

    @settings(
        max_examples=300,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    @given(st.data())
    def run_members(data: st.DataObject) -> None:
        _run_members(data, seen)

    run()
    run_members()
    effects = {
        "ScheduleTimer",
        "CancelTimer",
        "JoinGroupResponse",
        "SyncGroupResponse",
        "HeartbeatResponse",
        "LeaveGroupResponse",
        "StateChanged",
        "MemberRemoved",
        "GroupMetadataChanged",
    }
    states = {
        ("state", s)
        for s in ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")
    }
    errors = (
        {
            ("JoinGroupResponse", e)
            for e in (
                Errors.NONE,
                Errors.MEMBER_ID_REQUIRED,
                Errors.UNKNOWN_MEMBER_ID,
                Errors.FENCED_INSTANCE_ID,
                Errors.INCONSISTENT_GROUP_PROTOCOL,
                Errors.INVALID_SESSION_TIMEOUT,
                Errors.COORDINATOR_NOT_AVAILABLE,
            )
        }
        | {
            ("SyncGroupResponse", e)
            for e in (
                Errors.NONE,
                Errors.REBALANCE_IN_PROGRESS,
                Errors.ILLEGAL_GENERATION,
                Errors.INCONSISTENT_GROUP_PROTOCOL,
                Errors.FENCED_INSTANCE_ID,
            )
        }
        | {
            ("HeartbeatResponse", e)
            for e in (Errors.NONE, Errors.REBALANCE_IN_PROGRESS, Errors.UNKNOWN_MEMBER_ID)
        }
    )
    removed = {
        ("removed", r)
        for r in (
            "replaced by a rejoining static member",
            "LeaveGroup by instance id",
            "LeaveGroup",
            "session timeout",
            "pending SyncGroup expired",
        )
    }
    reasons = {
        ("reason", r)
        for r in (
            "adding new member {}",
            "updating metadata for member {}",
            "updating metadata for static member {}",
            "leader {} re-joining",
            "member {} session expired",
            "join phase complete",
            "leader's assignment received",
            "pending sync expired",
            "no members left",
            "unloaded",
            "explicit LeaveGroup from {}",
            "explicit LeaveGroup from i0",
        )
    }
    commits = {
        ("commit", e)
        for e in (Errors.NONE, Errors.REBALANCE_IN_PROGRESS, Errors.ILLEGAL_GENERATION)
    }
    timers = {("timer", k) for k in ("heartbeat", "join", "sync")}
    # parked SyncGroups answered by another call (native_group_core's `_propagate`, from a join, a
    # leave or a timer resetting the assignment, or the leader's sync), a replaced static member's
    # parked SyncGroup fenced (native_group_handlers' `_update_static`), the static leader's rejoin
    paths = {
        ("parked sync answered", "join", "REBALANCE_IN_PROGRESS"),
        ("parked sync answered", "leave", "REBALANCE_IN_PROGRESS"),
        ("parked sync answered", "on_timer", "REBALANCE_IN_PROGRESS"),
        ("parked sync answered", "sync", "NONE"),
        ("parked sync answered", "join", "FENCED_INSTANCE_ID"),
        ("static leader rejoin without rebalance",),
    }
    missing = (effects | states | errors | removed | reasons | commits | timers | paths) - seen
    assert not missing, f"never reached: {sorted(map(str, missing))}"


def test_a_static_member_changing_protocol_and_a_member_not_rejoining() -> None:
    """Two paths random sequences reach too rarely to count on: a static member that rejoins
    while Stable with protocols that change the group's choice, and a member left out of a
    rebalance by the join timer."""
    config = ClassicGroupConfig(initial_rebalance_delay_ms=0, require_known_member_id=False)
    pair = Pair(config)
    both = (("range", b"1"), ("roundrobin", b"2"))
    pair.call("join", JoinGroupRequest("a#1", "", both, 30_000, 20_000, "i0"), 0)
    pair.call("join", JoinGroupRequest("b#1", "", both, 30_000, 20_000), 0)
    a, b = list(pair.ref.members)
    pair.call("on_timer", ("join",), ("initial", 0, 0), 0)
    pair.call("sync", SyncGroupRequest("a#1", a, 1, "i0", assignments={a: 1, b: 2}), 1)
    pair.call("sync", SyncGroupRequest("b#1", b, 1), 1)
    assert str(pair.ref.state) == "Stable" and pair.ref.protocol_name == "range"
    rr = (("roundrobin", b"3"),)
    pair.call("join", JoinGroupRequest("a#2", "", rr, 30_000, 20_000, "i0"), 2)
    a = list(pair.ref.members)[-1]
    pair.call("sync", SyncGroupRequest("b#1", b, 1), 3)
    pair.call("heartbeat", HeartbeatRequest("b#1", b, 1), 4)
    pair.call("on_timer", ("join",), ("join",), 20_002)
    assert pair.ref.protocol_name == "roundrobin" and list(pair.ref.members) == [a]
    assert ("reason", "static member {} changed protocol") in pair.seen
    assert ("removed", "did not rejoin before the rebalance timeout") in pair.seen
