"""A simulated Kafka cluster behind confluent-kafka's `Consumer` interface, on the real group machinery.

`SimCluster` holds topic logs, one classic group coordinator per group
(`group.classic_group.ClassicGroup`: JoinGroup/SyncGroup/Heartbeat/LeaveGroup,
generations, timers) and a `__consumer_offsets` log. An OffsetCommit is
validated and turned into records by `group.offsets.commit_offsets` (member,
generation, `offset.metadata.max.bytes`), the records are encoded with
Kafka's schemas (`group.records.encode_record`) and appended as bytes, and
every read (OffsetFetch, `committed_offsets`) comes from replaying the
*decoded* bytes: commit metadata survives exactly as far as Kafka's format
carries it (test_parallel_live.py checks the same against a real broker).

`SimConsumer` is the subset of `confluent_kafka.Consumer` the parallel
consumer uses: subscribe with on_assign/on_revoke/on_lost, consume/poll,
commit(offsets=..., asynchronous=False), committed, pause/resume,
assignment, close. Like librdkafka it serves the group protocol and the
rebalance callbacks from inside `consume()`; eager assignors revoke everything
before rejoining, `cooperative-sticky` revokes only what moves (and rejoins).
The leader runs the assignor from `assign.registry` on the members'
ConsumerProtocol subscriptions, as the Java and librdkafka clients do.

Time is virtual: every `consume()` advances the cluster clock by `tick_ms`
(and `SimCluster.advance(ms)` moves it explicitly); coordinator timers
(session expiry, join/sync deadlines) fire on that clock, so a run does not
depend on wall-clock speed. `SimConsumer.crash()` drops a consumer without
commit, LeaveGroup or callbacks; its member stays in the group until its
session times out, as after a process crash.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from ..assign.protocol import Assignment as WireAssignment
from ..assign.protocol import Subscription as WireSubscription
from ..assign.protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from ..assign.registry import get_assignor
from ..group.classic_group import ClassicGroup, ClassicGroupConfig
from ..group.classic_messages import (
    CancelTimer,
    GroupMetadataChanged,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    MemberRemoved,
    ScheduleTimer,
    StateChanged,
    SyncGroupRequest,
    SyncGroupResponse,
    heartbeat_key,
)
from ..group.errors import Errors
from ..group.offset_messages import (
    GroupType,
    GroupView,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetsConfig,
)
from ..group.offsets import OffsetStore, commit_offsets, expire_offsets, fetch_offsets
from ..group.records import (
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitRecord,
    decode_record,
    encode_record,
    group_metadata_record,
)
from ..model import GroupSpec, MemberSubscription, TopicMetadata
from ..model import TopicPartition as MTP

OFFSET_INVALID = -1001  # librdkafka's RD_KAFKA_OFFSET_INVALID
COOPERATIVE = frozenset({"cooperative-sticky"})


@dataclass(frozen=True, slots=True)
class SimRecord:
    offset: int
    key: bytes | None
    value: bytes | None


class SimMessage:
    """confluent_kafka.Message's accessors for one fetched record."""

    __slots__ = ("_t", "_p", "_r")

    def __init__(self, topic: str, partition: int, record: SimRecord) -> None:
        self._t, self._p, self._r = topic, partition, record

    def topic(self) -> str:
        return self._t

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._r.offset

    def key(self) -> bytes | None:
        return self._r.key

    def value(self) -> bytes | None:
        return self._r.value

    def error(self) -> None:
        return None

    def headers(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"SimMessage({self._t}-{self._p}@{self._r.offset})"


@dataclass(frozen=True, slots=True)
class CommitEntry:
    """One OffsetCommit record as decoded back from `__consumer_offsets` bytes."""

    group: str
    topic: str
    partition: int
    offset: int
    metadata: str
    commit_timestamp: int


class _Coordinator:
    """A group's coordinator: the ClassicGroup, its timers, and where responses go."""

    def __init__(self, group_id: str, config: ClassicGroupConfig, now_ms: int) -> None:
        self.group = ClassicGroup(group_id, config, now_ms=now_ms)
        self.timers: dict[tuple, tuple[int, Any]] = {}


class SimCluster:
    """Topic logs, group coordinators and the `__consumer_offsets` log, on one virtual clock."""

    def __init__(
        self,
        topics: dict[str, int],
        *,
        group_config: ClassicGroupConfig | None = None,
        offsets_config: OffsetsConfig | None = None,
        tick_ms: int = 100,
    ) -> None:
        self.topics = dict(topics)
        self.logs: dict[tuple[str, int], list[SimRecord]] = {
            (t, p): [] for t, n in topics.items() for p in range(n)
        }
        self.group_config = group_config or ClassicGroupConfig()
        self.offsets_config = offsets_config or OffsetsConfig()
        self.tick_ms = tick_ms
        self.now_ms = 0
        self.lock = threading.RLock()
        self.coordinators: dict[str, _Coordinator] = {}
        self.offsets_log: list[
            tuple[bytes, bytes | None]
        ] = []  # __consumer_offsets as Kafka stores it
        self.store = OffsetStore()  # replayed from the decoded bytes only
        self.inboxes: dict[str, list[Any]] = {}  # client id -> responses not yet read
        self.live_clients: set[str] = set()  # crashed/closed clients get no responses
        self.events: list[tuple[int, str, str]] = []  # (time, group, what happened)
        self.fetch_log: list[
            tuple[int, str, str, int, int, str]
        ] = []  # OffsetFetch answers, for tests
        self.commit_requests: list[tuple[int, str, str, int, str, int, int, Errors]] = []
        # (time, group, member id, generation, topic, partition, offset, error) of every OffsetCommit
        self._client_seq = 0
        # cleanupGroupMetadata is scheduled when the coordinator loads (time 0 here), then re-armed
        self._next_cleanup_ms = self.offsets_config.offsets_retention_check_interval_ms

    # ------------------------------------------------------------------ data
    def produce(
        self, topic: str, partition: int, key: bytes | None, value: bytes | None = None
    ) -> int:
        with self.lock:
            log = self.logs[(topic, partition)]
            offset = len(log)
            log.append(SimRecord(offset, key, value))
            return offset

    def end_offset(self, topic: str, partition: int) -> int:
        with self.lock:
            return len(self.logs[(topic, partition)])

    def new_client_id(self) -> str:
        with self.lock:
            self._client_seq += 1
            return f"consumer-{self._client_seq}"

    # ------------------------------------------------------------------ clock
    def advance(self, ms: int) -> None:
        """Move the virtual clock by `ms`, firing due coordinator timers in deadline order."""
        with self.lock:
            target = self.now_ms + ms
            while True:
                due = [
                    (d, gid, key)
                    for gid, c in self.coordinators.items()
                    for key, (d, _) in c.timers.items()
                    if d <= target
                ]
                cleanup = self._next_cleanup_ms
                if cleanup <= target and (not due or cleanup < min(d for d, _, _ in due)):
                    # the coordinator's periodic offsets-retention timer (group timers first on a tie)
                    self.now_ms = max(self.now_ms, cleanup)
                    self.cleanup_group_metadata()
                    self._next_cleanup_ms = (
                        self.now_ms + self.offsets_config.offsets_retention_check_interval_ms
                    )
                    continue
                if not due:
                    break
                deadline, gid, key = min(due, key=lambda x: (x[0], x[1], repr(x[2])))
                coord = self.coordinators[gid]
                _, payload = coord.timers.pop(key)
                self.now_ms = max(self.now_ms, deadline)
                self._apply(gid, coord.group.handle((key, payload), self.now_ms))
            self.now_ms = target

    # ------------------------------------------------------------------ group protocol
    def _coordinator(self, group_id: str) -> _Coordinator:
        c = self.coordinators.get(group_id)
        if c is None:
            c = self.coordinators[group_id] = _Coordinator(group_id, self.group_config, self.now_ms)
        return c

    def send(self, group_id: str, request: Any) -> None:
        """Deliver a group request; its response (maybe later, for a parked join/sync) lands in an inbox."""
        with self.lock:
            self._apply(group_id, self._coordinator(group_id).group.handle(request, self.now_ms))

    def take_responses(self, client: str) -> list[Any]:
        with self.lock:
            return self.inboxes.pop(client, [])

    def _apply(self, group_id: str, effects: list) -> None:
        coord = self.coordinators[group_id]
        for fx in effects:
            if isinstance(fx, ScheduleTimer):
                coord.timers[fx.key] = (fx.deadline_ms, fx.payload)
            elif isinstance(fx, CancelTimer):
                coord.timers.pop(fx.key, None)
            elif hasattr(fx, "client"):  # a response: to its client, unless that one is gone
                if fx.client in self.live_clients:
                    self.inboxes.setdefault(fx.client, []).append(fx)
            elif isinstance(fx, GroupMetadataChanged):
                self._append(group_metadata_record(group_id, _group_value(fx.snapshot)))
            elif isinstance(fx, MemberRemoved):
                self.events.append(
                    (self.now_ms, group_id, f"member {fx.member_id} removed: {fx.reason}")
                )
            elif isinstance(fx, StateChanged):
                self.events.append(
                    (
                        self.now_ms,
                        group_id,
                        f"{fx.old.value} -> {fx.new.value} (generation {fx.generation_id}): {fx.reason}",
                    )
                )

    def group_view(self, group_id: str) -> GroupView | None:
        c = self.coordinators.get(group_id)
        if c is None:
            return None
        g = c.group
        return GroupView(
            group_id,
            GroupType.CLASSIC,
            g.state.value,
            g.generation_id,
            {mid: g.generation_id for mid in g.members},
            dict(g.static_members),
            protocol_type=g.protocol_type,
            state_timestamp_ms=g.state_timestamp_ms,
            subscribed_topics=g.subscribed_topics,
        )

    def cleanup_group_metadata(self) -> int:
        """GroupCoordinatorShard.cleanupGroupMetadata: expire offsets past `offsets.retention.minutes`
        in every group, and delete an empty group once all its offsets are gone; returns the number
        of tombstones appended. Runs every `offsets.retention.check.interval.ms` from `advance`."""
        with self.lock:
            n = 0
            for gid in sorted(set(self.coordinators) | set(self.store.groups)):
                live = self.group_view(gid) if gid in self.coordinators else None
                view = live if live is not None else self.store.groups[gid].view()
                result = expire_offsets(self.store, view, self.now_ms, self.offsets_config)
                for record in result.records:
                    self._append(record)
                n += len(result.records)
                if result.delete_group:  # the group tombstone's replay removes the group
                    c = self.coordinators.pop(gid, None)
                    if c is not None:
                        self.events.append(
                            (self.now_ms, gid, "group deleted: every offset expired")
                        )
            return n

    # ------------------------------------------------------------------ offsets
    def _append(self, record: Any) -> None:
        key, value = encode_record(record)
        self.offsets_log.append((key, value))
        self.store.replay(decode_record(key, value))  # only what the bytes carry

    def commit(
        self,
        group_id: str,
        member_id: str,
        generation: int,
        offsets: Sequence[tuple[str, int, int, str | None]],
    ) -> list[tuple[str, int, Errors]]:
        """OffsetCommit; returns the per-partition errors (empty when all were stored)."""
        with self.lock:
            req = OffsetCommitRequest(
                group_id,
                tuple(OffsetCommitPartition(t, p, o, metadata=m) for t, p, o, m in offsets),
                member_id,
                generation,
            )
            result = commit_offsets(
                self.group_view(group_id),
                req,
                self.now_ms,
                self.offsets_config,
                lambda tp: (tp.topic, tp.partition) in self.logs,
            )
            for (t, p, o, _), (_, err) in zip(offsets, result.response.partitions):
                self.commit_requests.append(
                    (self.now_ms, group_id, member_id, generation, t, p, o, err)
                )
            for record in result.records:
                self._append(record)
            if result.reschedule_heartbeat and group_id in self.coordinators:
                coord = self.coordinators[group_id]
                m = coord.group.members.get(member_id)
                if m is not None:  # a commit keeps the member's session alive, as in Kafka
                    coord.timers[heartbeat_key(member_id)] = (
                        self.now_ms + m.session_timeout_ms,
                        None,
                    )
            return [
                (tp.topic, tp.partition, e)
                for tp, e in result.response.partitions
                if e is not Errors.NONE
            ]

    def fetch_committed(
        self, group_id: str, tps: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], tuple[int, str]]:
        """OffsetFetch: (offset, metadata) per partition, offset -1 when nothing is committed."""
        with self.lock:
            resp = fetch_offsets(
                self.store,
                self.group_view(group_id),
                OffsetFetchRequest(group_id, tuple(MTP(t, p) for t, p in tps)),
            )
            for f in resp.partitions:
                self.fetch_log.append(
                    (self.now_ms, group_id, f.tp.topic, f.tp.partition, f.offset, f.metadata)
                )
            return {(f.tp.topic, f.tp.partition): (f.offset, f.metadata) for f in resp.partitions}

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], tuple[int, str]]:
        """Everything committed for the group, rebuilt from the `__consumer_offsets` bytes alone."""
        with self.lock:
            return {
                (tp.topic, tp.partition): (o.offset, o.metadata)
                for tp, o in self.store.group_offsets(group_id).items()
            }

    def commit_history(self, group_id: str) -> list[CommitEntry]:
        """Every OffsetCommit record of the group, decoded from the log bytes, oldest first."""
        with self.lock:
            out = []
            for key, value in self.offsets_log:
                rec = decode_record(key, value)
                if (
                    isinstance(rec, OffsetCommitRecord)
                    and rec.value is not None
                    and rec.key.group == group_id
                ):
                    v = rec.value
                    out.append(
                        CommitEntry(
                            group_id,
                            rec.key.topic,
                            rec.key.partition,
                            v.offset,
                            v.metadata,
                            v.commit_timestamp,
                        )
                    )
            return out


