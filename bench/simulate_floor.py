"""How much of a rolling restart is the pure protocol core, and what that means for the 60 s goal.

    python bench/simulate_floor.py                       # 1,000 members, both assignors
    python bench/simulate_floor.py --members 300 --restarts 4 12

The simulator spends its time in two places: the pure core it drives (the
classic group state machine of `group/` and the leader's assignor of
`assign/`, both required to give Kafka's exact behaviour and output) and
everything around it (members' poll loops, per-record books, the network and
the event engine). This script times the core's calls in place while the real
simulator runs the benchmark scenario of `bench/simulate.py`, twice: with K1
and K2 members restarted. The difference of the two runs is the cost of
K2 - K1 restarts in a group that stays at full size, without the initial join
or the tail; times N it projects the full rolling restart.

The core's projected time is a floor for the whole simulator as long as every
message goes through the state machine and every rebalance through the
assignor: no change to the simulator's shell can go below it.

The compiled coordinator calls the compiled group directly, and the compiled world builds the
compiled coordinator directly, past any wrapper: so the timed runs use the simulator's sources
(coordinator, world and members, `sim/__init__.py`'s compiled set), which call the group and the
assignor by name. The group and the assignors themselves run as installed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kafka_rebalance import native, sim  # noqa: E402
from kafka_rebalance.group.classic_group import ClassicGroup  # noqa: E402
from kafka_rebalance.sim import world as _world  # noqa: E402, F401  (in sys.modules, to restore)
from kafka_rebalance.sim.api import simulate  # noqa: E402
from simulate import rolling  # noqa: E402

_clock = time.process_time
_GROUP_CALLS = ("join", "sync", "heartbeat", "leave", "on_timer", "validate_offset_commit")


_SIM_SOURCES = native.sources_of("kafka_rebalance.sim", sim.COMPILED_TOGETHER)
_WORLD = "kafka_rebalance.sim.world"


class CoreClock:
    """CPU seconds spent inside the group state machine and the assignor, and how many calls."""

    def __init__(self) -> None:
        self.group_s = 0.0
        self.group_calls = 0
        self.assign_s = 0.0
        self.assign_calls = 0

    def install(self) -> None:
        # the sources call the group's methods and get_assignor by name, so they can be timed
        # (api.simulate imports its world when called: the sources')
        sys.modules[_WORLD] = _SIM_SOURCES["world"]
        for name in _GROUP_CALLS:
            setattr(ClassicGroup, name, self._timed_group(getattr(ClassicGroup, name)))
        core = _SIM_SOURCES["world_core"]
        original = core.get_assignor

        def get_assignor(name: str):
            return _TimedAssignor(original(name), self)

        core.get_assignor = get_assignor

    def _timed_group(self, fn):
        clock = self

        def timed(*args, **kwargs):
            t0 = _clock()
            try:
                return fn(*args, **kwargs)
            finally:
                clock.group_s += _clock() - t0
                clock.group_calls += 1

        timed.__wrapped__ = fn
        return timed


class _TimedAssignor:
    def __init__(self, inner, clock: CoreClock) -> None:
        self._inner = inner
        self._clock = clock

    def assign(self, spec):
        t0 = _clock()
        try:
            return self._inner.assign(spec)
        finally:
            self._clock.assign_s += _clock() - t0
            self._clock.assign_calls += 1

    def __getattr__(self, name):
        return getattr(self._inner, name)


def measure(members: int, assignor: str, restarts: int) -> dict:
    """One run of the benchmark scenario cut to `restarts` restarts, core calls timed in place."""
    doc = rolling(members, assignor)
    doc["duration_ms"] = 60_000 + restarts * 10_000
    clock = CoreClock()
    core = _SIM_SOURCES["world_core"]
    saved = {name: getattr(ClassicGroup, name) for name in _GROUP_CALLS}, core.get_assignor
    world = sys.modules[_WORLD]
    clock.install()
    try:
        c0 = _clock()
        res = simulate(doc, collect_events=False)
        total = _clock() - c0
    finally:
        for name, fn in saved[0].items():
            setattr(ClassicGroup, name, fn)
        core.get_assignor = saved[1]
        sys.modules[_WORLD] = world
    return {
        "restarts": restarts,
        "cpu_s": total,
        "group_s": clock.group_s,
        "group_calls": clock.group_calls,
        "assign_s": clock.assign_s,
        "assign_calls": clock.assign_calls,
        "rebalances": res.summary["rebalances"],
        "events": res.simulated_events,
    }


def project(members: int, assignor: str, k1: int, k2: int) -> dict:
    a, b = measure(members, assignor, k1), measure(members, assignor, k2)
    k = k2 - k1

    def per_restart(key: str) -> float:
        return (b[key] - a[key]) / k

    row = {
        "assignor": assignor,
        "members": members,
        "restarts_measured": f"{k1}->{k2}",
        "rebalances_per_restart": round(per_restart("rebalances"), 2),
        "group_calls_per_restart": round(per_restart("group_calls")),
        "group_ms_per_restart": round(per_restart("group_s") * 1e3, 2),
        "assign_ms_per_restart": round(per_restart("assign_s") * 1e3, 2),
        "total_ms_per_restart": round(per_restart("cpu_s") * 1e3, 1),
    }
    # a full rolling restart restarts every member once
    row["projected_group_s"] = round(per_restart("group_s") * members, 1)
    row["projected_assign_s"] = round(per_restart("assign_s") * members, 1)
    row["projected_core_s"] = round(row["projected_group_s"] + row["projected_assign_s"], 1)
    row["projected_total_s"] = round(a["cpu_s"] + per_restart("cpu_s") * (members - k1), 1)
    row["core_share"] = round(
        (per_restart("group_s") + per_restart("assign_s")) / per_restart("cpu_s"), 3
    )
    return row


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--restarts", type=int, nargs=2, default=(4, 16), metavar=("K1", "K2"))
    ap.add_argument("--assignor", action="append", choices=("range", "cooperative-sticky"))
    args = ap.parse_args()
    k1, k2 = args.restarts
    if not 0 <= k1 < k2 <= args.members:
        ap.error("--restarts K1 K2 needs 0 <= K1 < K2 <= --members")
    for assignor in args.assignor or ["range", "cooperative-sticky"]:
        print(json.dumps(project(args.members, assignor, k1, k2)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
