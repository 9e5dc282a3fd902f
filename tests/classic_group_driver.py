"""A harness for group/classic_group.py's `ClassicGroup` in tests: `Driver` applies the effects and fires
due timers in deadline order; `stable_group` and `static_stable` build a Stable group of dynamic or
static members; `one` picks the one effect of a type; `commit_error` and `heartbeat_error` are a
member's OffsetCommit and Heartbeat answers."""

from __future__ import annotations

from kafka_rebalance.group.classic_group import ClassicGroup, ClassicGroupConfig
from kafka_rebalance.group.classic_messages import (
    CancelTimer,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    ScheduleTimer,
    SyncGroupRequest,
)
from kafka_rebalance.group.classic_state import ClassicGroupState as S
from kafka_rebalance.group.errors import Errors


class Driver:
    """A minimal timer-driving harness: applies effects, fires due timers in deadline order."""

    def __init__(self, config: ClassicGroupConfig | None = None) -> None:
        self.g = ClassicGroup("g", config)
        self.timers: dict[tuple, tuple[int, object]] = {}
        self.out: list = []

    def apply(self, fx: list) -> list:
        for e in fx:
            if isinstance(e, ScheduleTimer):
                self.timers[e.key] = (e.deadline_ms, e.payload)
            elif isinstance(e, CancelTimer):
                self.timers.pop(e.key, None)
        self.out.extend(fx)
        return fx

    def advance(self, until: int) -> None:
        while True:
            due = sorted((d, k) for k, (d, _) in self.timers.items() if d <= until)
            if not due:
                return
            d, k = due[0]
            _, payload = self.timers.pop(k)
            self.apply(self.g.on_timer(k, payload, d))

    def join(
        self,
        client: str,
        now: int,
        member_id: str = "",
        instance: str | None = None,
        meta: object = None,
        rebalance_timeout: int = 300_000,
    ) -> list:
        req = JoinGroupRequest(
            client,
            member_id,
            (("range", meta if meta is not None else client),),
            45_000,
            rebalance_timeout,
            instance,
        )
        return self.apply(self.g.join(req, now))

    def join_dynamic(self, client: str, now: int) -> str:
        fx = self.join(client, now)
        r = one(fx, JoinGroupResponse)
        assert r.error is Errors.MEMBER_ID_REQUIRED  # KIP-394
        self.join(client, now, r.member_id)
        return r.member_id


def one(fx: list, t: type):
    found = [e for e in fx if isinstance(e, t)]
    assert len(found) == 1, fx
    return found[0]


def stable_group(n: int = 2) -> tuple[Driver, list[str]]:
    d = Driver()
    ids = [d.join_dynamic(f"c{i}", 0) for i in range(n)]
    d.advance(10_000)
    assert d.g.state is S.COMPLETING_REBALANCE
    leader = d.g.leader_id
    d.apply(
        d.g.sync(
            SyncGroupRequest("c0", leader, d.g.generation_id, assignments={m: [m] for m in ids}),
            10_000,
        )
    )
    assert d.g.state is S.STABLE
    return d, ids


def static_stable(n: int = 2) -> tuple[Driver, list[str]]:
    d = Driver()
    ids = []
    for i in range(n):
        d.join(f"c{i}", 0, instance=f"i{i}", meta=f"m{i}")
        ids.append(d.g.static_members[f"i{i}"])
    sync_all(d, ids)
    return d, ids


def sync_all(d: Driver, ids: list[str]) -> None:
    """Static members i0, i1, ... joined at 0 (`ids` their member ids): at 10 s the leader, static
    i0, sends generation 1's SyncGroup assigning each member its own id; the group is then Stable."""
    d.advance(10_000)
    d.apply(
        d.g.sync(
            SyncGroupRequest("c0", d.g.leader_id, 1, "i0", assignments={m: [m] for m in ids}),
            10_000,
        )
    )
    assert d.g.state is S.STABLE


def commit_error(g: ClassicGroup, mid: str, gen: int, inst: str | None = None) -> Errors:
    return g.validate_offset_commit(mid, inst, gen)


def heartbeat_error(
    g: ClassicGroup, mid: str, gen: int, inst: str | None = None, now: int = 1
) -> Errors:
    return one(g.heartbeat(HeartbeatRequest("c", mid, gen, inst), now), HeartbeatResponse).error
