"""Crash safety and compaction of the offsets log, and rebuilding groups and offsets after a failover."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.group.compaction import LogEntry, compact
from kafka_rebalance.group.offset_messages import (
    GroupType,
    GroupView,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from kafka_rebalance.group.offsets import OffsetStore, commit_offsets, fetch_offsets
from kafka_rebalance.group.records import (
    GroupMetadataValue,
    MemberMetadata,
    decode_record,
    encode_record,
    group_metadata_record,
    group_metadata_tombstone,
    offset_commit_record,
    offset_commit_tombstone,
)
from kafka_rebalance.model import TopicPartition
from kafka_rebalance.sim.offsets_log_store import MAGIC, OffsetsLogStore, scan

DAY = 86_400_000


def _commit(group, partition, offset, ts=0):
    return offset_commit_record(group, "orders", partition, offset, commit_timestamp=ts)


def test_append_and_reopen(tmp_path):
    path = tmp_path / "log"
    with OffsetsLogStore.open(path) as store:
        assert store.append_record(_commit("g", 0, 10), 1) == 0
        assert store.append_records(
            [_commit("g", 1, 20), offset_commit_tombstone("g", "orders", 0)], 2
        ) == [1, 2]
    with OffsetsLogStore.open(path) as store:
        assert store.recovery.truncated_bytes == 0 and store.recovery.records == 3
        assert [e.offset for e in store.entries()] == [0, 1, 2]
        assert store.next_offset == 3
        offsets = store.rebuild().offsets["g"]
        assert (
            set(offsets) == {TopicPartition("orders", 1)}
            and offsets[TopicPartition("orders", 1)].offset == 20
        )


def test_torn_tail_is_truncated_on_recovery(tmp_path):
    path = tmp_path / "log"
    with OffsetsLogStore.open(path) as store:
        for i in range(5):
            store.append_record(_commit("g", i, i), i)
    good = path.stat().st_size
    with OffsetsLogStore.open(path) as store:
        store.append_record(_commit("g", 9, 99), 9)
    full = path.stat().st_size
    # Every possible crash point inside the last frame loses only that frame.
    data = path.read_bytes()
    for cut in range(good + 1, full):
        path.write_bytes(data[:cut])
        with OffsetsLogStore.open(path) as store:
            assert len(store) == 5
            assert store.recovery.truncated_bytes == cut - good
            assert store.recovery.reason.startswith("torn")
        assert path.stat().st_size == good
    # After recovery, appends continue at the right offset.
    with OffsetsLogStore.open(path) as store:
        assert store.append_record(_commit("g", 9, 99), 9) == 5
    with OffsetsLogStore.open(path) as store:
        assert len(store) == 6 and store.recovery.truncated_bytes == 0


def test_crc_mismatch_truncates_from_the_corrupt_frame(tmp_path):
    path = tmp_path / "log"
    with OffsetsLogStore.open(path) as store:
        for i in range(4):
            store.append_record(_commit("g", i, i), i)
    data = bytearray(path.read_bytes())
    _, valid, _ = scan(bytes(data))
    assert valid == len(data)
    # Flip one byte inside the third frame's body.
    frame_starts = []
    pos = len(MAGIC)
    while pos < len(data):
        frame_starts.append(pos)
        pos += 8 + int.from_bytes(data[pos : pos + 4], "big")
    data[frame_starts[2] + 20] ^= 0xFF
    path.write_bytes(bytes(data))
    with OffsetsLogStore.open(path) as store:
        assert len(store) == 2
        assert store.recovery.reason == "crc mismatch"
    assert path.stat().st_size == frame_starts[2]


def test_compaction_keeps_last_value_per_key_and_drops_old_tombstones(tmp_path):
    path = tmp_path / "log"
    with OffsetsLogStore.open(path) as store:
        store.append_record(_commit("g", 0, 1), 0)
        store.append_record(_commit("g", 0, 2), 10)
        store.append_record(_commit("g", 1, 5), 20)
        store.append_record(offset_commit_tombstone("g", "orders", 1), 30)  # deleted at t=30
        store.append_record(_commit("g", 2, 7), 40)
        store.append_record(offset_commit_tombstone("g", "orders", 2), 5 * DAY)  # recent tombstone
        store.append_record(_commit("g", 0, 3), 5 * DAY + 1)
        stats = store.compact(now_ms=5 * DAY + 2, delete_retention_ms=DAY)
        # The last record (offset 6) is the uncleanable active part: it is not in the offset map, so the
        # commit of g/0 at offset 1 is not superseded by it (Kafka's cleaner maps only [firstDirty,
        # firstUncleanable)); offsets 0, 2 and 4 are superseded, the tombstone at 3 has aged out.
        assert (stats.before, stats.after, stats.superseded, stats.tombstones_dropped) == (
            7,
            3,
            3,
            1,
        )
        kept = list(store.entries())
        assert [e.offset for e in kept] == [1, 5, 6]  # original offsets, never renumbered
        assert kept[1].value is None  # the young tombstone survives
    with OffsetsLogStore.open(path) as store:
        assert [e.offset for e in store.entries()] == [1, 5, 6]
        assert store.next_offset == 7
        rebuilt = store.rebuild()
        assert {tp.partition: o.offset for tp, o in rebuilt.offsets["g"].items()} == {0: 3}
        # Later, the tombstone ages out too; once offset 6 is cleanable, offset 1 goes.
        store.compact(now_ms=7 * DAY, delete_retention_ms=DAY)
        assert [e.offset for e in store.entries()] == [1, 6]
        store.append_record(_commit("g", 3, 1), 7 * DAY)
        store.compact(now_ms=7 * DAY, delete_retention_ms=DAY)
        assert [e.offset for e in store.entries()] == [6, 7]
    assert not (tmp_path / "log.compacting").exists()


def test_compaction_never_drops_the_last_record_so_offsets_are_not_reused(tmp_path):
    path = tmp_path / "log"
    with OffsetsLogStore.open(path) as store:
        store.append_record(_commit("g", 0, 1), 0)
        store.append_record(offset_commit_tombstone("g", "orders", 0), 0)
        store.compact(now_ms=10 * DAY, delete_retention_ms=DAY)
    with OffsetsLogStore.open(path) as store:
        assert store.next_offset == 2


def test_crash_during_compaction_leaves_old_log(tmp_path):
    path = tmp_path / "log"
    with OffsetsLogStore.open(path) as store:
        store.append_record(_commit("g", 0, 1), 0)
        store.append_record(_commit("g", 0, 2), 0)
    (tmp_path / "log.compacting").write_bytes(MAGIC + b"\x00\x00")  # rename never happened
    with OffsetsLogStore.open(path) as store:
        assert len(store) == 2
    assert not (tmp_path / "log.compacting").exists()


def test_compacted_log_rebuilds_the_same_state():
    entries = []
    state = OffsetStore()
    for i in range(40):
        rec = (
            _commit(f"g{i % 3}", i % 5, i, ts=i)
            if i % 7
            else offset_commit_tombstone(f"g{i % 3}", "orders", i % 5)
        )
        k, v = encode_record(rec)
        entries.append(LogEntry(i, k, v, i))
        state.replay(rec)
    kept, _ = compact(entries, now_ms=10, delete_retention_ms=5)
    rebuilt = OffsetStore().replay_all(decode_record(e.key, e.value) for e in kept)
    assert rebuilt.offsets == state.offsets


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.none() | st.binary(max_size=4), st.integers(0, 100)),
        max_size=40,
    ),
    st.integers(0, 200),
    st.integers(0, 100),
)
def test_compaction_property(ops, now, retention):
    entries = [LogEntry(i, bytes([k]), v, ts) for i, (k, v, ts) in enumerate(ops)]
    kept, stats = compact(entries, now, retention)
    last = {}
    for e in entries:
        last[e.key] = e
    expected = [
        e for e in last.values() if not (e.value is None and now - e.timestamp_ms >= retention)
    ]
    assert kept == sorted(expected, key=lambda e: e.offset)
    assert stats.before - stats.after == stats.superseded + stats.tombstones_dropped


def _e(offset, key, value=b"v", ts=0):
    return LogEntry(offset, key, value, ts)


def test_uncleanable_records_do_not_supersede_cleanable_ones():
    # LogCleaner.doClean builds the offset map over [firstDirtyOffset, firstUncleanableOffset) only.
    log = [_e(0, b"k"), _e(1, b"j"), _e(2, b"k")]
    kept, stats = compact(log, now_ms=0, dirty_offset=2)
    assert [e.offset for e in kept] == [0, 1, 2]
    assert (stats.superseded, stats.tombstones_dropped) == (0, 0)
    kept, _ = compact(log, now_ms=0, dirty_offset=3)
    assert [e.offset for e in kept] == [1, 2]
    kept, _ = compact(log, now_ms=0)  # no uncleanable part
    assert [e.offset for e in kept] == [1, 2]


def test_old_tombstone_in_the_uncleanable_part_is_kept():
    log = [_e(0, b"k"), _e(1, b"k", None, ts=0)]
    kept, stats = compact(log, now_ms=10 * DAY, delete_retention_ms=DAY, dirty_offset=1)
    assert [e.offset for e in kept] == [0, 1] and stats.tombstones_dropped == 0


def test_clean_section_is_only_thinned_by_the_dirty_map():
    # Below the cleaner checkpoint (first_dirty_offset) the log was cleaned before; only keys updated
    # in the dirty section lose their old record there.
    log = [_e(0, b"a"), _e(1, b"a"), _e(2, b"b"), _e(3, b"b"), _e(4, b"c")]
    kept, _ = compact(log, now_ms=0, dirty_offset=5, first_dirty_offset=3)
    assert [e.offset for e in kept] == [0, 1, 3, 4]
    # nothing dirty: the cleaner has nothing to map and cleans nothing
    kept, stats = compact(
        log + [_e(5, b"d", None)],
        now_ms=10 * DAY,
        delete_retention_ms=DAY,
        dirty_offset=5,
        first_dirty_offset=5,
    )
    assert len(kept) == 6 and stats.before == stats.after


def _kafka_model(entries, now, retention, first_dirty, uncleanable):
    """Kafka's cleaner rule stated directly: a record below the first uncleanable offset goes if a later
    record with its key lies in the dirty section [first_dirty, uncleanable), or if it is a tombstone past
    delete.retention.ms; nothing is cleaned when the dirty section is empty."""
    dirty = [e for e in entries if first_dirty <= e.offset < uncleanable]
    if not dirty:
        return list(entries)
    kept = []
    for e in entries:
        if e.offset >= uncleanable:
            kept.append(e)
            continue
        newer = any(d.key == e.key and d.offset > e.offset for d in dirty)
        expired_tombstone = e.value is None and now - e.timestamp_ms >= retention
        if not newer and not expired_tombstone:
            kept.append(e)
    return kept


_OPS = st.lists(
    st.tuples(st.integers(0, 4), st.none() | st.binary(max_size=3), st.integers(0, 100)),
    max_size=30,
)


@settings(max_examples=80, deadline=None)
@given(
    _OPS,
    st.integers(0, 200),
    st.integers(0, 100),
    st.integers(0, 32),
    st.integers(0, 32),
    st.data(),
)
def test_compaction_matches_kafkas_cleaner_rule(
    ops, now, retention, uncleanable, first_dirty, data
):
    # offsets with gaps, as in an already compacted log
    offsets = sorted(data.draw(st.sets(st.integers(0, 40), min_size=len(ops), max_size=len(ops))))
    entries = [LogEntry(o, bytes([k]), v, ts) for o, (k, v, ts) in zip(offsets, ops)]
    first_dirty = min(first_dirty, uncleanable)
    kept, stats = compact(entries, now, retention, uncleanable, first_dirty)
    assert kept == _kafka_model(entries, now, retention, first_dirty, uncleanable)
    assert stats.before - stats.after == stats.superseded + stats.tombstones_dropped
    assert [e for e in kept if e.offset >= uncleanable] == [
        e for e in entries if e.offset >= uncleanable
    ]


@settings(max_examples=60, deadline=None)
@given(_OPS, st.integers(0, 200), st.integers(0, 100), st.integers(0, 32))
def test_compaction_preserves_the_latest_value_of_every_key(ops, now, retention, uncleanable):
    """Replaying the compacted log gives every key its last value (or none: a deleted key)."""
    entries = [LogEntry(i, bytes([k]), v, ts) for i, (k, v, ts) in enumerate(ops)]
    kept, _ = compact(entries, now, retention, uncleanable)

    def state(log):
        s = {}
        for e in log:
            s[e.key] = e.value
        return {k: v for k, v in s.items() if v is not None}

    assert state(kept) == state(entries)


def test_failover_rebuilds_groups_and_offsets(tmp_path):
    """The coordinator writes to the log, 'fails', and a new one rebuilds everything from it."""
    path = tmp_path / "__consumer_offsets-17"
    members = tuple(
        MemberMetadata(f"m{i}", "c", "/10.0.0.1", 45_000, b"sub", b"asg", 300_000, None)
        for i in range(3)
    )
    value = GroupMetadataValue("consumer", 4, "range", "m0", members, 1_000)
    group = GroupView("app", GroupType.CLASSIC, "Stable", 4, {f"m{i}": 4 for i in range(3)})
    with OffsetsLogStore.open(path) as store:
        store.append_record(group_metadata_record("app", value), 1_000)
        for p in range(3):
            req = OffsetCommitRequest(
                "app", (OffsetCommitPartition("orders", p, 100 + p),), f"m{p}", 4
            )
            store.append_records(commit_offsets(group, req, 2_000).records, 2_000)
        store.append_record(
            group_metadata_record("old", GroupMetadataValue("consumer", 1, None, None)), 2_100
        )
        store.append_record(group_metadata_tombstone("old"), 2_200)
    # New coordinator.
    with OffsetsLogStore.open(path) as store:
        rebuilt = store.rebuild()
    assert set(rebuilt.groups) == {"app"}
    snap = rebuilt.groups["app"]
    assert snap.state == "Stable" and snap.generation == 4 and snap.value.leader == "m0"
    assert [m.member_id for m in snap.value.members] == ["m0", "m1", "m2"]
    assert (
        snap.value.members[0].subscription == b"sub" and snap.value.members[0].assignment == b"asg"
    )
    fresh = OffsetStore()
    fresh.offsets = rebuilt.offsets
    resp = fetch_offsets(
        fresh,
        group,
        OffsetFetchRequest("app", tuple(TopicPartition("orders", p) for p in range(3))),
    )
    assert [p.offset for p in resp.partitions] == [100, 101, 102]


def test_open_creates_parent_dirs_and_header(tmp_path):
    path = tmp_path / "a" / "b" / "log"
    with OffsetsLogStore.open(path, fsync=False) as store:
        assert len(store) == 0
    assert path.read_bytes() == MAGIC
    os.truncate(path, 3)  # header torn
    with OffsetsLogStore.open(path) as store:
        assert len(store) == 0 and store.recovery.truncated_bytes == 3
    assert path.read_bytes() == MAGIC
