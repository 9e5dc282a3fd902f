"""Measure the real side's environment from its own records: how long a started JVM consumer takes to
send its first JoinGroup / ConsumerGroupHeartbeat, a client<->broker round trip, and how long close()
takes to reach the coordinator (LeaveGroup). The simulator's fidelity scenario is fed these numbers
(fidelity.ENVIRONMENT) so that it models the machine the real side ran on.

    .venv/bin/python bench/fidelity/measure.py RUN.json [RUN.json ...]   # run.py --json outputs
    .venv/bin/python bench/fidelity/measure.py --out bench/fidelity/environment.json RUN.json ...

Everything comes from the coordinator's log lines that run.py keeps (`raw.log`) and the harness's own
command times (a member is started `down_ms` after it is closed, one every `every_ms` after the event):

- startup: harness "start" -> the coordinator's first line for the new member ("Dynamic member with
  unknown member id joins" / "joins the consumer group"): a new KafkaConsumer, metadata,
  FindCoordinator and the first JoinGroup (or heartbeat);
- round trip: "Created a new member id X" -> "Pending dynamic member with id X joins" (the client reads
  MEMBER_ID_REQUIRED and sends JoinGroup again at once: one response plus one request), after the
  event only (the group's first joins are six consumers starting at once in a cold JVM);
- close: harness "close" -> "has left group" / "left the consumer group" (wakeup, the batch in hand,
  the commit on close, the revocation callback, LeaveGroup); a close that waits behind a JoinGroup
  parked in the coordinator (over 1 s) is the race docs/fidelity.md describes and is left out;
- sync to rejoin (cooperative): "Assignment received from leader" (the leader's SyncGroup) -> the next
  "Preparing to rebalance ... need to revoke partitions and re-join" when nothing comes between: the
  group's record written and replicated, the SyncGroup answer, the revocation, the pre-rejoin commit
  written and replicated, its answer, the JoinGroup. Less the four one-way trips (median), the rest is
  put on the two replicated writes, half each: the simulator's `log_append_ms`.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fidelity as fd  # noqa: E402

_TS = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")
PARKED_MS = 1_000


def _t(line: str) -> int | None:
    m = _TS.match(line)
    if not m:
        return None
    return int(datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp() * 1000)


def _commands(sc: fd.Scenario, t_event: int) -> tuple[list[int], list[int]]:
    """(start times, close times) the harness issued after the event."""
    if sc.event == "join":
        return [t_event], []
    if sc.event == "leave":
        return [], [t_event]
    if sc.event == "rolling_restart":
        closes = [t_event + i * sc.every_ms for i in range(fd.MEMBERS)]
        return [c + sc.down_ms for c in closes], closes
    return [], []


def measure(runs: list[dict]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {
        "startup_ms": [],
        "round_trip_ms": [],
        "close_ms": [],
        "sync_to_rejoin_ms": [],
    }
    known = {s.name: s for s in fd.SCENARIOS}
    for run in runs:
        for name, entry in run.items():
            raw = entry.get("raw")
            sc = known.get(name)
            if not raw or sc is None or sc.static:
                continue
            lines = [(t, line) for line in raw["log"] if (t := _t(line)) is not None]
            joins = (
                "joins the consumer group"
                if sc.protocol == "consumer"
                else "with unknown member id joins"
            )
            left = "left the consumer group" if sc.protocol == "consumer" else "has left group"
            starts, closes = _commands(sc, raw["t_event"])
            for s in starts:
                first = next((t for t, line in lines if t >= s and joins in line), None)
                if first is not None:
                    out["startup_ms"].append(first - s)
            for c in closes:
                first = next((t for t, line in lines if t >= c and left in line), None)
                if first is not None and first - c < PARKED_MS:
                    out["close_ms"].append(first - c)
            for i, (t, line) in enumerate(lines):
                if t < raw["t_event"] or "Assignment received from leader" not in line:
                    continue
                nxt = next(
                    (
                        (t2, l2)
                        for t2, l2 in lines[i + 1 :]
                        if "Preparing to rebalance" in l2
                        or "Stabilized" in l2
                        or "Assignment received" in l2
                    ),
                    None,
                )
                if nxt is not None and "need to revoke partitions" in nxt[1]:
                    out["sync_to_rejoin_ms"].append(nxt[0] - t)
            created: dict[str, int] = {}
            for t, line in lines:
                if (
                    t < raw["t_event"]
                ):  # the group's first joins: six consumers starting in one cold JVM
                    continue
                if m := re.search(r"Created a new member id (\S+)", line):
                    created[m.group(1)] = t
                elif (m := re.search(r"Pending dynamic member with id (\S+) joins", line)) and (
                    m.group(1) in created
                ):
                    out["round_trip_ms"].append(t - created.pop(m.group(1)))
    return out


def summary(values: list[int]) -> str:
    if not values:
        return "n/a"
    v = sorted(values)
    return (
        f"n={len(v)} min {v[0]} ms, median {statistics.median(v):g} ms, "
        f"p90 {v[int(0.9 * (len(v) - 1))]} ms, max {v[-1]} ms"
    )


def environment(m: dict[str, list[int]], sources: list[str]) -> dict:
    """The simulator's settings from the measures: a message's one-way time is half a round trip
    (rounded up), a member's startup and close as measured."""
    one_way = sorted(-(-r // 2) for r in m["round_trip_ms"])
    trips = 4 * statistics.median(one_way)
    return {
        "sources": sources,
        "network": {"latency_samples_ms": one_way},
        "simulation": {
            "member_startup_ms": sorted(m["startup_ms"]),
            "member_close_ms": sorted(m["close_ms"]),
            "log_append_ms": sorted(max(0, round((s - trips) / 2)) for s in m["sync_to_rejoin_ms"]),
        },
    }


def main(argv: list[str]) -> int:
    out = None
    if argv[:1] == ["--out"] and len(argv) > 1:
        out, argv = Path(argv[1]), argv[2:]
    if not argv:
        print("usage: measure.py [--out ENV.json] RUN.json [RUN.json ...]", file=sys.stderr)
        return 2
    runs = []
    for a in argv:
        try:
            runs.append(json.loads(Path(a).read_text(encoding="utf-8")))
        except (OSError, ValueError) as e:
            print(f"error: {a}: {e}", file=sys.stderr)
            return 2
    m = measure(runs)
    for k, v in m.items():
        print(f"{k}: {summary(v)}")
        print(f"  {sorted(v)}")
    if out is not None:
        env = environment(m, [Path(a).name for a in argv])
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(env, indent=1) + "\n", encoding="utf-8")
        tmp.replace(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
