"""Instructions a simulated rolling restart costs, counted by callgrind: steady where CPU s is not.

    python bench/sim_callgrind.py --case rolling-eager --members 200 --restarts 20
    python bench/sim_callgrind.py --case rolling-consumer --members 200 --restarts 20 --restarts-only

On this shared 2-core machine CPU seconds swing with the load by 20% or more; callgrind's
instruction count of the same run moves about +-0.5% (address-based hashing), so it is how the
simulator's speed-ups were measured (BENCHMARKS.md's simulator sections). Each count runs one of
bench/simulate.py's cases with `PYTHONHASHSEED=0 valgrind --tool=callgrind` in a child process,
with the run cut at `duration_ms = 60 s + restarts x 10 s + 30 s` (`collect_events=False` as in
bench/simulate.py): the first `--restarts` restarts complete, and the restarts that start in the
last 30 s (one every 10 s) are cut short; it is how the recorded "200 members x 20 restarts" runs
(290 s) were cut. About 0.9 G instructions of each count are imports
and the initial join; `--restarts-only` also counts the run with 0 restarts and prints the
difference, the restarts' own share. Needs valgrind (`apt install valgrind`); a run takes minutes
(callgrind is about 50x slower than the run itself).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _machine import machine  # noqa: E402

EVERY_MS = 10_000  # bench/simulate.rolling(): one member restarted every 10 s from 60 s
CHILD = """
import sys
sys.path[:0] = [{src!r}, {bench!r}]
import simulate as bench
from kafka_rebalance.sim.api import simulate
doc = bench.case_doc({case!r}, {members})
doc["duration_ms"] = {duration}
simulate(doc, collect_events=False)
"""
_TOTAL = re.compile(r"(?:Collected|summary|totals) *: *([\d,]+)")


def duration_ms(restarts: int) -> int:
    """Run time for `restarts` restarts, as bench/simulate.rolling() sets it for that many members:
    the first at 60 s, one every 10 s, 30 s after the last (20 restarts: 290 s, the runs recorded in
    BENCHMARKS.md)."""
    return 60_000 + restarts * EVERY_MS + 30_000


def instructions(case: str, members: int, restarts: int) -> int:
    """Total instructions (callgrind's Ir) of one child run."""
    if shutil.which("valgrind") is None:
        raise SystemExit("sim_callgrind: valgrind is not installed (apt install valgrind)")
    code = CHILD.format(
        src=str(ROOT / "src"),
        bench=str(HERE),
        case=case,
        members=members,
        duration=duration_ms(restarts),
    )
    with tempfile.TemporaryDirectory(prefix="sim-callgrind-") as tmp:
        out = Path(tmp) / "callgrind.out"
        env = dict(os.environ, PYTHONHASHSEED="0")
        run = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out}",
                sys.executable,
                "-c",
                code,
            ],
            env=env,
            capture_output=True,
            text=True,
        )
        if run.returncode != 0:
            raise SystemExit(
                f"sim_callgrind: the run failed (exit {run.returncode}):\n{run.stderr}"
            )
        found = _TOTAL.findall(run.stderr) or _TOTAL.findall(out.read_text(encoding="utf-8"))
        if not found:
            raise SystemExit(
                f"sim_callgrind: no instruction total in callgrind's output:\n{run.stderr}"
            )
        return int(found[-1].replace(",", ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--case", default="rolling-eager", help="a rolling case of bench/simulate.py")
    ap.add_argument("--members", type=int, default=200)
    ap.add_argument("--restarts", type=int, default=20)
    ap.add_argument("--restarts-only", action="store_true", help="minus the run with 0 restarts")
    args = ap.parse_args(argv)
    if not args.case.startswith("rolling-"):
        ap.error(f"--case: a rolling case is needed, got {args.case!r}")
    if args.members < 1 or not 0 < args.restarts <= args.members:
        ap.error(f"--restarts: 1..{args.members} (the members), got {args.restarts}")
    print(machine())
    total = instructions(args.case, args.members, args.restarts)
    print(
        f"{args.case}, {args.members:,} members x {args.restarts:,} restarts: {total:,} instructions"
    )
    if args.restarts_only:
        base = instructions(args.case, args.members, 0)
        print(f"the same with 0 restarts: {base:,}; the restarts' own share: {total - base:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
