"""The assignors on the simulator's own input shapes, and their share of a simulated run.

    python bench/assign_sim_shapes.py --members 1000 --restarts 10
    python bench/assign_sim_shapes.py --share rolling-cooperative --members 1000 --restarts 10

The 1,000-member rolling restarts of bench/simulate.py run an assignor at every rebalance on an
input unlike the side-by-side harness's cases: one topic of 10 x N partitions, one member just
left or came back, every other member owning exactly what it had. This script builds that
sequence the way the simulator does (sim/world_core.leader_assign for the classic leader,
group/consumer_group_target.compute_target_assignment for the KIP-848 coordinator) and times
every call, each call's result feeding the next input, as in a run:

- range (eager): every member owns nothing (it revoked before joining); a restart is a
  rebalance without the member, then one with it back under a new member id;
- cooperative-sticky: a rebalance without the member (the others own what they had), one with
  it back owning nothing at generation -1 (the members with one partition above the quota
  give it up: withheld), and the follow-up rebalance that hands those over;
- uniform (KIP-848): the members' current targets as owned; without the member, then with it.

Member ids are the classic coordinator's (`m<i>#<incarnation>-0-<seq>`, a new one after each
restart) and KIP-848's random Uuids; members in the coordinator's order (join order, a
rejoining member last). Every call gets new objects (ids, subscriptions, owned tuples; the
TopicPartitions are one shared table, as the simulator's). `--cold` writes 64 MiB between
calls (the simulator's work between two rebalances leaves the assignor's data out of cache).

`--share CASE` instead runs bench/simulate.py's CASE cut after `--restarts` restarts (as
bench/sim_per_event.py cuts it) twice in this process, with 0 restarts and with them, with each
assignor's assign() wrapped in a process-time clock: the restarts' CPU s, the assignors' part of
it, and the CPU time per restart call (not cProfile, which inflates Python calls 3-4x).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "src"), str(HERE)]

from _machine import machine  # noqa: E402
from kafka_rebalance.assign import range as range_mod  # noqa: E402
from kafka_rebalance.assign import sticky, uniform  # noqa: E402
from kafka_rebalance.assign.registry import get_assignor  # noqa: E402
from kafka_rebalance.model import (  # noqa: E402
    DEFAULT_GENERATION,
    GroupSpec,
    MemberSubscription,
    TopicMetadata,
    TopicPartition,
)

TOPIC = "t"
SHARE_CASES = {
    "rolling-eager": range_mod.RangeAssignor,
    "rolling-cooperative": sticky.CooperativeStickyAssignor,
    "rolling-consumer": uniform.UniformAssignor,
}


def _fresh(s: str) -> str:
    """An equal str that is a new object (its hash not computed yet), as a decoded request's."""
    return (s + "\0")[:-1]


class Group:
    """The members as the simulator's coordinator lists them, with what each owns."""

    def __init__(self, n: int, kip848: bool, seed: int = 1) -> None:
        self.rng = random.Random(seed)
        self.kip848 = kip848
        self.seq = 0
        self.table = [TopicPartition(TOPIC, p) for p in range(10 * n)]
        self.meta = {TOPIC: TopicMetadata(TOPIC, 10 * n)}
        order = list(range(n))
        self.rng.shuffle(order)  # join order
        # member name -> (member id, owned partitions, generation), in the coordinator's order
        self.members: dict[str, tuple[str, tuple[TopicPartition, ...], int]] = {}
        for i in order:
            self.members[f"m{i}"] = (self._new_id(f"m{i}", 1), (), DEFAULT_GENERATION)
        self.incarnation = dict.fromkeys(self.members, 1)

    def _new_id(self, name: str, incarnation: int) -> str:
        self.seq += 1
        if self.kip848:
            return f"{self.rng.getrandbits(128):032x}"
        return f"{name}#{incarnation}-0-{self.seq:08x}"

    def spec(self, without: str | None = None) -> GroupSpec:
        """The assignor's input now, every object new (a member `without` left out)."""
        subs = []
        topics = (TOPIC,)
        for name, (mid, owned, gen) in self.members.items():
            if name == without:
                continue
            subs.append(
                MemberSubscription(_fresh(mid), topics, tuple(list(owned)), gen, None, None)
            )
        return GroupSpec(dict(self.meta), tuple(subs))

    def take(self, result, generation: int, without: str | None = None) -> None:
        """Every member now owns its result (KIP-848: its target), at `generation`."""
        for name, (mid, _, _gen) in list(self.members.items()):
            if name == without:
                continue
            got = result.get(mid, ())
            owned = tuple(sorted(got)) if self.kip848 else tuple(got)
            self.members[name] = (mid, owned, DEFAULT_GENERATION if self.kip848 else generation)

    def restart(self, name: str) -> None:
        """`name` comes back under a new member id, owning nothing, listed last."""
        del self.members[name]
        self.incarnation[name] += 1
        self.members[name] = (
            self._new_id(name, self.incarnation[name]),
            (),
            DEFAULT_GENERATION,
        )


