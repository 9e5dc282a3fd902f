"""Exit codes scripts can use (README, "Exit codes"): 0 success, 1 runtime failure, 2 bad input,
3 a `--check` that found something."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_rebalance.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def snapshot(tmp_path: Path, leaders: list[int]) -> str:
    """Three brokers, three partitions with rotated replicas; `leaders` says who leads each."""
    doc = {
        "brokers": [{"id": b, "rack": f"r{b}"} for b in (1, 2, 3)],
        "partitions": [
            {
                "topic": "t",
                "partition": i,
                "replicas": [1 + (i + k) % 3 for k in range(3)],
                "leader": leaders[i],
                "isr": [1, 2, 3],
            }
            for i in range(3)
        ],
    }
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_success_is_0(capsys):
    assert main(["assign", str(EXAMPLES / "group.yaml"), "--strategy", "range"]) == 0


def test_bad_input_is_2(tmp_path, capsys):
    assert main(["assign", str(tmp_path / "missing.yaml"), "--strategy", "range"]) == 2
    assert "missing.yaml" in capsys.readouterr().err
    assert (
        main(["cluster", "skew", "--snapshot", snapshot(tmp_path, [1, 2, 3]), "--threshold", "0.5"])
        == 2
    )


def test_unreachable_cluster_is_a_runtime_failure_1(capsys):
    """Nothing listens on port 1: the address may be right and the cluster down, so not bad input."""
    assert main(["cluster", "describe", "--bootstrap-server", "127.0.0.1:1"]) == 1
    err = capsys.readouterr().err
    assert "cannot connect to 127.0.0.1:1" in err and "Traceback" not in err


def test_skew_check_passes_on_a_balanced_cluster(tmp_path, capsys):
    snap = snapshot(tmp_path, [1, 2, 3])
    assert main(["cluster", "skew", "--snapshot", snap, "--check"]) == 0
    assert "check failed" not in capsys.readouterr().err


def test_skew_check_fails_on_leader_imbalance_with_3(tmp_path, capsys):
    """Broker 3 prefers t-2 but broker 1 leads it: 100% > Kafka's default 10%."""
    snap = snapshot(tmp_path, [1, 2, 1])
    assert main(["cluster", "skew", "--snapshot", snap]) == 0  # without --check: a report only
    capsys.readouterr()
    assert main(["cluster", "skew", "--snapshot", snap, "--check", "--format", "json"]) == 3
    cap = capsys.readouterr()
    assert json.loads(cap.out)["leader_imbalance"]["zk"]["brokers_over"] == [3]
    assert "broker 3 leader imbalance 100%" in cap.err
    assert "leaders max/mean 2.000 is above the band 1.100" in cap.err


def test_skew_check_fails_on_a_resource_above_the_band(capsys):
    assert main(["cluster", "skew", "--snapshot", str(EXAMPLES / "cluster.json"), "--check"]) == 3
    err = capsys.readouterr().err
    assert "replicas max/mean 1.167 is above the band 1.100" in err


def _lag_inputs(tmp_path: Path, groups: list[str]) -> tuple[str, str]:
    """Group `fast` keeps up (OK); `slow` commits but falls behind (Burrow's WARN)."""
    import pandas as pd

    offsets = tmp_path / "offsets"
    offsets.mkdir()
    ts = lambda ms: pd.Timestamp(1_700_000_000_000 + ms, unit="ms")  # noqa: E731
    step = {"fast": 100, "slow": 10}
    rows = [
        {
            "group": g,
            "topic": "t",
            "partition": 0,
            "offset": step[g] * (i + 1),
            "commit_ts": ts(1000 * i + 500),
            "record_offset": 100 * n + i,
        }
        for n, g in enumerate(groups)
        for i in range(10)
    ]
    pd.DataFrame(rows).to_parquet(offsets / "commits.parquet", index=False)
    leo = pd.DataFrame(
        {
            "ts": [ts(1000 * i) for i in range(11)],
            "topic": ["t"] * 11,
            "partition": [0] * 11,
            "log_end_offset": [100 * i + 50 for i in range(11)],
        }
    )
    leo.to_parquet(tmp_path / "leo.parquet", index=False)
    return str(offsets), str(tmp_path / "leo.parquet")


@pytest.mark.spark
@pytest.mark.parametrize("groups, rc", [(["fast"], 0), (["fast", "slow"], 3)])
def test_pipeline_lag_check(spark, tmp_path, capsys, groups, rc):
    offsets, leo = _lag_inputs(tmp_path, groups)
    argv = ["pipeline", "lag", "--offsets", offsets, "--log-end", leo, "--out", str(tmp_path / "o")]
    assert main([*argv, "--check", "--format", "json"]) == rc
    cap = capsys.readouterr()
    statuses = {g: v["status"] for g, v in json.loads(cap.out)["groups"].items()}
    assert statuses["fast"] == "OK" and statuses.get("slow", "WARN") == "WARN"
    assert ("group slow is WARN" in cap.err) == (rc == 3)
