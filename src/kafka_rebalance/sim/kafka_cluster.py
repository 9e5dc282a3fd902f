"""The simulated Kafka cluster behind `sim.kafka_client.SimConsumer`, on the real group machinery.

`SimCluster` holds topic logs, one classic group coordinator per group
(`group.classic_group.ClassicGroup`: JoinGroup/SyncGroup/Heartbeat/LeaveGroup,
generations, timers) and a `__consumer_offsets` log. An OffsetCommit is
validated and turned into records by `group.offsets.commit_offsets` (member,
generation, `offset.metadata.max.bytes`), the records are encoded with
Kafka's schemas (`group.records.encode_record`) and appended as bytes, and
every read (OffsetFetch, `committed_offsets`) comes from replaying the
*decoded* bytes: commit metadata survives exactly as far as Kafka's format
carries it (test_parallel_live.py checks the same against a real broker).

Time is virtual: `SimCluster.advance(ms)` moves the clock and fires coordinator timers (session
expiry, join/sync deadlines), so a run does not depend on wall-clock speed.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..group.classic_group import ClassicGroup, ClassicGroupConfig
from ..group.classic_messages import (
    CancelTimer,
    GroupMetadataChanged,
    MemberRemoved,
    ScheduleTimer,
    StateChanged,
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
    OffsetCommitRecord,
    decode_record,
    encode_record,
    group_metadata_record,
    group_metadata_value,
)
from ..model import TopicPartition as MTP


@dataclass(frozen=True, slots=True)
class SimRecord:
    offset: int
    key: bytes | None
    value: bytes | None


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
    return group_metadata_value(
        snap, lambda meta: b"" if meta is None else meta, lambda a: a or b""
    )