def _timed(assign, spec, junk: np.ndarray | None):
    if junk is not None:
        junk += 1.0
    t = time.process_time()  # CPU time: a wall clock counts the other processes' slices
    result = assign(spec)
    return result, time.process_time() - t


def shapes(name: str, n: int, restarts: int, cold: bool) -> dict[str, list[float]]:
    """Per input shape, the call times of `restarts` restarts (after an untimed fresh join)."""
    kip848 = name == "uniform"
    g = Group(n, kip848)
    assign = get_assignor(name).assign
    junk = np.ones(64 * 1024 * 1024 // 8) if cold else None
    gen = 1
    g.take(assign(g.spec()), gen)
    times: dict[str, list[float]] = {}
    names = list(g.members)
    for r in range(restarts):
        who = names[r % len(names)]
        # the member leaves: the others rebalance without it
        res, dt = _timed(assign, g.spec(without=who), junk)
        times.setdefault("leave", []).append(dt)
        gen += 1
        g.take(res, gen, without=who)
        g.restart(who)
        res, dt = _timed(assign, g.spec(), junk)
        times.setdefault("rejoin", []).append(dt)
        gen += 1
        g.take(res, gen)
        if name == "cooperative-sticky":
            res, dt = _timed(assign, g.spec(), junk)
            times.setdefault("follow-up", []).append(dt)
            gen += 1
            g.take(res, gen)
    return times


def share(case: str, n: int, restarts: int) -> None:
    import simulate as bench
    from kafka_rebalance.sim.api import simulate
    from sim_callgrind import duration_ms

    cls = SHARE_CASES[case]
    orig = cls.assign
    calls: list[float] = []

    def assign(self, spec):
        t = time.process_time()
        try:
            return orig(self, spec)
        finally:
            calls.append(time.process_time() - t)

    cls.assign = assign
    try:
        runs = []
        for r in (0, restarts):
            doc = bench.case_doc(case, n)
            doc["duration_ms"] = duration_ms(r)
            calls.clear()
            t = time.process_time()
            simulate(doc, collect_events=False)
            runs.append((time.process_time() - t, list(calls)))
    finally:
        cls.assign = orig
    (base_s, base_calls), (run_s, run_calls) = runs
    mine = run_calls[len(base_calls) :]  # the restarts' calls (a run's first calls are its join)
    cpu = run_s - base_s
    part = sum(mine)
    each = sorted(mine)
    print(
        f"{case}, {n:,} members, {restarts} restarts: run {run_s:.2f} CPU s, restarts {cpu:.2f} CPU s;"
        f" {cls.name}.assign: {len(mine)} calls in the restarts, {part:.3f} CPU s"
        f" ({part / cpu:.1%} of the restarts), {part / max(1, len(mine)) * 1e3:.2f} ms a call"
        f" (median {each[len(each) // 2] * 1e3 if each else 0:.2f} ms); the join's {len(base_calls)}"
        f" calls {sum(base_calls):.3f} CPU s"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--restarts", type=int, default=10)
    ap.add_argument(
        "--assignor",
        default="range,cooperative-sticky,uniform",
        help="comma-separated (default: the simulator's three)",
    )
    ap.add_argument("--cold", action="store_true", help="write 64 MiB between calls")
    ap.add_argument("--share", metavar="CASE", choices=sorted(SHARE_CASES))
    args = ap.parse_args(argv)
    if args.members < 2 or not 0 < args.restarts <= args.members:
        ap.error(f"--members >= 2 and --restarts 1..members, got {args.members}, {args.restarts}")
    print(machine())
    if args.share:
        share(args.share, args.members, args.restarts)
        return 0
    for name in args.assignor.split(","):
        times = shapes(name, args.members, args.restarts, args.cold)
        for shape, ts in times.items():
            ts = sorted(ts)
            print(
                f"{name:>18} {shape:>9}: {len(ts)} calls, best {ts[0] * 1e3:.2f} ms,"
                f" median {ts[len(ts) // 2] * 1e3:.2f} ms, mean {sum(ts) / len(ts) * 1e3:.2f} ms"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
