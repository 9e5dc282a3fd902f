"""The main job end to end: every step runs, the plan is executed, the report is written."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from chromium_check import CHROMIUM, render_status, screenshot
from kafka_rebalance.cli import main


def test_demo_end_to_end(spark, tmp_path, capsys):
    out = tmp_path / "demo"
    out.mkdir(mode=0o700)  # an earlier demo's folder, with a hidden file of the user's
    (out / "report.json").write_text("{}")
    (out / ".notes").write_text("mine")
    assert main(["demo", "--out", str(out), "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    # the switch replaced the demo's results only: the hidden file and the folder's mode stay
    assert (out / ".notes").read_text() == "mine"
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    assert Path(result["report"]).exists()
    assert set(result["timings_s"]) == {
        "cluster",
        "telemetry",
        "simulate",
        "spark",
        "plan",
        "execute",
        "report",
    }
    # the add-broker plan moves no more than its lower bound allows and was applied in full
    plan = result["plan"]
    assert 0 < plan["replica_moves"] <= 1.05 * plan["lower_bound_moves"] + 1
    assert plan["complete"] is True and plan["goals_satisfied"] is True
    assert result["execute"]["phase"] == "finished"
    # Kafka-format files users hand to Kafka's tools
    add = json.loads((out / "plans" / "add_broker_reassignment.json").read_text())
    assert add["version"] == 1 and add["partitions"]
    election = json.loads((out / "plans" / "preferred_election.json").read_text())
    assert set(election) == {"partitions"}
    # the Spark jobs saw the simulator's commits and the day of samples
    assert result["load_model"]["ready"] is True
    assert result["offsets"]["commits"] > 0 and result["offsets"]["quarantined"] == 0
    assert result["sweep"]["failed"] == 0 and result["sweep"]["ok"] > 0
    report = json.loads((out / "report.json").read_text())
    for part in ("broker_load", "leaders", "moves", "ownership", "compare", "lag", "sweep"):
        assert report.get(part), part
    assert set(report["compare"]) == {"eager", "cooperative", "static", "consumer"}
    assert report["lag"]["series"] and all(len(v) > 10 for v in report["lag"]["series"].values())
    if CHROMIUM:  # the demo's own report: every plot renders, no script errors
        status = render_status(Path(result["report"]), tmp_path / "profile")
        plots = 6 + len(
            report["ownership"]
        )  # load, leaders, moves, compare, lag, sweep + one timeline per protocol
        assert status["done"] and status["expected"] == plots and status["rendered"] == plots
        assert status["errors"] == []
        screenshot(
            Path(result["report"]),
            tmp_path / "profile",
            Path(__file__).parent.parent / "out" / "demo-report-screenshot.png",
            height=6000,
        )


def test_the_demos_telemetry_has_the_columns_the_load_model_reads():
    """One list of metric-sample columns (model.METRIC_SAMPLE_COLUMNS) for writer and reader."""
    import kafka_rebalance as kr
    from kafka_rebalance.demo.telemetry import metric_samples
    from kafka_rebalance.pipeline.load_model import REQUIRED

    snap = kr.synthetic_cluster(brokers=3, partitions=2, topics=1, seed=1)
    table = metric_samples(snap, start_ms=0, duration_ms=180_000)
    assert tuple(table.column_names) == kr.METRIC_SAMPLE_COLUMNS
    assert set(kr.METRIC_SAMPLE_COLUMNS) - set(REQUIRED) == {"cpu"}  # the one optional column
    assert table.num_rows == 3 * sum(len(p.replicas) for p in snap.partitions)
