"""Parallel consumer benchmark: Confluent parallel-consumer's README workload, in Python.

10,000 records on one partition, each taking a seeded random 0-4 ms
(`nextInt(0, 5)` in parallel-consumer's LoadTest: "random delay between 0,5"),
for ordering partition / key (1, 2, 5, 10, 20, 10,000 keys) / unordered.
max_concurrency = 16: the README's run used the default options, whose thread
pool was 16 threads (`numberOfThreads = 16`; its `maxConcurrency = 100` then
bounded records in flight, which 16 threads cap anyway).

Records come from an in-process consumer with confluent-kafka's `Consumer`
interface (all records available at once), so the numbers measure the
parallel consumer, not a broker; `--bootstrap-server` runs the same workload through a
real Kafka cluster with confluent-kafka instead, timed from the first record
(group join excluded).

    .venv/bin/python bench/parallel.py [--records 10000] [--repeat 1] [--bootstrap-server HOST:PORT] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from pathlib import Path

from kafka_rebalance.kafka.parallel import ParallelConsumer

JAVA_SECONDS = {
    ("partition", None): 22.221,
    ("key", 1): 26.743,
    ("key", 2): 13.576,
    ("key", 5): 5.916,
    ("key", 10): 3.310,
    ("key", 20): 2.242,
    ("key", 10_000): 2.13,
    ("unordered", None): 2.83,
}
CASES = [
    ("partition", None),
    ("key", 1),
    ("key", 2),
    ("key", 5),
    ("key", 10),
    ("key", 20),
    ("key", 10_000),
    ("unordered", None),
]


class _Msg:
    __slots__ = ("_o", "_k", "_v")

    def __init__(self, offset: int, key: bytes, value: bytes) -> None:
        self._o, self._k, self._v = offset, key, value

    def topic(self) -> str:
        return "bench"

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._o

    def key(self) -> bytes:
        return self._k

    def value(self) -> bytes:
        return self._v

    def error(self) -> None:
        return None


class InMemoryConsumer:
    """confluent_kafka.Consumer's shape over one in-memory partition; commits kept in a dict."""

    def __init__(self, messages: list[_Msg]) -> None:
        self.messages = messages
        self.pos = 0
        self.callbacks: dict = {}
        self.assigned = False
        self.paused = False
        self.commits: dict = {}

    def subscribe(self, topics, on_assign=None, on_revoke=None, on_lost=None) -> None:
        self.callbacks = {"assign": on_assign}

    def consume(self, num_messages=1, timeout=-1):
        if not self.assigned:
            from confluent_kafka import TopicPartition

            self.assigned = True
            self.callbacks["assign"](self, [TopicPartition("bench", 0)])
        if self.paused or self.pos >= len(self.messages):
            if timeout and timeout > 0:
                time.sleep(min(timeout, 0.001))
            return []
        out = self.messages[self.pos : self.pos + num_messages]
        self.pos += len(out)
        return out

    def committed(self, partitions, timeout=None):
        from confluent_kafka import TopicPartition

        return [TopicPartition(p.topic, p.partition, -1001) for p in partitions]

    def commit(self, offsets=None, asynchronous=True, message=None):
        for tp in offsets or ():
            self.commits[(tp.topic, tp.partition)] = (tp.offset, tp.metadata)

    def pause(self, partitions) -> None:
        self.paused = True

    def resume(self, partitions) -> None:
        self.paused = False

    def close(self) -> None:
        pass


def workload(n: int, keys: int | None, seed: int) -> tuple[list[tuple[bytes, float]], list[float]]:
    rnd = random.Random(seed)
    delays = [rnd.randrange(0, 5) / 1000.0 for _ in range(n)]  # Java's nextInt(0, 5) ms
    nkeys = keys or 20
    recs = [(f"key-{rnd.randrange(nkeys)}".encode(), d) for d in delays]
    return recs, delays


