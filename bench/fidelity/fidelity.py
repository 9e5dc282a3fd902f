"""The same small scenarios run by the simulator and by real Java consumers on a real broker.

A scenario is 6 members on 24 partitions under a steady produce rate, then one event (a member
joins, one leaves, a rolling restart, a crash found by the session timeout). This module holds the
scenarios, the measures and the simulator's side; real_cluster.py the real side, which runs
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
import json
from dataclasses import dataclass, field
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


def count_duplicates(batches: list[tuple[int, int, int]]) -> int:
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


def reduce_measures(
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
    return Measures(len(gens), members, parts, moves, duration, count_duplicates(batches))


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
    m = reduce_measures(t_event, callbacks, gens, starts, batches)
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
