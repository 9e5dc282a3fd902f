"""`kafka-rebalance simulate`: JSON output, event log files, --compare, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_rebalance.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_json(capsys, *argv) -> dict:
    rc = main(["simulate", *argv, "--format", "json"])
    out = capsys.readouterr().out
    assert rc == 0
    return json.loads(out)


def test_json_summary_has_schema_fields(capsys):
    s = run_json(capsys, str(EXAMPLES / "coordinator-failover.yaml"))
    for key in (
        "rebalances",
        "generation",
        "unavailable_partition_ms",
        "member_paused_ms",
        "partitions_moved",
        "revocations",
        "records",
        "lag",
        "timeline",
    ):
        assert key in s
    assert set(s["records"]) >= {"produced", "processed", "duplicates", "lost"}
    assert set(s["lag"]) >= {"max", "final"}
    assert s["rebalances"] == 1


@pytest.mark.parametrize(
    "name",
    [
        "rolling-restart",
        "scale-out",
        "crash",
        "slow-consumer",
        "partition-growth",
        "coordinator-failover",
    ],
)
def test_examples_run(capsys, name):
    s = run_json(capsys, str(EXAMPLES / f"{name}.yaml"))
    assert s["records"]["produced"] > 0 and s["rebalances"] >= 1


def test_events_out_jsonl_and_parquet(tmp_path, capsys):
    jl = tmp_path / "ev.jsonl"
    run_json(capsys, str(EXAMPLES / "crash.yaml"), "--events-out", str(jl))
    rows = [json.loads(x) for x in jl.read_text().splitlines()]
    assert rows and set(rows[0]) == {
        "ts_ms",
        "group",
        "member",
        "kind",
        "generation",
        "partitions",
        "detail",
    }
    commits = [r for r in rows if r["kind"] == "commit"]
    d = json.loads(commits[0]["detail"])
    assert {"topic", "partition", "offset", "metadata", "generation"} <= set(d)
    pq = tmp_path / "ev.parquet"
    run_json(capsys, str(EXAMPLES / "crash.yaml"), "--events-out", str(pq))
    import pyarrow.parquet as pqm

    t = pqm.read_table(pq)
    assert t.num_rows == len(rows)
    assert t.column_names == [
        "ts_ms",
        "group",
        "member",
        "kind",
        "generation",
        "partitions",
        "detail",
    ]


def test_compare_json(capsys):
    out = run_json(
        capsys, str(EXAMPLES / "rolling-restart.yaml"), "--compare", "eager,cooperative,static"
    )
    assert list(out["compare"]) == ["eager", "cooperative", "static"]
    assert out["compare"]["static"]["rebalances"] < out["compare"]["eager"]["rebalances"]


def test_compare_table(capsys):
    rc = main(["simulate", str(EXAMPLES / "crash.yaml"), "--compare", "eager,static"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "eager" in out and "static" in out and "rebalances" in out


def test_bad_file_reports_field(tmp_path, capsys):
    f = tmp_path / "bad.yaml"
    f.write_text("duration_ms: 1000\ntopics: []\nmembers: {count: 1}\n")
    rc = main(["simulate", str(f), "--format", "json"])
    err = capsys.readouterr().err
    assert rc == 2 and "topics" in err and str(f) in err


def test_unknown_compare_variant(capsys):
    rc = main(["simulate", str(EXAMPLES / "crash.yaml"), "--compare", "eager,bogus"])
    assert rc == 2 and "bogus" in capsys.readouterr().err
