"""The simulated world: partitions, members, the coordinator, the network and the books.

`Simulation.run()` replays a Scenario over the event loop and returns the
summary of docs/formats.md section 2. All accounting (unavailable partition time,
member pause time, moves, revocations, duplicates, losses, lag) lives here so
the member and coordinator code stays about protocol.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from typing import Any

from ..assign.registry import get_assignor
from ..assign.userdata import decode_sticky_user_data
from ..group.classic_messages import JoinGroupResponse
from ..group.consumer_client import RebalanceProtocol
from ..group.coordinator_location import partition_for
from ..model import DEFAULT_GENERATION, GroupSpec, MemberSubscription, TopicMetadata, TopicPartition
from .compiled import ENGINE, KERNELS
from .coordinator import ClassicCoordinator
from .host import SimCoordinator
from .member import SimMember
from .partitions import PartitionTable
from .scenario import Scenario

EventSink = Callable[[dict], None]


class Simulation:
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
        self.members: dict[str, SimMember] = {}
        for m in sc.members:
            self.members[m.name] = SimMember(self, m.name, m.rack)
        self.coord: SimCoordinator = ClassicCoordinator(self)
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

    def send(self, member: SimMember, kind: str, req: Any) -> None:
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
        name, _, inc = client.partition("#")
        m = self.members.get(name)
        if m is None or not m.alive or m.client != client:
            return
        if kind == "heartbeat":
            m.on_heartbeat_response(resp[0].error, resp[1])
        elif kind == "commit":
            m.on_commit_response(*resp)
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

    def set_available_many(self, ps, now: int, name: str) -> None:
        """`name` processes partitions ps again from now (their unavailable time stops counting)."""
        avail_owner, since = self.avail_owner, self.unavail_since
        for p in ps:
            if avail_owner[p] is None:
                self.unavailable_ms += now - since[p]
            avail_owner[p] = name

    def set_unavailable_many(self, ps, now: int) -> None:
        """Nobody processes partitions ps from now (revoked, lost, crashed or stuck owner)."""
        avail_owner, since = self.avail_owner, self.unavail_since
        for p in ps:
            if avail_owner[p] is not None:
                avail_owner[p] = None
                since[p] = now

    def add_paused(self, m: SimMember, ms: int) -> None:
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

    def revoke(self, m: SimMember, ps: Sequence[int], why: str) -> None:
        self.revocations += len(ps)
        self.set_unavailable_many(ps, self.loop.now)
        if self.wants_events:
            self.emit("revoked", m.name, m.generation, ps, {"reason": why})

    def lose(self, m: SimMember, ps: Sequence[int], why: str) -> None:
        self.set_unavailable_many(ps, self.loop.now)
        self.emit("lost", m.name, m.generation, ps, {"reason": why})

    def assigned(self, m: SimMember, added, owned) -> None:
        last_owner = self.last_owner
        name = m.name
        moved = 0
        for p in added:
            prev = last_owner[p]
            if prev is not None and prev != name:
                moved += 1
            last_owner[p] = name
        self.partitions_moved += moved
        if self.wants_events:
            self.emit("assigned", name, m.generation, list(added), {"owned": len(owned)})

    def commit(self, m: SimMember, offsets: dict[int, int], why: str, answer: bool = False) -> None:
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

    def leader_assign(self, m: SimMember, r: JoinGroupResponse) -> dict[str, list[int]]:
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
                    MemberSubscription(
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
                MemberSubscription(
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

    # -------------------------------------------------------- scenario events

    def _schedule_scenario(self) -> None:
        sc = self.sc
        for spec in sc.members:
            # the group's own members: started at start_ms (member_startup_ms is for later starts)
            self.loop.at(spec.start_ms, self._started, spec.name)
        for e in sc.events:
            if e.kind == "rolling_restart":
                self.loop.at(e.at_ms, self._rolling_restart, e.down_ms, e.every_ms)
            else:
                self.loop.at(e.at_ms, self._event, e)
        self.loop.at(0, self._lag_sample)

    def _start_member(self, name: str) -> None:
        """A member is asked to start (a join or a restart); with measured startup times (a new
        KafkaConsumer, metadata, FindCoordinator) it sends its first request that much later."""
        if self.sc.member_startup_ms:
            self.loop.after(self.draw(self.sc.member_startup_ms), self._started, name)
        else:
            self._started(name)

    def _close_member(self, name: str) -> None:
        """A member is asked to close(). It stops consuming and rejoining at once (Java's close() does);
        with measured close times (the batch in hand, the commit on close, the revocation callback) its
        LeaveGroup reaches the coordinator that much later, and a rebalance meanwhile waits for it."""
        m = self.members.get(name)
        if m is None or not m.alive:
            return
        if self.sc.member_close_ms:
            m.leave_delay_ms = self.draw(self.sc.member_close_ms)
        m.shutdown()

    def send_leave(self, member: SimMember, kind: str, req: Any) -> None:
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

    def _started(self, name: str) -> None:
        m = self.members.get(name)
        if m is None:
            m = self.members[name] = SimMember(self, name, None)
        if not m.alive:
            m.start()

    def _rolling_restart(self, down_ms: int, every_ms: int) -> None:
        names = [n for n, m in self.members.items() if m.alive]
        self.emit(
            "rolling_restart",
            detail={"members": len(names), "down_ms": down_ms, "every_ms": every_ms},
        )
        for i, name in enumerate(names):
            self.loop.at(self.loop.now + i * every_ms, self._restart, name, down_ms)

    def _restart(self, name: str, down_ms: int) -> None:
        self._close_member(name)
        self.loop.after(down_ms, self._start_member, name)

    def _event(self, e) -> None:
        k = e.kind
        if k == "join":
            self._start_member(e.member)
        elif k == "leave":
            self._close_member(e.member)
        elif k == "crash":
            if e.member in self.members:
                self.members[e.member].crash(killed=True)
        elif k == "restart":
            self._close_member(e.member)
            self.loop.after(e.down_ms, self._start_member, e.member)
        elif k == "pause":
            if e.member in self.members:
                self.members[e.member].pause(e.for_ms)
        elif k == "add_partitions":
            self._add_partitions(e.topic, e.count)
        elif k == "coordinator_failover":
            self.coord.failover(e.down_ms)

    def _add_partitions(self, topic: str, count: int) -> None:
        now = self.loop.now
        new = self.parts.add_partitions(topic, count, now)
        for _ in new:
            self.last_owner.append(None)
            self.avail_owner.append(None)
            self.unavail_since.append(now)
        self.emit(
            "add_partitions",
            partitions=[self.parts.names[p] for p in new],
            detail={"topic": topic, "count": count},
        )
        age = self.sc.group.metadata_max_age_ms
        for m in self.members.values():
            if m.alive:
                k = -(-(now - m.started_at) // age) if now > m.started_at else 1
                self.loop.at(m.started_at + max(k, 1) * age, m.on_metadata_refresh, m.incarnation)

    def _lag_sample(self) -> None:
        lag = self.parts.total_lag(self.loop.now)
        if lag > self.lag_max:
            self.lag_max = lag
        self.loop.after(self.sc.lag_sample_ms, self._lag_sample)

    # ------------------------------------------------------------------ run

    def run(self, progress: Callable[[int], None] | None = None) -> dict:
        self._schedule_scenario()
        end = self.sc.duration_ms
        self.loop.run_until(end, progress)
        for m in self.members.values():
            if m.alive:
                m._finish_batch(end, partial=True)
                if m.pause_start is not None:
                    self.add_paused(m, end - m.pause_start)
                    m.pause_start = None
        for p in range(len(self.parts)):
            if self.avail_owner[p] is None:
                self.unavailable_ms += end - self.unavail_since[p]
        return self.summary(end)

    def summary(self, end: int) -> dict:
        parts = self.parts
        leo = parts.leo_all(end)
        produced = int(leo.sum())
        lost = 0
        for p in range(len(parts)):
            c = int(parts.committed[p])
            if c > 0:
                lost += c - parts.processed[p].covered_below(c)
        final_lag = parts.total_lag(end)
        self.lag_max = max(self.lag_max, final_lag)
        return {
            "rebalances": self.rebalances,
            "generation": self.generation,
            "unavailable_partition_ms": int(self.unavailable_ms),
            "member_paused_ms": int(self.member_paused_ms),
            "partitions_moved": self.partitions_moved,
            "revocations": self.revocations,
            "records": {
                "produced": produced,
                "processed": self.processed,
                "duplicates": self.duplicates,
                "lost": lost,
            },
            "lag": {"max": int(self.lag_max), "final": final_lag},
            "timeline": list(self.timeline),
            "protocol": self.sc.protocol,
            "coordinator_partition": partition_for(self.sc.group.id),
            "rebalance_protocol": (
                "consumer"
                if self.sc.protocol == "consumer"
                else next(iter(self.members.values())).protocol.name.lower()
                if self.members
                else None
            ),
            "static_membership": self.sc.group.static_membership,
            "delivery": self.sc.group.delivery,
            "simulated_events": self.loop.processed,
        }
