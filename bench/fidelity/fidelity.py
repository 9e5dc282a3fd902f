"""The same small scenarios run by the simulator and by real Java consumers on a real broker.

A scenario is 6 members on 24 partitions under a steady produce rate, then one event (a member
joins, one leaves, a rolling restart, a crash found by the session timeout). The real side runs
Kafka's Java consumers (`FidelityConsumers.java`, compiled here into a temporary folder against the
broker's own kafka-clients jar) driven over stdin; a crash is a SIGKILL of the victim's own JVM.
Both sides are reduced to the same measures over what follows the event:

- generations (classic) or group epochs (consumer protocol), from the coordinator's log when the
  cluster's state folder is known (`Stabilized group ... generation`, `Bumped group epoch to`), and
  from the simulator's timeline;
- members and partitions per generation, partitions revoked and assigned per member (as a sorted
  list of (revoked, assigned) counts: which member gives up a partition depends on member ids the
  broker draws at random, so names are not compared), from the rebalance callbacks / event log;
- rebalance duration: first "Preparing to rebalance" (classic) or epoch bump (consumer) after the
  event to the last partition handed over (revoked or assigned);
- records processed twice (at-least-once with auto-commit).
"""

from __future__ import annotations

import collections
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
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PARTITIONS = 24
MEMBERS = 6
# the duration tolerance beyond one heartbeat interval: the real side's request and callback latencies
# on a shared machine (the simulator's are a few ms)
LATENCY_SLACK_MS = 500


@dataclass(frozen=True)
class Scenario:
    """One comparison scenario (times in ms after the group settled)."""

    name: str
    event: str  # join | leave | rolling_restart | crash
    protocol: str = "classic"  # classic | consumer
    assignor: str = "range"  # range | cooperative-sticky (classic), uniform (consumer)
    static: bool = False
    session_ms: int = 45_000
    down_ms: int = 5_000  # rolling restart: each member is down this long
    every_ms: int = 8_000  # rolling restart: one member every
    observe_ms: int = 20_000  # after the event's last action
    produce_rate: int = 200  # records/s over all partitions
    ms_per_record: float = 2.0


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("join-eager", "join"),
    Scenario("join-cooperative", "join", assignor="cooperative-sticky"),
    Scenario("join-consumer", "join", protocol="consumer", assignor="uniform"),
    Scenario("leave-eager", "leave"),
    Scenario("leave-cooperative", "leave", assignor="cooperative-sticky"),
    Scenario("leave-consumer", "leave", protocol="consumer", assignor="uniform"),
    Scenario("rolling-eager", "rolling_restart"),
    Scenario("rolling-cooperative", "rolling_restart", assignor="cooperative-sticky"),
    Scenario("rolling-static", "rolling_restart", static=True, session_ms=30_000),
    Scenario("rolling-consumer", "rolling_restart", protocol="consumer", assignor="uniform"),
    Scenario("crash-eager", "crash", session_ms=10_000),
    Scenario("crash-cooperative", "crash", assignor="cooperative-sticky", session_ms=10_000),
    Scenario("crash-consumer", "crash", protocol="consumer", assignor="uniform", observe_ms=55_000),
)


# ------------------------------------------------------------------------------------ measures


@dataclass
class Measures:
    generations: int
    members_per_generation: list[int]
    partitions_per_generation: list[int]
    moves: list[tuple[int, int]]  # per member (revoked, assigned), sorted
    duration_ms: int | None
    duplicates: int
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "generations": self.generations,
            "members_per_generation": self.members_per_generation,
            "partitions_per_generation": self.partitions_per_generation,
            "moves": [list(m) for m in self.moves],
            "duration_ms": self.duration_ms,
            "duplicates": self.duplicates,
            **self.extra,
        }


def _duplicates(batches: list[tuple[int, int, int]]) -> int:
    """Records processed more than once: (partition, first, end) ranges, overlaps counted per extra pass."""
    seen: dict[int, list[tuple[int, int]]] = collections.defaultdict(list)
    for p, a, b in batches:
        seen[p].append((a, b))
    dup = 0
    for ranges in seen.values():
        events = collections.Counter()
        for a, b in ranges:
            events[a] += 1
            events[b] -= 1
        depth = 0
        last = None
        for x in sorted(events):
            if last is not None and depth > 1:
                dup += (depth - 1) * (x - last)
            depth += events[x]
            last = x
    return dup


