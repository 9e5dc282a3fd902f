"""`cluster execute/elect/describe` against the real Kafka cluster, side by side with Kafka's own tools.

For the same cluster state our `--list`, `--verify`, `--cancel` and `cluster elect --execute` must
print the same partition lines as kafka-reassign-partitions.sh and kafka-leader-election.sh (the
tools print sets in Java's HashSet order, so lines listing several partitions compare as sets).
Kafka's tools cost a JVM start each (several seconds here), so each is run once per state.
"""

from __future__ import annotations

import json
import re
import uuid

import pytest

from kafka_rebalance.cli import main as cli_main

pytestmark = pytest.mark.timeout(400)
MB = 1 << 20


def run_cli(argv, capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = cli_main(argv)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def create_topic(bootstrap: str, name: str, assignment: dict[int, list[int]]) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics(
            [
                NewTopic(
                    name, num_partitions=-1, replication_factor=-1, replica_assignments=assignment
                )
            ]
        )
    finally:
        admin.close()


def fill(bootstrap: str, topic: str, partitions: int, nbytes: int) -> None:
    import confluent_kafka as ck

    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
    value = b"x" * 10_000
    for p in range(partitions):
        for _ in range(nbytes // len(value)):
            producer.produce(topic, value=value, partition=p)
            producer.poll(0)
    assert producer.flush(60) == 0


def plan_file(tmp_path, name: str, entries: list[tuple[str, int, list[int]]]) -> str:
    path = tmp_path / name
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [{"topic": t, "partition": p, "replicas": r} for t, p, r in entries],
            }
        )
    )
    return str(path)


def lines(text: str, *prefixes: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip().startswith(prefixes)]


def partition_lines(text: str) -> list[str]:
    return lines(
        text,
        "Reassignment of partition",
        "There is no active reassignment",
        "Status of partition reassignment",
    )


def as_set_line(line: str) -> tuple[str, frozenset[str]]:
    """'... for partitions a-1, b-2' -> (prefix, {a-1, b-2}): Java prints sets in hash order."""
    head, _, tail = line.rpartition(" ")
    m = re.match(r"(.*?(?:partitions|for:) )(.*)$", line)
    if not m:
        return line, frozenset()
    del head, tail
    return m.group(1), frozenset(x.strip() for x in re.split(r",\s*", m.group(2)) if x.strip())


