"""Pure core of the parallel consumer: ordering, offset-map encodings, budget rules, partition state."""

from __future__ import annotations

import base64
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.parallel import (
    BudgetVerdict,
    Ordering,
    PartitionState,
    Scheduler,
    WorkItem,
    decode_offset_map,
    encode_offset_map,
    judge,
    shard_key,
)
from kafka_rebalance.parallel.budget import pause_threshold
from kafka_rebalance.parallel.offset_map import (
    Encoding,
    OffsetMapError,
    b64_len,
    bitset_metadata_len,
    encode_raw,
)

SETTINGS = settings(max_examples=80, deadline=None)

offset_sets = st.tuples(
    st.integers(0, 10**12),
    st.one_of(
        st.sets(st.integers(1, 5000), max_size=200),
        st.lists(st.tuples(st.integers(1, 3000), st.integers(1, 400)), max_size=8).map(
            lambda runs: {s + i for s, n in runs for i in range(n)}
        ),
    ),
)


# ---------------------------------------------------------------------------
# offset map


@SETTINGS
@given(offset_sets)
def test_offset_map_round_trips_and_picks_the_smaller_encoding(case):
    base, rel = case
    completed = {base + r for r in rel}
    text = encode_offset_map(base, completed)
    assert decode_offset_map(base, text) == frozenset(completed)
    if not completed:
        assert text == ""
        return
    assert text.isascii()
    raw = base64.b64decode(text)
    assert raw[:2] == b"KR" and raw[2] == 1
    sizes = {e: len(encode_raw(base, completed, e)) for e in Encoding}
    assert len(raw) == min(sizes.values())
    assert raw[3] == (
        Encoding.RUN_LENGTH
        if sizes[Encoding.RUN_LENGTH] < sizes[Encoding.BITSET]
        else Encoding.BITSET
    )
    # each encoding alone decodes too
    for e in Encoding:
        assert decode_offset_map(
            base, base64.b64encode(encode_raw(base, completed, e)).decode()
        ) == frozenset(completed)
    # the cheap bound used for pausing never underestimates
    span = max(completed) - base
    assert bitset_metadata_len(span) >= len(text)
    assert bitset_metadata_len(span) == b64_len(sizes[Encoding.BITSET])


def test_encoding_choice_examples():
    base = 1000
    long_run = range(base + 2, base + 5000)
    assert base64.b64decode(encode_offset_map(base, long_run))[3] == Encoding.RUN_LENGTH
    every_other = range(base + 1, base + 400, 2)
    assert base64.b64decode(encode_offset_map(base, every_other))[3] == Encoding.BITSET


def test_offset_map_rejects_the_base_itself_and_foreign_metadata():
    with pytest.raises(ValueError):
        encode_offset_map(10, [10])
    for bad in (
        "hello world",
        "!!!",
        base64.b64encode(b"XX\x01\x01\x01\x01").decode(),
        base64.b64encode(b"KR\x02\x01\x01\x01").decode(),
        base64.b64encode(b"KR\x01\x07\x01").decode(),
        base64.b64encode(b"KR\x01\x01\x10\x01").decode(),  # 16 bits promised, 1 byte given
        base64.b64encode(b"KR\x01\x02\x03").decode(),
    ):  # run-length ending in an incomplete run
        with pytest.raises(OffsetMapError):
            decode_offset_map(0, bad)
    assert decode_offset_map(5, "") == frozenset() and decode_offset_map(5, None) == frozenset()


# ---------------------------------------------------------------------------
# budget


@SETTINGS
@given(st.integers(4, 100_000), st.integers(0, 200_000))
def test_budget_rules(max_bytes, length):
    verdict = judge(length, max_bytes)
    if length > max_bytes:
        assert verdict is BudgetVerdict.DROP
    elif length * 4 > 3 * max_bytes:
        assert verdict is BudgetVerdict.PAUSE
    else:
        assert verdict is BudgetVerdict.OK


def test_budget_defaults_are_offset_metadata_max_bytes():
    assert pause_threshold() == 3072
    assert judge(3072) is BudgetVerdict.OK and judge(3073) is BudgetVerdict.PAUSE
    assert judge(4096) is BudgetVerdict.PAUSE and judge(4097) is BudgetVerdict.DROP


# ---------------------------------------------------------------------------
# partition state


