"""The native coordinator's queued requests, driven directly (the paths no claimed scenario reaches:
tools10's search found none, because an eager member commits before it rejoins): while a client's
JoinGroup or SyncGroup is parked in the group, its next JoinGroup, SyncGroup, OffsetCommit and
Heartbeat wait behind it on the connection (`muted`), in order, and run when the parked request is
answered (`_unmute`), a queued one that parks again keeping the rest waiting behind it.

`NativeCoordinator` and coordinator.py's `ClassicCoordinator` (its source, the reference) each sit in
a reference world (`world.Simulation`, nothing started) behind a proxy that keeps what they send
(replies, rows) instead of delivering it; both get the same requests at the same times, and the
timers they set fire on their world's loop. Asserted: each request meant to queue is queued (the
client's queue grows by one), the queue is emptied when the parked request is answered, and
everything both coordinators sent, their offsets stores and their groups are equal."""

from __future__ import annotations

from typing import Any

from kafka_rebalance import native
from kafka_rebalance.group.classic_messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    SyncGroupRequest,
)
from kafka_rebalance.sim import coordinator
from kafka_rebalance.sim.scenario import parse_simulation_scenario
from kafka_rebalance.sim.world import Simulation
from sim_native_runs import native_coordinator_module

SCENARIO = {
    "name": "queued",
    "duration_ms": 60_000,
    "seed": 1,
    "group": {"id": "g", "assignors": ["range"]},
    "members": {"count": 3, "processing_ms_per_record": 0.1},
    "topics": [{"name": "t", "partitions": 6, "produce_rate": 6.0}],
}
RANGE = (("range", b""),)


class _Kept:
    """The world as a coordinator sees it: replies and rows kept in `sent` (not delivered); every
    other read and call passes through to the world (its loop, members, partition table)."""

    def __init__(self, world: Simulation) -> None:
        object.__setattr__(self, "_w", world)
        object.__setattr__(self, "sent", [])

    def __getattr__(self, name: str) -> Any:
        return getattr(self._w, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._w, name, value)

    def reply(self, client: str, kind: str, resp: Any) -> None:
        self.sent.append((self._w.loop.now, client, kind, resp))

    def reply_many(self, replies: list) -> None:
        for client, kind, resp in replies:
            self.reply(client, kind, resp)

    def emit(
        self,
        kind: str,
        member: str = "",
        generation: int | None = None,
        partitions: Any = None,
        detail: Any = None,
    ) -> None:
        """`WorldCore.emit`'s parameters, kept by name (one coordinator passes them by position)."""
        row = (kind, member, generation, partitions, detail)
        self.sent.append((self._w.loop.now, "row", row))
        self._w.emit(*row)


class _Side:
    """One coordinator in its own world."""

    def __init__(self, make: Any) -> None:
        self.world = Simulation(parse_simulation_scenario(SCENARIO), lambda row: None)
        self.kept = _Kept(self.world)
        self.coord = make(self.kept)

    def run_until(self, t: int) -> None:
        self.world.loop.run_until(t)

    def answers(self, client: str, kind: str) -> list:
        return [s[3] for s in self.kept.sent if s[1] == client and s[2] == kind]


def _sides() -> tuple[_Side, _Side]:
    mod = native_coordinator_module()
    reference = native.source_module(coordinator).ClassicCoordinator
    return _Side(mod.NativeCoordinator), _Side(reference)


def _both(sides: tuple[_Side, _Side], call: str, *args: Any) -> None:
    for side in sides:
        getattr(side.coord, call)(*args)


def _queued(sides: tuple[_Side, _Side], client: str) -> list[int]:
    return [len(side.coord.muted.get(client) or []) for side in sides]


def _assert_same(sides: tuple[_Side, _Side]) -> None:
    nat, ref = sides
    assert nat.kept.sent == ref.kept.sent
    assert nat.coord.store.offsets == ref.coord.store.offsets
    assert nat.coord.store.records_appended == ref.coord.store.records_appended
    assert nat.coord.store.group == ref.coord.store.group
    assert nat.coord.by_member_id == ref.coord.by_member_id
    assert nat.coord.muted.keys() == ref.coord.muted.keys()
    twin, group = nat.coord.group, ref.coord.group
    assert native_coordinator_module().STATE_NAMES[twin.state] == str(group.state)
    assert twin.generation_id == group.generation_id
    assert (twin.ids[twin.leader] if twin.leader else None) == group.leader_id
    assert list(nat.world.p_committed) == list(ref.world.p_committed)


def _member_id(side: _Side, client: str) -> str:
    return side.answers(client, "join")[-1].member_id