def test_list_verify_cancel_describe_match_kafkas_tool(real_kafka, capsys, tmp_path):
    if real_kafka.home is None:
        pytest.skip("Kafka's tools are not available")
    bs = real_kafka.bootstrap
    tag = uuid.uuid4().hex[:6]
    a, b, c = f"live-a-{tag}", f"live-b-{tag}", f"live-c-{tag}"
    layout = {0: [1, 2], 1: [2, 3], 2: [3, 1]}
    target = {0: [2, 3], 1: [3, 1], 2: [1, 2]}
    for t in (a, b, c):
        create_topic(bs, t, layout)
    # more than one fetch (replica.fetch.max.bytes, 1 MiB) per partition: the quota bites after it
    fill(bs, a, 3, 3 * MB)
    fill(bs, b, 3, 3 * MB)
    plan_a = plan_file(tmp_path, "a.json", [(a, p, r) for p, r in target.items()])
    plan_b = plan_file(tmp_path, "b.json", [(b, p, r) for p, r in target.items()])
    plan_ab = plan_file(tmp_path, "ab.json", [(t, p, r) for t in (a, b) for p, r in target.items()])
    # Kafka's tool starts A and B at 10 KB/s: they stay in flight while both tools look at them.
    out = real_kafka.tool(
        "kafka-reassign-partitions.sh",
        "--bootstrap-server",
        bs,
        "--reassignment-json-file",
        plan_ab,
        "--execute",
        "--throttle",
        "10000",
    ).stdout
    assert "Successfully started partition reassignments" in out

    # --list: the same partition lines.
    rc, ours, _ = run_cli(["cluster", "execute", "--list", "--bootstrap-server", bs], capsys)
    theirs = real_kafka.tool("kafka-reassign-partitions.sh", "--bootstrap-server", bs, "--list")
    assert rc == 0
    assert lines(ours, a, b) == lines(theirs.stdout, a, b) and len(lines(ours, a, b)) == 6
    assert "adding: " in ours and "removing: " in ours

    # --verify while in flight: "still in progress" lines, and nothing cleared.
    argv = ["cluster", "execute", "--bootstrap-server", bs, "--reassignment-json-file", plan_ab]
    rc, ours, _ = run_cli([*argv, "--verify"], capsys)
    theirs = real_kafka.tool(
        "kafka-reassign-partitions.sh",
        "--bootstrap-server",
        bs,
        "--reassignment-json-file",
        plan_ab,
        "--verify",
    ).stdout
    assert rc == 0 and partition_lines(ours) == partition_lines(theirs)
    assert sum("still in progress" in ln for ln in partition_lines(ours)) == 6
    assert "Clearing" not in ours and "Clearing" not in theirs

    # describe: kafka-topics.sh's Adding/Removing Replicas, and RF 2 (never 4) for a moving partition.
    rc, ours, _ = run_cli(
        ["cluster", "describe", "--bootstrap-server", bs, "--format", "json"], capsys
    )
    moving = {
        (m["topic"], m["partition"]): m
        for m in json.loads(ours)["reassignments"]
        if m["topic"] == a
    }
    topics = real_kafka.tool(
        "kafka-topics.sh", "--bootstrap-server", bs, "--describe", "--topic", a
    ).stdout
    for ln in lines(topics, "Topic:"):
        if "Partition:" not in ln:
            continue
        fields = dict(f.split(": ", 1) for f in ln.split("\t") if ": " in f)
        m = moving[(a, int(fields["Partition"]))]
        assert ",".join(map(str, m["adding"])) == fields["Adding Replicas"]
        assert ",".join(map(str, m["removing"])) == fields["Removing Replicas"]
        assert m["replication_factor"] == 2 and len(m["replicas"]) >= 3
    rc, text, _ = run_cli(["cluster", "describe", "--bootstrap-server", bs], capsys)
    # the table names the moving partitions with kafka-topics.sh's fields (values checked above)
    assert rc == 0 and "partitions being reassigned" in text and a in text
    assert "adding" in text and "removing" in text

    # --cancel: ours on A, the tool's on B, throttles kept: the same lines with the topic renamed.
    rc, ours, _ = run_cli(
        [
            "cluster",
            "execute",
            "--bootstrap-server",
            bs,
            "--reassignment-json-file",
            plan_a,
            "--cancel",
            "--preserve-throttles",
            "--state-file",
            str(tmp_path / "none.json"),
        ],
        capsys,
    )
    theirs = real_kafka.tool(
        "kafka-reassign-partitions.sh",
        "--bootstrap-server",
        bs,
        "--reassignment-json-file",
        plan_b,
        "--cancel",
        "--preserve-throttles",
    ).stdout
    assert rc == 0
    ours_cancel = [as_set_line(ln) for ln in lines(ours, "Successfully cancelled", "None of")]
    theirs_cancel = [
        as_set_line(ln.replace(b, a)) for ln in lines(theirs, "Successfully cancelled", "None of")
    ]
    assert ours_cancel[0] == theirs_cancel[0]
    assert ours_cancel[0][1] == {f"{a}-0", f"{a}-1", f"{a}-2"}

    # Then our --execute moves C to completion (rollback JSON first, throttled batches, election).
    plan_c = plan_file(tmp_path, "c.json", [(c, p, r) for p, r in target.items()])
    rc, out, err = run_cli(
        [
            "cluster",
            "execute",
            "--bootstrap-server",
            bs,
            "--reassignment-json-file",
            plan_c,
            "--execute",
            "--additional",
            "--throttle",
            "50000000",
            "--max-moves-per-broker",
            "2",
            "--poll-interval",
            "0.2",
        ],
        capsys,
    )
    assert rc == 0, err
    assert "Current partition replica assignment" in out
    assert "Save this to use as the --reassignment-json-file option during rollback" in out
    rollback = json.loads((tmp_path / "c.json.rollback.json").read_text())
    assert {(e["topic"], e["partition"]): e["replicas"] for e in rollback["partitions"]} == {
        (c, p): r for p, r in layout.items()
    }
    assert "Successfully started partition reassignment" in err

    # --verify of everything: A cancelled (back where it was), C completed; throttles cleared.
    plan_all = plan_file(
        tmp_path, "all.json", [(t, p, r) for t in (a, c) for p, r in target.items()]
    )
    theirs = real_kafka.tool(
        "kafka-reassign-partitions.sh",
        "--bootstrap-server",
        bs,
        "--reassignment-json-file",
        plan_all,
        "--verify",
        "--preserve-throttles",
    ).stdout
    rc, ours, _ = run_cli(
        [
            "cluster",
            "execute",
            "--bootstrap-server",
            bs,
            "--reassignment-json-file",
            plan_all,
            "--verify",
        ],
        capsys,
    )
    assert rc == 0 and partition_lines(ours) == partition_lines(theirs)
    # cancelled: back on the original brokers (in the order Kafka's revert leaves them)
    m = re.search(
        rf"There is no active reassignment of partition {a}-0, but replica set is (\S+) rather than 2,3\.",
        ours,
    )
    assert m and set(m.group(1).split(",")) == {"1", "2"}
    assert f"Reassignment of partition {c}-0 is completed." in ours
    assert "Clearing broker-level throttles on brokers 1,2,3" in ours
    configs = real_kafka.tool(
        "kafka-configs.sh",
        "--bootstrap-server",
        bs,
        "--describe",
        "--entity-type",
        "brokers",
        "--entity-name",
        "1",
    ).stdout
    assert "throttled.rate" not in configs
    # B (cancelled by the tool) is still throttled at the topic level until someone verifies it:
    rc, ours, _ = run_cli(
        [
            "cluster",
            "execute",
            "--bootstrap-server",
            bs,
            "--reassignment-json-file",
            plan_b,
            "--verify",
        ],
        capsys,
    )
    assert f"Clearing topic-level throttles on topic {b}" in ours