@SETTINGS
@given(
    st.integers(0, 1000),
    st.lists(st.integers(1, 3), min_size=1, max_size=120),
    st.randoms(use_true_random=False),
    st.floats(0, 1),
)
def test_partition_state_commit_point_and_restore(start, gaps, rnd, fraction):
    offsets = []
    o = start
    for g in gaps:
        offsets.append(o)
        o += g  # gaps: offsets Kafka never delivers
    state = PartitionState(start)
    for off in offsets:
        assert state.receive(off)
    done = set(rnd.sample(offsets, int(len(offsets) * fraction)))
    for off in rnd.sample(sorted(done), len(done)):
        state.complete(off)
    incomplete = [x for x in offsets if x not in done]
    expected_low = incomplete[0] if incomplete else offsets[-1] + 1
    above = [x for x in sorted(done) if x > expected_low]
    assert state.completed_above() == above
    lower, upper = state.map_len_bounds()  # the O(1) size bounds used after every completion
    assert lower <= len(encode_offset_map(expected_low, above)) <= upper
    point = state.commit_point()
    assert point.offset == expected_low == state.lowest_incomplete()
    assert decode_offset_map(point.offset, point.metadata) == frozenset(
        x for x in done if x > expected_low
    )
    # restart: the new owner skips exactly the completed records at or above the committed offset
    again = PartitionState(point.offset, decode_offset_map(point.offset, point.metadata))
    lower, upper = again.map_len_bounds()
    assert lower <= len(point.metadata) <= upper
    to_run = [x for x in offsets if x >= point.offset and again.receive(x)]
    assert to_run == [x for x in incomplete if x >= point.offset]
    # nothing completed is run again, nothing incomplete is skipped
    assert not set(to_run) & done and set(incomplete) <= set(to_run) | set(
        x for x in offsets if x < point.offset
    )


def test_restored_map_is_kept_until_passed():
    state = PartitionState(100, {103, 104, 107})
    assert state.commit_point().offset == 100
    assert decode_offset_map(100, state.commit_point().metadata) == {103, 104, 107}
    for off in (100, 101, 102):
        assert state.receive(off)
    assert not state.receive(103) and not state.receive(104)
    state.complete(101)
    assert state.commit_point().offset == 100
    state.complete(100)
    state.complete(102)
    point = state.commit_point()
    assert point.offset == 105 and decode_offset_map(105, point.metadata) == {107}
    assert state.receive(105) and state.receive(106) and not state.receive(107)
    state.complete(106)
    state.complete(105)
    assert state.commit_point().offset == 108 and state.commit_point().metadata == ""
    assert not state.receive(99)  # replays below are ignored


@st.composite
def restart_cases(draw):
    """A partition log with holes, a prior owner's commit (offset + completed map), and a seed for the run."""
    start = draw(st.integers(0, 40))
    gaps = draw(st.lists(st.sampled_from([1, 1, 1, 1, 2, 3]), min_size=1, max_size=70))
    log, o = [], start
    for g in gaps:
        log.append(o)
        o += g
    # mostly runs (a batch must be able to end inside one), some singles; holes may be in the map too
    runs = draw(st.lists(st.tuples(st.integers(1, o - start + 2), st.integers(1, 40)), max_size=4))
    singles = draw(st.sets(st.integers(1, o - start + 2), max_size=12))
    restored = {start + r + i for r, n in runs for i in range(n)} | {start + r for r in singles}
    return start, log, restored, draw(st.randoms(use_true_random=False))


def _check_commit_point(state, log, truth, known, done_here, incomplete, fetched_to):
    """The commit point is exact, and restarting from it neither loses nor repeats completed work."""
    point = state.commit_point()
    assert point.verdict is not BudgetVerdict.DROP
    low, meta = point.offset, decode_offset_map(point.offset, point.metadata)
    if incomplete:
        expected = min(incomplete)
    else:
        expected = fetched_to
        while expected in known:  # the restored map says the records ahead are done
            expected += 1
    assert low == expected == state.lowest_incomplete()
    assert meta == frozenset(
        o for o in known | done_here if o > low
    )  # exactly the completions above it
    assert meta <= truth and all(
        o in truth for o in log if o < low
    )  # nothing marked done wrongly, nothing lost
    lower, upper = state.map_len_bounds()
    assert lower <= len(point.metadata) <= upper
    # a second restart from this point refuses exactly the map and runs everything else from the point on
    again = PartitionState(low, meta)
    assert [o for o in log if o >= low and again.receive(o)] == [
        o for o in log if o >= low and o not in meta
    ]


