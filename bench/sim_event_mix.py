"""What the simulator's engine events are: a count per kind, per member per restart.

    python bench/sim_event_mix.py --members 100 --case rolling-eager

Runs one of bench/simulate.py's cases on the engine's source (interpreted) with a counter in its
loop: every event is named by the function it runs, a message by its kind (JoinGroup, SyncGroup,
heartbeat, commit) and an answer by its error, a KIP-848 heartbeat answer by whether it changes
anything for the member (a new epoch or assignment, or an error) or nothing. It shows which events
are a rebalance's own messages and which are an idle member's (what batching idle members could
save), not how long they take: the run is slower than bench/simulate.py's and its CPU time is not
a benchmark.
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import sys
from heapq import heappop
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import simulate as bench  # noqa: E402
from kafka_rebalance.sim import world, world_core  # noqa: E402


def _engine_source() -> Any:
    spec = importlib.util.spec_from_file_location(
        "sim_engine_source", ROOT / "src" / "kafka_rebalance" / "sim" / "engine.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def counting_engine(counts: collections.Counter, sims: list) -> Any:
    """An engine module whose EventLoop counts every event it runs, by kind."""
    source = _engine_source()

    class CountingLoop(source.EventLoop):  # type: ignore[misc, name-defined]
        def run_until(self, end: Any, progress: Any = None) -> None:
            heap, events = self._heap, self._events
            while heap and not self._stopped:
                key = heap[0]
                t = key >> source._SEQ_BITS
                if t > end:
                    break
                heappop(heap)
                self.now = t
                fn, args = events.pop(key)
                counts[self._kind(fn, args)] += 1
                fn(*args)
                self.processed += 1
            if not self._stopped and end > self.now:
                self.now = end

        def _kind(self, fn: Any, args: tuple) -> str:
            name = getattr(fn, "__qualname__", type(fn).__name__)
            if name.endswith("._fire"):
                entry = self._timers.get(args[0])
                return "timer " + (entry[2].__qualname__ if entry else "(stale)")
            if name.endswith(".receive"):
                return f"{name} {args[0]}"
            if name.endswith("._deliver"):
                client, kind, resp = args
                error = getattr(resp, "error", None)
                label = f"{name} {kind} {getattr(error, 'name', '')}".rstrip()
                # the world is the bound method's own (a compiled world's subclass does not
                # call a patched __init__); else the one remembered at its construction
                sim = getattr(fn, "__self__", None) or (sims[0] if sims else None)
                if kind == "cheartbeat" and sim is not None:
                    member = next((m for m in sim.members.values() if m.client == client), None)
                    epoch = getattr(getattr(member, "cm", None), "member_epoch", None)
                    steady = resp.assignment is None and resp.member_epoch == epoch
                    return label + (" (changes nothing)" if steady else " (changes)")
                return label
            return name

    class Engine:
        EventLoop = CountingLoop

    return Engine


def event_mix(case: str, members: int) -> tuple[collections.Counter, dict]:
    """Run one bench case with the counting engine: (events by kind, bench/simulate.py's row)."""
    counts: collections.Counter = collections.Counter()
    sims: list = []
    engine, init = world_core.ENGINE, world.Simulation.__init__

    def remember(self: Any, *a: Any, **k: Any) -> None:
        sims.append(self)
        init(self, *a, **k)

    world_core.ENGINE = counting_engine(counts, sims)  # type: ignore[assignment]
    world.Simulation.__init__ = remember  # type: ignore[method-assign]
    try:
        row = bench.run_case(case, bench.case_doc(case, members))
    finally:
        world_core.ENGINE, world.Simulation.__init__ = engine, init  # type: ignore[method-assign]
    return counts, row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--members", type=int, default=100)
    ap.add_argument("--case", choices=bench.ROLLING, default="rolling-eager")
    args = ap.parse_args()
    counts, _ = event_mix(args.case, args.members)
    total = sum(counts.values())
    n = args.members
    print(
        f"{args.case}, {n:,} members ({n:,} restarts): {total:,} events, {total / n / n:.1f} per member per restart"
    )
    print(f"{'events':>12}  {'share':>6}  {'per member per restart':>22}  kind")
    for kind, c in counts.most_common():
        print(f"{c:>12,}  {c / total:>6.1%}  {c / n / n:>22.2f}  {kind}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
