"""The shared setup of the live `group` command tests: four groups on the real broker, each driven by a
different real client (`four_groups`: classic and KIP-848 confluent-kafka groups, a classic
kafka-python group, a KIP-848 group of Kafka's Java console consumer), our command (`ours`),
Kafka's tool (`kafka_tool`), their texts compared (`same_as_kafka`) and a Prometheus scrape
(`scrape_metrics`)."""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Iterator
from typing import Any

from group_live import LiveConsumers, wait_for
from kafka_rebalance.cli import main

RUN = uuid.uuid4().hex[:6]
T_A, T_B = f"ga-{RUN}", f"gb-{RUN}"
G_CLASSIC, G_848 = f"g-classic-{RUN}", f"g-848-{RUN}"
G_KP, G_JAVA = f"g-kpy-{RUN}", f"g-java-{RUN}"
ALL = [G_CLASSIC, G_848, G_KP, G_JAVA]
RUNNING: dict[str, LiveConsumers] = {}


def ours(capsys, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(["group", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


@contextlib.contextmanager
def four_groups(real_kafka: Any) -> Iterator[None]:
    """The four groups running, Stable, with everything produced committed (`RUNNING["c"]` holds
    their consumers); stopped on leaving."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    b = real_kafka.bootstrap
    admin = AdminClient({"bootstrap.servers": b})
    for f in admin.create_topics(
        [NewTopic(t, n, 1, config={"retention.ms": "-1"}) for t, n in ((T_A, 4), (T_B, 2))]
    ).values():
        f.result()
    p = Producer({"bootstrap.servers": b})
    for i in range(40):
        p.produce(T_A, f"a{i}".encode(), partition=i % 4, timestamp=1_700_000_000_000 + i * 1000)
    for i in range(20):
        p.produce(T_B, f"b{i}".encode(), partition=i % 2, timestamp=1_700_000_000_000 + i * 1000)
    p.flush()
    c = LiveConsumers(b)
    RUNNING["c"] = c
    c.confluent(G_CLASSIC, [T_A, T_B], 2, static=True)
    c.confluent(G_848, [T_A, T_B], 2, protocol="consumer")
    c.kafka_python(G_KP, [T_A], 2)
    c.java(real_kafka.home, G_JAVA, T_B)
    expected = {G_CLASSIC: 60, G_848: 60, G_KP: 40, G_JAVA: 20}

    def settled():
        from kafka_rebalance.kafka.groups import GroupAdmin

        with GroupAdmin(b) as a:
            ds = a.describe(ALL)
            if any(d.state != "Stable" for d in ds.values()):
                return False
            return all(sum(a.committed(g).values()) == n for g, n in expected.items())

    try:
        wait_for(settled, timeout=90, what="all four groups Stable with everything committed")
        yield
    finally:
        c.stop_all()


def kafka_tool(real_kafka, *args: str) -> tuple[str, str]:
    """Kafka's tool; run again when it failed on its own (an admin timeout on a loaded machine)."""
    for _ in range(3):
        r = real_kafka.tool(
            "kafka-consumer-groups.sh",
            "--bootstrap-server",
            real_kafka.bootstrap,
            *args,
            check=False,
        )
        if "Executing consumer group command failed" not in r.stdout:
            break
    return r.stdout, r.stderr


def norm_err(text: str) -> list[str]:
    """Kafka logs through log4j (`[date] WARN msg (class)`); ours prints `WARN msg`."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^\[[^]]+\] (WARN|ERROR) (.*) \([\w.$]+\)$", line)
        out.append(f"{m.group(1)} {m.group(2)}" if m else line)
    return sorted(x for x in out if x.strip())


def same_as_kafka(capsys, k, kafka_args: list[str], our_args: list[str], tries: int = 3):
    """Our --format kafka text equals the tool's, on stdout and on stderr."""
    for _ in range(tries):
        theirs, their_err = kafka_tool(k, *kafka_args)
        rc, out, err = ours(
            capsys, *our_args, "--bootstrap-server", k.bootstrap, "--format", "kafka"
        )
        if out == theirs and norm_err(err) == norm_err(their_err):
            return rc, out
    assert out == theirs
    assert norm_err(err) == norm_err(their_err)
    return rc, out


# -- describe: every view, both protocols, four clients --------------------------------------


_TOOL_TEXT: dict[str, str] = {}


def scrape_metrics(port: int) -> dict[tuple[str, frozenset], float]:
    import urllib.request

    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(kafka_\w+)\{(.*)\} (\S+)$", line)
        if m:
            labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            out[(m.group(1), labels)] = float(m.group(3))
    return out
