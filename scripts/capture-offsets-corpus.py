"""Capture real `__consumer_offsets` records from a Kafka broker into tests/data/consumer_offsets_corpus.jsonl.

The groups are made by Kafka's Java consumers (bench/fidelity/FidelityConsumers.java, compiled here)
and by librdkafka (confluent-kafka), so the consumer-protocol bytes inside GroupMetadata are written
by both clients: classic range, cooperative-sticky and static groups, a KIP-848 `consumer` group,
non-ASCII group ids, client ids, racks and commit metadata, an offset deletion
(`kafka-consumer-groups.sh --delete-offsets`) and group deletions (`--delete`, tombstones). Then
every record of those groups is read back from all partitions of `__consumer_offsets` and written
as one JSON line each: partition, offset, key and value as hex (value null for a tombstone), and
which step made the group.

    .venv/bin/python scripts/capture-offsets-corpus.py            # own cluster (../shared/kafka)
    KAFKA_BOOTSTRAP=... .venv/bin/python scripts/capture-offsets-corpus.py --out FILE

The test tests/test_offsets_corpus.py holds every record to decode -> encode byte for byte.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench" / "fidelity"))

import real_cluster as rc  # noqa: E402

import kafka_rebalance.group.records as records  # noqa: E402
import real_kafka as rk  # noqa: E402

OUT = ROOT / "tests" / "data" / "consumer_offsets_corpus.jsonl"


def java_group(
    cp: str,
    bootstrap: str,
    topics: str,
    group: str,
    protocol: str,
    assignor: str,
    static: bool,
    names: list[str],
    rack: str | None,
    run_s: float,
) -> None:
    """Start Java consumers, let them consume and commit for run_s seconds, close them."""
    args = [bootstrap, topics, group, protocol, assignor, str(static).lower(), "10000", "0"]
    if rack:
        args.append(rack)
    events: list[dict] = []
    jvm = rc.Jvm(cp, args, events, threading.Lock())
    for n in names:
        jvm.send(f"start {n}")
        time.sleep(1.0)
    deadline = time.time() + 60
    while {e["m"] for e in list(events) if e["k"] == "assigned"} != set(names):
        if time.time() > deadline:
            jvm.quit()
            raise RuntimeError(
                f"group {group}: members {names} did not all get an assignment in 60 s"
            )
        time.sleep(0.2)
    time.sleep(run_s)
    jvm.quit()


def rdkafka_group(
    bootstrap: str,
    topics: list[str],
    group: str,
    strategy: str,
    members: list[tuple[str, str]],
    metadata: str,
) -> None:
    """A librdkafka classic group: members (client id, rack; "" is librdkafka's default) subscribe to
    `topics` in the order given (librdkafka keeps it on the wire), poll together, and the first commits
    with `metadata`."""
    from confluent_kafka import Consumer, TopicPartition

    cs = [
        Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": cid,
                "client.rack": rack,
                "partition.assignment.strategy": strategy,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        for cid, rack in members
    ]
    for c in cs:
        c.subscribe(topics)
    deadline = time.time() + 20
    last: dict[int, object] = {}
    while time.time() < deadline and len(last) < len(cs):
        for i, c in enumerate(cs):
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                last[i] = m
    time.sleep(2)
    for i, c in enumerate(cs):
        m = last.get(i)
        if m is not None:
            c.commit(
                offsets=[
                    TopicPartition(
                        m.topic(),
                        m.partition(),
                        m.offset() + 1,
                        metadata=metadata if i == 0 else "",
                    )
                ],
                asynchronous=False,
            )
    for c in cs:
        c.close()


def read_offsets_topic(bootstrap: str, groups: dict[str, str]) -> list[dict]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "corpus-reader-not-joined",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    md = c.list_topics("__consumer_offsets", timeout=20)
    parts = sorted(md.topics["__consumer_offsets"].partitions)
    c.assign([TopicPartition("__consumer_offsets", p, 0) for p in parts])
    left = set(parts)
    out = []
    deadline = time.time() + 60
    while left and time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                left.discard(m.partition())
            continue
        key, value = m.key(), m.value()
        try:
            k = records.decode_key(key) if records.record_type(key) <= 2 else None
            group = k.group if k is not None else _kip848_group(key)
        except Exception:  # noqa: BLE001 - other record types are not ours
            continue
        if group in groups:
            out.append(
                {
                    "partition": m.partition(),
                    "offset": m.offset(),
                    "group": group,
                    "made_by": groups[group],
                    "key": key.hex(),
                    "value": None if value is None else value.hex(),
                }
            )
    c.close()
    return out


def _kip848_group(key: bytes) -> str:
    from kafka_rebalance.group.consumer_group_records import decode_consumer_group_record

    return decode_consumer_group_record(key, None).group_id


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    reason = rk.unavailable_reason()
    if reason:
        print(f"error: {reason}", file=sys.stderr)
        return 1
    cluster = rk.external() if os.environ.get("KAFKA_BOOTSTRAP") else rk.start(brokers=3)
    b = cluster.bootstrap
    tag = str(int(time.time()))[-6:]
    groups: dict[str, str] = {}
    try:
        topic, topic2 = f"corpus-a-{tag}", f"corpus-b-{tag}"
        for t in (topic, topic2):
            cluster.tool(
                "kafka-topics.sh",
                "--bootstrap-server",
                b,
                "--create",
                "--topic",
                t,
                "--partitions",
                "6",
                "--replication-factor",
                "1",
            )
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": b})
        for i in range(600):
            p.produce(topic if i % 2 else topic2, b"v%d" % i, partition=i % 6)
        p.flush(30)
        with tempfile.TemporaryDirectory() as tmp:
            cp = rc.compile_harness(rk.KAFKA_HOME, Path(tmp))
            steps = [
                (
                    f"corpus-range-{tag}",
                    "java classic range, 2 members, 2 topics",
                    "classic",
                    "range",
                    False,
                    None,
                ),
                (
                    f"corpus-coop-{tag}",
                    "java classic cooperative-sticky, 3 members, rack",
                    "classic",
                    "cooperative-sticky",
                    False,
                    "rack-1",
                ),
                (
                    f"corpus-static-{tag}",
                    "java classic range, static members",
                    "classic",
                    "range",
                    True,
                    None,
                ),
                (
                    f"corpus-grüppe-日本-{tag}",
                    "java classic cooperative-sticky, non-ASCII group and rack",
                    "classic",
                    "cooperative-sticky",
                    False,
                    "étage-ü",
                ),
                (
                    f"corpus-kip848-{tag}",
                    "java consumer protocol (KIP-848), uniform, rack",
                    "consumer",
                    "uniform",
                    False,
                    "rack-2",
                ),
                (
                    f"corpus-kip848-ß-{tag}",
                    "java consumer protocol (KIP-848), range, non-ASCII group",
                    "consumer",
                    "range",
                    False,
                    None,
                ),
            ]
            for group, what, proto, assignor, static, rack in steps:
                groups[group] = what
                n = 3 if "3 members" in what else 2
                java_group(
                    cp,
                    b,
                    f"{topic},{topic2}",
                    group,
                    proto,
                    assignor,
                    static,
                    [f"m{i}" for i in range(n)],
                    rack,
                    6.0,
                )
        g = f"corpus-rdkafka-{tag}"
        groups[g] = (
            "librdkafka classic cooperative-sticky, topics unsorted, non-ASCII client id, rack and "
            "commit metadata, an empty rack"
        )
        rdkafka_group(
            b,
            [topic2, topic],
            g,
            "cooperative-sticky",
            [("client-ç-✓", "rack-ø"), ("c2", "")],
            "métadonnées ✓ 日本",
        )
        g = f"corpus-rdkafka-range-{tag}"
        groups[g] = "librdkafka classic range, 3 members, topics unsorted"
        rdkafka_group(b, [topic2, topic], g, "range", [("r0", ""), ("r1", ""), ("r2", "")], "")
        # offset deletion, then deletion of whole groups (tombstones)
        cluster.tool(
            "kafka-consumer-groups.sh",
            "--bootstrap-server",
            b,
            "--delete-offsets",
            "--group",
            f"corpus-range-{tag}",
            "--topic",
            topic2,
        )
        groups[f"corpus-range-{tag}"] += "; offsets of one topic deleted"
        time.sleep(
            12
        )  # static members leave no LeaveGroup: their group empties at the session timeout
        for gg in (f"corpus-static-{tag}", f"corpus-kip848-ß-{tag}"):
            r = cluster.tool(
                "kafka-consumer-groups.sh",
                "--bootstrap-server",
                b,
                "--delete",
                "--group",
                gg,
                check=False,
            )
            if r.returncode != 0:
                print(f"warning: deleting {gg}: {r.stdout}{r.stderr}", file=sys.stderr)
            groups[gg] += "; group deleted"
        time.sleep(2)
        records = read_offsets_topic(b, groups)
    except subprocess.CalledProcessError as e:
        print(f"error: {e.cmd}: {e.stderr}", file=sys.stderr)
        return 1
    finally:
        cluster.stop()
    records.sort(key=lambda r: (r["partition"], r["offset"]))
    tmp_out = args.out.with_suffix(".tmp")
    with open(tmp_out, "w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n")
    tmp_out.replace(args.out)
    by = {}
    for r in records:
        by[r["made_by"]] = by.get(r["made_by"], 0) + 1
    print(f"{len(records)} records from {len(by)} groups -> {args.out}")
    for k, v in sorted(by.items()):
        print(f"  {v:4d}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
