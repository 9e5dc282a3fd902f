"""Inputs Kafka's assignors cannot take get a clear error (exit 2), never a traceback or a bad assignment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_rebalance.cli import main

DATA = Path(__file__).parent / "data"


def _run(capsys, path: Path, strategy: str) -> tuple[int, str, str]:
    rc = main(["assign", str(path), "--strategy", strategy, "--format", "json"])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.mark.parametrize("strategy", ["uniform", "server-range"])
def test_server_side_refuses_a_partition_owned_twice(capsys, strategy):
    rc, out, err = _run(capsys, DATA / "uniform_shared_owned.json", strategy)
    assert rc == 2 and out == ""
    assert (
        "uniform_shared_owned.json" in err
        and "members[2].owned[3]" in err
        and "also owned by" in err
    )


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_kafka_failure_is_reported_not_raised(capsys, strategy):
    rc, out, err = _run(capsys, DATA / "sticky_npe.json", strategy)
    assert rc == 2 and out == ""
    assert f"Kafka's {strategy} assignor fails on this input" in err and "sticky_npe.json" in err


def test_owned_partition_beyond_the_topic(tmp_path, capsys):
    doc = {
        "topics": [{"name": "t0", "partitions": 3}],
        "members": [{"id": "a", "topics": ["t0"], "owned": [["t0", 7]], "generation": 1}],
    }
    path = tmp_path / "oob.json"
    path.write_text(json.dumps(doc))
    rc, out, err = _run(capsys, path, "sticky")
    assert rc == 2 and "members[0].owned[0]" in err and "3 partitions" in err


def test_unknown_strategy_names_the_flag(tmp_path, capsys):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"topics": [], "members": []}))
    rc, _, err = _run(capsys, path, "bogus")
    assert rc == 2 and "--strategy" in err and "bogus" in err
