"""The simulated world: partitions, members, the coordinator, the network and the books.

`Simulation.run()` replays a Scenario over the event loop and returns the
summary of docs/formats.md section 2. The member-facing part (clock, network,
books, the leader's assignment) is `world_core.WorldCore`; this adds the classic
members and coordinator, the scenario's events, the run and its summary.
"""

from __future__ import annotations

from collections.abc import Callable

from ..group.coordinator_location import partition_for
from .coordinator import ClassicCoordinator
from .member import SimMember
from .scenario import Scenario
from .world_core import EventSink, WorldCore, mypyc_attr


@mypyc_attr(allow_interpreted_subclasses=True)  # consumer_world.ConsumerSimulation (KIP-848)
class Simulation(WorldCore):
    def __init__(self, sc: Scenario, sink: EventSink | None = None) -> None:
        super().__init__(sc, sink)
        for m in sc.members:
            self.members[m.name] = SimMember(self, m.name, m.rack)
        self.coord = ClassicCoordinator(self)

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