def _group_value(snap: Any) -> GroupMetadataValue:
    """GroupMetadataValue as the coordinator writes it (metadata of the selected protocol, assignment bytes)."""
    members = []
    for m in snap.members:
        sub = b""
        for name, meta in m.protocols:
            if name == snap.protocol_name:
                sub = meta
        members.append(
            MemberMetadata(
                m.member_id,
                m.client_id,
                "/127.0.0.1",
                m.session_timeout_ms,
                sub,
                m.assignment or b"",
                m.rebalance_timeout_ms,
                m.group_instance_id,
            )
        )
    return GroupMetadataValue(
        snap.protocol_type or "consumer",
        snap.generation_id,
        snap.protocol_name,
        snap.leader,
        tuple(members),
        snap.state_timestamp_ms,
    )


class _Phase:
    UNJOINED = "unjoined"
    JOINING = "joining"
    SYNCING = "syncing"
    STABLE = "stable"


_LOST = (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION, Errors.FENCED_INSTANCE_ID)


class SimConsumer:
    """confluent_kafka.Consumer's interface (the part the parallel consumer uses) on a SimCluster."""

    def __init__(
        self,
        cluster: SimCluster,
        group_id: str,
        *,
        assignor: str = "range",
        session_timeout_ms: int = 45_000,
        heartbeat_interval_ms: int = 3_000,
        max_poll_interval_ms: int = 300_000,
        client_id: str | None = None,
    ) -> None:
        self.cluster = cluster
        self.group_id = group_id
        self.assignor = assignor
        self.cooperative = assignor in COOPERATIVE
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.max_poll_interval_ms = max_poll_interval_ms
        self.client_id = client_id or cluster.new_client_id()
        cluster.live_clients.add(self.client_id)
        self.member_id = ""
        self.generation = -1
        self.phase = _Phase.UNJOINED
        self.topics: list[str] = []
        self.callbacks: dict[str, Callable | None] = {}
        self.assigned: list[tuple[str, int]] = []
        self.position: dict[tuple[str, int], int] = {}
        self.paused: set[tuple[str, int]] = set()
        self.last_heartbeat_ms = 0
        self.crashed = False
        self.closed = False
        self.rebalances = 0  # completed SyncGroups

    # ------------------------------------------------------------------ confluent_kafka.Consumer
    def subscribe(
        self,
        topics: Sequence[str],
        on_assign: Callable | None = None,
        on_revoke: Callable | None = None,
        on_lost: Callable | None = None,
    ) -> None:
        self._check()
        self.topics = list(topics)
        self.callbacks = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost}
        self.phase = _Phase.UNJOINED

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[SimMessage]:
        self._check()
        self.cluster.advance(self.cluster.tick_ms)
        self._step()
        return self._fetch(num_messages)

    def poll(self, timeout: float = -1) -> SimMessage | None:
        got = self.consume(1, timeout)
        return got[0] if got else None

    def commit(
        self,
        message: Any = None,
        offsets: Sequence[TopicPartition] | None = None,
        asynchronous: bool = True,
    ) -> list[TopicPartition]:
        """Always synchronous (the parallel consumer asks for that); raises KafkaException like librdkafka."""
        self._check()
        if offsets is None:
            raise NotImplementedError("SimConsumer.commit needs explicit offsets")
        errors = self.cluster.commit(
            self.group_id,
            self.member_id,
            self.generation,
            [(tp.topic, tp.partition, tp.offset, tp.metadata) for tp in offsets],
        )
        if errors:
            t, p, err = errors[0]
            raise KafkaException(KafkaError(err.value, f"OffsetCommit {t}-{p}: {err.name}"))
        return list(offsets)

    def committed(
        self, partitions: Sequence[TopicPartition], timeout: float = -1
    ) -> list[TopicPartition]:
        self._check()
        got = self.cluster.fetch_committed(
            self.group_id, [(tp.topic, tp.partition) for tp in partitions]
        )
        out = []
        for tp in partitions:
            offset, metadata = got.get((tp.topic, tp.partition), (-1, ""))
            if offset < 0:
                out.append(TopicPartition(tp.topic, tp.partition, OFFSET_INVALID))
            else:
                out.append(TopicPartition(tp.topic, tp.partition, offset, metadata))
        return out

    def pause(self, partitions: Sequence[TopicPartition]) -> None:
        self.paused.update((tp.topic, tp.partition) for tp in partitions)

    def resume(self, partitions: Sequence[TopicPartition]) -> None:
        self.paused.difference_update((tp.topic, tp.partition) for tp in partitions)

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t, p in self.assigned]

    def close(self) -> None:
        """Revoke (rebalance callback), then LeaveGroup, as librdkafka's close does."""
        if self.closed or self.crashed:
            return
        if self.assigned:
            self._revoke(list(self.assigned))
        if self.member_id:
            self.cluster.send(
                self.group_id,
                LeaveGroupRequest(
                    self.client_id, ((self.member_id, None),), "the consumer is being closed"
                ),
            )
            self.cluster.take_responses(self.client_id)
        self.closed = True
        self.cluster.live_clients.discard(self.client_id)

    # ------------------------------------------------------------------ test controls
    def crash(self) -> None:
        """The process dies: no commit, no callbacks, no LeaveGroup; the session expires later."""
        self.crashed = True
        self.cluster.live_clients.discard(self.client_id)
        self.cluster.take_responses(self.client_id)

    def _check(self) -> None:
        if self.crashed:
            raise RuntimeError(f"{self.client_id} crashed")
        if self.closed:
            raise RuntimeError(f"{self.client_id} is closed")

    # ------------------------------------------------------------------ the group protocol
    def _step(self) -> None:
        if not self.topics:
            return
        for resp in self.cluster.take_responses(self.client_id):
            if isinstance(resp, JoinGroupResponse) and self.phase == _Phase.JOINING:
                self._on_join(resp)
            elif isinstance(resp, SyncGroupResponse) and self.phase == _Phase.SYNCING:
                self._on_sync(resp)
        if self.phase == _Phase.UNJOINED:
            self._join()
        elif (
            self.phase == _Phase.STABLE
            and self.cluster.now_ms - self.last_heartbeat_ms >= self.heartbeat_interval_ms
        ):
            self._heartbeat()

    def _subscription(self) -> bytes:
        owned = tuple(MTP(t, p) for t, p in self.assigned) if self.cooperative else ()
        return encode_subscription(
            WireSubscription(tuple(sorted(self.topics)), None, owned, self.generation, None)
        )

    def _join(self) -> None:
        self.phase = _Phase.JOINING
        self.cluster.send(
            self.group_id,
            JoinGroupRequest(
                self.client_id,
                self.member_id,
                ((self.assignor, self._subscription()),),
                self.session_timeout_ms,
                self.max_poll_interval_ms,
            ),
        )

    def _on_join(self, resp: JoinGroupResponse) -> None:
        if resp.error is Errors.MEMBER_ID_REQUIRED:
            self.member_id = resp.member_id
            self._join()
            return
        if resp.error is not Errors.NONE:
            if resp.error in _LOST:
                self._lose()
            self.phase = _Phase.UNJOINED
            return
        self.member_id = resp.member_id
        self.generation = resp.generation_id
        assignments = None
        if resp.leader == self.member_id:
            assignments = self._assign(resp)
        self.phase = _Phase.SYNCING
        self.cluster.send(
            self.group_id,
            SyncGroupRequest(
                self.client_id,
                self.member_id,
                self.generation,
                protocol_name=resp.protocol_name,
                assignments=assignments,
            ),
        )

    def _assign(self, resp: JoinGroupResponse) -> dict[str, bytes]:
        """The leader's job: run the assignor on every member's ConsumerProtocol subscription."""
        members = []
        wanted: set[str] = set()
        for m in resp.members:
            sub = decode_subscription(m.metadata)
            wanted.update(sub.topics)
            members.append(
                MemberSubscription(
                    m.member_id,
                    tuple(sub.topics),
                    tuple(sub.owned_partitions),
                    sub.generation_id,
                    sub.rack_id,
                    m.group_instance_id,
                )
            )
        topics = {
            t: TopicMetadata(t, self.cluster.topics[t])
            for t in sorted(wanted)
            if t in self.cluster.topics
        }
        result = get_assignor(resp.protocol_name or self.assignor).assign(
            GroupSpec(topics, tuple(members))
        )
        return {
            m.member_id: encode_assignment(WireAssignment(tuple(result.get(m.member_id, ()))))
            for m in members
        }

    def _on_sync(self, resp: SyncGroupResponse) -> None:
        if resp.error is not Errors.NONE:
            if resp.error in _LOST:
                self._lose()
            self.phase = _Phase.UNJOINED
            return
        new = (
            [(tp.topic, tp.partition) for tp in decode_assignment(resp.assignment).partitions]
            if resp.assignment
            else []
        )
        self.rebalances += 1
        self.phase = _Phase.STABLE
        self.last_heartbeat_ms = self.cluster.now_ms
        if self.cooperative:
            revoked = [tp for tp in self.assigned if tp not in new]
            added = [tp for tp in new if tp not in self.assigned]
            if revoked:
                self._revoke(revoked)
            self._add(added)
            if revoked:  # KIP-429: rejoin so the revoked partitions can go to their new owner
                self.phase = _Phase.UNJOINED
        else:
            self._add(new)

    def _heartbeat(self) -> None:
        self.last_heartbeat_ms = self.cluster.now_ms
        self.cluster.send(
            self.group_id, HeartbeatRequest(self.client_id, self.member_id, self.generation)
        )
        for resp in self.cluster.take_responses(self.client_id):
            err = getattr(resp, "error", Errors.NONE)
            if err is Errors.REBALANCE_IN_PROGRESS:
                if not self.cooperative and self.assigned:
                    self._revoke(list(self.assigned))  # eager: give everything up before rejoining
                self._join()
            elif err in _LOST:
                self._lose()
                self._join()

    def _lose(self) -> None:
        """The member was fenced: its partitions are lost (not revoked), and it rejoins from scratch."""
        if self.assigned:
            tps = list(self.assigned)
            cb = self.callbacks.get("lost") or self.callbacks.get("revoke")
            if cb is not None:
                cb(self, [TopicPartition(t, p) for t, p in tps])
            self._drop(tps)
        self.member_id = ""
        self.generation = -1

    def _revoke(self, tps: list[tuple[str, int]]) -> None:
        cb = self.callbacks.get("revoke")
        if cb is not None:
            cb(self, [TopicPartition(t, p) for t, p in tps])
        self._drop(tps)

    def _drop(self, tps: list[tuple[str, int]]) -> None:
        for tp in tps:
            if tp in self.assigned:
                self.assigned.remove(tp)
            self.position.pop(tp, None)
            self.paused.discard(tp)

    def _add(self, tps: list[tuple[str, int]]) -> None:
        cb = self.callbacks.get("assign")
        if cb is not None:
            cb(self, [TopicPartition(t, p) for t, p in tps])
        got = self.cluster.fetch_committed(self.group_id, tps) if tps else {}
        for tp in tps:
            if tp not in self.assigned:
                self.assigned.append(tp)
            offset = got.get(tp, (-1, ""))[0]
            self.position[tp] = offset if offset >= 0 else 0  # auto.offset.reset=earliest

    # ------------------------------------------------------------------ fetching
    def _fetch(self, limit: int) -> list[SimMessage]:
        out: list[SimMessage] = []
        with self.cluster.lock:
            live = [tp for tp in self.assigned if tp not in self.paused]
            progress = True
            while (
                len(out) < limit and progress
            ):  # round-robin over partitions, in order within each
                progress = False
                for tp in live:
                    log = self.cluster.logs[tp]
                    pos = self.position.get(tp, 0)
                    if pos < len(log) and len(out) < limit:
                        out.append(SimMessage(tp[0], tp[1], log[pos]))
                        self.position[tp] = pos + 1
                        progress = True
        return out
