"""Simulator benchmarks: simulated events per second and wall time.

    python bench/simulate.py                      # all cases at full size
    python bench/simulate.py --members 200        # the rolling restarts with a smaller group
    python bench/simulate.py --case day           # one case
    python bench/simulate.py --markdown out.md    # also write the results as a markdown table

Cases:
  rolling-eager        N members (default 1,000) on 10 x N partitions, a full rolling restart, [range]
  rolling-cooperative  the same with [cooperative-sticky]
  day                  100 members for 24 simulated hours at 1,000 records/s (a crash and a
                       restart along the way), at-least-once with auto-commit

The event log is not kept (collect_events=False); everything else, including
per-record duplicate and loss accounting, runs as in `kafka-rebalance simulate`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from kafka_rebalance.sim.api import simulate  # noqa: E402


def rolling(members: int, assignor: str) -> dict:
    every = 10_000  # each member is down 5 s, longer than a rebalance (heartbeat discovery <= 3 s)
    return {
        "name": f"rolling-{assignor}",
        "seed": 1,
        "duration_ms": 60_000 + members * every + 30_000,
        "group": {"id": "bench", "assignors": [assignor]},
        "topics": [{"name": "t", "partitions": 10 * members, "produce_rate": 10.0 * members}],
        "members": {"count": members, "processing_ms_per_record": 0.1},
        "simulation": {"poll_idle_ms": 5000, "lag_sample_ms": 60_000},
        "events": [
            {"at_ms": 60_000, "kind": "rolling_restart", "down_ms": 5_000, "every_ms": every}
        ],
    }


def day() -> dict:
    return {
        "name": "day",
        "seed": 1,
        "duration_ms": 24 * 3600 * 1000,
        "group": {"id": "bench-day", "assignors": ["cooperative-sticky"]},
        "topics": [{"name": "t", "partitions": 200, "produce_rate": 1000}],
        "members": {"count": 100, "processing_ms_per_record": 0.5},
        "simulation": {"poll_idle_ms": 5000, "lag_sample_ms": 60_000},
        "events": [
            {"at_ms": 6 * 3600 * 1000 + 1234, "kind": "crash", "member": "m7"},
            {"at_ms": 6 * 3600 * 1000 + 300_000, "kind": "restart", "member": "m7", "down_ms": 0},
            {"at_ms": 12 * 3600 * 1000, "kind": "coordinator_failover", "down_ms": 5000},
        ],
    }


def run_case(name: str, doc: dict) -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate(doc, collect_events=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    s = res.summary
    row = {
        "case": name,
        "members": doc["members"]["count"],
        "partitions": doc["topics"][0]["partitions"],
        "simulated_s": doc["duration_ms"] / 1000,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "events": res.simulated_events,
        "events_per_s": int(res.simulated_events / wall) if wall else 0,
        "events_per_cpu_s": int(res.simulated_events / cpu) if cpu else 0,
        "rebalances": s["rebalances"],
        "records": s["records"]["produced"],
        "duplicates": s["records"]["duplicates"],
        "lost": s["records"]["lost"],
    }
    print(json.dumps(row), flush=True)
    return row


START, END = "<!-- bench/simulate.py:start -->", "<!-- bench/simulate.py:end -->"


def markdown(rows: list[dict], command: str, load: str, notes: str = "") -> str:
    lines = [
        "## Simulator (`bench/simulate.py`)",
        "",
        f"Command: `{command}`  ",
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()} with "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}; load average at start {load} "
        "(the machine is shared: wall times are pessimistic, CPU s is the process's own time).",
        "",
        "Cases: a full rolling restart of N members on 10 x N partitions (1 record/s per partition, "
        "each member down 5 s, one every 10 s), eager ([range]) and cooperative ([cooperative-sticky]); "
        "100 members for 24 simulated hours at 1,000 records/s on 200 partitions with a crash, a "
        "restart and a coordinator failover. Every record is accounted for individually "
        "(duplicates and losses are exact); the event log is not kept.",
        "",
    ]
    if notes:
        lines += [notes, ""]
    lines += [
        "| case | members | partitions | simulated s | wall s | CPU s | sim events | events/s (wall) | "
        "rebalances | records | duplicates | lost |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['members']:,} | {r['partitions']:,} | {r['simulated_s']:,.0f} | "
            f"{r['wall_s']:,} | {r['cpu_s']:,} | {r['events']:,} | {r['events_per_s']:,} | "
            f"{r['rebalances']:,} | {r['records']:,} | {r['duplicates']:,} | {r['lost']:,} |"
        )
    return "\n".join(lines) + "\n"


def update_benchmarks(path: Path, section: str) -> None:
    """Replace this script's section of BENCHMARKS.md (between its markers), or append it."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    block = f"{START}\n{section}{END}\n"
    if START in text and END in text:
        head, rest = text.split(START, 1)
        _, tail = rest.split(END, 1)
        tail = tail.lstrip("\n")
        text = head + block + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + block
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--members", type=int, default=1000, help="group size of the rolling restarts")
    ap.add_argument(
        "--case", choices=("rolling-eager", "rolling-cooperative", "day"), action="append"
    )
    ap.add_argument("--markdown", metavar="PATH", help="write the results table to PATH")
    ap.add_argument(
        "--update-benchmarks",
        action="store_true",
        help="rewrite this script's section of BENCHMARKS.md",
    )
    ap.add_argument("--notes", default="", help="a paragraph to add under the table")
    args = ap.parse_args()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    cases = args.case or ["rolling-eager", "rolling-cooperative", "day"]
    rows = []
    for c in cases:
        if c == "rolling-eager":
            rows.append(run_case(c, rolling(args.members, "range")))
        elif c == "rolling-cooperative":
            rows.append(run_case(c, rolling(args.members, "cooperative-sticky")))
        else:
            rows.append(run_case(c, day()))
    md = markdown(
        rows, "python " + " ".join(["bench/simulate.py", *sys.argv[1:]]), load, args.notes
    )
    if args.markdown:
        Path(args.markdown).write_text(md)
    if args.update_benchmarks:
        update_benchmarks(Path(__file__).resolve().parent.parent / "BENCHMARKS.md", md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
