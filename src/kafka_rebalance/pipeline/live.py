"""A live Kafka cluster as the lag job's source: commits from `__consumer_offsets`, end offsets now.

The commits are the offsets job's (every offset commit in the topic, decoded
with the same codecs, so Burrow sees each group's commit history with its
commit times); the log-end offsets are one sample per partition of the
committed topics, taken from the brokers when the job starts (the high
watermark, as `kafka-consumer-groups.sh --describe` shows it).
"""

from __future__ import annotations

import time
from typing import Any

from ..errors import RuntimeFailure

LEO_DDL = "ts timestamp, topic string, partition int, log_end_offset long"


def live_commits(spark, bootstrap: str, topic: str = "__consumer_offsets"):
    """Every offset commit in `topic` (commits.parquet's columns), read once and kept in memory."""
    from .kafka_source import read_topic
    from .offsets_decode import decode
    from .offsets_tables import commits_of

    commits = commits_of(decode(read_topic(spark, bootstrap, topic))).persist()
    commits.count()
    return commits


def end_offsets(bootstrap: str, topics: list[str], timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """Each partition's log-end offset (high watermark) of `topics` that exist, now."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        meta = admin.list_topics(timeout=timeout_s)
    except Exception as exc:
        raise RuntimeFailure(f"{bootstrap}: cannot reach the cluster: {exc}") from None
    wanted = {
        TopicPartition(t, p): OffsetSpec.latest()
        for t in topics
        if t in meta.topics and meta.topics[t].error is None
        for p in meta.topics[t].partitions
    }
    if not wanted:
        return []
    now_ms = int(time.time() * 1000)
    rows = []
    for tp, fut in admin.list_offsets(wanted, request_timeout=timeout_s).items():
        info = fut.result(timeout=timeout_s)
        rows.append(
            {"ts_ms": now_ms, "topic": tp.topic, "partition": tp.partition, "offset": info.offset}
        )
    return rows


def live_log_end(spark, bootstrap: str, commits):
    """The log-end samples (LEO_DDL) of the topics `commits` names."""
    from datetime import UTC, datetime

    topics = sorted(r[0] for r in commits.select("topic").distinct().collect())
    rows = [
        (
            datetime.fromtimestamp(r["ts_ms"] / 1000, UTC),
            r["topic"],
            r["partition"],
            r["offset"],
        )
        for r in end_offsets(bootstrap, topics)
    ]
    return spark.createDataFrame(rows, LEO_DDL)