def test_elect_execute_matches_kafka_leader_election(real_kafka, capsys, tmp_path):
    if real_kafka.home is None:
        pytest.skip("Kafka's tools are not available")
    bs = real_kafka.bootstrap
    tag = uuid.uuid4().hex[:6]
    d = f"live-elect-{tag}"
    create_topic(bs, d, {0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 2]})
    # Reorder the replicas: the leaders stay, so none of them is the preferred one any more.
    import time

    from kafka_rebalance.kafka.admin import KafkaAdmin

    with KafkaAdmin(bs) as admin:
        new = {(d, 0): [2, 1], (d, 1): [3, 2], (d, 2): [1, 3], (d, 3): [2, 1]}
        assert all(c == 0 for c, _ in admin.alter_partition_reassignments(new).values())
        deadline = time.monotonic() + 30
        while admin.list_partition_reassignments(new) and time.monotonic() < deadline:
            time.sleep(0.1)
    # ours elects 0 and 1, the tool 2 and 3; both also ask for 0 (already done by then: ours first)
    # and for a partition that does not exist.
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps({"partitions": [{"topic": d, "partition": p} for p in (0, 1)]}))
    rc, ours, _ = run_cli(
        [
            "cluster",
            "elect",
            "--execute",
            "--bootstrap-server",
            bs,
            "--election-type",
            "preferred",
            "--path-to-json-file",
            str(mine),
        ],
        capsys,
    )
    assert rc == 0
    theirs_file = tmp_path / "theirs.json"
    theirs_file.write_text(
        json.dumps({"partitions": [{"topic": d, "partition": p} for p in (0, 2, 3, 99)]})
    )
    theirs = real_kafka.tool(
        "kafka-leader-election.sh",
        "--bootstrap-server",
        bs,
        "--election-type",
        "preferred",
        "--path-to-json-file",
        str(theirs_file),
        check=False,
    )
    assert theirs.returncode == 1
    ours_again = tmp_path / "again.json"
    ours_again.write_text(
        json.dumps({"partitions": [{"topic": d, "partition": p} for p in (1, 2, 3, 99)]})
    )
    rc2, ours2, err2 = run_cli(
        [
            "cluster",
            "elect",
            "--execute",
            "--bootstrap-server",
            bs,
            "--election-type",
            "PREFERRED",
            "--path-to-json-file",
            str(ours_again),
        ],
        capsys,
    )
    assert rc2 == 1 and "1 replica(s) could not be elected" in err2
    elected = [as_set_line(ln) for ln in lines(ours, "Successfully completed")]
    assert elected == [
        (
            "Successfully completed leader election (PREFERRED) for partitions ",
            frozenset({f"{d}-0", f"{d}-1"}),
        )
    ]
    t_lines = theirs.stdout
    # Same kinds of lines, same wording: success, already elected, and the error line verbatim.
    t_ok = as_set_line(lines(t_lines, "Successfully completed")[0])
    o_valid = as_set_line(lines(ours2, "Valid replica already elected")[0])
    t_valid = as_set_line(lines(t_lines, "Valid replica already elected")[0])
    assert t_ok == (
        "Successfully completed leader election (PREFERRED) for partitions ",
        frozenset({f"{d}-2", f"{d}-3"}),
    )
    assert o_valid[0] == t_valid[0] and t_valid[1] == {f"{d}-0"}
    assert o_valid[1] == {f"{d}-1", f"{d}-2", f"{d}-3"}
    assert lines(ours2, "Error completing") == lines(t_lines, "Error completing")
    assert len(lines(ours2, "Error completing")) == 1
    # --all-topic-partitions: nothing left to elect anywhere (the controller lists only elections made).
    rc, out, _ = run_cli(
        [
            "cluster",
            "elect",
            "--execute",
            "--bootstrap-server",
            bs,
            "--election-type",
            "preferred",
            "--all-topic-partitions",
        ],
        capsys,
    )
    assert rc == 0 and d not in out


