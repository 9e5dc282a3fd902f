"""The in-process Kafka that the parallel consumer's tests run against: `FakeBroker` keeps partition
logs and a commit store that keeps commit metadata (as a real broker does, see
test_parallel_live.py); `FakeConsumer` follows confluent-kafka's `Consumer` and serves rebalance
callbacks from inside `consume()`, as librdkafka does, with eager or cooperative semantics;
`Runner` polls a consumer on a thread, `Recorder` notes what the handlers ran."""

from __future__ import annotations

import threading
import time
from collections import defaultdict

from confluent_kafka import TopicPartition

from kafka_rebalance.kafka.parallel import ParallelConsumer

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