def _reduce(
    t_event: int,
    callbacks: list[dict],
    gens: list[tuple[int, int]],
    rebalance_starts: list[int],
    batches: list[tuple[int, int, int]],
    t_end: int | None = None,
) -> Measures:
    """callbacks: {t, m, k (assigned/revoked/lost), gen, ps, owned?}; gens: (t, generation) after the event.
    Only what happens in [t_event, t_end) counts (the real run's shutdown comes after t_end)."""
    end = t_end if t_end is not None else 1 << 62
    after = [c for c in callbacks if t_event <= c["t"] < end]
    gens = [g for g in gens if g[0] < end]
    revoked: dict[str, int] = collections.Counter()
    assigned: dict[str, int] = collections.Counter()
    last_move = None
    owned_by_gen: dict[int, dict[str, int]] = collections.defaultdict(dict)
    for c in after:
        n = len(c["ps"])
        if c["k"] in ("revoked", "lost"):
            revoked[c["m"]] += n
        elif c["k"] == "assigned":
            assigned[c["m"]] += n
            if c.get("owned") is not None:
                owned_by_gen[c["gen"]][c["m"]] = len(c["owned"])
        if n:
            last_move = c["t"]
    names = set(revoked) | set(assigned)
    moves = sorted((revoked[m], assigned[m]) for m in names if revoked[m] or assigned[m])
    gen_ids = [g for _, g in gens]
    members = [len(owned_by_gen.get(g, {})) for g in gen_ids]
    parts = [sum(owned_by_gen.get(g, {}).values()) for g in gen_ids]
    starts = [t for t in rebalance_starts if t >= t_event]
    duration = last_move - starts[0] if starts and last_move is not None else None
    return Measures(len(gens), members, parts, moves, duration, _duplicates(batches))


# ----------------------------------------------------------------------------------- simulator


def heartbeat_ms(sc: Scenario) -> int:
    """The members' heartbeat interval: the client default (classic) or the broker's (consumer)."""
    return 5_000 if sc.protocol == "consumer" else 3_000


# The real side's environment, measured from its own coordinator log and harness (measure.py): the
# one-way time of a request, a started consumer's time to its first JoinGroup / heartbeat, close()'s
# time to its LeaveGroup. The simulator draws each from these samples with its seed.
ENVIRONMENT_FILE = HERE / "environment-2026-11-26.json"


def environment(path: Path | None = ENVIRONMENT_FILE) -> dict:
    """The measured environment's simulator settings ({} for the simulator's defaults)."""
    if path is None:
        return {}
    env = json.loads(path.read_text(encoding="utf-8"))
    return {"network": env["network"], "simulation": env["simulation"]}


def sim_doc(
    sc: Scenario,
    t_event: int,
    seed: int = 1,
    env: dict | None = None,
    starts: dict[str, int] | None = None,
) -> dict:
    """The scenario in the simulator's format, in the measured environment (`env`, default the
    real runs' one; {} for the simulator's defaults). Members start at 0, or at `starts` (each
    member's first JoinGroup / heartbeat in the real run, ms after the harness started them)."""
    if env is None:
        env = environment()
    group: dict = {
        "id": "fidelity",
        "assignors": [sc.assignor] if sc.protocol == "classic" else ["range"],
        "static_membership": sc.static,
        "session_timeout_ms": sc.session_ms,
        "group_initial_rebalance_delay_ms": 0,  # the test cluster's broker setting
    }
    if sc.protocol == "consumer":
        group.update(
            server_assignor=sc.assignor,
            heartbeat_interval_ms=heartbeat_ms(sc),
            session_timeout_ms=45_000,
        )
    events: list[dict] = []
    last = t_event
    if sc.event == "join":
        events.append({"at_ms": t_event, "kind": "join", "member": f"m{MEMBERS}"})
    elif sc.event == "leave":
        events.append({"at_ms": t_event, "kind": "leave", "member": f"m{MEMBERS - 1}"})
    elif sc.event == "crash":
        events.append({"at_ms": t_event, "kind": "crash", "member": f"m{MEMBERS - 1}"})
    else:
        events.append(
            {
                "at_ms": t_event,
                "kind": "rolling_restart",
                "down_ms": sc.down_ms,
                "every_ms": sc.every_ms,
            }
        )
        last = t_event + (MEMBERS - 1) * sc.every_ms + sc.down_ms
    return {
        **env,
        "name": sc.name,
        "seed": seed,
        "protocol": sc.protocol,
        "duration_ms": last + sc.observe_ms,
        "group": group,
        "topics": [{"name": "t", "partitions": PARTITIONS, "produce_rate": sc.produce_rate}],
        "members": (
            {
                "list": [{"name": f"m{i}", "start_ms": starts[f"m{i}"]} for i in range(MEMBERS)],
                "processing_ms_per_record": sc.ms_per_record,
            }
            if starts
            else {"count": MEMBERS, "processing_ms_per_record": sc.ms_per_record}
        ),
        "events": events,
    }


