"""The parallel consumer end to end, against an in-process consumer that follows confluent-kafka's `Consumer`.

`FakeBroker` (tests/parallel_fakes.py) keeps partition logs and a commit store that keeps commit
metadata (as a real Kafka broker does, see
test_parallel_live.py). `FakeConsumer` serves rebalance callbacks from inside
`consume()`, as librdkafka does, with eager or cooperative semantics.
Fast unit-level coverage; the same consumer also runs under the simulator's
Kafka client (real group coordinator, `__consumer_offsets` records) in
test_parallel_under_sim.py.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict

import pytest

from kafka_rebalance.kafka.parallel import ParallelConsumer
from kafka_rebalance.parallel import decode_offset_map
from parallel_fakes import (
    FakeBroker,
    FakeConsumer,
    Recorder,
    Runner,
    check_order,
    produce_keyed,
    wait_until,
)

pytestmark = pytest.mark.timeout(60)


# ---------------------------------------------------------------------------
# ordering modes


@pytest.mark.parametrize(
    "ordering,shard_of",
    [
        ("key", lambda rid, key: (rid[0], rid[1], key)),
        ("partition", lambda rid, key: (rid[0], rid[1])),
    ],
)
def test_ordered_modes_keep_order_and_run_concurrently(ordering, shard_of):
    broker = FakeBroker()
    records = produce_keyed(broker, "t", 3, 300, keys=7, gap_every=10)
    consumer = FakeConsumer(broker, "g")
    rec = Recorder()
    pc = ParallelConsumer(
        consumer, ["t"], rec, ordering=ordering, max_concurrency=8, commit_interval_s=0.05
    )
    consumer.assign_partitions([("t", 0), ("t", 1), ("t", 2)])
    runner = Runner(pc)
    wait_until(lambda: len(rec.done) == len(records), what="all records")
    runner.stop()
    pc.close()
    check_order(rec.events, shard_of)
    assert sorted(rec.done) == sorted((t, p, o) for t, p, o, _ in records)
    assert rec.max_running > 1  # more than one record at a time, from the same three partitions
    for p in range(3):
        last = max(o for t, pp, o, _ in records if pp == p)
        assert broker.committed("g", "t", p) == (last + 1, "")


def test_key_mode_runs_many_keys_of_one_partition_at_once():
    broker = FakeBroker()
    produce_keyed(broker, "t", 1, 8, keys=8)
    barrier = threading.Barrier(8, timeout=15)
    consumer = FakeConsumer(broker, "g")
    pc = ParallelConsumer(consumer, ["t"], lambda m: barrier.wait(), max_concurrency=8)
    consumer.assign_partitions([("t", 0)])
    runner = Runner(pc)
    wait_until(
        lambda: pc.stats.processed == 8, what="8 records"
    )  # only possible with 8 running at once
    runner.stop()
    pc.close()
    assert not barrier.broken


def test_unordered_runs_everything_once_and_async_functions_work():
    broker = FakeBroker()
    records = produce_keyed(broker, "t", 2, 200, keys=1)
    seen: list[tuple[int, int]] = []
    gate = {"running": 0, "max": 0}

    async def fn(msg):
        gate["running"] += 1
        gate["max"] = max(gate["max"], gate["running"])
        await asyncio.sleep(0.001)
        gate["running"] -= 1
        seen.append((msg.partition(), msg.offset()))

    consumer = FakeConsumer(broker, "g")
    pc = ParallelConsumer(consumer, ["t"], fn, ordering="unordered", max_concurrency=16)
    consumer.assign_partitions([("t", 0), ("t", 1)])
    runner = Runner(pc)
    wait_until(lambda: len(seen) == 200, what="all records")
    runner.stop()
    pc.close()
    assert sorted(seen) == sorted((p, o) for _, p, o, _ in records)
    assert 1 < gate["max"] <= 16
    assert broker.committed("g", "t", 0) == (100, "") and broker.committed("g", "t", 1) == (100, "")


# ---------------------------------------------------------------------------
# retries, dead letters


def test_retries_with_delay_function_do_not_stall_other_keys():
    broker = FakeBroker()
    produce_keyed(broker, "t", 1, 40, keys=4)  # offset 0 has key k0
    attempts = defaultdict(int)
    delays = []
    order = []

    def fn(msg):
        attempts[msg.offset()] += 1
        if msg.offset() == 0 and attempts[0] < 3:
            raise RuntimeError("flaky")
        order.append(msg.offset())

    def delay(attempt, exc):
        delays.append((attempt, str(exc)))
        return 0.05

    consumer = FakeConsumer(broker, "g")
    pc = ParallelConsumer(consumer, ["t"], fn, retry_delay=delay, max_concurrency=4)
    consumer.assign_partitions([("t", 0)])
    runner = Runner(pc)
    wait_until(lambda: len(order) == 40, what="all records")
    runner.stop()
    pc.close()
    assert attempts[0] == 3 and delays == [(1, "flaky"), (2, "flaky")]
    k0 = [o for o in order if o % 4 == 0]
    assert k0 == sorted(k0)  # key order kept through retries
    assert order.index(0) > order.index(1)  # other keys went ahead while k0 waited
    assert pc.stats.retries == 2 and pc.stats.failures == 2
    assert broker.committed("g", "t", 0) == (40, "")


def test_max_attempts_then_dead_letter_and_commit_moves_past():
    broker = FakeBroker()
    produce_keyed(broker, "t", 1, 10, keys=2)
    dead = []
    consumer = FakeConsumer(broker, "g")

    def fn(msg):
        if msg.offset() == 4:
            raise ValueError("poison")

    pc = ParallelConsumer(
        consumer,
        ["t"],
        fn,
        retry_delay=0.0,
        max_attempts=3,
        dead_letter=lambda m, e: dead.append((m.offset(), repr(e))),
    )
    consumer.assign_partitions([("t", 0)])
    runner = Runner(pc)
    wait_until(lambda: pc.stats.processed + pc.stats.dead_lettered == 10, what="records")
    runner.stop()
    pc.close()
    assert dead == [(4, "ValueError('poison')")]
    assert pc.stats.failures == 3
    assert broker.committed("g", "t", 0) == (10, "")


# ---------------------------------------------------------------------------
# commits, crash and restart


def test_crash_and_restart_with_one_stuck_record():
    """Committed offset pinned at the stuck record; nothing completed runs again; nothing is lost.

    Key ordering (the default): records of the stuck record's key queue behind
    it; every other key completes. A restart runs exactly the stuck key's rest.
    """
    broker = FakeBroker()
    records = produce_keyed(broker, "t", 1, 300, keys=10, gap_every=17)
    offsets = [o for _, _, o, _ in records]
    stuck = offsets[37]
    stuck_key = records[37][3]
    blocked = [o for _, _, o, k in records if k == stuck_key and o >= stuck]
    first_run: list[int] = []

    def fn1(msg):
        if msg.offset() == stuck:
            raise TimeoutError("downstream is down")  # retried forever (no max_attempts)
        first_run.append(msg.offset())

    c1 = FakeConsumer(broker, "g")
    pc1 = ParallelConsumer(
        c1, ["t"], fn1, retry_delay=0.02, commit_interval_s=0.02, max_concurrency=8
    )
    c1.assign_partitions([("t", 0)])
    r1 = Runner(pc1)
    wait_until(
        lambda: len(first_run) == len(offsets) - len(blocked), what="every key but the stuck one"
    )
    done = set(first_run)
    assert done == set(offsets) - set(blocked)
    wait_until(
        lambda: (
            broker.committed("g", "t", 0) is not None
            and decode_offset_map(stuck, broker.committed("g", "t", 0)[1])
            == {o for o in done if o > stuck}
        ),
        what="a commit covering every completion",
    )
    assert pc1.stats.retries >= 1
    r1.stop()
    pc1.close(commit=False)  # the crash: no final commit, the process is gone
    committed_offset, metadata = broker.committed("g", "t", 0)
    assert committed_offset == stuck
    assert decode_offset_map(stuck, metadata) == {
        o for o in offsets if o > stuck and o not in blocked
    }

    second_run: list[int] = []
    c2 = FakeConsumer(broker, "g")
    pc2 = ParallelConsumer(
        c2, ["t"], lambda m: second_run.append(m.offset()), commit_interval_s=0.02
    )
    c2.assign_partitions([("t", 0)])
    r2 = Runner(pc2)
    wait_until(lambda: len(second_run) == len(blocked), what="the restart to process the stuck key")
    wait_until(
        lambda: broker.committed("g", "t", 0) == (offsets[-1] + 1, ""), what="the final commit"
    )
    r2.stop()
    pc2.close()
    assert second_run == blocked  # nothing completed is processed again
    assert pc2.stats.skipped_completed == len([o for o in offsets if o > stuck]) - len(blocked) + 1
    assert sorted(first_run + second_run) == sorted(offsets)  # nothing is lost


@pytest.mark.parametrize("protocol", ["cooperative", "eager"])
def test_revocation_waits_for_in_flight_work_and_commits(protocol):
    broker = FakeBroker()
    produce_keyed(broker, "t", 2, 40, keys=4)
    release = threading.Event()
    rec = Recorder(hold=lambda m: release if (m.partition(), m.offset()) == (1, 3) else None)
    c1 = FakeConsumer(broker, "g", protocol=protocol)
    pc1 = ParallelConsumer(c1, ["t"], rec, max_concurrency=4, commit_interval_s=10)
    c1.assign_partitions([("t", 0), ("t", 1)])
    r1 = Runner(pc1)
    wait_until(
        lambda: ("t", 1, 3) in [rid for k, rid, _ in rec.events if k == "start"],
        what="held record running",
    )
    wait_until(lambda: len(rec.done) >= 30, what="the other records")
    c1.revoke_partitions([("t", 1)])
    time.sleep(0.1)
    assert ("t", 1) in pc1.assigned  # the revocation callback is still waiting for the held record
    release.set()
    wait_until(lambda: ("t", 1) not in pc1.assigned, what="revocation to finish")
    # the held record completed before the commit that the revocation made
    assert ("t", 1, 3) in rec.done
    done_p1 = {o for t, p, o in rec.done if p == 1}
    committed, metadata = broker.committed("g", "t", 1)
    assert set(range(committed)) <= done_p1
    assert decode_offset_map(committed, metadata) == {o for o in done_p1 if o > committed}
    # the next owner takes over without repeating anything
    c2 = FakeConsumer(broker, "g", protocol=protocol)
    rec2 = Recorder()
    pc2 = ParallelConsumer(c2, ["t"], rec2)
    c2.assign_partitions([("t", 1)])
    r2 = Runner(pc2)
    wait_until(lambda: len(done_p1) + len(rec2.done) == 20, what="the rest of partition 1")
    r2.stop()
    r1.stop()
    pc1.close()
    pc2.close()
    assert not done_p1 & {o for _, _, o in rec2.done}
    if protocol == "eager":
        assert pc1.stats.revocations[0] == [
            ("t", 0),
            ("t", 1),
        ]  # eager revokes everything, then reassigns
        assert ("t", 0) in pc1.assigned


def test_lost_partitions_are_not_committed_and_cancel_mode_cancels_async_work():
    broker = FakeBroker()
    produce_keyed(broker, "t", 2, 20, keys=0)
    started = threading.Event()
    cancelled = []

    async def fn(msg):
        if msg.partition() == 1 and msg.offset() == 2:
            started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.append(msg.offset())
                raise

    c = FakeConsumer(broker, "g")
    pc = ParallelConsumer(
        c, ["t"], fn, ordering="unordered", in_flight_on_revoke="cancel", commit_interval_s=0.02
    )
    c.assign_partitions([("t", 0), ("t", 1)])
    r = Runner(pc)
    assert started.wait(10)
    wait_until(
        lambda: broker.committed("g", "t", 1) is not None and broker.committed("g", "t", 1)[0] == 2,
        what="partition 1 committed up to the held record",
    )
    c.revoke_partitions([("t", 1)])
    wait_until(lambda: ("t", 1) not in pc.assigned, what="revocation")
    wait_until(lambda: cancelled == [2], what="cancellation")
    committed, metadata = broker.committed("g", "t", 1)
    assert committed == 2 and decode_offset_map(2, metadata) == set(range(3, 10))
    # now lose partition 0: nothing is committed for it
    c.lose_partitions([("t", 0)])
    wait_until(lambda: ("t", 0) not in pc.assigned, what="loss")
    lost_commits = len([x for x in broker.commit_log if x[2] == 0])
    time.sleep(0.1)
    assert len([x for x in broker.commit_log if x[2] == 0]) == lost_commits
    r.stop()
    pc.close()
    assert pc.stats.abandoned >= 1
