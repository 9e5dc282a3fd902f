"""Sweep: a tiny grid, one simulation per Spark task, collected into one table."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from kafka_rebalance.errors import InputError
from kafka_rebalance.pipeline.sweep import expand_grid, run_one, run_sweep

BASE = {
    "name": "tiny",
    "seed": 1,
    "duration_ms": 60_000,
    "protocol": "classic",
    "group": {"id": "g", "assignors": ["range"]},
    "topics": [{"name": "t", "partitions": 6, "produce_rate": 60}],
    "members": {"count": 3},
    "events": [{"at_ms": 20_000, "kind": "leave", "member": "m1"}],
}
GRID = {
    "base": BASE,
    "grid": {
        "protocol": ["classic", "consumer"],
        "assignor": ["range", "cooperative-sticky", "uniform"],
        "static_membership": [False, True],
        "group.heartbeat_interval_ms": [3000, 5000],
    },
}


def test_expand_grid_maps_axes_and_skips_nonsense():
    scenarios, skipped = expand_grid(GRID)
    assert len(scenarios) == 16 and skipped == 8  # 2 valid assignors per protocol x 2 x 2
    consumer = [s for s in scenarios if s["params"]["protocol"] == "consumer"]
    assert {s["doc"]["group"]["server_assignor"] for s in consumer} == {"range", "uniform"}
    classic = [s for s in scenarios if s["params"]["protocol"] == "classic"]
    assert {tuple(s["doc"]["group"]["assignors"]) for s in classic} == {
        ("range",),
        ("cooperative-sticky",),
    }
    assert BASE["group"] == {"id": "g", "assignors": ["range"]}  # the base is not mutated
    seeds, _ = expand_grid({"base": BASE, "grid": {"seeds": 3}})
    assert [s["doc"]["seed"] for s in seeds] == [0, 1, 2]
    with pytest.raises(InputError):
        expand_grid({"base": BASE, "grid": {"protocol": "classic"}})


def test_sweep_runs_each_scenario_as_a_task(spark, tmp_path):
    grid = {
        "base": BASE,
        "grid": {
            "protocol": ["classic", "consumer"],
            "assignor": ["range", "cooperative-sticky", "uniform"],
            "static_membership": [False],
        },
    }
    summary = run_sweep(spark, str(tmp_path / "grid.json"), str(tmp_path / "out"), grid_doc=grid)
    assert (
        summary["scenarios"] == 4
        and summary["failed"] == 0
        and summary["ok"] == 4
        and summary["skipped"] == 2
    )
    table = pd.read_parquet(tmp_path / "out" / "sweep.parquet")
    assert list(table["scenario"]) == list(range(4))
    assert table["error"].isna().all()
    assert (table["rebalances"] >= 2).all()  # the initial join and the leave
    assert set(table["protocol"]) == {"classic", "consumer"}
    assert len(summary["by_variant"]) == 4 and all(v["runs"] == 1 for v in summary["by_variant"])


def test_a_simulation_failing_at_run_time_gives_a_row_with_its_error():
    row = run_one({"scenario": 3, "params": {}, "doc": {**BASE, "duration_ms": 0}})
    assert row["scenario"] == 3 and "duration_ms" in row["error"] and "rebalances" not in row


def _err(grid, where="g.json"):
    with pytest.raises(InputError) as e:
        expand_grid(grid, where)
    return e.value


def test_invalid_base_is_an_input_error_naming_the_grid_file_and_field():
    no_duration = {k: v for k, v in BASE.items() if k != "duration_ms"}
    e = _err({"base": no_duration, "grid": {"protocol": ["bogus"]}})
    assert (e.source, e.field) == ("g.json", "base.duration_ms") and "missing" in e.message
    e = _err({"base": {**BASE, "protocol": "bogus"}, "grid": {"seeds": 2}})
    assert (e.source, e.field) == ("g.json", "base.protocol")
    # an axis may supply what the base lacks
    scenarios, _ = expand_grid({"base": no_duration, "grid": {"duration_ms": [1000, 2000]}})
    assert [s["doc"]["duration_ms"] for s in scenarios] == [1000, 2000]


def test_invalid_axis_values_name_the_axis_and_value():
    e = _err({"base": BASE, "grid": {"protocol": ["classic", "bogus"]}})
    assert e.field == "grid.protocol" and "'bogus'" in e.message
    e = _err({"base": BASE, "grid": {"session_timeout_ms": ["abc"]}})
    assert (e.source, e.field) == ("g.json", "grid.session_timeout_ms") and "'abc'" in e.message
    e = _err({"base": BASE, "grid": {"group.heartbeat_interval_ms": [3000, 50_000]}})
    assert (
        e.field == "grid.group.heartbeat_interval_ms" and "50000" in e.message
    )  # >= the 45 s session timeout
    e = _err({"base": BASE, "grid": {"assignor": ["range", "nope"]}})
    assert e.field == "grid.assignor" and "'nope'" in e.message
    e = _err({"base": BASE, "grid": {"assignor": [["range"]]}})
    assert e.field == "grid.assignor[0]"
    e = _err({"base": BASE, "grid": {"session_timeout_ms": [2**40]}})
    assert e.field == "grid.session_timeout_ms"
    e = _err({"base": BASE, "grid": {"group.bogus_setting": [1]}})
    assert e.field == "grid.group.bogus_setting"


def test_grid_file_errors_from_run_sweep_name_the_file(spark, tmp_path):
    path = tmp_path / "grid.json"
    path.write_text(json.dumps({"base": {"name": "x"}, "grid": {"protocol": ["bogus"]}}))
    with pytest.raises(InputError) as e:
        run_sweep(spark, str(path), str(tmp_path / "out"))
    assert (e.value.source, e.value.field) == (str(path), "base.duration_ms")
    assert not (tmp_path / "out").exists()
