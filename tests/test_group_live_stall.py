"""`kafka-rebalance group lag` on the real broker with Burrow's window (intervals=3): a consumer that
keeps up is OK; one whose commit stays put with lag over 3 samples is STALL (its group ERR); once
it leaves, STOP when the time since its last commit exceeds the window's span."""

from __future__ import annotations

import time

from group_live import LiveConsumers, wait_for
from group_live_cli import (
    RUN,
)


def test_stalled_consumer_turns_stall_then_stop_within_burrows_window(real_kafka):
    """intervals=3: OK while keeping up; STALL (group ERR) once 3 samples show the same commit with lag;
    after the consumer leaves, STOP once the time since the last commit exceeds the window's span."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafka_rebalance.kafka.group_lag import LagMonitor
    from kafka_rebalance.kafka.groups import GroupAdmin
    from kafka_rebalance.pipeline.burrow import BurrowConfig, Status

    b = real_kafka.bootstrap
    topic, group = f"gs-{RUN}", f"g-stall-{RUN}"
    topic_admin = AdminClient({"bootstrap.servers": b})
    for f in topic_admin.create_topics([NewTopic(topic, 1, 1)]).values():
        f.result()
    prod = Producer({"bootstrap.servers": b})
    for _i in range(5):
        prod.produce(topic, b"x")
    prod.flush()
    c = LiveConsumers(b)
    pause = c.pausable(group, topic)
    try:
        with GroupAdmin(b) as admin:
            wait_for(
                lambda: sum(admin.committed(group).values()) == 5,
                timeout=60,
                what="the consumer caught up",
            )
            monitor = LagMonitor(admin, (group,), BurrowConfig(intervals=3))

            def step() -> tuple[Status, Status]:
                monitor.sample(int(time.time() * 1000))
                g = monitor.evaluate()[0]
                return g.status, g.partitions[0].status

            for _ in range(3):
                assert step() == (Status.OK, Status.OK)
                time.sleep(0.3)
            pause.set()
            time.sleep(1.0)
            for _i in range(10):
                prod.produce(topic, b"y")
            prod.flush()
            seen = [step()]
            for _ in range(3):
                time.sleep(0.3)
                seen.append(step())
            # the ring still holds a caught-up commit for two samples, then only the stalled one
            assert seen[0] == (Status.OK, Status.OK) and seen[1] == (Status.OK, Status.OK)
            assert seen[2] == (Status.ERR, Status.STALL), seen
            c.stop(group)
            wait_for(
                lambda: admin.describe([group])[group].state == "Empty",
                timeout=30,
                what="group Empty",
            )
            store = next(iter(monitor.stores.values()))
            span_ms = store.commits[-1].timestamp - store.commits[0].timestamp
            time.sleep(span_ms / 1000 + 1.5)
            assert step() == (Status.ERR, Status.STOP)
    finally:
        c.stop_all()