def run_case(
    ordering: str,
    keys: int | None,
    n: int,
    seed: int,
    max_concurrency: int,
    bootstrap: str | None = None,
) -> float:
    recs, delays = workload(n, keys, seed)
    done = [0]
    first: list[float] = []
    lock = threading.Lock()

    def fn(msg) -> None:
        if not first:
            first.append(time.perf_counter())
        time.sleep(delays[int(msg.value())])
        with lock:
            done[0] += 1

    if bootstrap is None:
        consumer = InMemoryConsumer([_Msg(i, k, str(i).encode()) for i, (k, _) in enumerate(recs)])
    else:
        consumer = _broker_consumer(bootstrap, recs)
    pc = ParallelConsumer(
        consumer,
        ["bench"],
        fn,
        ordering=ordering,
        max_concurrency=max_concurrency,
        commit_interval_s=1.0,
    )
    start = time.perf_counter()
    pc.run(until=lambda: done[0] >= n)
    # from the first record on: group join and broker startup are not the library's throughput
    elapsed = time.perf_counter() - (first[0] if bootstrap is not None else start)
    pc.close()
    if bootstrap is not None:
        consumer.close()
    return elapsed


def serial_floor(n: int, seed: int) -> tuple[float, float]:
    """(seconds, sum of delays): the same sleeps in a plain loop, what one thread per partition costs here."""
    _, delays = workload(n, None, seed)
    start = time.perf_counter()
    for d in delays:
        time.sleep(d)
    return time.perf_counter() - start, sum(delays)


def _broker_consumer(bootstrap: str, recs: list[tuple[bytes, float]]):
    import uuid

    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(topic, 1, 1)]).values():
        fut.result(30)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i, (key, _) in enumerate(recs):
        producer.produce(topic, key=key, value=str(i).encode(), partition=0)
        producer.poll(0)
    producer.flush(60)
    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{topic}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 2000,
            "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 500,
        }
    )

    class Renamed:
        """Subscribes the bench topic name to the real topic."""

        def __getattr__(self, name):
            return getattr(consumer, name)

        def subscribe(self, topics, **kw):
            consumer.subscribe([topic], **kw)

    return Renamed()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=1, help="best of N runs per case")
    ap.add_argument("--max-concurrency", type=int, default=16)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT",
        default=None,
        help="through a real Kafka cluster instead of in-memory (e.g. $KAFKA_BOOTSTRAP from "
        "../shared/kafka/start-kafka.sh)",
    )
    ap.add_argument("--only", default=None, help="comma list like partition,key:5,unordered")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    cases = CASES
    if args.only:
        want = set(args.only.split(","))
        cases = [c for c in CASES if (c[0] if c[1] is None else f"{c[0]}:{c[1]}") in want]
    bootstrap = args.bootstrap_server
    rows = []
    for ordering, keys in cases:
        times = [
            run_case(ordering, keys, args.records, args.seed, args.max_concurrency, bootstrap)
            for _ in range(args.repeat)
        ]
        best = min(times)
        java = JAVA_SECONDS[(ordering, keys)] * args.records / 10_000
        rows.append(
            {
                "ordering": ordering,
                "keys": keys,
                "seconds": round(best, 3),
                "java_seconds": java,
                "ratio_vs_java": round(best / java, 3),
            }
        )
        label = ordering if keys is None else f"{ordering} ({keys} keys)"
        print(
            f"{label:<22} {best:8.2f} s   Java {java:6.2f} s   ratio {best / java:5.2f}",
            file=sys.stderr,
        )
    floor, ideal = serial_floor(args.records, args.seed)
    print(
        f"plain serial loop of the same sleeps: {floor:.2f} s (sum of delays {ideal:.2f} s)",
        file=sys.stderr,
    )
    doc = {
        "records": args.records,
        "max_concurrency": args.max_concurrency,
        "seed": args.seed,
        "source": "kafka" if bootstrap else "in-memory",
        "cases": rows,
        "serial_loop_seconds": round(floor, 3),
        "sum_of_delays_seconds": round(ideal, 3),
    }
    if args.json:
        args.json.write_text(json.dumps(doc, indent=2))
    print(json.dumps(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
