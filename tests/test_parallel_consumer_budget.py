"""The parallel consumer (tests/parallel_fakes.py's in-process consumer) under load: backpressure
bounds the buffered records, the commit metadata budget pauses a partition and drops an oversized
offset map with a warning, every commit stays within the coordinator's limit, a failing
dead-letter callback loses nothing, and random workloads and handovers run each record exactly
once, in order."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.kafka.parallel import OffsetMapDroppedWarning, ParallelConsumer
from parallel_fakes import (
    FakeBroker,
    FakeConsumer,
    Recorder,
    Runner,
    produce_keyed,
    wait_until,
)

pytestmark = pytest.mark.timeout(60)


def test_backpressure_bounds_buffered_records():
    broker = FakeBroker()
    produce_keyed(broker, "t", 2, 400, keys=0)
    release = threading.Event()
    rec = Recorder(hold=lambda m: release)
    c = FakeConsumer(broker, "g")
    pc = ParallelConsumer(
        c, ["t"], rec, ordering="partition", max_buffered_records=25, fetch_batch=10
    )
    c.assign_partitions([("t", 0), ("t", 1)])
    r = Runner(pc)
    wait_until(lambda: pc.buffered >= 25 and c.paused, what="buffer to fill")
    calls = c.consume_calls
    wait_until(lambda: c.consume_calls > calls + 5, what="the loop to keep polling while paused")
    assert pc.buffered <= 26
    release.set()
    wait_until(lambda: len(rec.done) == 400, what="all records")
    r.stop()
    pc.close()
    assert pc.stats.max_buffered_seen <= 26 and pc.stats.paused_for_backpressure >= 1


def test_budget_pauses_the_partition_and_drops_an_oversized_map_with_a_warning():
    broker = FakeBroker()
    produce_keyed(broker, "t", 1, 200, keys=0)
    release_even = threading.Event()
    rec = Recorder(hold=lambda m: release_even if m.offset() % 2 == 0 else None)
    c = FakeConsumer(broker, "g")
    # 50 run at once; the odd ones finish: a 12-character map, past a 10-byte budget
    pc = ParallelConsumer(
        c,
        ["t"],
        rec,
        ordering="unordered",
        max_concurrency=50,
        max_metadata_bytes=10,
        commit_interval_s=0.02,
    )
    c.assign_partitions([("t", 0)])
    with pytest.warns(OffsetMapDroppedWarning, match="offset.metadata.max.bytes=10"):
        r = Runner(pc)
        wait_until(lambda: len(rec.done) == 25, what="the odd records")
        wait_until(lambda: pc.stats.maps_dropped >= 1, what="a dropped map")
    time.sleep(0.1)
    started = [rid for k, rid, _ in rec.events if k == "start"]
    assert (
        len(started) == 50
    )  # the partition took no new records while its map was over 3/4 of the budget
    assert broker.committed("g", "t", 0) == (0, "")  # offset alone: the map did not fit
    release_even.set()
    wait_until(lambda: len(rec.done) == 200, what="all records once the map shrank")
    wait_until(lambda: broker.committed("g", "t", 0) == (200, ""), what="final commit")
    r.stop()
    pc.close()


def test_a_retried_record_still_runs_while_the_budget_pauses_its_partition():
    """Paused by the budget, a partition still runs records below its highest completed one (the retry).

    Key order: the failing record's key (every 12th offset) leaves a hole in the map every 12 offsets.
    """
    broker = FakeBroker()
    produce_keyed(broker, "t", 1, 120, keys=12)
    attempts = defaultdict(int)
    done: list[int] = []
    before_zero: list[int] = []

    def fn(msg):
        attempts[msg.offset()] += 1
        if msg.offset() == 0 and attempts[0] <= 3:
            raise RuntimeError("not yet")
        if msg.offset() == 0:
            before_zero.append(len(done))
        done.append(msg.offset())

    c = FakeConsumer(broker, "g")
    pc = ParallelConsumer(
        c,
        ["t"],
        fn,
        ordering="key",
        max_metadata_bytes=16,
        retry_delay=0.05,
        commit_interval_s=0.01,
        max_concurrency=4,
    )
    c.assign_partitions([("t", 0)])
    r = Runner(pc)
    wait_until(lambda: len(done) == 120, what="every record, the retried one included")
    wait_until(lambda: broker.committed("g", "t", 0) == (120, ""), what="final commit")
    r.stop()
    pc.close()
    assert attempts[0] == 4
    # while offset 0 was failing the partition stopped taking new records: a 16-byte map spans
    # about 30 offsets, far fewer than the ~110 records that could otherwise have completed
    assert before_zero and before_zero[0] < 50
    assert any(m for _, _, _, _, m in broker.commit_log)  # maps were committed meanwhile


def test_default_budget_keeps_every_commit_within_the_coordinators_limit():
    """4096-byte budget against the coordinator's OFFSET_METADATA_TOO_LARGE rule, with a worst-case map.

    Two alternating keys, the first record stuck: every other offset completes, a bitset with a hole
    every other bit. The partition stops taking records past 3/4 of the budget; no commit is refused.
    """
    broker = FakeBroker()
    assert (
        broker.commit("probe", [("t", 9, 0, "x" * 4097)]) != []
    )  # the store does enforce the limit
    n = 24_000
    for i in range(n):
        broker.produce("t", 0, b"a" if i % 2 == 0 else b"b", b"")
    release = threading.Event()
    done = [0]

    def fn(msg):
        if msg.offset() == 0 and not release.is_set():
            raise RuntimeError("stuck")
        done[0] += 1

    c = FakeConsumer(broker, "g")
    pc = ParallelConsumer(
        c, ["t"], fn, retry_delay=0.01, commit_interval_s=0.02, max_buffered_records=n
    )
    c.assign_partitions([("t", 0)])
    r = Runner(pc)
    wait_until(
        lambda: any(len(m) > 3072 for g, _, _, _, m in broker.commit_log if g == "g"),
        timeout=40,
        what="a map past 3/4 of the budget",
    )
    wait_until(
        lambda: pc.state_of("t", 0) is not None and not pc.state_of("t", 0).takes_new_records(),
        what="the partition to stop taking records",
    )
    before = done[0]
    time.sleep(0.2)
    assert done[0] == before < n // 2  # paused: nothing new ran
    release.set()
    wait_until(lambda: done[0] == n, timeout=40, what="everything after the stuck record succeeded")
    wait_until(lambda: broker.committed("g", "t", 0) == (n, ""), what="final commit")
    r.stop()
    pc.close()
    assert not [x for x in broker.rejected if x[0] == "t" and x[1] == 0]
    assert max(len(m) for g, _, _, _, m in broker.commit_log if g == "g") <= 4096


def test_a_failing_dead_letter_callback_loses_nothing():
    broker = FakeBroker()
    produce_keyed(broker, "t", 1, 6, keys=0)
    calls = []

    def dead_letter(msg, exc):
        calls.append(msg.offset())
        if len(calls) == 1:
            raise OSError("dead-letter topic unavailable")

    def fn(msg):
        if msg.offset() == 2:
            raise ValueError("poison")

    c = FakeConsumer(broker, "g")
    pc = ParallelConsumer(
        c,
        ["t"],
        fn,
        ordering="partition",
        retry_delay=0.0,
        max_attempts=2,
        dead_letter=dead_letter,
        commit_interval_s=0.01,
    )
    c.assign_partitions([("t", 0)])
    r = Runner(pc)
    wait_until(lambda: broker.committed("g", "t", 0) == (6, ""), what="everything committed")
    r.stop()
    pc.close()
    assert calls == [2, 2] and pc.stats.dead_lettered == 1
    assert pc.stats.processed == 5


@settings(max_examples=12, deadline=None)
@given(
    st.sampled_from(["key", "partition", "unordered"]),
    st.integers(10, 60),
    st.integers(1, 3),
    st.integers(1, 5),
    st.integers(1, 6),
    st.randoms(use_true_random=False),
    st.booleans(),
)
def test_random_workloads_run_each_record_once_in_order(
    ordering, n, partitions, keys, concurrency, rnd, use_async
):
    broker = FakeBroker()
    records = produce_keyed(broker, "t", partitions, n, keys=keys, gap_every=7)
    failing = {(p, o): rnd.randint(1, 2) for _, p, o, _ in rnd.sample(records, min(5, n))}
    lock = threading.Lock()
    attempts: dict = defaultdict(int)
    successes: list = []

    def record(msg):
        rid = (msg.partition(), msg.offset())
        with lock:
            attempts[rid] += 1
            if attempts[rid] <= failing.get(rid, 0):
                raise RuntimeError("transient")
            successes.append((msg.partition(), msg.key(), msg.offset()))

    if use_async:

        async def fn(msg):
            await asyncio.sleep(0)
            record(msg)
    else:
        fn = record
    c = FakeConsumer(broker, "g")
    pc = ParallelConsumer(
        c,
        ["t"],
        fn,
        ordering=ordering,
        max_concurrency=concurrency,
        retry_delay=0.0,
        commit_interval_s=0.01,
        max_buffered_records=rnd.randint(5, 50),
        fetch_batch=7,
    )
    c.assign_partitions([("t", p) for p in range(partitions)])
    r = Runner(pc)
    wait_until(lambda: len(successes) >= n, what="every record")
    r.stop()
    pc.close()
    assert sorted((p, o) for p, _, o in successes) == sorted((p, o) for _, p, o, _ in records)
    if ordering != "unordered":
        for p in range(partitions):
            for key in {k for _, _, _, k in records}:
                shard = [
                    o for pp, k, o in successes if pp == p and (ordering == "partition" or k == key)
                ]
                assert shard == sorted(shard)
    for p in range(partitions):
        last = max(o for _, pp, o, _ in records if pp == p)
        assert broker.committed("g", "t", p) == (last + 1, "")


@settings(max_examples=10, deadline=None)
@given(
    st.sampled_from(["key", "partition", "unordered"]),
    st.sampled_from(["cooperative", "eager"]),
    st.integers(2, 3),
    st.integers(0, 60),
    st.randoms(use_true_random=False),
)
def test_random_handover_processes_every_record_exactly_once(
    ordering, protocol, partitions, switch_after, rnd
):
    """Revoke a random subset mid-run and hand it to a second member: with the map kept, exactly once."""
    broker = FakeBroker()
    records = produce_keyed(broker, "t", partitions, 90, keys=4, gap_every=5)
    lock = threading.Lock()
    successes: list[tuple[str, int, int]] = []

    def handler(name):
        def fn(msg):
            time.sleep(0.0005)
            if rnd_fail.get((msg.partition(), msg.offset())):
                with lock:
                    rnd_fail[(msg.partition(), msg.offset())] -= 1
                raise RuntimeError("transient")
            with lock:
                successes.append((name, msg.partition(), msg.offset()))

        return fn

    rnd_fail = {(p, o): 1 for _, p, o, _ in rnd.sample(records, 6)}
    ca, cb = FakeConsumer(broker, "g", protocol), FakeConsumer(broker, "g", protocol)
    a = ParallelConsumer(
        ca,
        ["t"],
        handler("a"),
        ordering=ordering,
        max_concurrency=4,
        retry_delay=0.0,
        commit_interval_s=0.01,
    )
    b = ParallelConsumer(
        cb,
        ["t"],
        handler("b"),
        ordering=ordering,
        max_concurrency=4,
        retry_delay=0.0,
        commit_interval_s=0.01,
    )
    all_tps = [("t", p) for p in range(partitions)]
    moved = sorted(rnd.sample(all_tps, rnd.randint(1, partitions - 1)))
    ca.assign_partitions(all_tps)
    ra = Runner(a)
    wait_until(lambda: len(successes) >= min(switch_after, 80), what="some progress")
    ca.revoke_partitions(moved)
    wait_until(lambda: not set(moved) & set(a.assigned), what="revocation")
    cb.assign_partitions(moved)
    rb = Runner(b)
    wait_until(lambda: len({(p, o) for _, p, o in successes}) >= len(records), what="every record")
    time.sleep(0.02)
    ra.stop()
    rb.stop()
    a.close()
    b.close()
    ran = sorted((p, o) for _, p, o in successes)
    assert ran == sorted(
        (p, o) for _, p, o, _ in records
    )  # each exactly once: none lost, none repeated
    for _, p in moved:  # the new owner committed the end of what it took over
        assert broker.committed("g", "t", p)[0] == max(o for _, pp, o, _ in records if pp == p) + 1
