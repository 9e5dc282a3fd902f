"""The real-broker fixture gives a working 3-broker cluster and Kafka's own tools."""

from __future__ import annotations

import uuid


def test_cluster_has_three_brokers_and_tools_work(real_kafka) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    topic = f"fixture-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=real_kafka.bootstrap, client_id="fixture-test")
    try:
        brokers = admin.describe_cluster()["brokers"]
        assert sorted(b["node_id"] for b in brokers) == [1, 2, 3]
        admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3)])
    finally:
        admin.close()
    if real_kafka.home is None:
        return
    out = real_kafka.tool(
        "kafka-topics.sh",
        "--bootstrap-server",
        real_kafka.bootstrap,
        "--describe",
        "--topic",
        topic,
    )
    lines = [ln for ln in out.stdout.splitlines() if f"Topic: {topic}\tPartition:" in ln]
    assert len(lines) == 3
    assert all("Replicas:" in ln and "Isr:" in ln for ln in lines)