def test_requests_behind_a_parked_join_group_wait_and_run_in_order() -> None:
    """m0's JoinGroup waits for the initial rebalance delay; its SyncGroup (as the leader it will
    be, with the assignment), OffsetCommit and Heartbeat sent meanwhile queue behind it and run in
    that order when the join phase answers it: the group is Stable, the commit stored."""
    sides = _sides()
    _both(sides, "receive", "join", JoinGroupRequest("m0#1", "", RANGE, 10_000, 30_000), "m0")
    mid = _member_id(sides[0], "m0#1")
    assert mid == _member_id(sides[1], "m0#1") and mid  # MEMBER_ID_REQUIRED, answered at once
    _both(sides, "receive", "join", JoinGroupRequest("m0#1", mid, RANGE, 10_000, 30_000), "m0")
    assert _queued(sides, "m0#1") == [0, 0] and "m0#1" in sides[0].coord.muted  # parked
    sync = SyncGroupRequest("m0#1", mid, 1, assignments={mid: "a0"})
    _both(sides, "receive", "sync", sync, "m0")
    assert _queued(sides, "m0#1") == [1, 1]  # a SyncGroup queued
    _both(sides, "commit", "m0", "m0#1", mid, None, 1, {0: 5, 1: 7}, "auto", True, 0, 0)
    assert _queued(sides, "m0#1") == [2, 2]  # an OffsetCommit queued
    _both(sides, "receive", "heartbeat", HeartbeatRequest("m0#1", mid, 1), "m0")
    assert _queued(sides, "m0#1") == [3, 3]  # a Heartbeat queued
    assert all(side.answers("m0#1", "commit") == [] for side in sides)
    for side in sides:
        side.run_until(3_000)  # the initial delay ends: the parked JoinGroup is answered
    assert all("m0#1" not in side.coord.muted for side in sides)
    nat, _ = sides
    assert [j.generation_id for j in nat.answers("m0#1", "join")] == [-1, 1]
    assert [(s.error.name, s.assignment) for s in nat.answers("m0#1", "sync")] == [("NONE", "a0")]
    assert str(sides[1].coord.group.state) == "Stable"  # and the twin's (_assert_same)
    # the queued OffsetCommit ran after the SyncGroup, at generation 1: accepted and stored
    assert [a[0].name for a in nat.answers("m0#1", "commit")] == ["NONE"]
    assert {p: o[0] for p, o in nat.coord.store.offsets.items()} == {0: 5, 1: 7}
    assert [a[0].error.name for a in nat.answers("m0#1", "heartbeat")] == ["NONE"]
    _assert_same(sides)


def test_requests_behind_a_parked_sync_group_wait_and_one_parks_again() -> None:
    """m1's SyncGroup waits for the leader's; its OffsetCommit, a second SyncGroup, a JoinGroup and
    a Heartbeat sent meanwhile queue behind it. The leader's SyncGroup answers it; the queued ones run in order:
    the commit is stored, the second SyncGroup is answered at once, the JoinGroup (new metadata)
    starts a rebalance and parks again, and the Heartbeat keeps waiting behind it."""
    sides = _sides()
    mids = {}
    for i in (0, 1):
        client = f"m{i}#1"
        _both(
            sides, "receive", "join", JoinGroupRequest(client, "", RANGE, 10_000, 30_000), f"m{i}"
        )
        mids[i] = _member_id(sides[0], client)
        join = JoinGroupRequest(client, mids[i], RANGE, 10_000, 30_000)
        _both(sides, "receive", "join", join, f"m{i}")
    for side in sides:
        side.run_until(10_000)  # the join phase completes (the delay re-armed once): generation 1
    nat, _ = sides
    assert sides[1].coord.group.generation_id == 1 and sides[1].coord.group.leader_id == mids[0]
    follower = SyncGroupRequest("m1#1", mids[1], 1)
    _both(sides, "receive", "sync", follower, "m1")
    assert _queued(sides, "m1#1") == [0, 0] and "m1#1" in nat.coord.muted  # parked
    _both(sides, "commit", "m1", "m1#1", mids[1], None, 1, {3: 9}, "auto", True, 10_000, 0)
    _both(sides, "receive", "sync", follower, "m1")
    # new metadata: a rebalance (a JoinGroup with the same metadata is answered at once in Stable)
    rejoin = JoinGroupRequest("m1#1", mids[1], (("range", b"new"),), 10_000, 30_000)
    _both(sides, "receive", "join", rejoin, "m1")
    _both(sides, "receive", "heartbeat", HeartbeatRequest("m1#1", mids[1], 1), "m1")
    assert _queued(sides, "m1#1") == [4, 4]
    for side in sides:
        side.run_until(10_100)
    assignments = {mids[0]: "a0", mids[1]: "a1"}
    _both(
        sides,
        "receive",
        "sync",
        SyncGroupRequest("m0#1", mids[0], 1, assignments=assignments),
        "m0",
    )
    syncs = nat.answers("m1#1", "sync")
    assert [(s.error.name, s.assignment) for s in syncs] == [("NONE", "a1"), ("NONE", "a1")]
    assert [a[0].name for a in nat.answers("m1#1", "commit")] == ["NONE"]
    assert nat.coord.store.offsets[3][0] == 9
    # the queued JoinGroup rebalanced the group and parked again: the Heartbeat still waits
    assert _queued(sides, "m1#1") == [1, 1]
    assert nat.answers("m1#1", "heartbeat") == []
    assert str(sides[1].coord.group.state) == "PreparingRebalance"
    _assert_same(sides)
