"""The parallel consumer end to end, against an in-process consumer that follows confluent-kafka's `Consumer`.

`FakeBroker` keeps partition logs and a commit store that keeps commit
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
from confluent_kafka import TopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.kafka.parallel import OffsetMapDroppedWarning, ParallelConsumer
from kafka_rebalance.parallel import decode_offset_map

pytestmark = pytest.mark.timeout(60)

OFFSET_INVALID = -1001


class FakeMessage:
    __slots__ = ("_t", "_p", "_o", "_k", "_v")

    def __init__(self, topic, partition, offset, key, value):
        self._t, self._p, self._o, self._k, self._v = topic, partition, offset, key, value

    def topic(self):
        return self._t

    def partition(self):
        return self._p

    def offset(self):
        return self._o

    def key(self):
        return self._k

    def value(self):
        return self._v

    def error(self):
        return None

    def headers(self):
        return None

    def __repr__(self):
        return f"FakeMessage({self._t}-{self._p}@{self._o} key={self._k!r})"


class FakeBroker:
    """Partition logs, and commits kept the way Kafka's group coordinator keeps them.

    A commit goes through the coordinator's pure offset-store rules
    (`group.offsets.commit_offsets`: OFFSET_METADATA_TOO_LARGE past
    offset.metadata.max.bytes), is appended to a `__consumer_offsets` log in
    Kafka's record format (`group.records.encode_record`), and reads come from
    replaying that log (`rebuild_from_records`), as a new coordinator does
    after a failover: the metadata survives a restart only if the wire format
    carries it.
    """

    def __init__(self, offset_metadata_max_bytes: int = 4096) -> None:
        from kafka_rebalance.group.offset_messages import OffsetsConfig

        self.logs: dict[tuple[str, int], list[tuple[int, bytes | None, bytes]]] = defaultdict(list)
        self.next_offset: dict[tuple[str, int], int] = defaultdict(int)
        self.offsets_log: list[
            tuple[bytes, bytes | None]
        ] = []  # __consumer_offsets (key, value) bytes
        self.commit_log: list[tuple[str, str, int, int, str]] = []
        self.rejected: list[tuple[str, int, str]] = []
        self.config = OffsetsConfig(offset_metadata_max_bytes=offset_metadata_max_bytes)
        self.lock = threading.Lock()
        self.clock_ms = 0

    def produce(self, topic, partition, key, value, gap=0):
        tp = (topic, partition)
        with self.lock:
            off = self.next_offset[tp] + gap
            self.logs[tp].append((off, key, value))
            self.next_offset[tp] = off + 1
        return off

    def commit(self, group, offsets):
        """OffsetCommit from a consumer with manual assignment semantics (generation -1)."""
        from kafka_rebalance.group.offset_messages import OffsetCommitPartition, OffsetCommitRequest
        from kafka_rebalance.group.offsets import commit_offsets
        from kafka_rebalance.group.records import encode_record

        req = OffsetCommitRequest(
            group, tuple(OffsetCommitPartition(t, p, o, metadata=m) for t, p, o, m in offsets)
        )
        with self.lock:
            self.clock_ms += 1
            result = commit_offsets(None, req, self.clock_ms, self.config)
            for record in result.records:
                self.offsets_log.append(encode_record(record))
            for (t, p, o, m), (_tp, err) in zip(offsets, result.response.partitions):
                if err.name == "NONE":
                    self.commit_log.append((group, t, p, o, m))
                else:
                    self.rejected.append((t, p, err.name))
        return [err for _, err in result.response.partitions if err.name != "NONE"]

    def committed(self, group, topic, partition):
        """(offset, metadata) after replaying __consumer_offsets from its bytes, or None."""
        from kafka_rebalance.group.offsets import rebuild_from_records
        from kafka_rebalance.group.records import decode_record
        from kafka_rebalance.model import TopicPartition as TP

        with self.lock:
            log = list(self.offsets_log)
        rebuilt = rebuild_from_records(decode_record(k, v) for k, v in log)
        got = rebuilt.offsets.get(group, {}).get(TP(topic, partition))
        return None if got is None else (got.offset, got.metadata)


class FakeConsumer:
    """The subset of confluent_kafka.Consumer the parallel consumer uses."""

    def __init__(self, broker: FakeBroker, group: str, protocol: str = "cooperative") -> None:
        self.broker = broker
        self.group = group
        self.protocol = protocol
        self.callbacks = {}
        self.assigned: list[tuple[str, int]] = []
        self.position: dict[tuple[str, int], int] = {}
        self.paused: set[tuple[str, int]] = set()
        self.events: list[tuple[str, list[tuple[str, int]]]] = []
        self.lock = threading.Lock()
        self.closed = False
        self.consume_calls = 0

    # test controls: delivered inside the next consume(), as librdkafka serves callbacks in poll
    def assign_partitions(self, tps):
        with self.lock:
            if self.protocol == "eager" and self.assigned:
                self.events.append(("revoke", list(self.assigned)))
                self.events.append(("assign", sorted(set(self.assigned) | set(tps))))
            else:
                self.events.append(("assign", list(tps)))

    def revoke_partitions(self, tps):
        with self.lock:
            if self.protocol == "eager":
                keep = [tp for tp in self.assigned if tp not in tps]
                self.events.append(("revoke", list(self.assigned)))
                self.events.append(("assign", keep))
            else:
                self.events.append(("revoke", list(tps)))

    def lose_partitions(self, tps):
        with self.lock:
            self.events.append(("lost", list(tps)))

    # confluent_kafka.Consumer interface
    def subscribe(self, topics, on_assign=None, on_revoke=None, on_lost=None):
        self.topics = list(topics)
        self.callbacks = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost}

    def _serve_events(self):
        while True:
            with self.lock:
                if not self.events:
                    return
                kind, tps = self.events.pop(0)
            parts = [TopicPartition(t, p) for t, p in tps]
            cb = self.callbacks.get(kind)
            if kind == "assign":
                if cb:
                    cb(self, parts)
                for tp in tps:
                    if tp not in self.assigned:
                        self.assigned.append(tp)
                        got = self.broker.committed(self.group, *tp)
                        self.position[tp] = got[0] if got else 0
            else:
                if cb:
                    cb(self, parts)
                for tp in tps:
                    if tp in self.assigned:
                        self.assigned.remove(tp)
                    self.position.pop(tp, None)
                    self.paused.discard(tp)

    def consume(self, num_messages=1, timeout=-1):
        assert not self.closed
        self.consume_calls += 1
        self._serve_events()
        out = []
        with self.broker.lock:
            for tp in list(self.assigned):
                if tp in self.paused:
                    continue
                pos = self.position[tp]
                for off, key, value in self.broker.logs.get(tp, ()):
                    if len(out) >= num_messages:
                        break
                    if off >= pos:
                        out.append(FakeMessage(tp[0], tp[1], off, key, value))
                        pos = off + 1
                self.position[tp] = pos
        if not out and timeout and timeout > 0:
            time.sleep(min(timeout, 0.005))
        return out

    def commit(self, message=None, offsets=None, asynchronous=True):
        assert offsets is not None
        errors = self.broker.commit(
            self.group, [(tp.topic, tp.partition, tp.offset, tp.metadata or "") for tp in offsets]
        )
        if errors:
            from confluent_kafka import KafkaException

            raise KafkaException(f"commit failed: {errors}")
        return None

    def committed(self, partitions, timeout=None):
        out = []
        for tp in partitions:
            got = self.broker.committed(self.group, tp.topic, tp.partition)
            if got is None:
                out.append(TopicPartition(tp.topic, tp.partition, OFFSET_INVALID))
            else:
                out.append(TopicPartition(tp.topic, tp.partition, got[0], got[1]))
        return out

    def pause(self, partitions):
        self.paused.update((p.topic, p.partition) for p in partitions)

    def resume(self, partitions):
        for p in partitions:
            self.paused.discard((p.topic, p.partition))

    def assignment(self):
        return [TopicPartition(t, p) for t, p in self.assigned]

    def close(self):
        self.closed = True


# ---------------------------------------------------------------------------
# helpers


def wait_until(cond, timeout=20.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.005)
    raise AssertionError(f"timed out waiting for {what}")


class Runner:
    """Runs a ParallelConsumer's loop in a thread; stop() joins it."""

    def __init__(self, pc: ParallelConsumer) -> None:
        self.pc = pc
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            self.pc.run(timeout_s=50)
        except BaseException as exc:
            self.error = exc

    def stop(self):
        self.pc.stop()
        self.thread.join(timeout=20)
        assert not self.thread.is_alive()
        if self.error:
            raise self.error


