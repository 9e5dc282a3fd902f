"""The real side of the fidelity runs (fidelity.py holds the scenarios, the measures and the
simulator's side): Kafka's Java consumers (`FidelityConsumers.java`, compiled into a temporary folder
against the broker's own kafka-clients jar by `compile_harness`) driven over stdin by `Jvm`, a
producer at the scenario's rate, the coordinator's log read for generations (`log_generations`,
`broker_log`), and `run_real`, one scenario on a real broker reduced to `fidelity.Measures`."""

from __future__ import annotations

import glob
import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path

from fidelity import (
    HERE,
    MEMBERS,
    PARTITIONS,
    REPO,
    Measures,
    Scenario,
    count_duplicates,
    reduce_measures,
)


def kafka_classpath(kafka_home: Path) -> list[str]:
    """kafka-clients and slf4j-api (the client's only runtime needs here)."""
    clients = sorted(glob.glob(str(kafka_home / "libs" / "kafka-clients-*.jar")))
    slf4j = sorted(
        glob.glob(
            str(
                REPO
                / ".venv"
                / "lib"
                / "python*"
                / "site-packages"
                / "pyspark"
                / "jars"
                / "slf4j-api-*.jar"
            )
        )
    )
    slf4j += sorted(glob.glob(str(kafka_home / "libs" / "slf4j-api-*.jar")))
    if not clients or not slf4j:
        raise RuntimeError(
            f"kafka-clients or slf4j-api jar not found (looked under {kafka_home}/libs and the venv)"
        )
    return [clients[-1], slf4j[0]]


def compile_harness(kafka_home: Path, out: Path) -> str:
    cp = kafka_classpath(kafka_home)
    subprocess.run(
        [
            "javac",
            "-nowarn",
            "-cp",
            os.pathsep.join(cp),
            "-d",
            str(out),
            str(HERE / "FidelityConsumers.java"),
        ],
        check=True,
        capture_output=True,
        timeout=180,
    )
    return os.pathsep.join([str(out), *cp])


class Jvm:
    """One FidelityConsumers process; its stdout lines are collected by a thread."""

    def __init__(
        self,
        classpath: str,
        args: list[str],
        sink: list[dict],
        lock: threading.Lock,
        log: Path | None = None,
    ):
        self.proc = subprocess.Popen(
            [
                "java",
                "-Xmx192m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                classpath,
                "FidelityConsumers",
                *args,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL if log is None else open(log, "w"),  # noqa: SIM115
            text=True,
            bufsize=1,
        )
        self._t = threading.Thread(target=self._read, args=(sink, lock), daemon=True)
        self._t.start()

    def _read(self, sink: list[dict], lock: threading.Lock) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.strip()
            if line.startswith("{"):
                with lock:
                    sink.append(json.loads(line))

    def send(self, cmd: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()

    def quit(self, timeout: float = 60) -> None:
        if self.proc.poll() is None:
            try:
                self.send("quit")
                self.proc.stdin.close()  # type: ignore[union-attr]
                self.proc.wait(timeout=timeout)
            except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
                self.proc.kill()
                self.proc.wait()
        self._t.join(5)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()


class _Producer:
    """A steady produce rate, round robin over the partitions (confluent-kafka)."""

    def __init__(self, bootstrap: str, topic: str, rate: int):
        from confluent_kafka import Producer

        self.p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1})
        self.topic, self.rate = topic, rate
        self.stop = threading.Event()
        self.sent = 0
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        t0 = time.monotonic()
        while not self.stop.is_set():
            due = int((time.monotonic() - t0) * self.rate)
            while self.sent < due:
                self.p.produce(self.topic, b"x" * 64, partition=self.sent % PARTITIONS)
                self.sent += 1
            self.p.poll(0)
            time.sleep(0.02)
        self.p.flush(10)

    def close(self) -> None:
        self.stop.set()
        self.t.join(20)


def log_generations(
    protocol: str, logs: list[tuple[int, str]], t_event: int
) -> tuple[list, list[int]]:
    """(generations after t_event as (time, id), rebalance start times) from the coordinator's log.

    Classic: "Stabilized group G generation N" (the join phase done) and "Preparing to rebalance".
    Consumer protocol: every group epoch gets "Computed a new target assignment for epoch N" (a member
    leaving bumps the epoch without a "Bumped group epoch" line), and a rebalance starts at a member
    joining, leaving or being fenced."""
    if protocol == "classic":
        pat, start_marks = (
            r"Stabilized group \S+ generation (\d+)",
            ("Preparing to rebalance group",),
        )
    else:
        pat = r"Computed a new target assignment for epoch (\d+)"
        start_marks = ("Bumped group epoch", "left the consumer group", "fenced from the group")
    gens = [
        (t, int(m.group(1))) for t, line in logs if (m := re.search(pat, line)) and t >= t_event
    ]
    return gens, [t for t, line in logs if any(s in line for s in start_marks)]


_LOG_TS = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")