@settings(max_examples=120, deadline=None)
@given(restart_cases())
def test_restarts_neither_lose_nor_repeat_completed_work(case):
    """Fetch batches of random size end anywhere (also inside the restored map), records complete in random
    order before the next batch or in between, and the partition restarts from a commit point now and then."""
    start, log, restored, rnd = case
    truth = set(restored) | set(range(start))  # work done by anybody so far
    committed, known = start, frozenset(restored)  # what the current owner was handed
    last_commit = (committed, known)
    for _generation in range(4):
        state = PartitionState(committed, known)
        todo = [o for o in log if o >= committed]
        accepted: list[int] = []
        done_here: set[int] = set()
        incomplete: set[int] = set()
        fetched_to, i, crashed = committed, 0, False

        def finish_one():
            o = rnd.choice(sorted(incomplete))
            incomplete.discard(o)
            state.complete(o)
            done_here.add(o)
            truth.add(o)

        while i < len(todo) or incomplete:
            for o in todo[i : i + rnd.randint(1, 8)]:  # one fetch batch, received record by record
                assert not state.rewinds(o)
                got = state.receive(o)
                assert got == (o not in known), (
                    f"offset {o}: accepted={got}, restored as done={o in known}"
                )
                fetched_to, i = o + 1, i + 1
                if got:
                    accepted.append(o)
                    incomplete.add(o)
                if incomplete and rnd.random() < 0.3:
                    finish_one()  # a worker finishes while the batch is still being received
                _check_commit_point(state, log, truth, known, done_here, incomplete, fetched_to)
            for _ in range(rnd.randint(0, len(incomplete))):  # more finish before the next batch
                finish_one()
                _check_commit_point(state, log, truth, known, done_here, incomplete, fetched_to)
            if rnd.random() < 0.5:
                point = state.commit_point()
                last_commit = (point.offset, decode_offset_map(point.offset, point.metadata))
            if (
                rnd.random() < 0.15
            ):  # crash: in-flight work is lost, the next owner starts from the last commit
                crashed = True
                break
        if not crashed:
            # every record not restored as done was accepted exactly once, in order
            assert accepted == [o for o in todo if o not in known]
            point = state.commit_point()
            last_commit = (point.offset, decode_offset_map(point.offset, point.metadata))
        committed, known = last_commit
    assert all(o in truth or o >= committed for o in log)


def test_a_batch_ending_inside_the_restored_map_does_not_rerun_it():
    # the records received so far all complete before the next fetch batch arrives
    state = PartitionState(5, {7})
    assert state.receive(5) and state.receive(6)
    state.complete(5)
    state.complete(6)
    assert state.commit_point().offset == 8 and state.commit_point().metadata == ""
    assert not state.rewinds(7) and not state.receive(7)
    assert state.receive(8) and state.commit_point().offset == 8
    state = PartitionState(3, range(4, 1200))
    assert all(state.receive(o) == (o == 3) for o in range(3, 503))  # one batch of 500
    state.complete(3)
    assert state.commit_point().offset == 1200
    assert not any(state.receive(o) for o in range(503, 1200))
    assert state.receive(1200) and state.commit_point().offset == 1200


def test_stale_or_unreceived_completions_are_ignored():
    state = PartitionState(0, {5})
    for o in range(4):
        state.receive(o)
    state.complete(0)
    state.complete(2)
    state.complete(0)  # again: already below the commit point
    state.complete(9)  # never received: marking it done would skip a record nobody ran
    state.complete(5)  # restored as done already
    point = state.commit_point()
    assert point.offset == 1 and decode_offset_map(1, point.metadata) == {2, 5}
    state.complete(1)
    state.complete(3)
    assert state.commit_point().offset == 4
    assert state.receive(4) and not state.receive(5) and state.receive(9)


def test_state_stops_taking_records_past_three_quarters_and_drops_past_budget():
    state = PartitionState(0, max_metadata_bytes=64)
    for off in range(2000):
        state.receive(off)
    # offset 0 is stuck; complete every other record above it (a bitset-friendly pattern)
    took = 0
    for off in range(2, 2000, 2):
        if not state.takes_new_records():
            break
        state.complete(off)
        took += 1
    point = state.commit_point()
    assert point.verdict is BudgetVerdict.PAUSE
    assert 48 < len(point.metadata) <= 64 and point.offset == 0
    # in-flight completions keep arriving: the map grows past the budget and is dropped
    for off in range(2 + 2 * took, 400, 2):
        state.complete(off)
    dropped = state.commit_point()
    assert dropped.verdict is BudgetVerdict.DROP and dropped.metadata == "" and dropped.offset == 0
    assert not state.takes_new_records()
    state.complete(0)  # the stuck record finishes, and the odd records below the last even one
    assert not state.takes_new_records()
    for off in range(1, 400, 2):
        state.complete(off)
    assert state.commit_point().offset == 400 and state.commit_point().metadata == ""
    assert state.takes_new_records()  # the map shrank


# ---------------------------------------------------------------------------
# scheduler


def _records(rnd: random.Random, n: int, partitions: int, keys: int) -> list[WorkItem]:
    next_off = [0] * partitions
    out = []
    for _ in range(n):
        p = rnd.randrange(partitions)
        k = rnd.randrange(keys)
        out.append(WorkItem("t", p, next_off[p], None if k == 0 else f"k{k}".encode()))
        next_off[p] += rnd.randint(1, 2)
    return out


