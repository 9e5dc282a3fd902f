"""The simulator's view of the `__consumer_offsets` partition that holds its group.

Steady state keeps the compacted log (last value per key) in memory: offset
commits by (topic, partition) and the last GroupMetadata. A coordinator
taking over the partition replays that log for real: every record is built
and encoded with Kafka's schemas (`group.records`: OffsetCommitKey/Value,
GroupMetadataKey/Value with ConsumerProtocol subscription and assignment
bytes), decoded again and replayed by `group.offsets.rebuild_from_records`,
and the classic group is loaded from the decoded GroupMetadataValue. What the
new coordinator knows is exactly what the log holds.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..assign.protocol import Assignment as WireAssignment
from ..assign.protocol import Subscription as WireSubscription
from ..assign.protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from ..group.classic_group import ClassicGroupSnapshot, MemberSnapshot
from ..group.offsets import rebuild_from_records
from ..group.records import (
    GroupMetadataValue,
    OffsetsRecord,
    decode_record,
    encode_record,
    group_metadata_record,
    group_metadata_value,
    offset_commit_record,
)
from ..model import TopicPartition
from .subscription import Subscription


class SimOffsetsStore:
    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.offsets: dict[int, tuple[int, int]] = {}  # partition index -> (offset, commit time)
        self.group: tuple[ClassicGroupSnapshot, int] | None = None
        self.records_appended = 0

    def commit(self, p: int, offset: int, now_ms: int) -> None:
        """An OffsetCommit record for partition index p (named through the partition table on replay)."""
        self.offsets[p] = (offset, now_ms)
        self.records_appended += 1

    def write_group(self, snapshot: ClassicGroupSnapshot, now_ms: int) -> None:
        self.group = (snapshot, now_ms)
        self.records_appended += 1

    # ------------------------------------------------------------ the log

    def records(self, tps: Sequence[TopicPartition]) -> list[OffsetsRecord]:
        """The compacted log as Kafka records (group metadata first, then offsets)."""
        out: list[OffsetsRecord] = []
        if self.group is not None:
            snap, _ = self.group
            out.append(group_metadata_record(self.group_id, _group_value(snap, tps)))
        for p, (off, ts) in self.offsets.items():
            tp = tps[p]
            out.append(
                offset_commit_record(
                    self.group_id, tp.topic, tp.partition, off, commit_timestamp=ts
                )
            )
        return out

    def recover(
        self, tps: Sequence[TopicPartition] = (), index: dict[TopicPartition, int] | None = None
    ) -> tuple[ClassicGroupSnapshot | None, dict[TopicPartition, int]]:
        """Replay the encoded log as a new coordinator does; return the group to load and the offsets."""
        decoded = [decode_record(*encode_record(r)) for r in self.records(tps)]
        rebuilt = rebuild_from_records(decoded)
        offsets = {tp: om.offset for tp, om in rebuilt.offsets.get(self.group_id, {}).items()}
        gs = rebuilt.groups.get(self.group_id)
        snap = None
        if gs is not None and gs.value is not None:
            snap = _snapshot(self.group_id, gs.value, index or {})
        return snap, offsets


def _group_value(snap: ClassicGroupSnapshot, tps: Sequence[TopicPartition]) -> GroupMetadataValue:
    """GroupMetadataValue as the coordinator writes it, with ConsumerProtocol-encoded member bytes."""

    def subscription(meta: Subscription | None) -> bytes:
        if meta is None:
            return b""
        return encode_subscription(
            WireSubscription(
                tuple(meta.topics), meta.user_data, tuple(meta.owned), meta.generation, meta.rack
            )
        )

    def assignment(parts: Sequence[int] | None) -> bytes:
        return encode_assignment(WireAssignment(tuple(tps[p] for p in (parts or ()))))

    return group_metadata_value(snap, subscription, assignment)


def _snapshot(
    group_id: str, v: GroupMetadataValue, index: dict[TopicPartition, int]
) -> ClassicGroupSnapshot:
    members = []
    for m in v.members:
        protocols: tuple = ()
        if v.protocol is not None and m.subscription:
            ws = decode_subscription(m.subscription)
            protocols = (
                (
                    v.protocol,
                    Subscription(
                        tuple(ws.topics),
                        tuple(ws.owned_partitions),
                        ws.generation_id,
                        ws.rack_id,
                        ws.user_data,
                    ),
                ),
            )
        assignment = (
            [index[tp] for tp in decode_assignment(m.assignment).partitions if tp in index]
            if m.assignment
            else []
        )
        members.append(
            MemberSnapshot(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.rebalance_timeout,
                m.session_timeout,
                protocols,
                assignment,
            )
        )
    return ClassicGroupSnapshot(
        group_id,
        v.protocol_type or None,
        v.generation,
        v.protocol,
        v.leader,
        v.current_state_timestamp,
        tuple(members),
    )
