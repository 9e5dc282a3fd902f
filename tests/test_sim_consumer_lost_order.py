"""A fenced KIP-848 member's `lost` row lists its partitions in (topic, partition) order, the same in
every process (review 11 F2). They come from a frozenset of TopicPartitions, whose iteration order
follows the topic string's hash, i.e. PYTHONHASHSEED: the event log of one seeded scenario differed
between processes. Kafka hands onPartitionsLost a SortedSet (ConsumerRebalanceListenerInvoker.
invokePartitionsLost, TOPIC_PARTITION_COMPARATOR), so sorted is also Kafka's order."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from kafka_rebalance.sim.api import simulate_scenario
from kafka_rebalance.sim.scenario import parse_simulation_scenario

# drawn by the reviewer's generator (seed 11, scenario 53): a leave and a fast rolling restart under
# 300 ms of jitter fence members with partitions
DOC: dict[str, Any] = {
    "name": "fenced-lost-order",
    "seed": 277582,
    "duration_ms": 240000,
    "protocol": "consumer",
    "group": {
        "id": "g",
        "heartbeat_interval_ms": 500,
        "session_timeout_ms": 45000,
        "max_poll_interval_ms": 20000,
    },
    "topics": [{"name": "t", "partitions": 28, "produce_rate": 0.3}],
    "members": {"count": 13, "processing_ms_per_record": 1.0},
    "network": {"latency_ms": 2, "jitter_ms": 300},
    "simulation": {"poll_idle_ms": 100, "lag_sample_ms": 60000},
    "events": [
        {"at_ms": 8108, "kind": "leave", "member": "m1"},
        {"at_ms": 46718, "kind": "rolling_restart", "down_ms": 50, "every_ms": 500},
    ],
}

_CHILD = """
import json, sys
from kafka_rebalance.sim.api import simulate_scenario
from kafka_rebalance.sim.scenario import parse_simulation_scenario
res = simulate_scenario(parse_simulation_scenario(json.loads(sys.argv[1])))
print(json.dumps([res.events, res.summary], sort_keys=True, default=str))
"""


def _lost_fenced(events: list[dict[str, Any]]) -> list[list[str]]:
    lost = [e for e in events if e.get("kind") == "lost"]
    return [e["partitions"] for e in lost if json.loads(e["detail"]).get("reason") == "fenced"]


def test_a_fenced_members_lost_partitions_are_in_topic_partition_order() -> None:
    res = simulate_scenario(parse_simulation_scenario(DOC))
    rows = _lost_fenced(res.events)
    assert any(len(r) > 1 for r in rows), rows  # the scenario fences a member holding several

    def key(name: str) -> tuple[str, int]:
        topic, _, partition = name.rpartition("-")
        return topic, int(partition)

    for r in rows:
        assert r == sorted(r, key=key)


def test_the_event_log_is_the_same_under_two_hash_seeds() -> None:
    outs = []
    for seed in ("0", "1"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, json.dumps(DOC)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        outs.append(done.stdout)
    assert outs[0] == outs[1]
