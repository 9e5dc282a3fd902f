"""The parallel consumer's live path: confluent-kafka against the real Kafka cluster (real_kafka).

Asserted against the broker: the group join through confluent-kafka, fetching, key ordering under
concurrency, committed offsets (the lowest incomplete offset, pinned at a stuck record) and the
completed-offsets map in the commit metadata, read back from `__consumer_offsets` and used on restart
so that records completed past the stuck one do not run again.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from kafka_rebalance.kafka.parallel import ParallelConsumer

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

pytestmark = pytest.mark.timeout(180)


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=partitions, replication_factor=1)], request_timeout=20
    )
    for fut in futures.values():
        fut.result(timeout=30)


def produce(
    bootstrap: str, topic: str, records: list[tuple[int, bytes, bytes]]
) -> dict[tuple[int, bytes], int]:
    """Returns (partition, value) -> offset from the delivery reports."""
    producer = ck.Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "enable.idempotence": False,
            "acks": "all",
        }
    )
    offsets: dict[tuple[int, bytes], int] = {}
    errors: list = []

    def report(err, msg):
        if err is not None:
            errors.append(err)
        else:
            offsets[(msg.partition(), msg.value())] = msg.offset()

    for partition, key, value in records:
        producer.produce(topic, value=value, key=key, partition=partition, on_delivery=report)
    producer.flush(30)
    assert not errors, errors
    return offsets


def make_consumer(bootstrap: str, group: str) -> ck.Consumer:
    return ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 500,
            "topic.metadata.refresh.interval.ms": 2000,
        }
    )


def committed(
    bootstrap: str, group: str, topic: str, partitions: int
) -> dict[int, tuple[int, str | None]]:
    probe = make_consumer(bootstrap, group)
    try:
        got = probe.committed([ck.TopicPartition(topic, p) for p in range(partitions)], timeout=20)
        return {tp.partition: (tp.offset, tp.metadata) for tp in got}
    finally:
        probe.close()


def run_until(pc: ParallelConsumer, cond, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    pc.run(until=lambda: cond() or time.monotonic() > deadline)
    assert cond(), "the parallel consumer did not finish in time"


def test_live_key_ordered_processing_and_commits(real_kafka):
    topic = f"par-{uuid.uuid4().hex[:8]}"
    create_topic(real_kafka.bootstrap, topic, 2)
    records = [(i % 2, f"k{i % 5}".encode(), f"v{i}".encode()) for i in range(60)]
    offsets = produce(real_kafka.bootstrap, topic, records)
    lock = threading.Lock()
    running: dict[tuple[int, bytes], int] = {}
    seen: list[tuple[int, bytes, int]] = []
    overlap = []
    concurrent = {"now": 0, "max": 0}

    def fn(msg):
        shard = (msg.partition(), msg.key())
        with lock:
            if shard in running:
                overlap.append((shard, msg.offset()))
            running[shard] = msg.offset()
            concurrent["now"] += 1
            concurrent["max"] = max(concurrent["max"], concurrent["now"])
        time.sleep(0.002)
        with lock:
            del running[shard]
            concurrent["now"] -= 1
            seen.append((msg.partition(), msg.key(), msg.offset()))

    consumer = make_consumer(real_kafka.bootstrap, f"g-{topic}")
    pc = ParallelConsumer(consumer, [topic], fn, max_concurrency=8, commit_interval_s=0.2)
    try:
        run_until(pc, lambda: len(seen) >= len(records))
        pc.close()
    finally:
        consumer.close()
    assert not overlap
    assert sorted((p, o) for p, _, o in seen) == sorted((p, o) for (p, _), o in offsets.items())
    for p in range(2):
        for key in {k for _, k, _ in records}:
            offs = [o for pp, k, o in seen if pp == p and k == key]
            assert offs == sorted(offs), f"key {key!r} of partition {p} ran out of order"
    assert concurrent["max"] > 1
    got = committed(real_kafka.bootstrap, f"g-{topic}", topic, 2)
    for p in range(2):
        assert got[p][0] == max(o for (pp, _), o in offsets.items() if pp == p) + 1


def test_live_commit_is_pinned_at_a_stuck_record(real_kafka):
    topic = f"par-stuck-{uuid.uuid4().hex[:8]}"
    create_topic(real_kafka.bootstrap, topic, 1)
    records = [(0, f"k{i % 4}".encode(), f"v{i}".encode()) for i in range(24)]
    offsets = produce(real_kafka.bootstrap, topic, records)
    stuck = offsets[(0, b"v5")]  # key k1; k1's later records queue behind it
    blocked = {offsets[(0, v)] for _, k, v in records if k == b"k1" and offsets[(0, v)] >= stuck}
    done: list[int] = []

    def fn(msg):
        if msg.offset() == stuck:
            raise TimeoutError("stuck")
        done.append(msg.offset())

    group = f"g-{topic}"
    consumer = make_consumer(real_kafka.bootstrap, group)
    pc = ParallelConsumer(consumer, [topic], fn, retry_delay=0.05, commit_interval_s=0.1)

    try:
        run_until(pc, lambda: len(done) == len(records) - len(blocked))
        point = pc.state_of(topic, 0).commit_point()
        pc.commit()
        pc.close(commit=False)
    finally:
        consumer.close()
    assert (
        point.offset == stuck and point.metadata != ""
    )  # we did send a map of the completed records
    got = committed(real_kafka.bootstrap, group, topic, 1)
    assert got[0][0] == stuck  # the broker holds the committed offset pinned at the stuck record
    assert got[0][1] == point.metadata  # the broker keeps the completed-offsets map

    # restart: the map says which records past the stuck one are done: only the rest run again
    again: list[int] = []
    consumer2 = make_consumer(real_kafka.bootstrap, group)
    pc2 = ParallelConsumer(
        consumer2, [topic], lambda m: again.append(m.offset()), commit_interval_s=0.1
    )
    try:
        run_until(pc2, lambda: set(again) >= blocked)
        pc2.close()
    finally:
        consumer2.close()
    assert sorted(set(done) | set(again)) == sorted(offsets.values())
    assert min(again) == stuck and not set(again) & set(done)
    assert committed(real_kafka.bootstrap, group, topic, 1)[0][0] == max(offsets.values()) + 1


class RecordingConsumer:
    """A confluent Consumer whose commits are recorded (offset and metadata as sent)."""

    def __init__(self, consumer, log):
        self._consumer = consumer
        self._log = log

    def __getattr__(self, name):
        return getattr(self._consumer, name)

    def commit(self, *args, offsets=None, **kw):
        for tp in offsets or ():
            self._log.append((tp.partition, tp.offset, tp.metadata or ""))
        return self._consumer.commit(*args, offsets=offsets, **kw)


def test_live_eager_rebalance_between_two_parallel_consumers(real_kafka):
    """A second member joins: the first revokes (eager), waits for its running records, commits.

    Nothing is lost. Records processed twice can only be ones the revoking commit listed as completed
    in its metadata map (the broker keeps the map, so those are normally skipped).
    """
    from kafka_rebalance.parallel import decode_offset_map

    topic = f"par-reb-{uuid.uuid4().hex[:8]}"
    create_topic(real_kafka.bootstrap, topic, 4)
    records = [(i % 4, f"k{i % 10}".encode(), f"v{i}".encode()) for i in range(240)]
    offsets = produce(real_kafka.bootstrap, topic, records)
    group = f"g-{topic}"
    lock = threading.Lock()
    seen: list[tuple[str, int, int]] = []
    commits: list[tuple[int, int, str]] = []

    def handler(name):
        def fn(msg):
            time.sleep(0.01)
            with lock:
                seen.append((name, msg.partition(), msg.offset()))

        return fn

    everything = {(p, o) for (p, _), o in offsets.items()}
    covered = lambda: {(p, o) for _, p, o in list(seen)} >= everything  # noqa: E731
    consumers = {name: make_consumer(real_kafka.bootstrap, group) for name in ("a", "b")}
    pcs = {
        name: ParallelConsumer(
            RecordingConsumer(c, commits),
            [topic],
            handler(name),
            max_concurrency=4,
            commit_interval_s=0.2,
            max_buffered_records=40,
            fetch_batch=10,
        )
        for name, c in consumers.items()
    }
    deadline = time.monotonic() + 90
    threads = {
        name: threading.Thread(
            target=pc.run,
            kwargs={"until": lambda: covered() or time.monotonic() > deadline},
            daemon=True,
        )
        for name, pc in pcs.items()
    }
    try:
        threads["a"].start()
        while time.monotonic() < deadline and len(seen) < 30:
            time.sleep(0.05)
        threads["b"].start()
        for t in threads.values():
            t.join(timeout=100)
        assert covered(), "records were lost"
        for pc in pcs.values():
            pc.close()
    finally:
        for pc in pcs.values():
            pc.stop()
        for c in consumers.values():
            c.close()
    assert pcs["a"].stats.revocations, "the first member never revoked"
    assert any(n == "b" for n, _, _ in seen), "the second member never got partitions"
    counts: dict[tuple[int, int], int] = {}
    for _, p, o in seen:
        counts[(p, o)] = counts.get((p, o), 0) + 1
    for (p, o), n in counts.items():
        if n > 1:
            assert any(
                cp == p and co < o and o in decode_offset_map(co, meta) for cp, co, meta in commits
            ), f"{p}@{o} ran twice without having been committed as completed in a map"
