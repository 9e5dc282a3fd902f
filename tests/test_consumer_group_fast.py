"""The KIP-848 coordinator's in-place fast paths give what its copying path gives.

`heartbeat(..., in_place=True)` answers the two commonest heartbeats (a settled member's, and a
stable member's move to a new epoch with the target it already has) without the general
transaction (consumer_group_steady.steady_heartbeat). Here two groups are driven in lockstep by the same
clients, one copying (the reference: no fast path) and one in place; after every step the groups,
the answers and the effects must be equal.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance import group, native
from kafka_rebalance.group import consumer_group as cg
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
from kafka_rebalance.group.consumer_group_model import ConsumerGroupConfig, MemberRemoved
from kafka_rebalance.model import TopicMetadata

CFG = ConsumerGroupConfig(session_timeout_ms=45_000, heartbeat_interval_ms=5_000)
# the KIP-848 group's sources, whichever build runs (a compiled build's modules call each other
# directly: a patched module attribute reaches only the sources)
PURE = native.sources_of("kafka_rebalance.group", group.CONSUMER_MODULES)
_CLIENT_NAMES = (
    "ClientState",
    "ConsumerMember",
    "complete_reconciliation",
    "heartbeat_request",
    "leave_request",
    "on_heartbeat_response",
    "on_left",
    "revocation_done",
)


def _on_sources(monkeypatch: pytest.MonkeyPatch):
    """This module's names bound to the sources (the drive below then runs them); their
    consumer_group module returned, to patch."""
    names = globals()
    monkeypatch.setitem(names, "cg", PURE["consumer_group"])
    for name in _CLIENT_NAMES:
        monkeypatch.setitem(names, name, getattr(PURE["consumer_group_member"], name))
    model = PURE["consumer_group_model"]
    monkeypatch.setitem(names, "MemberRemoved", model.MemberRemoved)
    config = model.ConsumerGroupConfig(session_timeout_ms=45_000, heartbeat_interval_ms=5_000)
    monkeypatch.setitem(names, "CFG", config)
    return PURE["consumer_group"]


class Twins:
    """A copying group (the reference) and an in-place one, fed the same requests."""

    def __init__(self, partitions: int) -> None:
        topics = {"t": TopicMetadata("t", partitions)}
        self.ref = cg.new_group("g", topics)
        self.fast = cg.new_group("g", topics)
        self.now = 0

    def heartbeat(self, req):
        self.ref, resp, eff = cg.heartbeat(self.ref, req, self.now, CFG)
        self.fast, resp2, eff2 = cg.heartbeat(self.fast, req, self.now, CFG, in_place=True)
        assert resp2 == resp
        assert eff2 == eff
        self.check()
        return resp

    def expire(self):
        effects = []
        for mid in list(self.ref.members):
            m = self.ref.members.get(mid)
            if m is None:
                continue
            if m.rebalance_deadline_ms is not None and m.rebalance_deadline_ms <= self.now:
                self.ref, eff = cg.on_rebalance_timeout(self.ref, mid, m.member_epoch, self.now)
                self.fast, eff2 = cg.on_rebalance_timeout(
                    self.fast, mid, m.member_epoch, self.now, in_place=True
                )
            else:
                self.ref, eff = cg.on_session_timeout(self.ref, mid, self.now)
                self.fast, eff2 = cg.on_session_timeout(self.fast, mid, self.now, in_place=True)
            assert eff2 == eff
            effects += eff
        self.check()
        return effects

    def grow(self, partitions: int) -> None:
        topics = {"t": TopicMetadata("t", partitions)}
        self.ref = cg.update_topics(self.ref, topics)
        self.fast = cg.update_topics(self.fast, topics)
        self.check()

    def check(self) -> None:
        assert self.fast == self.ref  # every field, members and partition maps included
        assert list(self.fast.members) == list(self.ref.members)  # join order too
        assert self.fast.state is self.ref.state


ACTIONS = st.lists(
    st.tuples(
        st.sampled_from(
            ["hb", "hb", "hb", "hb", "finish", "finish", "revoked", "join", "join"]
            + ["leave", "crash", "tick", "wait", "grow"]
        ),
        st.integers(0, 4),
    ),
    min_size=5,
    max_size=100,
)


def _drive(actions, static: bool) -> None:
    twins = Twins(7)
    clients: dict[str, ConsumerMember] = {}
    incarnation = dict.fromkeys(range(5), 0)
    for action, i in actions:
        name = f"m{i}"
        c = clients.get(name)
        if action == "join" and (c is None or c.state is ClientState.LEFT):
            incarnation[i] += 1
            c = ConsumerMember(
                "g",
                ("t",),
                member_id=f"{name}-{incarnation[i]}",
                instance_id=f"i-{name}" if static else None,
                rebalance_timeout_ms=30_000,
            )
            clients[name] = c
            action = "hb"
        elif action == "grow":
            n = twins.ref.topics["t"].partitions
            if n < 10:
                twins.grow(n + 1)
            continue
        elif action in ("tick", "wait"):
            twins.now += 20_000 if action == "tick" else 1_000
            for e in twins.expire():
                if isinstance(e, MemberRemoved):
                    for other, cl in clients.items():
                        if cl.member_id == e.member_id and cl.state is not ClientState.LEFT:
                            clients[other] = on_left(cl)
            continue
        if c is None or c.state is ClientState.LEFT:
            continue
        if action == "hb":
            resp = twins.heartbeat(heartbeat_request(c))
            c, _rec, _lost = on_heartbeat_response(c, resp)
        elif action == "finish" and c.state is ClientState.RECONCILING:
            c, _nxt = complete_reconciliation(c)
        elif action == "revoked" and c.state is ClientState.RECONCILING:
            c = revocation_done(c)
        elif action == "leave":
            twins.heartbeat(leave_request(c))
            c = on_left(c)
        elif action == "crash":
            c = on_left(c)  # gone; the coordinator finds out by its timers
        clients[name] = c


@settings(max_examples=80, deadline=None)
@given(ACTIONS, st.booleans())
def test_in_place_heartbeats_equal_the_copying_path(actions, static):
    _drive(actions, static)


@settings(max_examples=30, deadline=None)
@given(ACTIONS, st.booleans())
def test_in_place_heartbeats_equal_the_copying_path_on_the_sources(actions, static):
    """The same on the sources when a compiled build runs above (one leg each)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        _on_sources(monkeypatch)
        _drive(actions, static)


