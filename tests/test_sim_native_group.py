"""sim/native_group*.pyx (the classic group's native twin) against group/classic_group.py's
`ClassicGroup`, the reference: random request and timer sequences, dynamic and static members, fed to
both; every answer, every effect and the group's visible state equal step by step, and every state and
effect kind reached (a coverage check, so the sequences cannot pass by staying trivial)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiled_legs import no_compiled_leg
from kafka_rebalance import native
from kafka_rebalance.group.classic_group import ClassicGroup, ClassicGroupConfig
from kafka_rebalance.group.classic_messages import (
    CancelTimer,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    ScheduleTimer,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka_rebalance.group.errors import Errors

CLIENTS = ("a#1", "a#2", "b#1", "c#1", "d#1")
INSTANCES = (None, None, "i0", "i1", "i2")
# protocol lists in one global order (range before roundrobin): every member votes alike
PROTOCOLS = (
    (("range", b"r1"),),
    (("range", b"r2"),),
    (("range", b"r1"), ("roundrobin", b"x")),
    (("roundrobin", b"x"),),
)
FOREIGN_ID = "z-9-00000001"  # a member id this group never made
MEMBER_ID = re.compile(r"\S+-\d+-[0-9a-f]{8}")


def native_group() -> Any:
    module = native.cython_build("kafka_rebalance.sim", "native_group")
    if module is None:
        no_compiled_leg("no fresh Cython build of sim/native_group.pyx: only the reference ran")
    return module


class Pair:
    """The reference and the twin side by side: each call made on both, answers compared."""

    def __init__(self, config: ClassicGroupConfig, salt: str = "0-", copying: bool = False) -> None:
        self.copying = copying  # each call made on a copy of the twin (`NativeClassicGroup.copy`)
        self.ref = ClassicGroup("g", config, member_id_salt=salt, now_ms=0)
        self.twin = native_group().NativeClassicGroup("g", config, member_id_salt=salt, now_ms=0)
        self.timers: dict[tuple, tuple[int, Any]] = {}
        self.ids: list[str] = []  # member ids the reference handed out
        self.seen: set[Any] = set()

    def call(self, method: str, *args: Any) -> list:
        want = getattr(self.ref, method)(*args)
        if self.copying:
            self.twin = self.twin.copy()
        before = self.observed()
        try:
            got = getattr(self.twin, method)(*args)
        except OverflowError:  # refused: only where the reference's ints leave int64
            assert _leaves_int64((args, want)), (method, args, want)
            # and as if it had not been called: no half-made change (note 14)
            assert self.observed() == before, (method, args)
            self.seen.add(("refused", "leaves int64"))
            raise Refused from None
        assert [type(e).__name__ for e in got] == [type(e).__name__ for e in want], (method, args)
        assert got == want, (method, args)
        for e in want:
            self.seen.add(type(e).__name__)
            if hasattr(e, "error"):
                self.seen.add((type(e).__name__, e.error))
            self.seen.update(_paths(method, args, e))
            if type(e) is ScheduleTimer:
                self.timers[e.key] = (e.deadline_ms, e.payload)
                self.seen.add(("timer", e.key[0]))
            elif type(e) is CancelTimer:
                self.timers.pop(e.key, None)
            elif type(e) is JoinGroupResponse and e.member_id and e.member_id not in self.ids:
                self.ids.append(e.member_id)
            elif type(e).__name__ == "StateChanged":
                self.seen.add(("state", str(e.new)))
                self.seen.add(("reason", MEMBER_ID.sub("{}", e.reason)))
            elif type(e).__name__ == "MemberRemoved":
                self.seen.add(("removed", e.reason))
        self.check()
        return want

    def observed(self) -> tuple:
        """What the twin shows of its state: its properties, members, snapshot, its counts of
        members awaiting a join, pending and pending a sync, and its offset commit answers."""
        twin, core = self.twin, self.twin.core
        commits = [
            twin.validate_offset_commit(mid, inst, gen)
            for mid in ["", FOREIGN_ID, *self.ids]
            for inst in (None, "i0")
            for gen in (-1, twin.generation_id, twin.generation_id - 1)
        ]
        return (
            twin.state,
            twin.previous_state,
            twin.generation_id,
            twin.leader_id,
            twin.protocol_name,
            twin.protocol_type,
            twin.state_timestamp_ms,
            twin.member_ids(),
            twin.snapshot(),
            (core.num_awaiting_join, core.num_members, core.num_pending, core.num_pending_sync),
            commits,
        )

    def check(self) -> None:
        ref, twin = self.ref, self.twin
        assert twin.state is ref.state
        assert twin.previous_state is ref.previous_state
        assert twin.generation_id == ref.generation_id
        assert twin.leader_id == ref.leader_id
        assert twin.protocol_name == ref.protocol_name
        assert twin.protocol_type == ref.protocol_type
        assert twin.state_timestamp_ms == ref.state_timestamp_ms
        assert twin.member_ids() == list(ref.members)
        assert twin.snapshot() == ref.snapshot()
        for mid in ["", FOREIGN_ID, *self.ids[-4:]]:
            for inst in (None, "i0"):
                for gen in (-1, ref.generation_id, ref.generation_id - 1):
                    want = ref.validate_offset_commit(mid, inst, gen)
                    assert twin.validate_offset_commit(mid, inst, gen) == want
                    self.seen.add(("commit", want))


class Refused(Exception):
    """The twin refused a call (OverflowError): the run ends there."""


def _leaves_int64(value: Any) -> bool:
    """Is any int in `value` (nested tuples, lists, requests, effects) outside int64?"""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return not -(2**63) <= value < 2**63
    if isinstance(value, (tuple, list)):
        return any(_leaves_int64(v) for v in value)
    return False


def _paths(method: str, args: tuple, e: Any) -> list[tuple[str, ...]]:
    """The paths an effect shows, beyond its kind and error: a parked SyncGroup answered by another
    call (it is not the caller's: the caller's own SyncGroup is answered by its `sync`), a replaced
    static member's parked SyncGroup fenced, a static leader's rejoin without a rebalance."""
    name = type(e).__name__
    if name == "SyncGroupResponse" and (method != "sync" or e.client != args[0].client):
        return [("parked sync answered", method, e.error.name)]
    if name == "JoinGroupResponse" and e.skip_assignment:
        return [("static leader rejoin without rebalance",)]
    return []


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


# the members' protocols in `_run_members`: one order, so every vote is alike
OWN_PROTOCOLS = ((("range", b"r1"), ("roundrobin", b"x")), (("range", b"r2"), ("roundrobin", b"x")))


def _run_members(data: st.DataObject, seen: set, huge: bool = False, copying: bool = False) -> None:
    """A group of 2-5 members, each a client that keeps its member id and answers as a consumer
    would: followers sync at the current generation (so their SyncGroups are parked while the
    leader has not sent the assignment), static members restart (a new client, "" and its instance
    id: the replacement fences a parked SyncGroup, a leader's rejoin in Stable skips the
    assignment). `_run`'s requests come from anyone and rarely reach those paths (review 8 F2).
    `huge`: times start near 2**63 and timeouts reach it, so deadlines leave int64, where the twin
    must refuse (OverflowError) and nowhere else (review 8 F3: it wrapped to negative times)."""
    config = ClassicGroupConfig(
        initial_rebalance_delay_ms=data.draw(st.sampled_from([0, 3000])),
        require_known_member_id=data.draw(st.booleans()),
    )
    pair = Pair(config, copying=copying)
    n = data.draw(st.integers(2, 5))
    names = [f"m{i}" for i in range(n)]
    incarnations = [1] * n
    instances = [data.draw(st.sampled_from([None, f"i{i}", f"i{i}"])) for i in range(n)]
    ids = [""] * n
    parked: set[int] = set()  # the members whose SyncGroup waits for the leader's
    now = data.draw(st.sampled_from([0, 2**63 - 100_000, 2**63 - 31_000])) if huge else 0
    timeouts = [10_000, 30_000, 1_800_000, 2**62, 2**63 - 1]

    def client(i: int) -> str:
        return f"{names[i]}#{incarnations[i]}"

    def call(method: str, *args: Any) -> None:
        current = [client(i) for i in range(n)]
        if method == "sync":
            parked.add(current.index(args[0].client))
        for e in pair.call(method, *args):
            if type(e) is SyncGroupResponse and e.client in current:
                parked.discard(current.index(e.client))
            # the id a current client was given (an older incarnation's answers are not its)
            if (
                type(e) is JoinGroupResponse
                and e.member_id
                and e.error in (Errors.NONE, Errors.MEMBER_ID_REQUIRED)
                and e.client in current
            ):
                ids[current.index(e.client)] = e.member_id

    try:
        for _ in range(data.draw(st.integers(5, 80))):
            op = data.draw(
                st.sampled_from(
                    ["join"] * 4 + ["sync"] * 5 + ["heartbeat", "leave"] + ["restart", "timer"] * 2
                )
            )
            i = data.draw(st.integers(0, n - 1))
            if op == "join":
                protocols = data.draw(st.sampled_from(OWN_PROTOCOLS[:1] * 2 + OWN_PROTOCOLS[1:]))
                session, rebalance = 10_000, 30_000
                if (
                    huge
                ):  # drawn only then: the derandomized draws of the other runs stay as they were
                    session = data.draw(st.sampled_from(timeouts))
                    rebalance = data.draw(st.sampled_from(timeouts))
                req = JoinGroupRequest(
                    client(i), ids[i], protocols, session, rebalance, instances[i]
                )
                call("join", req, now)
            elif op == "sync":
                if ids[i] == pair.ref.leader_id and data.draw(st.booleans()):
                    i = data.draw(st.integers(0, n - 1))  # the followers first, more often
                gen = pair.ref.generation_id - data.draw(st.sampled_from([0, 0, 0, 1]))
                assignments = None
                if data.draw(st.booleans()):
                    assignments = {m: (m, gen) for m in pair.ref.members}
                req = SyncGroupRequest(
                    client(i), ids[i], gen, instances[i], "consumer", None, assignments
                )
                call("sync", req, now)
            elif op == "heartbeat":
                req = HeartbeatRequest(client(i), ids[i], pair.ref.generation_id, instances[i])
                call("heartbeat", req, now)
            elif op == "leave":
                by_instance = instances[i] is not None and data.draw(st.booleans())
                leaving = (("" if by_instance else ids[i], instances[i]),)
                call("leave", LeaveGroupRequest(client(i), leaving), now)
            elif (
                op == "restart"
            ):  # a new incarnation: "" (a static one rejoins with its instance id)
                if parked and data.draw(st.booleans()):  # one waiting for its assignment, often
                    i = data.draw(st.sampled_from(sorted(parked)))
                parked.discard(i)
                incarnations[i] += 1
                ids[i] = ""
                protocols = data.draw(st.sampled_from(OWN_PROTOCOLS))
                call(
                    "join",
                    JoinGroupRequest(client(i), "", protocols, 10_000, 30_000, instances[i]),
                    now,
                )
            elif pair.timers:
                due = sorted((d, repr(k), k) for k, (d, _) in pair.timers.items())
                d, _, key = (
                    due[0] if data.draw(st.integers(0, 3)) else data.draw(st.sampled_from(due))
                )
                _, payload = pair.timers.pop(key)
                now = max(now, d)
                call("on_timer", key, payload, now)
            now += data.draw(st.sampled_from([0, 0, 1, 100, 2_000]))
    except Refused:  # the twin refused where the reference's ints leave int64
        pass
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


def test_a_protocol_vote_with_different_votes_is_refused() -> None:
    """The reference's vote across members listing protocols in different orders (Java HashMap
    order) is not ported: the twin raises instead of guessing."""
    config = ClassicGroupConfig(initial_rebalance_delay_ms=0, require_known_member_id=False)
    pair = Pair(config)
    a = (("range", b""), ("roundrobin", b""))
    pair.call("join", JoinGroupRequest("a#1", "", a, 10_000, 20_000), 0)
    pair.call("join", JoinGroupRequest("b#1", "", a[::-1], 10_000, 20_000), 0)
    pair.ref.on_timer(("join",), ("initial", 0, 0), 0)
    with pytest.raises(NotImplementedError):
        pair.twin.on_timer(("join",), ("initial", 0, 0), 0)


def test_a_group_max_size_is_refused() -> None:
    with pytest.raises(NotImplementedError):
        native_group().NativeClassicGroup("g", ClassicGroupConfig(max_size=3))


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


def test_deadlines_past_int64_are_refused_never_wrapped() -> None:
    """Times near 2**63 and timeouts up to it: every answer the reference's, or a refusal
    (OverflowError) where one of its ints leaves int64 (review 8 F3: `now + timeout` wrapped to a
    negative deadline, a timer fired at once)."""
    native_group()
    seen: set = set()

    @settings(
        max_examples=150,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    @given(st.data())
    def run(data: st.DataObject) -> None:
        _run_members(data, seen, huge=True)

    run()
    assert ("refused", "leaves int64") in seen
    assert ("timer", "join") in seen and ("SyncGroupResponse", Errors.NONE) in seen


def test_the_reviews_wrapping_deadlines_are_refused() -> None:
    config = ClassicGroupConfig(initial_rebalance_delay_ms=0, require_known_member_id=False)
    pair = Pair(config)
    req = JoinGroupRequest("a#1", "", (("range", b""),), 10_000, 2**63 - 1)
    pair.call("join", req, 0)
    with pytest.raises(Refused):  # the reference's sync deadline: 2**63
        pair.call("on_timer", ("join",), ("initial", 0, 2**63 - 1), 1)
    pair = Pair(config)
    with pytest.raises(Refused):  # the reference's heartbeat deadline: 2**63 + 25_000
        pair.call("join", req._replace(rebalance_timeout_ms=30_000), 2**63 - 5_000)
    pair = Pair(config)
    pair.call("join", req._replace(rebalance_timeout_ms=30_000), 2**63 - 300_001)  # fits: exact


NOT_INTS = [5.5, 1.9, None, "5"]


def _not_ints() -> list:
    np = pytest.importorskip("numpy")
    return [*NOT_INTS, np.int64(5)]


def test_a_time_timeout_or_generation_that_is_not_an_int_is_refused() -> None:
    """The twin converted a float or a numpy int into int64 (1.9 -> 1) and answered where
    `ClassicGroup` raises TypeError (review 8 F4): now refused with the same TypeError, before
    any change."""
    config = ClassicGroupConfig(initial_rebalance_delay_ms=0, require_known_member_id=False)
    for value in _not_ints():
        pair = Pair(config)
        join = JoinGroupRequest("a#1", "", (("range", b""),), 10_000, 30_000)
        pair.call("join", join, 0)
        mid = list(pair.ref.members)[0]
        pair.call("on_timer", ("join",), ("initial", 0, 30_000), 0)
        snap = pair.twin.snapshot()
        gen = pair.ref.generation_id
        rejoin = join._replace(member_id=mid)
        same_as_reference = [  # ClassicGroup refuses these too (tests/test_classic_group_legs.py)
            ("join", (rejoin, value)),
            ("join", (rejoin._replace(session_timeout_ms=value), 1)),
            ("join", (rejoin._replace(rebalance_timeout_ms=value), 1)),
            ("sync", (SyncGroupRequest("a#1", mid, gen), value)),
            ("heartbeat", (HeartbeatRequest("a#1", mid, gen), value)),
            ("leave", (LeaveGroupRequest("a#1", ((mid, None),)), value)),
            ("on_timer", (("heartbeat", mid), None, value)),
            ("handle", (HeartbeatRequest("a#1", mid, gen), value)),
            ("mark_dead", (value,)),
        ]
        for method, args in same_as_reference:
            with pytest.raises(TypeError):
                getattr(pair.ref, method)(*args)
            with pytest.raises(TypeError) as raised:
                getattr(pair.twin, method)(*args)
            assert "int object expected; got" in str(raised.value), (method, value)
        # a generation or a timer's payload: the reference compares it (1.5 is no generation, 1.0
        # is 1); the twin refuses it rather than truncate it
        for method, args in [
            ("sync", (SyncGroupRequest("a#1", mid, value), 1)),
            ("heartbeat", (HeartbeatRequest("a#1", mid, value), 1)),
            ("validate_offset_commit", (mid, None, value)),
            ("on_timer", (("sync",), ("sync", value), 1)),
            ("on_timer", (("join",), ("initial", value, 0), 1)),
        ]:
            with pytest.raises(TypeError):
                getattr(pair.twin, method)(*args)
        assert pair.twin.snapshot() == snap == pair.ref.snapshot()
        with pytest.raises(TypeError):
            native_group().NativeClassicGroup("g", config, now_ms=value)
