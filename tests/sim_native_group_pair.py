"""The classic group's native twin (sim/native_group*.pyx) beside `ClassicGroup`, the reference, for
the tests that drive both: `Pair` makes each call on both and compares every answer, effect and the
visible state; `run_members` plays a group of clients that keep their member ids (the paths random
requests rarely reach, and deadlines near 2**63 where the twin must refuse)."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import strategies as st

from compiled_legs import require_build
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

FOREIGN_ID = "z-9-00000001"  # a member id this group never made
MEMBER_ID = re.compile(r"\S+-\d+-[0-9a-f]{8}")


def native_group() -> Any:
    return require_build("native_group")


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


# the members' protocols in `run_members`: one order, so every vote is alike
OWN_PROTOCOLS = ((("range", b"r1"), ("roundrobin", b"x")), (("range", b"r2"), ("roundrobin", b"x")))


def run_members(data: st.DataObject, seen: set, huge: bool = False, copying: bool = False) -> None:
    """A group of 2-5 members, each a client that keeps its member id and answers as a consumer
    would: followers sync at the current generation (so their SyncGroups are parked while the
    leader has not sent the assignment), static members restart (a new client, "" and its instance
    id: the replacement fences a parked SyncGroup, a leader's rejoin in Stable skips the
    assignment). test_sim_native_group's `_run` sends requests from anyone, which rarely reach
    those paths (review 8 F2).
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
