"""CPU time per simulated event of a rolling restart's restarts, at several group sizes.

    python bench/sim_per_event.py --case rolling-eager --members 100,300,1000 --restarts 20

For each size it runs one of bench/simulate.py's cases twice in this process: cut after
`--restarts` restarts (the first at 60 s, one every 10 s, 30 s after the last, as
bench/sim_callgrind.py cuts them) and with 0 restarts, and prints the difference per event: the
restarts' own cost, without imports, start-up and the initial join ("run CPU s" is the whole
run with the restarts; "events", "CPU s" and "us per event" are the difference). It shows how the cost per
event grows with the group (BENCHMARKS.md, simulator session 10: cache misses, not work). CPU time
swings with the load on a shared machine: alternate before/after runs and read the direction.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "src"), str(HERE)]

import simulate as bench  # noqa: E402
from _machine import machine  # noqa: E402
from kafka_rebalance.sim.api import simulate  # noqa: E402
from sim_callgrind import duration_ms  # noqa: E402


def run(case: str, members: int, restarts: int) -> tuple[float, int]:
    """CPU seconds and engine events of one run cut after `restarts` restarts."""
    doc = bench.case_doc(case, members)
    doc["duration_ms"] = duration_ms(restarts)
    start = time.process_time()
    result = simulate(doc, collect_events=False)
    return time.process_time() - start, result.simulated_events


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--case", default="rolling-eager", help="a rolling case of bench/simulate.py")
    ap.add_argument("--members", default="100,300,1000", help="group sizes, comma-separated")
    ap.add_argument("--restarts", type=int, default=20)
    args = ap.parse_args(argv)
    if not args.case.startswith("rolling-"):
        ap.error(f"--case: a rolling case is needed, got {args.case!r}")
    try:
        sizes = [int(n) for n in args.members.split(",")]
    except ValueError:
        ap.error(f"--members: comma-separated integers, got {args.members!r}")
    if any(n < 1 for n in sizes) or not 0 < args.restarts <= min(sizes):
        ap.error(f"--restarts: 1..{min(sizes)} (the smallest group), got {args.restarts}")
    print(machine())
    run(args.case, 50, 0)  # imports and first-use costs outside the measured runs
    print(
        f"{'members':>8} {'restarts':>8} {'run CPU s':>10} {'events':>12} {'CPU s':>8}"
        f" {'us per event':>13}"
    )
    for n in sizes:
        base_s, base_events = run(args.case, n, 0)
        full_s, full_events = run(args.case, n, args.restarts)
        events = full_events - base_events
        per_event = (full_s - base_s) / events * 1e6 if events else float("nan")
        print(
            f"{n:>8,} {args.restarts:>8,} {full_s:>10.2f} {events:>12,} {full_s - base_s:>8.2f}"
            f" {per_event:>13.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
