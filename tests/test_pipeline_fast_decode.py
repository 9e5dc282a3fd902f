"""The vectorised offsets decoder gives exactly what the per-record decoder gives, row for row."""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_rebalance.group.records import (
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_record,
    encode_value,
    group_metadata_record,
)
from kafka_rebalance.pipeline.fast_decode import split_fast
from kafka_rebalance.pipeline.offsets_decode import decode_batches, decode_batches_slow

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)
i64 = st.integers(-(2**63), 2**63 - 1)


@st.composite
def offset_commit(draw):
    key = OffsetCommitKey(
        draw(names),
        draw(names),
        draw(st.integers(-(2**31), 2**31 - 1)),
        draw(st.sampled_from((0, 1))),
    )
    if draw(st.integers(0, 9)) == 0:
        return encode_key(key), None  # tombstone
    value = OffsetCommitValue(
        draw(i64),
        draw(names),
        draw(i64),
        draw(st.integers(-(2**31), 2**31 - 1)),
        draw(i64),
        draw(st.sampled_from((0, 1, 1, 2, 3, 3, 3, 4))),
    )
    return encode_key(key), encode_value(value)


def group_metadata(draw_name):
    return encode_record(
        group_metadata_record(draw_name, GroupMetadataValue("consumer", 3, "range", None))
    )


@st.composite
def damaged(draw, rec):
    """A record with bytes cut, a version rewritten, trailing bytes, bad UTF-8 or a null key."""
    key, value = rec
    how = draw(
        st.sampled_from(
            (
                "cut_key",
                "cut_value",
                "key_version",
                "value_version",
                "trailing",
                "bad_utf8",
                "null_key",
                "negative_len",
            )
        )
    )
    if how == "cut_key":
        key = key[: draw(st.integers(0, len(key)))]
    elif how == "cut_value" and value is not None:
        value = value[: draw(st.integers(0, len(value)))]
    elif how == "key_version":
        key = struct.pack(">h", draw(st.integers(-2, 9))) + key[2:]
    elif how == "value_version" and value is not None:
        value = struct.pack(">h", draw(st.integers(-2, 9))) + value[2:]
    elif how == "trailing":
        extra = draw(st.binary(min_size=1, max_size=4))
        if value is not None and draw(st.booleans()):
            value = value + extra
        else:
            key = key + extra
    elif how == "bad_utf8" and len(key) > 4:
        key = key[:4] + b"\xff\xfe" + key[6:]
    elif how == "null_key":
        key = None
    elif how == "negative_len" and len(key) >= 4:
        key = key[:2] + struct.pack(">h", -1) + key[4:]
    return key, value


@st.composite
def record(draw):
    kind = draw(st.integers(0, 9))
    if kind < 6:
        return draw(offset_commit())
    if kind == 6:
        return group_metadata(draw(names))
    if kind == 7:
        return draw(st.binary(max_size=20)), draw(st.none() | st.binary(max_size=30))
    return draw(damaged(draw(offset_commit())))


@st.composite
def batch(draw):
    recs = draw(st.lists(record(), min_size=0, max_size=40))
    n = len(recs)
    ts = [None if draw(st.integers(0, 19)) == 0 else 1_700_000_000_000 + i for i in range(n)]
    parts = [None if draw(st.integers(0, 29)) == 0 else i % 3 for i in range(n)]
    table = pa.table(
        {
            "key": pa.array([r[0] for r in recs], pa.binary()),
            "value": pa.array([r[1] for r in recs], pa.binary()),
            "topic": pa.array(["__consumer_offsets"] * n),
            "partition": pa.array(parts, pa.int32()),
            "offset": pa.array(list(range(n)), pa.int64()),
            "timestamp": pa.array(ts, pa.timestamp("us", tz="UTC")),
        }
    )
    start = draw(st.integers(0, max(0, n - 1))) if n else 0
    return (
        table.combine_chunks().to_batches()[0].slice(start)
        if n
        else table.to_batches(max_chunksize=1)
    )


def rows(batches):
    return [r for b in batches for r in b.to_pylist()]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch())
def test_fast_path_equals_slow_path(b):
    batches = b if isinstance(b, list) else [b]
    fast = list(decode_batches(iter(batches)))
    slow = list(decode_batches_slow(iter(batches)))
    assert rows(fast) == rows(slow)
    assert all(f.schema == s.schema for f, s in zip(fast, slow))


def test_common_shapes_take_the_fast_path():
    recs = [
        encode_record(group_metadata_record("g", GroupMetadataValue("consumer", 1, "range", "m"))),
        (
            encode_key(OffsetCommitKey("g", "t", 3, 1)),
            encode_value(OffsetCommitValue(5, "m\u00e9ta", 7, 2, -1, 3)),
        ),
        (
            encode_key(OffsetCommitKey("g", "t", 4, 0)),
            encode_value(OffsetCommitValue(6, "", 8, -1, 9, 1)),
        ),
        (encode_key(OffsetCommitKey("g", "t", 4, 1)), None),
        (
            encode_key(OffsetCommitKey("g", "t", 4, 1)),
            encode_value(OffsetCommitValue(6, "", 8, -1, -1, 4)),
        ),
        (
            encode_key(OffsetCommitKey("g", "t", 4, 1))[:-1],
            encode_value(OffsetCommitValue(6, "", 8, -1, -1, 3)),
        ),
    ]
    b = pa.record_batch(
        {
            "key": pa.array([r[0] for r in recs], pa.binary()),
            "value": pa.array([r[1] for r in recs], pa.binary()),
            "partition": pa.array([0] * len(recs), pa.int32()),
            "offset": pa.array(range(len(recs)), pa.int64()),
            "timestamp": pa.array([1] * len(recs), pa.timestamp("ms")),
        }
    )
    fast_rows, cols, slow_rows = split_fast(b)
    assert fast_rows.tolist() == [1, 2, 3] and slow_rows.tolist() == [0, 4, 5]
    assert cols["metadata"].to_pylist() == ["m\u00e9ta", "", None]
    assert cols["offset"][0].tolist()[:2] == [5, 6] and cols["expire_timestamp"][0].tolist()[
        :2
    ] == [-1, 9]
    assert cols["leader_epoch"][0].tolist()[:2] == [2, -1] and cols["tombstone"][0].tolist() == [
        False,
        False,
        True,
    ]
    out = rows(decode_batches(iter([b])))
    assert [r["kind"] for r in out] == ["group_metadata"] + ["offset_commit"] * 4 + ["quarantine"]
    assert np.array_equal([r["record_offset"] for r in out], range(len(recs)))
