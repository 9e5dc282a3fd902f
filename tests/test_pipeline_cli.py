"""`kafka-rebalance pipeline ...`: JSON shapes of docs/formats.md section 5, and stdout carrying JSON alone."""

from __future__ import annotations

import io
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_rebalance.cli import main
from kafka_rebalance.group.records import (
    encode_record,
    offset_commit_record,
    offset_commit_tombstone,
)

T0 = 1_700_000_000_000
TINY_GRID = {
    "base": {
        "name": "cli",
        "seed": 3,
        "duration_ms": 30_000,
        "protocol": "classic",
        "group": {"id": "g", "assignors": ["range"]},
        "topics": [{"name": "t", "partitions": 4, "produce_rate": 20}],
        "members": {"count": 2},
    },
    "grid": {"protocol": ["classic", "consumer"], "assignor": ["range"]},
}


def run_json(capsys, argv) -> dict:
    capsys.readouterr()
    assert main([*argv, "--shuffle-partitions", "4"]) == 0  # as the shared session has
    out = capsys.readouterr().out
    return json.loads(out)


def test_load_model_json(spark, capsys, tmp_path):
    rows = [
        {
            "ts": pd.Timestamp(T0 + 60_000 * w + 1000 * i, unit="ms"),
            "broker": 1,
            "topic": "t",
            "partition": p,
            "is_leader": True,
            "bytes_in": 10.0,
            "bytes_out": 20.0,
            "messages_in": 1.0,
            "size_bytes": 5.0,
        }
        for w in range(2)
        for i in range(3)
        for p in range(2)
    ]
    pd.DataFrame(rows).to_parquet(tmp_path / "s.parquet", index=False)
    doc = run_json(
        capsys,
        [
            "pipeline",
            "load-model",
            "--samples",
            str(tmp_path / "s.parquet"),
            "--out",
            str(tmp_path / "o"),
            "--window-ms",
            "60000",
            "--windows",
            "2",
            "--format",
            "json",
        ],
    )
    assert {
        "partitions": 2,
        "valid_partitions": 2,
        "ready": True,
        "windows": 2,
    }.items() <= doc.items()
    snap = json.loads((tmp_path / "o" / "snapshot.json").read_text())
    assert all(p["load"]["bytes_in"] == 10.0 for p in snap["partitions"])
    assert set(pd.read_parquet(tmp_path / "o" / "partition_load.parquet").columns) >= {
        "topic",
        "partition",
        "bytes_in",
        "bytes_out",
        "messages_in",
        "size_bytes",
        "cpu",
        "valid_windows",
    }


def test_offsets_then_lag_json(spark, capsys, tmp_path):
    recs = [
        encode_record(
            offset_commit_record("g", "t", 0, 10 * (i + 1), commit_timestamp=T0 + 1000 * i)
        )
        for i in range(5)
    ]
    recs.append(encode_record(offset_commit_tombstone("g", "t", 1)))
    recs.append(
        (
            b"\x00\x01",
            b"",
        )
    )
    table = pa.table(
        {
            "key": pa.array([r[0] for r in recs], pa.binary()),
            "value": pa.array([r[1] for r in recs], pa.binary()),
            "topic": ["__consumer_offsets"] * len(recs),
            "partition": pa.array([0] * len(recs), pa.int32()),
            "offset": pa.array(range(len(recs)), pa.int64()),
            "timestamp": pa.array([T0 + 1000 * i for i in range(len(recs))], pa.timestamp("ms")),
        }
    )
    pq.write_table(table, tmp_path / "r.parquet")
    doc = run_json(
        capsys,
        [
            "pipeline",
            "offsets",
            "--records",
            str(tmp_path / "r.parquet"),
            "--out",
            str(tmp_path / "off"),
            "--format",
            "json",
            "--conf",
            "spark.kafka_rebalance.probe=a=b",
        ],
    )
    assert spark.conf.get("spark.kafka_rebalance.probe") == "a=b"  # --conf reached the session
    for k in ("commits", "latest_offsets", "group_metadata", "rebalances", "quarantined"):
        assert isinstance(doc[k], int), k
    assert (doc["commits"], doc["latest_offsets"], doc["quarantined"]) == (5, 1, 1)
    for name in ("commits", "latest_offsets", "group_metadata", "rebalances", "quarantine"):
        assert (tmp_path / "off" / f"{name}.parquet").exists()
    leo = pd.DataFrame(
        {
            "ts": [pd.Timestamp(T0 + 1000 * i + 500, unit="ms") for i in range(6)],
            "topic": "t",
            "partition": 0,
            "log_end_offset": [15 * (i + 1) for i in range(6)],
        }
    )
    leo.to_parquet(tmp_path / "leo.parquet", index=False)
    lag = run_json(
        capsys,
        [
            "pipeline",
            "lag",
            "--offsets",
            str(tmp_path / "off"),
            "--log-end",
            str(tmp_path / "leo.parquet"),
            "--out",
            str(tmp_path / "lag"),
            "--format",
            "json",
        ],
    )
    assert lag["groups"]["g"]["status"] in ("OK", "WARN", "ERR") and lag["lag_rows"] > 0
    assert (tmp_path / "lag" / "lag.parquet").exists()


