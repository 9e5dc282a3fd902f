"""Regenerate the generated inputs under examples/ (deterministic: fixed seeds, fixed start time).

    .venv/bin/python scripts/make-examples.py

Hand-written inputs (group.yaml, the scenarios, sweep-grid.yaml) are not touched. Generated:
- cluster.json: 6 brokers on 3 racks after a rolling restart (leaders skewed) plus an empty
  seventh broker, 36 partitions with loads (docs/formats.md section 3);
- telemetry/metric_samples.parquet: 6 hours of 10-minute samples of that cluster (section 4);
- telemetry/consumer_offsets.parquet, telemetry/log_end_offsets.parquet: what a crash.yaml
  run of the simulator commits to `__consumer_offsets`, and its topic's log-end offsets;
- plan.json: the add-brokers plan of cluster.json (input of `cluster execute`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def main() -> int:
    sys.path.insert(0, str(ROOT / "src"))
    from kafka_rebalance.cluster import kafka_json
    from kafka_rebalance.cluster.planner import plan
    from kafka_rebalance.cluster.snapshot import snapshot_to_json
    from kafka_rebalance.cluster.synthetic import (
        add_empty_broker,
        rolling_restart,
        synthetic_cluster,
    )
    from kafka_rebalance.demo.telemetry import metric_samples, write_parquet
    from kafka_rebalance.io_util import atomic_write_json, atomic_write_text, read_structured
    from kafka_rebalance.sim.api import parse_simulation_scenario, simulate_scenario
    from kafka_rebalance.sim.offsets_topic import consumer_offsets_records, log_end_offsets

    base = synthetic_cluster(
        brokers=6,
        racks=3,
        partitions=36,
        rf=3,
        topics=3,
        seed=7,
        total_bytes_in=2.0e7,
        size_median=5.0e8,
    )
    restarted = rolling_restart(base)
    cluster, new_broker = add_empty_broker(restarted)
    snap = _rounded(snapshot_to_json(cluster))
    lines = [json.dumps(x, separators=(", ", ": ")) for x in snap["brokers"]]
    parts = [json.dumps(x, separators=(", ", ": ")) for x in snap["partitions"]]
    text = (
        '{"brokers": [\n  '
        + ",\n  ".join(lines)
        + '\n ],\n "partitions": [\n  '
        + ",\n  ".join(parts)
        + "\n ]}\n"
    )
    assert json.loads(text) == snap
    atomic_write_text(EX / "cluster.json", text)

    (EX / "telemetry").mkdir(exist_ok=True)
    samples = metric_samples(restarted, START_MS, duration_ms=6 * 3_600_000, step_ms=900_000)
    write_parquet(samples, EX / "telemetry" / "metric_samples.parquet")

    doc = read_structured(EX / "crash.yaml")
    res = simulate_scenario(parse_simulation_scenario(doc))
    write_parquet(
        consumer_offsets_records(res.events, START_MS, protocol="consumer"),
        EX / "telemetry" / "consumer_offsets.parquet",
    )
    write_parquet(
        log_end_offsets(doc["topics"], START_MS, doc["duration_ms"], step_ms=30_000),
        EX / "telemetry" / "log_end_offsets.parquet",
    )

    res_plan = plan(cluster, "add-brokers", [new_broker])
    atomic_write_json(
        EX / "plan.json", kafka_json.reassignment_json(res_plan.reassignments), indent=None
    )
    print(json.dumps({"new_broker": new_broker, "moves": res_plan.summary()["replica_moves"]}))
    return 0


def _rounded(doc):
    """Whole bytes and 3 decimals: a snapshot a person can read and diff."""
    if isinstance(doc, dict):
        return {k: _rounded(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_rounded(v) for v in doc]
    if isinstance(doc, float):
        return round(doc) if abs(doc) >= 100 else round(doc, 3)
    return doc


if __name__ == "__main__":
    sys.exit(main())