def broker_log(state_dir: Path | None, group: str, t0: int) -> list[tuple[int, str]]:
    """The coordinator's lines about `group` (all nodes), from t0 on, in time order."""
    if state_dir is None:
        return []
    out = []
    for f in glob.glob(str(state_dir / "node-*" / "logs" / "server.log*")):
        with open(f, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if group not in line:
                    continue
                m = _LOG_TS.match(line)
                if not m:
                    continue
                t = int(datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp() * 1000)
                if t >= t0:
                    out.append((t, line.rstrip()))
    out.sort()
    return out


def member_starts(
    protocol: str, logs: list[tuple[int, str]], callbacks: list[dict], t_start: int
) -> dict[str, int]:
    """When each member's consumer came up in the real run (ms after the harness started them): its
    first JoinGroup in the coordinator's log (classic; member ids begin with the client id), else
    (consumer protocol: the log names members by random ids) its first rebalance callback. The
    victim of a crash runs in a JVM of its own that comes up seconds later than the others."""
    out: dict[str, int] = {}
    for i in range(MEMBERS):
        name = f"m{i}"
        t = None
        if protocol == "classic":
            t = next(
                (
                    t
                    for t, line in logs
                    if "with unknown member id joins" in line and f" {name}-" in line
                ),
                None,
            )
        if t is None:
            t = min((c["t"] for c in callbacks if c["m"] == name), default=None)
        if t is not None:
            out[name] = max(0, t - t_start)
    return out


def _settled(events: list[dict], names: set[str], quiet_ms: int) -> bool:
    """Every member owns partitions, all partitions are owned, and no callback for quiet_ms."""
    owned: dict[str, set[int]] = {}
    last = 0
    for e in events:
        if e["k"] == "assigned" and e.get("owned") is not None:
            owned[e["m"]] = set(e["owned"])
            last = e["t"]
        elif e["k"] in ("revoked", "lost"):
            owned[e["m"]] = owned.get(e["m"], set()) - set(e["ps"])
            last = e["t"]
    covered = set().union(*owned.values()) if owned else set()
    return (
        names <= set(owned)
        and len(covered) == PARTITIONS
        and int(time.time() * 1000) - last >= quiet_ms
    )


def run_real(
    sc: Scenario, bootstrap: str, kafka_home: Path, state_dir: Path | None, topics_tool
) -> tuple[Measures, int, dict]:
    """Run the scenario on the cluster. Returns the measures, the event time after the start
    (for the simulator) and raw material (callbacks, broker log lines) for inspection."""
    tag = uuid.uuid4().hex[:8]
    topic, group = f"fidelity-t-{tag}", f"fidelity-{sc.name}-{tag}"
    topics_tool(
        "--create", "--topic", topic, "--partitions", str(PARTITIONS), "--replication-factor", "1"
    )
    events: list[dict] = []
    lock = threading.Lock()
    with tempfile.TemporaryDirectory(prefix="fidelity-") as tmp:
        cp = compile_harness(kafka_home, Path(tmp))
        args = [
            bootstrap,
            topic,
            group,
            sc.protocol,
            sc.assignor,
            str(sc.static).lower(),
            str(sc.session_ms),
            str(sc.ms_per_record),
        ]
        producer = _Producer(bootstrap, topic, sc.produce_rate)
        main = Jvm(cp, args, events, lock, Path(tmp) / "main.stderr")
        victim = (
            Jvm(cp, args, events, lock, Path(tmp) / "victim.stderr")
            if sc.event == "crash"
            else None
        )
        names = {f"m{i}" for i in range(MEMBERS)}
        try:
            t_start = int(time.time() * 1000)
            for i in range(MEMBERS):
                (victim if victim is not None and i == MEMBERS - 1 else main).send(f"start m{i}")
            deadline = time.time() + 120
            while True:
                with lock:
                    ok = _settled(list(events), names, 4_000)
                if ok:
                    break
                if time.time() > deadline:
                    raise RuntimeError(f"{sc.name}: the group did not settle in 120 s")
                time.sleep(0.2)
            t_event = int(time.time() * 1000)
            if sc.event == "join":
                main.send(f"start m{MEMBERS}")
            elif sc.event == "leave":
                main.send(f"close m{MEMBERS - 1}")
            elif sc.event == "crash":
                assert victim is not None
                victim.kill()
            else:
                t = t_event
                for i in range(MEMBERS):
                    time.sleep(
                        max(0.0, (t_event + i * sc.every_ms - int(time.time() * 1000)) / 1000)
                    )
                    main.send(f"close m{i}")
                    threading.Timer(sc.down_ms / 1000, main.send, args=(f"start m{i}",)).start()
                t = t_event + (MEMBERS - 1) * sc.every_ms + sc.down_ms
                time.sleep(max(0.0, (t - int(time.time() * 1000)) / 1000))
            time.sleep(sc.observe_ms / 1000)
            t_end = int(time.time() * 1000)
        finally:
            main.quit()
            if victim is not None:
                victim.kill()
            producer.close()
    logs = broker_log(state_dir, group, t_start)
    cbs = [e for e in events if e["k"] in ("assigned", "revoked", "lost")]
    batches = [(e["p"], e["a"], e["b"]) for e in events if e["k"] == "batch"]
    gens, starts = log_generations(sc.protocol, logs, t_event)
    if state_dir is None:  # no coordinator log: the generations the members saw
        seen = sorted({(c["gen"]) for c in cbs if c["t"] >= t_event and c["k"] == "assigned"})
        gens = [(t_event, g) for g in seen]
        starts = [min((c["t"] for c in cbs if c["t"] >= t_event), default=t_event)]
    for c in cbs:
        if "owned" in c:
            c["owned"] = list(c["owned"])
    m = reduce_measures(t_event, cbs, gens, starts, batches, t_end)
    # duplicates the event caused: all, less those among the records processed before it
    early = [(e["p"], e["a"], e["b"]) for e in events if e["k"] == "batch" and e["t"] < t_event]
    m.duplicates = count_duplicates(batches) - count_duplicates(early)
    m.extra["produced"] = producer.sent
    m.extra["member_start_ms"] = member_starts(sc.protocol, logs, cbs, t_start)
    raw = {
        "callbacks": cbs,
        # each batch a poll returned: [time, member, partition, first offset, end offset]
        "batches": [[e["t"], e["m"], e["p"], e["a"], e["b"]] for e in events if e["k"] == "batch"],
        "log": [line for _, line in logs],
        "t_start": t_start,
        "t_event": t_event,
    }
    return m, t_event - t_start, raw
