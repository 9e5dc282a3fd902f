"""Real `__consumer_offsets` records, as a 4.0 broker wrote them (tests/data/consumer_offsets_corpus.jsonl,
made by scripts/capture-offsets-corpus.py with Kafka's Java consumers and librdkafka): every record
decodes and encodes back to its original bytes, and so do the consumer-protocol subscription and
assignment bytes inside classic group metadata."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from kafka_rebalance.assign.protocol import decode_assignment, decode_subscription
from kafka_rebalance.group.consumer_group_records import (
    ConsumerGroupRecord,
    decode_any,
    encode_consumer_group_record,
)
from kafka_rebalance.group.consumer_protocol_wire import (
    decode_assignment_wire,
    decode_subscription_wire,
    encode_assignment_wire,
    encode_subscription_wire,
)
from kafka_rebalance.group.records import (
    GroupMetadataRecord,
    OffsetCommitRecord,
    encode_record,
)

CORPUS = Path(__file__).parent / "data" / "consumer_offsets_corpus.jsonl"


def _load() -> list[dict]:
    with open(CORPUS, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


RECORDS = _load()


def _bytes(r: dict) -> tuple[bytes, bytes | None]:
    return bytes.fromhex(r["key"]), None if r["value"] is None else bytes.fromhex(r["value"])


def test_the_corpus_covers_what_it_claims():
    kinds = collections.Counter()
    for r in RECORDS:
        rec = decode_any(*_bytes(r))
        if isinstance(rec, ConsumerGroupRecord):
            kinds[f"kip848-type{rec.record_type}{'-tombstone' if rec.value is None else ''}"] += 1
        elif isinstance(rec, OffsetCommitRecord):
            kinds["offset-tombstone" if rec.value is None else "offset"] += 1
            if rec.value is not None and any(ord(c) > 127 for c in rec.value.metadata):
                kinds["non-ascii-metadata"] += 1
        else:
            kinds["group-tombstone" if rec.value is None else "group"] += 1
            if rec.value is not None and rec.value.protocol:
                kinds[f"protocol-{rec.value.protocol}"] += 1
        if any(ord(c) > 127 for c in r["group"]):
            kinds["non-ascii-group"] += 1
    for k in (
        "offset",
        "offset-tombstone",
        "group",
        "group-tombstone",
        "non-ascii-metadata",
        "non-ascii-group",
        "protocol-range",
        "protocol-cooperative-sticky",
        "kip848-type5",
        "kip848-type8",
        "kip848-type3-tombstone",
    ):
        assert kinds[k] > 0, (k, kinds)
    made_by = {r["made_by"] for r in RECORDS}
    assert any("static" in m for m in made_by) and any("librdkafka" in m for m in made_by)


@pytest.mark.parametrize("r", RECORDS, ids=lambda r: f"p{r['partition']}@{r['offset']}")
def test_a_record_encodes_back_to_its_bytes(r):
    key, value = _bytes(r)
    rec = decode_any(key, value)
    again = (
        encode_consumer_group_record(rec)
        if isinstance(rec, ConsumerGroupRecord)
        else encode_record(rec)
    )
    assert again == (key, value)


def _classic_members():
    for r in RECORDS:
        rec = decode_any(*_bytes(r))
        if (
            isinstance(rec, GroupMetadataRecord)
            and rec.value is not None
            and rec.value.protocol_type == "consumer"
        ):
            for m in rec.value.members:
                yield r["made_by"], m


MEMBERS = list(_classic_members())


def test_the_corpus_has_consumer_protocol_bytes_from_both_clients():
    assert (
        sum("librdkafka" in w for w, _ in MEMBERS) >= 3
        and sum("java" in w for w, _ in MEMBERS) >= 6
    )


@pytest.mark.parametrize("made_by,m", MEMBERS, ids=[f"{i}" for i in range(len(MEMBERS))])
def test_subscription_and_assignment_bytes_encode_back_exactly(made_by, m):
    sub = decode_subscription_wire(m.subscription)
    assert encode_subscription_wire(sub) == m.subscription
    # and the wire form reads as Kafka's ConsumerProtocol reads the same bytes
    assert sub.subscription() == decode_subscription(m.subscription)
    if m.assignment:
        a = decode_assignment_wire(m.assignment)
        assert encode_assignment_wire(a) == m.assignment
        assert a.assignment() == decode_assignment(m.assignment)


def test_what_the_wire_form_keeps_that_kafkas_view_drops():
    """librdkafka writes an absent rack as "" (Kafka reads it as no rack): the wire form keeps the "",
    so the bytes come back; a split assignment keeps its two groups."""
    empty_rack = [m for w, m in MEMBERS if decode_subscription_wire(m.subscription).rack_id == ""]
    assert empty_rack and all(
        decode_subscription(m.subscription).rack_id is None for m in empty_rack
    )
    split = decode_assignment_wire(_split_assignment())
    assert [t for t, _ in split.partitions] == ["t", "u", "t"]
    assert encode_assignment_wire(split) == _split_assignment()


def _split_assignment() -> bytes:
    """An assignment naming topic t twice (t:[0], u:[1], t:[2]); Java's serializer would merge them."""
    import struct

    def group(topic: str, ps: list[int]) -> bytes:
        return (
            struct.pack(">h", len(topic))
            + topic.encode()
            + struct.pack(f">i{len(ps)}i", len(ps), *ps)
        )

    return (
        struct.pack(">hi", 1, 3)
        + group("t", [0])
        + group("u", [1])
        + group("t", [2])
        + struct.pack(">i", -1)
    )