@SETTINGS
@given(
    st.sampled_from(list(Ordering)),
    st.integers(0, 2**32),
    st.integers(1, 60),
    st.integers(1, 3),
    st.integers(1, 6),
    st.integers(1, 8),
)
def test_scheduler_keeps_order_within_shards_and_runs_everything_once(
    ordering, seed, n, partitions, keys, limit
):
    rnd = random.Random(seed)
    records = _records(rnd, n, partitions, keys)
    sched = Scheduler(ordering)
    pending = list(records)
    running: list[WorkItem] = []
    started: list[WorkItem] = []
    completed: list[WorkItem] = []
    now = 0.0
    for _ in range(10 * n + 50):
        if pending and rnd.random() < 0.5:
            for _ in range(rnd.randint(1, 5)):
                if pending:
                    sched.add(pending.pop(0))
        got = sched.take(limit - len(running), now)
        for item in got:
            key = shard_key(item, ordering)
            # at most one running per shard, and only the oldest unfinished record of its shard
            assert all(shard_key(r, ordering) != key for r in running)
            older = [
                r
                for r in records
                if shard_key(r, ordering) == key
                and r.offset < item.offset
                and r.partition == item.partition
            ]
            assert all(o in completed for o in older)
        running += got
        started += got
        if running and rnd.random() < 0.7:
            item = running.pop(rnd.randrange(len(running)))
            if rnd.random() < 0.2:
                assert sched.retry(item, now + rnd.choice([0.0, 1.0, 2.5]))
            else:
                assert sched.complete(item)
                completed.append(item)
        now += 0.5
        if not pending and not running and sched.buffered == 0:
            break
    # finish what is left
    while sched.buffered:
        now += 5.0
        got = sched.take(limit, now)
        assert got, "buffered records but nothing runnable"
        for item in got:
            assert sched.complete(item)
            completed.append(item)
        while running:
            item = running.pop()
            assert sched.complete(item)
            completed.append(item)
    assert sorted((c.partition, c.offset) for c in completed) == sorted(
        (r.partition, r.offset) for r in records
    )
    assert sched.running == 0
    if ordering is not Ordering.UNORDERED:
        for rec_a in records:
            for rec_b in records:
                if (
                    shard_key(rec_a, ordering) == shard_key(rec_b, ordering)
                    and rec_a.offset < rec_b.offset
                    and rec_a.partition == rec_b.partition
                ):
                    assert completed.index(rec_a) < completed.index(rec_b)


def test_a_failing_key_does_not_stall_other_keys():
    sched = Scheduler(Ordering.KEY)
    items = [WorkItem("t", 0, i, b"bad" if i % 3 == 0 else f"k{i}".encode()) for i in range(9)]
    for it in items:
        sched.add(it)
    first = sched.take(100, 0.0)
    assert [i.offset for i in first] == [0, 1, 2, 4, 5, 7, 8]  # one 'bad' record at a time
    assert sched.retry(items[0], 10.0)
    for it in first[1:]:
        sched.complete(it)
    assert sched.take(100, 5.0) == []  # the bad key waits for its retry time
    assert sched.take(100, 10.0) == [items[0]]  # and retries the same record first
    sched.complete(items[0])
    assert sched.take(100, 10.0) == [items[3]]


def test_partition_mode_is_serial_and_unordered_is_not():
    items = [WorkItem("t", 0, i, b"k") for i in range(5)]
    ser = Scheduler("partition")
    par = Scheduler("unordered")
    for it in items:
        ser.add(it)
        par.add(it)
    assert ser.take(10, 0) == [items[0]]
    assert par.take(10, 0) == items


def test_bounded_partition_only_starts_records_below_the_bound():
    sched = Scheduler(Ordering.UNORDERED)
    items = [WorkItem("t", 0, i) for i in range(10)]
    for it in items:
        sched.add(it)
    assert sched.take(3, 0, bound=lambda tp: 2) == items[:2]
    assert sched.take(3, 0, bound=lambda tp: 2) == []
    assert sched.take(3, 0, bound=lambda tp: None) == items[2:5]


def test_paused_partition_keeps_its_records_and_removal_forgets_them():
    sched = Scheduler(Ordering.KEY)
    a = [WorkItem("t", 0, i, f"a{i}".encode()) for i in range(3)]
    b = [WorkItem("t", 1, i, f"b{i}".encode()) for i in range(3)]
    for x, y in zip(a, b):
        sched.add(x)
        sched.add(y)
    got = sched.take(10, 0, bound=lambda tp: 0 if tp == ("t", 1) else None)
    assert got == a
    assert sched.buffered_in(("t", 1)) == 3
    running = sched.remove_partition(("t", 0))
    assert (
        sorted(running, key=lambda i: i.offset) == a and sched.buffered == 3 and sched.running == 0
    )
    assert not sched.complete(a[0])  # outcome of a removed partition is ignored
    assert sched.take(10, 0) == b