class Recorder:
    """A user function that records starts/ends and how many ran at once."""

    def __init__(self, hold=None):
        self.lock = threading.Lock()
        self.events: list[tuple[str, tuple[str, int, int], bytes | None]] = []
        self.running = 0
        self.max_running = 0
        self.done: list[tuple[str, int, int]] = []
        self.hold = hold  # optional f(msg) -> threading.Event to wait on

    def __call__(self, msg):
        rid = (msg.topic(), msg.partition(), msg.offset())
        with self.lock:
            self.running += 1
            self.max_running = max(self.max_running, self.running)
            self.events.append(("start", rid, msg.key()))
        try:
            if self.hold is not None:
                ev = self.hold(msg)
                if ev is not None:
                    assert ev.wait(20), f"{rid} held too long"
            else:
                time.sleep(0.0005)
        finally:
            with self.lock:
                self.running -= 1
                self.events.append(("end", rid, msg.key()))
                self.done.append(rid)


def produce_keyed(broker, topic, partitions, n, keys, gap_every=0):
    out = []
    for i in range(n):
        p = i % partitions
        key = None if keys == 0 else f"k{i % keys}".encode()
        gap = 1 if gap_every and i % gap_every == gap_every - 1 else 0
        off = broker.produce(topic, p, key, f"v{i}".encode(), gap=gap)
        out.append((topic, p, off, key))
    return out


def check_order(events, shard_of):
    """Within a shard, records start only after the previous one ended, in offset order."""
    running: dict = {}
    last: dict = {}
    for kind, rid, key in events:
        shard = shard_of(rid, key)
        if kind == "start":
            assert shard not in running, (
                f"{rid} started while {running.get(shard)} of the same shard ran"
            )
            assert last.get(shard, -1) < rid[2], f"{rid} ran out of order"
            running[shard] = rid
            last[shard] = rid[2]
        else:
            running.pop(shard, None)


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


# ---------------------------------------------------------------------------
# backpressure and the metadata budget


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
