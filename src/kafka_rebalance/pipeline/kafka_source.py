"""Reading Kafka from Spark without the connector jar: a PySpark Python Data Source on confluent-kafka.

    register(spark)
    df = (spark.read.format("kafka-rebalance-kafka")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "__consumer_offsets")
          .option("startingOffsets", "earliest")      # earliest | latest | {"topic": {"0": 42}}
          .option("endingOffsets", "latest")          # latest | {"topic": {"0": 100}}
          .option("maxRecordsPerTask", "100000")      # split big partitions into several tasks
          .load())

The rows have the schema of Spark's Kafka source (key, value, topic,
partition, offset, timestamp, timestampType), so the jobs take this frame or
the official connector's alike. Offsets are resolved on the driver (watermarks
per partition); each Spark task reads one offset range [start, end) with its
own consumer (no group, no commits) and stops at `end`, so a batch read is a
fixed snapshot. Like Spark's options, -2 means earliest and -1 latest in JSON.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

NAME = "kafka-rebalance-kafka"
SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
    "timestampType int"
)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class OffsetRange(InputPartition):
    topic: str
    partition: int
    start: int
    end: int  # exclusive

    def __init__(self, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__(f"{topic}-{partition}[{start},{end})")
        self.topic, self.partition, self.start, self.end = topic, partition, start, end


def _conf(options: dict[str, str]) -> dict[str, Any]:
    servers = (
        options.get("kafka.bootstrap.servers")
        or options.get("bootstrap.servers")
        or options.get("bootstrap_servers")
    )
    if not servers:
        raise ValueError(f"{NAME}: option 'kafka.bootstrap.servers' is required")
    conf: dict[str, Any] = {
        "bootstrap.servers": servers,
        "group.id": f"kafka-rebalance-reader-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
    }
    for k, v in options.items():  # pass other kafka.* options to the client, as Spark's source does
        if k.startswith("kafka.") and k != "kafka.bootstrap.servers":
            conf[k[len("kafka.") :]] = v
    return conf


def _spec(value: str | None, topic: str, partition: int, default: str) -> int | str:
    """An offset spec for one partition: 'earliest', 'latest' or an absolute offset."""
    value = value or default
    if value in ("earliest", "latest"):
        return value
    try:
        doc = json.loads(value)
    except json.JSONDecodeError:
        raise ValueError(
            f"{NAME}: offsets must be earliest, latest or JSON, got {value!r}"
        ) from None
    v = doc.get(topic, {}).get(str(partition))
    if v is None:
        return default
    return {-2: "earliest", -1: "latest"}.get(int(v), int(v))


def plan_ranges(options: dict[str, str]) -> list[OffsetRange]:
    """Resolve the topic's partitions and offsets into task ranges (driver side)."""
    from confluent_kafka import Consumer, TopicPartition

    topic = options.get("subscribe") or options.get("topic")
    if not topic:
        raise ValueError(f"{NAME}: option 'subscribe' (or 'topic') is required")
    per_task = int(options.get("maxrecordspertask", "0") or 0)
    timeout = float(options.get("timeoutms", "10000")) / 1000.0
    consumer = Consumer(_conf(options))
    try:
        md = consumer.list_topics(topic, timeout=timeout)
        t = md.topics.get(topic)
        if t is None or t.error is not None:
            raise ValueError(
                f"{NAME}: topic {topic!r} not found ({t.error if t is not None else 'no metadata'})"
            )
        ranges = []
        for p in sorted(t.partitions):
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, p), timeout=timeout, cached=False
            )
            resolve = {"earliest": low, "latest": high}
            s = _spec(options.get("startingoffsets"), topic, p, "earliest")
            e = _spec(options.get("endingoffsets"), topic, p, "latest")
            start = resolve[s] if isinstance(s, str) else max(low, s)
            end = resolve[e] if isinstance(e, str) else min(high, e)
            if end <= start:
                continue
            step = per_task if per_task > 0 else end - start
            for a in range(start, end, step):
                ranges.append(OffsetRange(topic, p, a, min(end, a + step)))
        return ranges
    finally:
        consumer.close()


def read_range(options: dict[str, str], r: OffsetRange) -> Iterator[tuple]:
    """Read [start, end) of one partition (task side); fails if the broker stops short of `end`."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    idle_limit = float(options.get("timeoutms", "10000")) / 1000.0
    consumer = Consumer(_conf(options))
    try:
        consumer.assign([TopicPartition(r.topic, r.partition, r.start)])
        next_offset = r.start
        idle = 0.0
        while next_offset < r.end:
            msg = consumer.poll(0.5)
            if msg is None:
                idle += 0.5
                if idle >= idle_limit:
                    raise TimeoutError(
                        f"{NAME}: {r.topic}-{r.partition} stopped at offset {next_offset}, expected up to {r.end}"
                    )
                continue
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    if msg.offset() >= r.end:
                        break
                    continue  # short of `end`: keep polling until the idle limit
                raise RuntimeError(f"{NAME}: {err}")
            idle = 0.0
            off = msg.offset()
            if off >= r.end:
                break
            if off < next_offset:
                continue
            ts_type, ts_ms = msg.timestamp()
            ts = (
                datetime.fromtimestamp(ts_ms / 1000.0, tz=UTC)
                if ts_ms is not None and ts_ms >= 0
                else None
            )
            yield (msg.key(), msg.value(), r.topic, r.partition, off, ts, _timestamp_type(ts_type))
            next_offset = off + 1  # compacted topics skip offsets: follow what the broker gives
    finally:
        consumer.close()


def _timestamp_type(t: int) -> int:
    """confluent-kafka's TIMESTAMP_CREATE_TIME=1 / LOG_APPEND_TIME=2 -> Kafka's 0 / 1, as Spark reports."""
    return {1: 0, 2: 1}.get(t, -1)


class KafkaReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.options = {
            str(k).lower(): v for k, v in dict(options).items()
        }  # Spark options ignore case

    def partitions(self) -> list[InputPartition]:
        ranges: list[InputPartition] = [*plan_ranges(self.options)]
        return ranges or [OffsetRange("", -1, 0, 0)]

    def read(self, partition: InputPartition) -> Iterator[tuple]:
        assert isinstance(partition, OffsetRange)  # partitions() hands out nothing else
        if partition.end <= partition.start:
            return iter(())
        return read_range(self.options, partition)


class KafkaRebalanceKafkaSource(DataSource):
    """`spark.read.format("kafka-rebalance-kafka")`: a topic's records in Spark's Kafka-source schema."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema) -> DataSourceReader:
        return KafkaReader(self.options)


def register(spark) -> None:
    spark.dataSource.register(KafkaRebalanceKafkaSource)


def read_topic(
    spark,
    bootstrap: str,
    topic: str,
    starting: str = "earliest",
    ending: str = "latest",
    max_records_per_task: int = 0,
):
    """The DataFrame of a topic's records (registers the source first)."""
    register(spark)
    reader = (
        spark.read.format(NAME)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", starting)
        .option("endingOffsets", ending)
    )
    if max_records_per_task:
        reader = reader.option("maxRecordsPerTask", str(max_records_per_task))
    return reader.load()