def run_sim(
    sc: Scenario,
    t_event: int,
    seed: int = 1,
    phase_ms: int = 0,
    env: dict | None = None,
    starts: dict[str, int] | None = None,
) -> Measures:
    """The scenario in the simulator, the event `phase_ms` later than the real run's (the measures are
    taken from there: a later phase of the members' heartbeats at the event, nothing else)."""
    from kafka_rebalance.sim.api import simulate

    t_event += phase_ms
    doc = sim_doc(sc, t_event, seed, env, starts)
    res = simulate(doc)
    callbacks = []
    batches: list[tuple[int, int, int]] = []
    for e in res.events:
        if e["kind"] in ("assigned", "revoked", "lost"):
            ps = [int(p.rsplit("-", 1)[1]) for p in e["partitions"]]
            c = {
                "t": e["ts_ms"],
                "m": e["member"],
                "k": e["kind"],
                "gen": e["generation"],
                "ps": ps,
            }
            if e["kind"] == "assigned":
                c["owned"] = [None] * json.loads(e["detail"])["owned"]
            callbacks.append(c)
    gens = [(g["ts_ms"], g["generation"]) for g in res.summary["timeline"] if g["ts_ms"] >= t_event]
    if sc.protocol == "classic":
        starts = [
            e["ts_ms"]
            for e in res.events
            if e["kind"] == "group_state" and json.loads(e["detail"])["to"] == "PreparingRebalance"
        ]
    else:
        starts = [t for t, _ in gens]
    m = _reduce(t_event, callbacks, gens, starts, batches)
    # duplicates the event caused: the same run stopped at the event (same seed, same prefix) has the rest
    before = simulate({**doc, "duration_ms": t_event}, collect_events=False)
    m.duplicates = res.summary["records"]["duplicates"] - before.summary["records"]["duplicates"]
    return m


def outcomes(
    sc: Scenario,
    t_event: int,
    runs: int,
    env: dict | None = None,
    starts: dict[str, int] | None = None,
) -> collections.Counter:
    """How often each (generations, per-member moves) comes out of the simulator over `runs` runs, run i
    with seed i and the event i/runs of a heartbeat interval later. Where the event falls in the
    members' heartbeat cycle is what a real run does not control (when the JVMs came up); the seed
    draws the rest (request latencies, processing times, KIP-848 member ids)."""
    out: collections.Counter = collections.Counter()
    step = heartbeat_ms(sc) // runs
    for i in range(runs):
        m = run_sim(sc, t_event, seed=i + 1, phase_ms=i * step, env=env, starts=starts)
        out[(m.generations, tuple(m.moves))] += 1
    return out


# ---------------------------------------------------------------------------------- real Kafka


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


class _Jvm:
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


def crash_starts(sc: Scenario, stored: dict) -> dict[str, int] | None:
    """The members' measured start times, for a crash scenario: the victim's auto-commit timer (reset
    when its consumer is built and at each rebalance it completes, ConsumerCoordinator.onJoinComplete)
    sets how much it had processed uncommitted when killed, and its JVM of its own came up later than
    the others. Other scenarios run every member in one JVM, started together (and their heartbeat
    phase at the event is swept by the simulator's runs)."""
    starts = stored.get("member_start_ms")
    if sc.event != "crash" or not starts or len(starts) != MEMBERS:
        return None
    return starts


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
        main = _Jvm(cp, args, events, lock, Path(tmp) / "main.stderr")
        victim = (
            _Jvm(cp, args, events, lock, Path(tmp) / "victim.stderr")
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
    m = _reduce(t_event, cbs, gens, starts, batches, t_end)
    # duplicates the event caused: all, less those among the records processed before it
    early = [(e["p"], e["a"], e["b"]) for e in events if e["k"] == "batch" and e["t"] < t_event]
    m.duplicates = _duplicates(batches) - _duplicates(early)
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
