"""The real-broker fixture's start (tests/real_kafka.py): a failed start is stopped by PID and tried
again, and the error it finally raises says what failed in each attempt. No broker needed: a
stand-in start-kafka.sh/stop-kafka.sh pair records what the fixture does."""

from __future__ import annotations

import socket
import stat
from pathlib import Path

import pytest

import real_kafka as rk

FAKE_START = """#!/usr/bin/env bash
# fails like a start whose port was taken: pids written, then exit 1 with a log tail
while [ $# -gt 0 ]; do case "$1" in --dir) DIR=$2; shift 2 ;; *) shift ;; esac; done
echo "$DIR" >> "{calls}"
echo 424242 > "$DIR/pids"
echo "node 2 (pid 424242) died during startup: Address already in use" >&2
exit 1
"""
FAKE_STOP = """#!/usr/bin/env bash
echo "$@" >> "{stops}"
"""


def _script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_a_failed_start_is_stopped_by_pid_retried_and_explained(tmp_path, monkeypatch):
    home = tmp_path / "kafka"
    home.mkdir()
    calls, stops = tmp_path / "calls", tmp_path / "stops"
    _script(home / "start-kafka.sh", FAKE_START.format(calls=calls))
    _script(home / "stop-kafka.sh", FAKE_STOP.format(stops=stops))
    monkeypatch.setattr(rk, "KAFKA_HOME", home)

    with pytest.raises(RuntimeError) as err:
        rk.start(brokers=3, attempts=2)

    dirs = calls.read_text().split()
    assert len(dirs) == 2 and dirs[0] != dirs[1]  # a fresh state folder per attempt
    assert stops.read_text().split("\n")[:2] == [f"--dir {d}" for d in dirs]
    msg = str(err.value)
    assert "could not start a 3-broker Kafka cluster" in msg
    assert "attempt 1/2: start-kafka.sh exited 1" in msg and "attempt 2/2" in msg
    assert msg.count("Address already in use") == 2
    assert not any(Path(d).exists() for d in dirs)


def test_readiness_names_what_is_missing():
    pytest.importorskip("confluent_kafka")
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    problem = rk.wait_ready(f"127.0.0.1:{port}", 3, timeout=2)
    assert problem is not None
    assert problem.startswith(f"cluster at 127.0.0.1:{port} not ready after 2s: ")


def test_a_ready_session_cluster_lists_every_broker_and_the_offsets_topic(real_kafka):
    if real_kafka.state_dir is None:
        pytest.skip("an external cluster ($KAFKA_BOOTSTRAP): its size is not ours to know")
    assert rk.wait_ready(real_kafka.bootstrap, 3, timeout=30) is None
