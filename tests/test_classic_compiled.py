"""The classic group's mypyc build against its source: the same effects for the same requests, and
groups that pickle and copy (a native class does neither by default; `__reduce__` does both).

tests/test_sim_fingerprint_legs.py compares whole simulations on both legs; this drives the state
machine directly, through joins, the initial delay, syncs, heartbeats, a leave and a failover copy.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

from compiled_legs import no_compiled_leg
from kafka_rebalance import group, native
from kafka_rebalance.group import classic_group
from kafka_rebalance.group.classic_messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ScheduleTimer,
    SyncGroupRequest,
)

PURE = native.sources_of("kafka_rebalance.group", group.CLASSIC_MODULES)["classic_group"]


def _leg(leg: str) -> Any:
    if leg == "pure":
        return PURE.ClassicGroup
    if not group.CLASSIC_COMPILED:
        no_compiled_leg("the classic group has no fresh compiled build")
    assert native.is_fresh_build(classic_group.__file__)
    return classic_group.ClassicGroup


def _script(cls: Any) -> tuple[list, Any]:
    """A group of three through its first generation, a heartbeat round and a leave."""
    g = cls("g", member_id_salt="0-")
    out: list = []
    timers: dict = {}

    def run(fx: list) -> list:
        out.extend(fx)
        for e in fx:
            if type(e) is ScheduleTimer:
                timers[e.key] = e
        return fx

    ids = []
    for c in ("a", "b", "c"):
        r = run(g.join(JoinGroupRequest(c, "", (("range", c),), 10_000, 30_000), 10))[-1]
        run(g.join(JoinGroupRequest(c, r.member_id, (("range", c),), 10_000, 30_000), 20))
        ids.append(r.member_id)
    t = timers[("join",)]
    run(g.on_timer(t.key, t.payload, t.deadline_ms))
    for i, (c, mid) in enumerate(zip("abc", ids)):
        plan = {m: f"p{j}" for j, m in enumerate(ids)} if mid == g.leader_id else None
        run(g.sync(SyncGroupRequest(c, mid, g.generation_id, assignments=plan), 3_100 + i))
    for c, mid in zip("abc", ids):
        run(g.heartbeat(HeartbeatRequest(c, mid, g.generation_id), 5_000))
    run(g.leave(LeaveGroupRequest("b", ((ids[1], None),)), 6_000))
    run(g.heartbeat(HeartbeatRequest("a", ids[0], g.generation_id), 6_500))
    return out, g


def _state(g: Any) -> tuple:
    return (
        g.state,
        g.generation_id,
        g.leader_id,
        g.protocol_name,
        list(g.members),
        [(m.awaiting_join, m.awaiting_sync, m.assignment) for m in g.members.values()],
        g.num_awaiting_join,
        sorted(g.pending_sync),
        g.snapshot(),
    )


def test_both_legs_give_the_same_effects() -> None:
    compiled, _ = _script(_leg("compiled"))
    pure, _ = _script(_leg("pure"))
    assert compiled == pure
    assert len(pure) > 20


@pytest.mark.parametrize("how", ["pickle", "deepcopy", "deepcopy-pure"])
def test_a_group_pickles_and_copies(how: str) -> None:
    """The installed build (compiled where built) pickles and copies; the source loaded beside it
    copies (it cannot pickle by name there: its module name is the build's)."""
    _, g = _script(_leg("pure") if how == "deepcopy-pure" else classic_group.ClassicGroup)
    twin = pickle.loads(pickle.dumps(g)) if how == "pickle" else copy.deepcopy(g)
    assert type(twin) is type(g) and _state(twin) == _state(g)
    mid = next(iter(g.members))
    # both go on the same way: a rejoin of the leader starts the next generation
    req = JoinGroupRequest("a", mid, (("range", "a"),), 10_000, 30_000)
    assert twin.join(req, 7_000) == g.join(req, 7_000)
    assert _state(twin) == _state(g)
