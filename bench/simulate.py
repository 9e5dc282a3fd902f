"""Simulator benchmarks: CPU and wall time per protocol and group size.

    python bench/simulate.py                          # every case at 1,000 members
    python bench/simulate.py --members 100,300,1000   # the rolling restarts at each group size
    python bench/simulate.py --case rolling-eager     # one case (repeat --case for more)
    python bench/simulate.py --update-benchmarks      # also rewrite the table in BENCHMARKS.md

Cases (a full rolling restart of N members on 10 x N partitions: 1 record/s per partition, each
member down 5 s, one every 10 s):
  rolling-eager        classic protocol, [range]
  rolling-cooperative  classic protocol, [cooperative-sticky]
  rolling-static       classic protocol, [range], static_membership: true (group.instance.id)
  rolling-consumer     KIP-848 consumer protocol, the coordinator's uniform assignor
  day                  100 members for 24 simulated hours at 1,000 records/s (a crash, a restart
                       and a coordinator failover), classic cooperative; its size is fixed

Each case runs in its own child process (one after the other), so one case's heap and caches do
not slow the next and CPU s is that process's own time. The event log is not kept
(collect_events=False); everything else, including per-record duplicate and loss accounting,
runs as in `kafka-rebalance simulate`.

KAFKA_REBALANCE_SIM_CORE=native|auto|reference (default auto, what `kafka-rebalance simulate` runs)
chooses the simulator's core (`sim.api.simulate_scenario(core=...)`, docs/sim-native.md); each
row's `core` says which ran.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from _machine import ALL_COMPILED, kernels, machine  # noqa: E402
from kafka_rebalance.sim.api import simulate_scenario  # noqa: E402
from kafka_rebalance.sim.scenario import parse_simulation_scenario  # noqa: E402

ROLLING = ("rolling-eager", "rolling-cooperative", "rolling-static", "rolling-consumer")
CASES = (*ROLLING, "day")


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


def case_doc(case: str, members: int) -> dict:
    """The scenario document of one case."""
    if case == "rolling-eager":
        return rolling(members, "range")
    if case == "rolling-cooperative":
        return rolling(members, "cooperative-sticky")
    if case == "rolling-static":
        doc = rolling(members, "range")
        doc["name"] = "rolling-static"
        doc["group"]["static_membership"] = True
        return doc
    if case == "rolling-consumer":
        doc = rolling(members, "range")
        doc["name"] = "rolling-consumer"
        doc["protocol"] = "consumer"
        doc["group"].pop("assignors")
        return doc
    if case == "day":
        return day()
    raise ValueError(case)


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


def run_case(name: str, doc: dict, core: str = "reference") -> dict:
    """One case in this process, on `core` (the benches that import this module count or profile
    the reference's engine and world, so they keep the reference; `--one` passes the table's)."""
    load = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate_scenario(parse_simulation_scenario(doc), collect_events=False, core=core)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    s = res.summary
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    row = {
        "case": name,
        "members": doc["members"]["count"],
        "partitions": doc["topics"][0]["partitions"],
        "simulated_s": doc["duration_ms"] / 1000,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "peak_rss_mib": round(rss_kib / 1024),
        "load": round(load, 1),
        "events": res.simulated_events,
        "events_per_s": int(res.simulated_events / wall) if wall else 0,
        "events_per_cpu_s": int(res.simulated_events / cpu) if cpu else 0,
        "rebalances": s["rebalances"],
        "records": s["records"]["produced"],
        "duplicates": s["records"]["duplicates"],
        "lost": s["records"]["lost"],
        # which path ran: a stale build is never used, so an edited compiled source silently
        # sends the run to the (slower) reference path; the row says so
        "kernels": kernels(),
        "core": res.core,
    }
    return row


def run_isolated(case: str, members: int) -> dict:
    """One case in a child process: the row it prints on stdout (its last line)."""
    out = subprocess.run(
        [sys.executable, __file__, "--one", case, "--members", str(members)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


START, END = "<!-- bench/simulate.py:start -->", "<!-- bench/simulate.py:end -->"


def markdown(rows: list[dict], command: str, notes: str = "") -> str:
    lines = [
        "## Simulator (`bench/simulate.py`)",
        "",
        f"Command: `{command}` (`make bench` runs it with `--members $(BENCH_SIM_MEMBERS)`, "
        "default 100,300,1000).  ",
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine()}. The machine is "
        "shared: the load column is the 1-minute load average when the case started; CPU s is the "
        "case's own process time (each case runs alone in its own process, one after the other).",
        "",
        "Cases: a full rolling restart of N members on 10 x N partitions (1 record/s per partition, "
        "each member down 5 s, one every 10 s): eager = classic [range], cooperative = classic "
        "[cooperative-sticky], static = classic [range] with static membership, consumer = KIP-848 "
        "with the uniform assignor; day = 100 members for 24 simulated hours at 1,000 records/s on "
        "200 partitions with a crash, a restart and a coordinator failover. Every record is "
        "accounted for individually (duplicates and losses are exact); the event log is not kept. "
        "Goal (issue 20): each 1,000-member rolling restart under 60 s.",
        "",
    ]
    if notes:
        lines += [notes, ""]
    lines += [
        "| case | core | members | partitions | simulated s | CPU s | wall s | load | peak RSS | sim events | "
        "events per CPU s | rebalances | records | duplicates | lost |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r.get('core', 'reference')} | {r['members']:,} | {r['partitions']:,} | {r['simulated_s']:,.0f} | "
            f"{r['cpu_s']:,.1f} | {r['wall_s']:,.1f} | {r['load']:.1f} | {r['peak_rss_mib']:,} MiB | "
            f"{r['events']:,} | {r['events_per_cpu_s']:,} | {r['rebalances']:,} | {r['records']:,} | "
            f"{r['duplicates']:,} | {r['lost']:,} |"
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


def member_counts(text: str) -> list[int]:
    try:
        counts = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 2:
        raise SystemExit(f"--members: expected group sizes like 100,300,1000, got {text!r}")
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--members",
        default="1000",
        help="group sizes of the rolling restarts, comma-separated (default 1000)",
    )
    ap.add_argument("--case", choices=CASES, action="append", help="default: all")
    ap.add_argument("--one", choices=CASES, help=argparse.SUPPRESS)  # the child process
    ap.add_argument("--markdown", metavar="PATH", help="write the results table to PATH")
    ap.add_argument(
        "--update-benchmarks",
        action="store_true",
        help="rewrite this script's section of BENCHMARKS.md",
    )
    ap.add_argument("--notes", default="", help="a paragraph to add under the table")
    args = ap.parse_args()
    counts = member_counts(args.members)
    if args.one:
        core = os.environ.get("KAFKA_REBALANCE_SIM_CORE", "auto")
        print(json.dumps(run_case(args.one, case_doc(args.one, counts[0]), core)), flush=True)
        return 0
    cases = args.case or list(CASES)
    rows = []
    for c in cases:
        for n in counts if c in ROLLING else [100]:
            row = run_isolated(c, n)
            print(json.dumps(row), flush=True)
            if row["kernels"] != ALL_COMPILED:
                print(
                    f"warning: {c} at {n} members did not run every compiled build "
                    f"({row['kernels']}): `pip install -e . --no-deps` rebuilds them",
                    file=sys.stderr,
                    flush=True,
                )
            rows.append(row)
            if c not in ROLLING:
                break
    rows.sort(key=lambda r: (r["members"], CASES.index(r["case"])))
    md = markdown(rows, "python " + " ".join(["bench/simulate.py", *sys.argv[1:]]), args.notes)
    if args.markdown:
        Path(args.markdown).write_text(md)
    if args.update_benchmarks:
        update_benchmarks(Path(__file__).resolve().parent.parent / "BENCHMARKS.md", md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
