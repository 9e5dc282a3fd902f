"""A file the user named that cannot be read or written is one line on stderr and exit 2, never a traceback.

Other exceptions (bugs) stay visible; Ctrl-C keeps its own message and exit code 130.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from kafka_rebalance.cli import main
from kafka_rebalance.cluster.snapshot import snapshot_to_json
from kafka_rebalance.cluster.synthetic import synthetic_cluster
from kafka_rebalance.commands import cluster_describe

NO_PARENT = "/proc/nope"  # a folder nobody can create: /proc takes no new entries


@pytest.fixture()
def snap_file(tmp_path: Path) -> Path:
    snap = synthetic_cluster(brokers=3, racks=3, partitions=12, topics=2, seed=4)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snapshot_to_json(snap)))
    return path


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(argv)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_output_that_is_a_directory(capsys, snap_file, tmp_path):
    outdir = tmp_path / "outdir"
    outdir.mkdir()
    rc, out, err = run(
        capsys, ["cluster", "elect", "--snapshot", str(snap_file), "--output", str(outdir)]
    )
    line = one_line_error(err)
    assert rc == 2 and out == ""
    # the path the user gave, not the temporary file beside it
    assert line == (
        f"kafka-rebalance cluster: error: field '--output': {outdir} is a directory; "
        "give a file name"
    )
    assert list(outdir.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == [
        "outdir",
        "snap.json",
    ]


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_output_whose_folder_cannot_be_created(capsys, snap_file):
    rc, out, err = run(
        capsys,
        [
            "cluster",
            "plan",
            "--snapshot",
            str(snap_file),
            "--output",
            f"{NO_PARENT}/plan.json",
            "--format",
            "json",
        ],
    )
    assert rc == 2 and out == ""
    assert (
        one_line_error(err)
        == f"kafka-rebalance cluster: error: field '--output': {NO_PARENT}/plan.json: cannot "
        "create a folder in /proc: No such file or directory"
    )


def test_output_below_a_regular_file(capsys, snap_file, tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    for argv in (
        ["cluster", "describe", "--output", str(blocker / "snap.json")],
        ["cluster", "generate", "--output", str(blocker / "gen.json")],
        ["cluster", "plan", "--election-output", str(blocker / "elect.json")],
    ):
        rc, out, err = run(capsys, [*argv, "--snapshot", str(snap_file), "--format", "json"])
        assert rc == 2 and out == ""
        assert str(blocker) in one_line_error(err)


def test_unreadable_inputs_stay_input_errors(capsys, snap_file, tmp_path):
    rc, _, err = run(capsys, ["cluster", "skew", "--snapshot", str(tmp_path)])
    assert rc == 2 and str(tmp_path) in one_line_error(err)
    rc, _, err = run(
        capsys,
        ["cluster", "elect", "--snapshot", str(snap_file), "--path-to-json-file", str(tmp_path)],
    )
    assert rc == 2 and str(tmp_path) in one_line_error(err)


def test_os_error_message_prefers_the_target_of_a_rename():
    from kafka_rebalance.cli import os_error_message

    exc = IsADirectoryError(21, "Is a directory", "/d/.out.tmp123", None, "/d/out")
    assert os_error_message(exc) == "/d/out: Is a directory"
    assert (
        os_error_message(FileNotFoundError(2, "No such file or directory", "/x"))
        == "/x: No such file or directory"
    )
    assert os_error_message(OSError("no file here")) is None


def test_an_os_error_naming_no_file_is_not_swallowed(monkeypatch, snap_file):
    def boom(args):
        raise OSError("a bug, not a user's path")

    monkeypatch.setattr(cluster_describe, "run_describe", boom)
    with pytest.raises(OSError, match="a bug"):
        main(["cluster", "describe", "--snapshot", str(snap_file)])


def test_other_exceptions_are_not_swallowed(monkeypatch, snap_file):
    def boom(args):
        raise ZeroDivisionError("bug")

    monkeypatch.setattr(cluster_describe, "run_describe", boom)
    with pytest.raises(ZeroDivisionError):
        main(["cluster", "describe", "--snapshot", str(snap_file)])


def test_keyboard_interrupt_still_exits_130(monkeypatch, capsys, snap_file):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cluster_describe, "run_describe", interrupted)
    rc, out, err = run(capsys, ["cluster", "describe", "--snapshot", str(snap_file)])
    assert rc == 130 and out == "" and err == "interrupted\n"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_pipeline_output_folder_that_cannot_be_created(spark, capsys, tmp_path):
    t0 = 1_700_000_000_000
    rows = [
        {
            "ts": pd.Timestamp(t0 + 60_000 * w + 1000 * i, unit="ms"),
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
    rc, out, err = run(
        capsys,
        [
            "pipeline",
            "load-model",
            "--samples",
            str(tmp_path / "s.parquet"),
            "--out",
            f"{NO_PARENT}/lm",
            "--window-ms",
            "60000",
            "--windows",
            "2",
            "--shuffle-partitions",
            "4",
            "--format",
            "json",
        ],
    )
    assert rc == 2 and out == ""
    last = err.strip().splitlines()[-1]  # Spark may log to stderr before the error
    assert "Traceback" not in err
    assert last == (
        f"kafka-rebalance pipeline: error: field '--out': {NO_PARENT}/lm: cannot create a folder "
        "in /proc: No such file or directory"
    )