def test_both_fast_paths_are_taken(monkeypatch):
    """The lockstep above compares something: a settling group takes both fast paths."""
    taken = {"settled": 0, "new epoch": 0}
    pure_cg = _on_sources(monkeypatch)
    steady = pure_cg.steady_heartbeat

    def counting(group, req, now_ms, config):
        out = steady(group, req, now_ms, config)
        if out is not None:
            taken[
                "new epoch" if out[2][0].__class__.__name__ == "MemberReconciled" else "settled"
            ] += 1
        return out

    monkeypatch.setattr(pure_cg, "steady_heartbeat", counting)
    joins = [("join", i) for i in range(3)]
    rounds = [("hb", i) for i in range(3)] + [("finish", i) for i in range(3)]
    _drive(joins + rounds * 4 + [("join", 3)] + (rounds + [("hb", 3), ("finish", 3)]) * 4, False)
    assert taken["settled"] >= 5
    assert taken["new epoch"] >= 1


def test_a_settled_members_repeated_heartbeat_gets_the_same_answer_object():
    """The in-place path hands a settled member the answer it gave last time while epoch and
    interval still hold (a value: equal to a new one), a new one at a new epoch or interval, and
    forgets a member's answer when the member is removed."""
    topics = {"t": TopicMetadata("t", 4)}
    group = cg.new_group("g", topics)
    c = ConsumerMember("g", ("t",), member_id="m1", rebalance_timeout_ms=30_000)
    for _ in range(3):  # join, then acknowledge the assignment
        group, resp, _ = cg.heartbeat(group, heartbeat_request(c), 0, CFG, in_place=True)
        c, rec, _ = on_heartbeat_response(c, resp)
        if rec is not None:
            c, _ = complete_reconciliation(c)
    assert c.state is ClientState.STABLE and len(c.owned) == 4
    req = heartbeat_request(c)
    group, first, _ = cg.heartbeat(group, req, 1_000, CFG, in_place=True)
    group, second, fx = cg.heartbeat(group, req, 2_000, CFG, in_place=True)
    assert second is first
    assert fx[0].deadline_ms == 2_000 + CFG.session_timeout_ms
    other = ConsumerGroupConfig(session_timeout_ms=45_000, heartbeat_interval_ms=3_000)
    group, third, _ = cg.heartbeat(group, req, 3_000, other, in_place=True)
    assert third is not first and third.heartbeat_interval_ms == 3_000
    copied, copied_answer, _ = cg.heartbeat(group, req, 4_000, other)  # the copying path
    assert copied_answer == third
    # the copy does not share the given value's cache (a later in-place heartbeat on the copy
    # must not write into the given value's)
    assert copied is not group and copied.answers == {} and group.answers["m1"] is third
    assert group.answers["m1"] is third
    group, _, _ = cg.heartbeat(group, leave_request(c), 5_000, other, in_place=True)
    assert "m1" not in group.answers


