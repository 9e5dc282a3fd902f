"""The simulated world as its members see it: the clock, the partitions, the network and the books.

`world.Simulation` (the scenario's driver) builds on `WorldCore`. The classic member
(`member.py`, `member_rebalance.py`) is typed against this class: mypyc compiles them together
(`setup.py`), so the member's reads of the world and calls into it are direct (native fields and
calls), and this module imports no member module, so no import cycle. All accounting (unavailable
partition time, member pause time, moves, revocations, duplicates, losses, lag) lives here so the
member and coordinator code stays about protocol. The members it is handed are typed `Any`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from typing import Any, Final

from ..assign.registry import get_assignor
from ..assign.userdata import decode_sticky_user_data
from ..group.classic_messages import JoinGroupResponse
from ..group.consumer_client import RebalanceProtocol
from ..model import DEFAULT_GENERATION, GroupSpec, MemberSubscription, TopicMetadata, TopicPartition
from .compiled import ENGINE, KERNELS
from .partitions import PartitionTable
from .scenario import Scenario

try:
    from mypy_extensions import mypyc_attr
except ImportError:  # a pure install: the decorator only instructs mypyc

    def mypyc_attr(*_attrs: str, **_flags: object):  # type: ignore[misc]
        return lambda cls: cls


EventSink = Callable[[dict], None]

# MemberSubscription is a frozen dataclass over a compiled base (`model_fields.MemberFields`): its
# generated __init__ and __post_init__ run as Python, some 14 k instructions a member in every
# rebalance the leader assigns. The same value is built by its base's allocator and slot
# descriptors (as `assign/sticky.py` builds TopicPartitions), with __post_init__'s tuple
# conversion (tests/test_sim_world_subscriptions.py checks it against the constructor).
_ms_new: Final = MemberSubscription.__new__
_ms_fields: Final = vars(MemberSubscription)
_MS_MEMBER_ID: Final = _ms_fields["member_id"].__set__
_MS_TOPICS: Final = _ms_fields["topics"].__set__
_MS_OWNED: Final = _ms_fields["owned"].__set__
_MS_GENERATION: Final = _ms_fields["generation"].__set__
_MS_RACK: Final = _ms_fields["rack"].__set__
_MS_INSTANCE_ID: Final = _ms_fields["instance_id"].__set__


def member_subscription(
    member_id: str, topics: Any, owned: Any, generation: Any, rack: Any, instance_id: Any
) -> MemberSubscription:
    """MemberSubscription(member_id, topics, owned, generation, rack, instance_id), built in C."""
    m: Any = _ms_new(MemberSubscription)
    _MS_MEMBER_ID(m, member_id)
    _MS_TOPICS(m, topics if type(topics) is tuple else tuple(topics))
    _MS_OWNED(m, owned if type(owned) is tuple else tuple(owned))
    _MS_GENERATION(m, generation)
    _MS_RACK(m, rack)
    _MS_INSTANCE_ID(m, instance_id)
    sub: MemberSubscription = m
    return sub


@mypyc_attr(
    allow_interpreted_subclasses=True
)  # world.Simulation, consumer_world.ConsumerSimulation
class WorldCore:
    """The world as its members see it: the clock, the partitions, the network, the books."""

    def __init__(self, sc: Scenario, sink: EventSink | None = None) -> None:
        self.sc = sc
        self.loop = ENGINE.EventLoop()
        self.parts = PartitionTable()
        self._sink = sink
        self.wants_events = sink is not None
        self.events_emitted = 0
        self.topic_names: tuple[str, ...] = tuple(t.name for t in sc.topics)
        for t in sc.topics:
            self.parts.add_topic(t.name, t.partitions, t.produce_rate, 0)
        # the partition table's columns, read on every poll and commit: typed here, so the compiled
        # member and coordinator read them as native fields (the table grows them in place, never
        # replaces them)
        parts = self.parts
        self.p_base: list[int] = parts.base
        self.p_base_t: list[int] = parts.base_t
        self.p_num: list[int] = parts.num
        self.p_den: list[int] = parts.den
        self.p_committed: list[int] = parts.committed
        self.p_processed: list[Any] = parts.processed
        self.p_tps: list[Any] = parts.tps
        # the members (name -> member.SimMember) and the coordinator node (coordinator.ClassicCoordinator):
        # classic ones in world.Simulation, KIP-848 ones in consumer_world
        self.members: dict[str, Any] = {}
        # connection (client id "name#incarnation") -> member name: split once per connection, not
        # on every response delivered on it
        self._client_names: dict[str, str] = {}
        self.coord: Any = None
        # books
        self.rebalances = 0
        self.generation = 0
        self.timeline: list[dict] = []
        self.pending_cause = "initial join"
        self.member_paused_ms = 0
        self.paused_by_member: dict[str, int] = {}
        self.partitions_moved = 0
        self.revocations = 0
        self.duplicates = 0
        self.processed = 0
        self.lag_max = 0
        n = len(self.parts)
        self.last_owner: list[str | None] = [None] * n
        self.avail_owner: list[str | None] = [None] * n
        self.unavail_since: list[int] = [0] * n
        self.unavailable_ms = 0
        self._assignors: dict[str, Any] = {}
        # all randomness derives from the scenario seed, drawn in event order (so a run is reproducible)
        self.rng = random.Random(sc.seed)
        self.rand = self.rng.random
        self._latency = sc.network_latency_ms
        self._jitter1 = sc.network_jitter_ms + 1 if sc.network_jitter_ms else 0
        self._lat_samples = sc.network_latency_samples_ms
        self._up: dict[
            str, int
        ] = {}  # client -> last arrival at the coordinator (one connection: FIFO)
        self._down: dict[str, int] = {}  # client -> last arrival of a response at the client

    # ---------------------------------------------------------------- output

    def emit(
        self,
        kind: str,
        member: str = "",
        generation: int | None = None,
        partitions: Sequence | None = None,
        detail: dict | None = None,
    ) -> None:
        """One event-log row. `partitions` may hold partition indices (named here, only when logging)."""
        self.events_emitted += 1
        if self._sink is None:
            return
        if partitions and type(partitions[0]) is int:
            names = self.parts.names
            partitions = [names[p] for p in partitions]
        self._sink(
            {
                "ts_ms": self.loop.now,
                "group": self.sc.group.id,
                "member": member,
                "kind": kind,
                "generation": self.generation if generation is None else generation,
                "partitions": partitions or [],
                "detail": json.dumps(detail or {}, sort_keys=True, separators=(",", ":")),
            }
        )

    # ------------------------------------------------------------- network

    def _arrival(self, chan: dict[str, int], client: str) -> int:
        """When a message sent now on `client`'s connection arrives: base latency plus seeded jitter,
        never before an earlier message on the same connection (TCP keeps order)."""
        if self._lat_samples:
            t = self.loop.now + self.draw(self._lat_samples)
        else:
            t = self.loop.now + self._latency
            if self._jitter1:
                t += int(self.rand() * self._jitter1)
        last = chan.get(client)
        if last is not None and t < last:
            t = last
        chan[client] = t
        return t

    def draw(self, samples: tuple[int, ...]) -> int:
        """One value of a measured distribution, drawn with the seed."""
        return samples[int(self.rand() * len(samples))]

    def send(self, member: Any, kind: str, req: Any) -> None:
        self.loop.at(
            self._arrival(self._up, member.client), self.coord.receive, kind, req, member.name
        )

    def reply(self, client: str, kind: str, resp: Any) -> None:
        self.loop.at(self._arrival(self._down, client), self._deliver, client, kind, resp)

    def reply_many(self, replies: list) -> None:
        """Responses sent at once: one network event per distinct arrival time."""
        by_t: dict[int, list] = {}
        down = self._down
        for r in replies:
            t = self._arrival(down, r[0])
            lst = by_t.get(t)
            if lst is None:
                by_t[t] = [r]
            else:
                lst.append(r)
        for t in sorted(by_t):
            self.loop.at(t, self._deliver_many, by_t[t])

    def _deliver_many(self, replies: list) -> None:
        for r in replies:
            self._deliver(*r)

    def _deliver(self, client: str, kind: str, resp: Any) -> None:
        name = self._client_names.get(client)
        if name is None:
            name = self._client_names[client] = client.rpartition("#")[0]
        m = self.members.get(name)
        if m is None or not m.alive or m.client != client:
            return
        if kind == "heartbeat":
            m.on_heartbeat_response(resp[0].error, resp[1])
        elif kind == "commit":
            m.on_commit_response(resp[0], resp[1], resp[2])  # (error, sent, answered)
        else:
            m.on_response(resp)

    def coordinator_retry_time(self, now: int, backoff: int) -> int:
        up = self.coord.up_at
        if up <= now:
            return now + backoff
        steps = -(-(up - now) // backoff)
        return now + steps * backoff

    def group_needs_heartbeats(self) -> bool:
        return self.coord.needs_real_heartbeats()

    # ----------------------------------------------------------- accounting

    def partition_counts(self) -> dict[str, int]:
        return {t: len(ps) for t, ps in self.parts.topic_partitions.items()}

    def set_available_many(self, ps: Sequence[Any], now: int, name: str) -> None:
        """`name` processes partitions ps again from now (their unavailable time stops counting)."""
        avail_owner, since = self.avail_owner, self.unavail_since
        gone = 0
        for key in ps:
            p: int = key  # a partition index: the build indexes the columns natively
            if avail_owner[p] is None:
                gone += now - since[p]
            avail_owner[p] = name
        if gone:
            self.unavailable_ms += gone

    def set_unavailable_many(self, ps: Sequence[Any], now: int) -> None:
        """Nobody processes partitions ps from now (revoked, lost, crashed or stuck owner)."""
        avail_owner, since = self.avail_owner, self.unavail_since
        for key in ps:
            p: int = key
            if avail_owner[p] is not None:
                avail_owner[p] = None
                since[p] = now

    def add_paused(self, m: Any, ms: int) -> None:
        if ms > 0:
            self.member_paused_ms += ms
            self.paused_by_member[m.name] = self.paused_by_member.get(m.name, 0) + ms
            if self.wants_events:
                self.emit(
                    "paused",
                    m.name,
                    m.generation,
                    detail={"ms": ms, "since_ms": self.loop.now - ms},
                )

    def revoke(self, m: Any, ps: Sequence[int], why: str) -> None:
        self.revocations += len(ps)
        self.set_unavailable_many(ps, self.loop.now)
        if self.wants_events:
            self.emit("revoked", m.name, m.generation, ps, {"reason": why})

    def lose(self, m: Any, ps: Sequence[int], why: str) -> None:
        self.set_unavailable_many(ps, self.loop.now)
        self.emit("lost", m.name, m.generation, ps, {"reason": why})

    def assigned(self, m: Any, added: Sequence[Any], owned: Sequence[Any]) -> None:
        last_owner = self.last_owner
        name = m.name
        moved = 0
        for key in added:
            p: int = key
            prev = last_owner[p]
            if prev is not None and prev != name:
                moved += 1
            last_owner[p] = name
        self.partitions_moved += moved
        if self.wants_events:
            self.emit("assigned", name, m.generation, list(added), {"owned": len(owned)})

    def commit(self, m: Any, offsets: dict[int, int], why: str, answer: bool = False) -> None:
        """An OffsetCommit on the member's connection; `answer`: the member waits for the response."""
        self.loop.at(
            self._arrival(self._up, m.client),
            self.coord.commit,
            m.name,
            m.client,
            m.member_id,
            m.instance_id,
            m.generation,
            offsets,
            why,
            answer,
            self.loop.now,
            self.events_emitted,
        )

    def on_generation(self, generation: int) -> None:
        self.generation = generation
        self.rebalances += 1
        self.timeline.append(
            {"ts_ms": self.loop.now, "generation": generation, "cause": self.pending_cause}
        )

    # -------------------------------------------------------------- leader

    def leader_assign(self, m: Any, r: JoinGroupResponse) -> dict[str, list[int]]:
        """The leader runs the selected client-side assignor over the members' subscriptions."""
        name = r.protocol_name or self.sc.group.assignors[0]
        assignor = self._assignors.get(name)
        if assignor is None:
            assignor = self._assignors[name] = get_assignor(name)
        counts = m.known_partitions
        topics = {t: TopicMetadata(t, n) for t, n in counts.items()}
        coop = m.protocol is RebalanceProtocol.COOPERATIVE
        index = self.parts.index
        subs = []
        owned_by: dict[
            int, str
        ] = {}  # partition index -> claiming member (cooperative: KIP-429 withholding)
        sticky = name == "sticky"
        for jm in r.members:
            s = jm.metadata
            if sticky:
                # StickyAssignor.memberData: owned partitions and generation from the user data only
                # (an eager member has revoked everything before it joins; none: a new consumer)
                ud = decode_sticky_user_data(s.user_data)
                subs.append(
                    member_subscription(
                        jm.member_id,
                        s.topics,
                        tuple([TopicPartition(t, q) for t, q in ud.partitions]),
                        DEFAULT_GENERATION if ud.generation is None else ud.generation,
                        s.rack,
                        jm.group_instance_id,
                    )
                )
                continue
            subs.append(
                member_subscription(
                    jm.member_id, s.topics, s.owned, s.generation, s.rack, jm.group_instance_id
                )
            )
            if coop and s.owned:
                idx = s.owned_idx
                if idx is None:
                    idx = [index[tp] for tp in s.owned if tp in index]
                mid = jm.member_id
                for p in idx:
                    owned_by[p] = mid
        result = assignor.assign(GroupSpec(topics, tuple(subs)))
        m.assigned_view = dict(counts)
        # as partition indices; cooperative_adjust on them: a partition another member still claims
        # is withheld (a compiled loop: 10 x N partitions mapped in every rebalance)
        return KERNELS.assignment_indices(result, self.parts.topic_partitions, owned_by, coop)

    def send_leave(self, member: Any, kind: str, req: Any) -> None:
        """A closing member's LeaveGroup (or leaving heartbeat), after its close time."""
        delay, member.leave_delay_ms = member.leave_delay_ms, 0
        if not delay:
            self.send(member, kind, req)
            return
        client, name = member.client, member.name
        self.loop.after(
            delay,
            lambda: self.loop.at(
                self._arrival(self._up, client), self.coord.receive, kind, req, name
            ),
        )