def test_sweep_json(spark, capsys, tmp_path):
    (tmp_path / "grid.json").write_text(json.dumps(TINY_GRID))
    doc = run_json(
        capsys,
        [
            "pipeline",
            "sweep",
            str(tmp_path / "grid.json"),
            "--out",
            str(tmp_path / "sw"),
            "--format",
            "json",
        ],
    )
    assert (doc["scenarios"], doc["ok"], doc["failed"]) == (2, 2, 0)
    assert [v["protocol"] for v in doc["by_variant"]] == ["classic", "consumer"]


def test_bad_input_exits_2(spark, capsys, tmp_path):
    assert (
        main(
            [
                "pipeline",
                "load-model",
                "--samples",
                str(tmp_path / "missing.parquet"),
                "--out",
                str(tmp_path),
                "--format",
                "json",
            ]
        )
        == 2
    )
    assert "file not found" in capsys.readouterr().err


@pytest.mark.timeout(180)
def test_stdout_is_json_alone_in_a_fresh_process(tmp_path):
    grid = dict(TINY_GRID, grid={"protocol": ["classic"]})
    (tmp_path / "grid.json").write_text(json.dumps(grid))
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_rebalance",
            "pipeline",
            "sweep",
            str(tmp_path / "grid.json"),
            "--out",
            str(tmp_path / "o"),
            "--master",
            "local[1]",
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=400,
        env=env,
        cwd=Path(__file__).parent,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)  # the whole of stdout is one JSON object
    assert doc["scenarios"] == 1 and proc.stdout.count("\n") == 1
    # quiet Spark: no JVM or log4j line on stderr; Spark's log is a file in the output folder
    assert not re.search(r"WARN|INFO|log4j|^WARNING: ", proc.stderr, re.M), proc.stderr
    log = tmp_path / "o" / "_spark.log"
    assert doc["spark_log"] == str(log) and "log4j" in log.read_text()


@pytest.mark.parametrize(
    "extra,field",
    [
        (["--group-interval-ms", "0"], "--group-interval-ms"),
        (["--minimum-complete", "5"], "--minimum-complete"),
        (["--allowed-lag", "-3"], "--allowed-lag"),
    ],
)
def test_bad_lag_options_exit_2_before_spark_and_write_nothing(capsys, tmp_path, extra, field):
    rc = main(
        [
            "pipeline",
            "lag",
            "--offsets",
            str(tmp_path),
            "--log-end",
            str(tmp_path / "leo.parquet"),
            "--out",
            str(tmp_path / "lag"),
            *extra,
            "--format",
            "json",
        ]
    )
    captured = capsys.readouterr()
    assert rc == 2 and field in captured.err and captured.out == ""
    assert not (tmp_path / "lag").exists()