def test_steady_answer_does_what_steady_heartbeat_does(monkeypatch):
    """steady_answer (the simulator's coordinator asks it) changes the group as steady_heartbeat
    does and says which effects that one lists: run side by side on equal copies of each group the
    lockstep drive meets (both kinds, and declines, are met: counted)."""
    import copy

    pure_cg = _on_sources(monkeypatch)
    steady_mod = PURE["consumer_group_steady"]
    steady = pure_cg.steady_heartbeat
    seen = {0: 0, 1: 0, 2: 0, -1: 0}

    def both(group, req, now_ms, config):
        twin = copy.deepcopy(group)
        done = steady_mod.steady_answer(twin, req, now_ms, config)
        out = steady(group, req, now_ms, config)
        seen[done] += 1
        if out is None:
            assert done == steady_mod.NOT_STEADY
            assert twin == group
            return out
        _, resp, fx = out
        assert twin == group and twin.answers == group.answers
        assert twin.answers[req.member_id] == resp
        kinds = [type(e).__name__ for e in fx]
        expected = {
            steady_mod.STEADY_ALIVE: ["ScheduleSessionTimeout"],
            steady_mod.STEADY_MOVED: ["MemberReconciled", "ScheduleSessionTimeout"],
            steady_mod.STEADY_MOVED_CANCEL: [
                "MemberReconciled",
                "CancelRebalanceTimeout",
                "ScheduleSessionTimeout",
            ],
        }[done]
        assert kinds == expected
        assert fx[-1].deadline_ms == now_ms + config.session_timeout_ms
        return out

    monkeypatch.setattr(pure_cg, "steady_heartbeat", both)
    joins = [("join", i) for i in range(3)]
    rounds = [("hb", i) for i in range(3)] + [("finish", i) for i in range(3)]
    _drive(joins + rounds * 4 + [("join", 3)] + (rounds + [("hb", 3), ("finish", 3)]) * 4, False)
    assert seen[0] >= 5 and seen[1] + seen[2] >= 1 and seen[-1] >= 1


@settings(max_examples=200, deadline=None)
@given(st.frozensets(st.tuples(st.sampled_from(["t", "a", "t2", "b-1", ""]), st.integers(0, 60))))
def test_sorted_partitions_is_sorted(pairs):
    """The two-pass sort gives sorted()'s order (the dataclass's (topic, partition) order)."""
    from kafka_rebalance.group.consumer_group_model import sorted_partitions
    from kafka_rebalance.model import TopicPartition

    tps = frozenset(TopicPartition(t, p) for t, p in pairs)
    assert sorted_partitions(tps) == sorted(tps)
