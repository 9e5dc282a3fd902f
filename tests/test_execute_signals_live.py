"""Ctrl-C and SIGTERM during `cluster execute --execute` on the real cluster, mid-batch.

The signal stops the run before its next step: the batch already submitted keeps moving, its
throttles stay, nothing later starts, the exit status is 130 and the exact --verify, --cancel and
resume commands are printed. Running the printed resume command finishes the plan; running the
printed cancel command rolls the batch in flight back and ends the execution.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
import uuid

import pytest

from kafka_rebalance.cli import main as cli_main
from test_reassign_live import MB, create_topic, fill, plan_file

pytestmark = pytest.mark.timeout(300)
LAYOUT = {0: [1, 2], 1: [2, 3], 2: [3, 1]}
TARGET = {0: [2, 3], 1: [3, 1], 2: [1, 2]}


def start_and_signal(real_kafka, tmp_path, sig) -> tuple[str, str, str, dict, list[str]]:
    """Create a topic, start our execute in a subprocess at 10 KB/s, signal it once batch 1 is in."""
    bs = real_kafka.bootstrap
    topic = f"sig-{uuid.uuid4().hex[:6]}"
    create_topic(bs, topic, LAYOUT)
    fill(bs, topic, 3, 3 * MB)
    plan = plan_file(tmp_path, f"{topic}.json", [(topic, p, r) for p, r in TARGET.items()])
    state = tmp_path / f"{topic}.state.json"
    cmd = [
        sys.executable, "-m", "kafka_rebalance", "cluster", "execute",
        "--bootstrap-server", bs, "--reassignment-json-file", plan, "--state-file", str(state),
        "--throttle", "10000", "--max-moves-per-broker", "1", "--poll-interval", "0.2", "--execute",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ}
    )
    deadline = time.monotonic() + 90
    submitted: list[str] = []
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            st = json.loads(state.read_text())
        except (OSError, ValueError):
            st = None
        if st and any(b["status"] == "submitted" for b in st["batches"]):
            submitted = [
                f"{m['topic']}-{m['partition']}"
                for b in st["batches"]
                if b["status"] == "submitted"
                for m in b["moves"]
            ]
            break
        time.sleep(0.1)
    assert submitted, "the first batch was never submitted"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    return topic, plan, err, json.loads(state.read_text()), submitted


def printed(err: str, label: str) -> list[str]:
    line = next(ln for ln in err.splitlines() if ln.startswith(f"{label}:"))
    argv = shlex.split(line.split(":", 1)[1])
    assert argv[0] == "kafka-rebalance"
    return argv[1:]


def test_sigint_mid_batch_leaves_the_batch_running_and_the_resume_command_finishes(
    real_kafka, tmp_path, capsys
):
    from kafka_rebalance.kafka.admin import BROKER, KafkaAdmin

    topic, plan, err, state, submitted = start_and_signal(real_kafka, tmp_path, signal.SIGINT)
    assert "Stopped by SIGINT" in err and "Check:" in err and "Cancel:" in err
    statuses = [b["status"] for b in state["batches"]]
    assert len(statuses) > 1 and statuses[0] == "submitted" and set(statuses[1:]) == {"pending"}
    with KafkaAdmin(real_kafka.bootstrap) as admin:
        ongoing = {f"{t}-{p}" for t, p in admin.list_partition_reassignments() if t == topic}
        assert ongoing == set(submitted)  # batch 1 still moving, nothing later started
        throttled = [
            b
            for b in (1, 2, 3)
            if admin.describe_configs(BROKER, str(b)).get(
                "follower.replication.throttled.rate", (None,)
            )[0]
            == "10000"
        ]
        assert throttled  # the batch's throttle is still in place
    # The printed resume command (at a higher throttle) finishes the plan and clears the throttles.
    resume = printed(err, "Resume")
    assert cli_main([*resume, "--throttle", "100000000", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["phase"] == "finished"
    with KafkaAdmin(real_kafka.bootstrap) as admin:
        placement = admin.replica_assignment([topic])
        assert {p: list(r) for (_, p), r in placement.items()} == TARGET
        for b in (1, 2, 3):
            cfg = admin.describe_configs(BROKER, str(b))
            assert cfg.get("follower.replication.throttled.rate", (None, True))[1] is not False


def test_sigterm_mid_batch_then_the_printed_cancel_rolls_the_batch_back(
    real_kafka, tmp_path, capsys
):
    from kafka_rebalance.kafka.admin import KafkaAdmin

    topic, plan, err, state, submitted = start_and_signal(real_kafka, tmp_path, signal.SIGTERM)
    assert "Stopped by SIGTERM" in err
    cancel = printed(err, "Cancel")
    assert cli_main(cancel) == 0
    out = capsys.readouterr().out
    assert "Successfully cancelled partition reassignment" in out
    assert "Clearing broker-level throttles on brokers 1,2,3" in out
    assert json.loads(open(cancel[cancel.index("--state-file") + 1]).read())["phase"] == "cancelled"
    with KafkaAdmin(real_kafka.bootstrap) as admin:
        assert not [k for k in admin.list_partition_reassignments() if k[0] == topic]
        placement = admin.replica_assignment([topic])
    # every partition is where it was before (the cancelled batch) or where the plan put it (none)
    assert {p: sorted(r) for (_, p), r in placement.items()} == {
        p: sorted(r) for p, r in LAYOUT.items()
    }
    # the check command runs too, and says so
    assert cli_main(printed(err, "Check")) == 0
    assert "There is no active reassignment of partition" in capsys.readouterr().out