@pytest.mark.parametrize(
    "grid,field",
    [
        ({"base": {"name": "x"}, "grid": {"protocol": ["bogus"]}}, "base.duration_ms"),
        ({"base": TINY_GRID["base"], "grid": {"protocol": ["bogus"]}}, "grid.protocol"),
        (
            {"base": TINY_GRID["base"], "grid": {"session_timeout_ms": ["abc"]}},
            "grid.session_timeout_ms",
        ),
    ],
)
def test_bad_grid_exits_2_naming_the_grid_file_and_field(capsys, tmp_path, grid, field):
    (tmp_path / "grid.json").write_text(json.dumps(grid))
    rc = main(
        [
            "pipeline",
            "sweep",
            str(tmp_path / "grid.json"),
            "--out",
            str(tmp_path / "sw"),
            "--format",
            "json",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and str(tmp_path / "grid.json") in err and f"'{field}'" in err
    assert not (tmp_path / "sw").exists()


def test_wrong_sample_type_exits_2_naming_file_and_column(spark, capsys, tmp_path):
    pd.DataFrame(
        {
            "ts": [pd.Timestamp(T0, unit="ms")],
            "broker": [1],
            "topic": ["t"],
            "partition": [0],
            "is_leader": [True],
            "bytes_in": ["abc"],
            "bytes_out": [1.0],
            "messages_in": [1.0],
            "size_bytes": [1.0],
        }
    ).to_parquet(tmp_path / "s.parquet", index=False)
    rc = main(
        [
            "pipeline",
            "load-model",
            "--samples",
            str(tmp_path / "s.parquet"),
            "--out",
            str(tmp_path / "o"),
            "--shuffle-partitions",
            "4",
            "--format",
            "json",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and str(tmp_path / "s.parquet") in err and "'bytes_in'" in err and "'abc'" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("bad", ["no-equals-sign", "=value"])
def test_bad_conf_is_refused_before_spark(bad, capsys, tmp_path):
    rc = main(
        ["pipeline", "sweep", str(tmp_path / "g.json"), "--out", str(tmp_path / "o"), "--conf", bad]
    )
    assert rc == 2
    assert "--conf: expected KEY=VALUE" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_progress_shows_a_line_per_stage(spark, capsys, tmp_path):
    """--progress draws one rich line per Spark stage on stderr: tasks done of total, records."""
    grid = dict(TINY_GRID, grid={"protocol": ["classic"]})
    (tmp_path / "grid.json").write_text(json.dumps(grid))
    capsys.readouterr()
    argv = ["pipeline", "sweep", str(tmp_path / "grid.json"), "--out", str(tmp_path / "o")]
    assert main([*argv, "--progress", "--format", "json"]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("stage ")]
    assert lines and all("tasks" in ln for ln in lines), err
    assert not re.search(r"WARN|INFO|log4j", err)
    # every stage that ran shows its record counts (the status store's figures, Spark 4 too)
    counts = [re.search(r"records read ([\d,]+), written ([\d,]+)", ln) for ln in lines]
    assert all(counts), err
    assert sum(int(m.group(2).replace(",", "")) for m in counts if m) > 0, err


def test_progress_records_are_the_status_stores(spark, capsys, tmp_path):
    """A stage that reads a 2,500-row Parquet file and writes it shows those exact counts."""
    from rich.console import Console

    from kafka_rebalance.pipeline.progress import StageProgress

    spark.range(2500).write.parquet(str(tmp_path / "in"))
    console = Console(file=io.StringIO(), width=160)
    with StageProgress(spark, console) as p:
        spark.read.parquet(str(tmp_path / "in")).coalesce(1).write.parquet(str(tmp_path / "out"))
    text = console.file.getvalue()
    assert "records read 2,500, written 2,500" in text, text
    assert p._tasks


def test_a_run_keeps_hidden_files_and_the_mode_of_out(spark, capsys, tmp_path):
    """docs/formats.md: other files in DIR are kept; the switch changes the job's outputs only."""
    (tmp_path / "grid.json").write_text(json.dumps(dict(TINY_GRID, grid={"protocol": ["classic"]})))
    out = tmp_path / "sw"
    out.mkdir()
    (out / ".secret").write_text("mine")
    (out / ".config").mkdir()
    (out / ".config" / "a").write_text("a")
    (out / "notes.txt").write_text("n")
    out.chmod(0o700)
    argv = ["pipeline", "sweep", str(tmp_path / "grid.json"), "--out", str(out), "--format", "json"]
    for _ in range(2):  # into an existing folder, then over the job's own earlier outputs
        assert run_json(capsys, argv)["scenarios"] == 1
        assert (out / ".secret").read_text() == "mine"
        assert (out / ".config" / "a").read_text() == "a"
        assert (out / "notes.txt").read_text() == "n"
        assert stat.S_IMODE(out.stat().st_mode) == 0o700
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no leftovers
