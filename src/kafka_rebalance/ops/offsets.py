"""Decode `__consumer_offsets` records: offset commits, classic group metadata, KIP-848 group records."""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
from dataclasses import dataclass
from typing import Any

from ..group.consumer_group_records import ConsumerGroupRecord, decode_any
from ..group.formatter import format_group_metadata, format_offsets
from ..group.records import OffsetCommitRecord, OffsetsRecord


@dataclass(frozen=True)
class DecodedRecord:
    """One record of `__consumer_offsets`, decoded; `record.value is None` for a tombstone."""

    key: bytes
    value: bytes | None
    record: OffsetsRecord | ConsumerGroupRecord

    def to_json(self) -> dict[str, Any]:
        """Offset commits and group metadata as Kafka's console formatters print them
        (`{"key": {"version", "data"}, "value": ...}`); KIP-848 records field by field."""
        if isinstance(self.record, ConsumerGroupRecord):
            return _plain(self.record)
        fmt = (
            format_offsets if isinstance(self.record, OffsetCommitRecord) else format_group_metadata
        )
        return json.loads(fmt(self.key, self.value))


def decode_offsets_record(key: bytes, value: bytes | None) -> DecodedRecord:
    """Decode one record (RecordDecodeError on malformed bytes, as Kafka's formatter would throw)."""
    return DecodedRecord(key, value, decode_any(key, value))


def _plain(x: Any) -> Any:
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: _plain(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if isinstance(x, (bytes, bytearray)):
        return base64.b64encode(bytes(x)).decode("ascii")
    if isinstance(x, enum.Enum):
        return x.value
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    return x
