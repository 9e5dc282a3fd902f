"""The Python data source against a real Kafka-protocol broker (real_kafka), and the offsets job on its frame."""

from __future__ import annotations

import pytest

from kafka_rebalance.group.records import encode_record, offset_commit_record

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kafka_rebalance.pipeline.kafka_source import NAME, read_topic, register  # noqa: E402
from kafka_rebalance.pipeline.offsets import run_offsets  # noqa: E402

pytestmark = pytest.mark.timeout(240)


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics(
        # records carry 2023 timestamps: without retention.ms=-1 the broker's time-based retention
        # (checked every 5 min) deletes them while the session's cluster is still in use
        [
            NewTopic(
                name,
                num_partitions=partitions,
                replication_factor=1,
                config={"retention.ms": "-1"},
            )
        ],
        request_timeout=20,
    ).values():
        fut.result(timeout=30)


def produce(
    bootstrap: str, topic: str, records: list[tuple[int, bytes | None, bytes | None, int]]
) -> None:
    producer = ck.Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 0,
            "batch.num.messages": 1,
            "enable.idempotence": False,
            "acks": "all",
        }
    )
    errors: list = []
    for partition, key, value, ts in records:
        producer.produce(
            topic,
            key=key,
            value=value,
            partition=partition,
            timestamp=ts,
            on_delivery=lambda err, msg: errors.append(err) if err else None,
        )
        producer.flush(10)
    assert not errors, errors


@pytest.fixture(scope="module")
def topic(real_kafka):
    name = "h8-source"
    create_topic(real_kafka.bootstrap, name, 3)
    recs = [(i % 3, f"k{i}".encode(), f"v{i}".encode(), 1_700_000_000_000 + i) for i in range(15)]
    recs.append((0, None, None, 1_700_000_001_000))  # null key and value come through as nulls
    produce(real_kafka.bootstrap, name, recs)
    return name


def test_reads_all_partitions_in_kafka_source_schema(spark, real_kafka, topic):
    df = read_topic(spark, real_kafka.bootstrap, topic)
    assert [f.name for f in df.schema.fields] == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
    ]
    rows = df.collect()
    assert len(rows) == 16
    by = {(r["partition"], r["offset"]): r for r in rows}
    assert sorted(by) == [(0, o) for o in range(6)] + [(p, o) for p in (1, 2) for o in range(5)]
    assert bytes(by[(1, 0)]["key"]) == b"k1" and bytes(by[(1, 0)]["value"]) == b"v1"
    assert by[(0, 5)]["key"] is None and by[(0, 5)]["value"] is None
    assert by[(2, 4)]["timestamp"].timestamp() == pytest.approx(1_700_000_000.014)
    assert {r["topic"] for r in rows} == {topic}


def test_offset_ranges_split_across_tasks(spark, real_kafka, topic):
    register(spark)
    df = (
        spark.read.format(NAME)
        .option("kafka.bootstrap.servers", real_kafka.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", '{"h8-source": {"0": 2}}')
        .option("endingOffsets", '{"h8-source": {"1": 3}}')
        .option("maxRecordsPerTask", "2")
        .load()
    )
    # partition 0: [2, 6) in 2 tasks; 1: [0, 3) in 2; 2: [0, 5) in 3
    assert df.rdd.getNumPartitions() == 7
    got = sorted((r["partition"], r["offset"]) for r in df.select("partition", "offset").collect())
    assert got == [(0, 2), (0, 3), (0, 4), (0, 5), (1, 0), (1, 1), (1, 2)] + [
        (2, o) for o in range(5)
    ]


def test_offsets_job_on_the_source_frame(spark, real_kafka, tmp_path):
    name = "h8-offsets"
    create_topic(real_kafka.bootstrap, name, 1)
    recs = []
    for i in range(4):
        k, v = encode_record(
            offset_commit_record(
                "g", "orders", i % 2, 100 + i, commit_timestamp=1_700_000_000_000 + i
            )
        )
        recs.append((0, k, v, 1_700_000_000_000 + i))
    recs.append((0, b"\x00", b"\x00\x03", 1_700_000_000_100))  # truncated key: quarantined
    produce(real_kafka.bootstrap, name, recs)
    summary = run_offsets(
        spark, None, str(tmp_path / "out"), source_df=read_topic(spark, real_kafka.bootstrap, name)
    )
    assert (
        summary["records"],
        summary["commits"],
        summary["latest_offsets"],
        summary["quarantined"],
    ) == (5, 4, 2, 1)