def test_every_bootstrap_server_path_reads_the_live_cluster(real_kafka, capsys, tmp_path):
    """describe, skew, elect, plan and generate on --bootstrap-server give what they give on a
    snapshot of the same cluster (taken with describe --output just before)."""
    bs = real_kafka.bootstrap
    topic = f"paths-{uuid.uuid4().hex[:6]}"
    create_topic(bs, topic, {0: [1, 2], 1: [1, 2], 2: [2, 1], 3: [1, 3]})
    snap = tmp_path / "snap.json"
    rc, out, _ = run_cli(
        [
            "cluster",
            "describe",
            "--bootstrap-server",
            bs,
            "--output",
            str(snap),
            "--format",
            "json",
        ],
        capsys,
    )
    assert rc == 0 and json.loads(out)["alive_brokers"] == 3
    moves = tmp_path / "move.json"
    moves.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    for argv in (
        ["describe"],
        ["skew"],
        ["elect", "--topics", topic],
        ["plan", "--mode", "leaders"],
        ["generate", "--topics-to-move-json-file", str(moves), "--broker-list", "1,2,3"],
    ):
        rc_live, live, err = run_cli(
            ["cluster", *argv, "--bootstrap-server", bs, "--format", "json"], capsys
        )
        rc_snap, snapped, _ = run_cli(
            ["cluster", *argv, "--snapshot", str(snap), "--format", "json"], capsys
        )
        assert rc_live == rc_snap == 0, (argv, err)
        a, b = json.loads(live), json.loads(snapped)
        if argv[0] == "describe":
            for doc in (a, b):  # counts move as other tests create topics; the rest must not
                for key in ("has_load", "topics", "partitions", "replicas"):
                    doc.pop(key, None)
            assert a == b
        elif argv[0] == "generate":
            assert a["partitions"] == b["partitions"] == 4
        elif argv[0] == "elect":
            assert a["elect"] == b["elect"]
        else:
            assert set(a) == set(b)
