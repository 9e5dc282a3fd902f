"""Real consumer groups for the `group` command tests: confluent-kafka, kafka-python, Kafka's Java console consumer.

Each consumer runs until stopped (threads get an event, the Java consumer is killed by its
PID), so a test can freeze a group: consume everything, then nothing moves while both tools
describe it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

from real_kafka import tool_env


@dataclass
class LiveConsumers:
    bootstrap: str
    stops: dict[str, threading.Event] = field(default_factory=dict)
    threads: dict[str, list[threading.Thread]] = field(default_factory=dict)
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    def confluent(
        self, group: str, topics: list[str], n: int, protocol: str = "classic", static: bool = False
    ) -> None:
        """n members; with `static`, member 0 has a group.instance.id (KIP-345)."""
        from confluent_kafka import Consumer

        stop = self.stops.setdefault(group, threading.Event())

        def run(i: int) -> None:
            conf = {
                "bootstrap.servers": self.bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "client.id": f"ck-{group}-{i}",
                "auto.commit.interval.ms": 200,
            }
            if static and i == 0:
                conf["group.instance.id"] = f"static-{group}"
            if protocol == "consumer":
                conf["group.protocol"] = "consumer"
            else:
                conf["session.timeout.ms"] = 6000
                conf["heartbeat.interval.ms"] = 500
            c = Consumer(conf)
            c.subscribe(topics)
            while not stop.is_set():
                c.poll(0.2)
            c.close()

        ts = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
        self.threads.setdefault(group, []).extend(ts)
        for t in ts:
            t.start()

    def pausable(self, group: str, topic: str) -> threading.Event:
        """One classic confluent consumer that stops fetching (stays in the group) once the event is set."""
        from confluent_kafka import Consumer

        stop = self.stops.setdefault(group, threading.Event())
        pause = threading.Event()

        def run() -> None:
            c = Consumer(
                {
                    "bootstrap.servers": self.bootstrap,
                    "group.id": group,
                    "auto.offset.reset": "earliest",
                    "client.id": f"ck-{group}",
                    "auto.commit.interval.ms": 100,
                    "session.timeout.ms": 6000,
                    "heartbeat.interval.ms": 500,
                }
            )
            c.subscribe([topic])
            paused = False
            while not stop.is_set():
                if pause.is_set() and not paused and c.assignment():
                    c.pause(c.assignment())
                    paused = True
                c.poll(0.1)
            c.close()

        t = threading.Thread(target=run, daemon=True)
        self.threads.setdefault(group, []).append(t)
        t.start()
        return pause

    def kafka_python(self, group: str, topics: list[str], n: int = 1) -> None:
        from kafka import KafkaConsumer

        stop = self.stops.setdefault(group, threading.Event())

        def run(i: int) -> None:
            c = KafkaConsumer(
                *topics,
                bootstrap_servers=self.bootstrap.split(","),
                group_id=group,
                client_id=f"kp-{group}-{i}",
                auto_offset_reset="earliest",
                auto_commit_interval_ms=200,
                session_timeout_ms=6000,
                heartbeat_interval_ms=500,
            )
            while not stop.is_set():
                c.poll(timeout_ms=200)
            c.close()

        ts = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
        self.threads.setdefault(group, []).extend(ts)
        for t in ts:
            t.start()

    def java(self, home, group: str, topic: str, protocol: str = "consumer") -> None:
        """Kafka's console consumer, KIP-848 by default; output discarded, killed by PID."""
        cmd = [
            str(home / "bin" / "kafka-console-consumer.sh"),
            "--bootstrap-server",
            self.bootstrap,
            "--topic",
            topic,
            "--group",
            group,
            "--from-beginning",
            "--consumer-property",
            f"group.protocol={protocol}",
            "--consumer-property",
            "client.id=java-" + group,
            "--consumer-property",
            "auto.commit.interval.ms=200",
        ]
        self.procs[group] = subprocess.Popen(
            cmd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **tool_env()},
            start_new_session=True,
        )

    def stop(self, group: str) -> None:
        if group in self.stops:
            self.stops[group].set()
            for t in self.threads.get(group, ()):
                t.join(timeout=30)
        p = self.procs.pop(group, None)
        if p is not None:
            os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()

    def stop_all(self) -> None:
        for g in list(self.stops) + list(self.procs):
            self.stop(g)


def wait_for(pred, timeout: float = 60.0, every: float = 0.5, what: str = "condition"):
    end = time.time() + timeout
    last = None
    while time.time() < end:
        last = pred()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")
