"""Sweep: a tiny grid, one simulation per Spark task, collected into one table."""

from __future__ import annotations

import pandas as pd
import pytest

from kafka_rebalance.errors import InputError
from kafka_rebalance.pipeline.sweep import expand_grid, run_sweep

BASE = {
    "name": "tiny", "seed": 1, "duration_ms": 60_000, "protocol": "classic",
    "group": {"id": "g", "assignors": ["range"]},
    "topics": [{"name": "t", "partitions": 6, "produce_rate": 60}],
    "members": {"count": 3},
    "events": [{"at_ms": 20_000, "kind": "leave", "member": "m1"}],
}
GRID = {"base": BASE, "grid": {"protocol": ["classic", "consumer"], "assignor": ["range", "cooperative-sticky", "uniform"],
                               "static_membership": [False, True], "group.heartbeat_interval_ms": [3000, 50_000]}}


def test_expand_grid_maps_axes_and_skips_nonsense():
    scenarios, skipped = expand_grid(GRID)
    assert len(scenarios) == 16 and skipped == 8  # 2 valid assignors per protocol x 2 x 2
    consumer = [s for s in scenarios if s["params"]["protocol"] == "consumer"]
    assert {s["doc"]["group"]["server_assignor"] for s in consumer} == {"range", "uniform"}
    classic = [s for s in scenarios if s["params"]["protocol"] == "classic"]
    assert {tuple(s["doc"]["group"]["assignors"]) for s in classic} == {("range",), ("cooperative-sticky",)}
    assert BASE["group"] == {"id": "g", "assignors": ["range"]}  # the base is not mutated
    seeds, _ = expand_grid({"base": BASE, "grid": {"seeds": 3}})
    assert [s["doc"]["seed"] for s in seeds] == [0, 1, 2]
    with pytest.raises(InputError):
        expand_grid({"base": BASE, "grid": {"protocol": "classic"}})


def test_sweep_runs_each_scenario_as_a_task(spark, tmp_path):
    grid = {"base": BASE, "grid": {**GRID["grid"], "group.heartbeat_interval_ms": [3000, 50_000],
                                   "protocol": ["classic", "consumer"], "static_membership": [False]}}
    summary = run_sweep(spark, str(tmp_path / "grid.json"), str(tmp_path / "out"), grid_doc=grid)
    # 2 protocols x 2 valid assignors x 1 x 2 heartbeat values; heartbeat >= session timeout fails validation
    assert summary["scenarios"] == 8 and summary["failed"] == 4 and summary["ok"] == 4 and summary["skipped"] == 4
    table = pd.read_parquet(tmp_path / "out" / "sweep.parquet")
    assert list(table["scenario"]) == list(range(8))
    ok = table[table["error"].isna()]
    assert (ok["rebalances"] >= 2).all()  # the initial join and the leave
    assert set(ok["protocol"]) == {"classic", "consumer"}
    assert all("heartbeat" in e for e in table[table["error"].notna()]["error"])
    assert len(summary["by_variant"]) == 4 and all(v["runs"] == 1 for v in summary["by_variant"])
