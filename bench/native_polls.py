"""The poll kernels per poll: `poll_kernels` (mypyc, lists and dicts) against the native core's
arrays (`sim/native_members.pyx`), both driven from C by bench/native_polls.pyx.

    python bench/native_polls.py --members 1000 --rounds 20 --repeats 5

The shape is bench/simulate.py's rolling-restart case: N members on 10 x N partitions (1 record/s
per partition), each member owning 10 (range order), polling every poll_idle_ms = 5000 ms with an
auto-commit each poll (auto_commit_interval_ms = 5000): per poll, the batch in flight is finished,
the changed positions are committed, up to 500 records are fetched (about 50 here). Three drivers:
`poll_kernels` (the mypyc build `sim.compiled.KERNELS` runs; refused when it is not compiled), the
native arrays through C calls, and through their Python-level methods. The three runs must end with
the same positions, sent offsets, duplicates and processed intervals (checked). Repeats alternate
the drivers; the table gives the best and the median microseconds per poll (CPU time of this
process). Needs Cython (the dev extras) and the fresh native_members build (`pip install -e .`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "src"), str(HERE)]

from _cython_driver import build  # noqa: E402
from kafka_rebalance import native  # noqa: E402
from kafka_rebalance.sim import compiled  # noqa: E402
from kafka_rebalance.sim.partitions import PartitionTable, ProcessedOffsets  # noqa: E402

POLL_IDLE_MS = 5000
BUDGET = 500


def shape(members: int) -> tuple[PartitionTable, list[list[int]]]:
    table = PartitionTable()
    table.add_topic("t", 10 * members, 10.0 * members, 0)
    return table, [list(range(10 * m, 10 * m + 10)) for m in range(members)]


def run(driver: Any, nm: Any, members: int, rounds: int, which: str) -> tuple[float, Any]:
    """One run of `rounds` polls per member from t = 60 s; (CPU s, the final state)."""
    table, owned = shape(members)
    horizon = 60_000 + (rounds + 1) * POLL_IDLE_MS
    if which == "poll_kernels":
        positions = [{p: 0 for p in ps} for ps in owned]
        sent = [{p: 0 for p in ps} for ps in owned]
        batches: list[Any] = [[] for _ in owned]
        processed = [ProcessedOffsets() for _ in range(len(table))]
        t = time.process_time()
        dup = driver.run_reference(
            compiled.KERNELS, owned, positions, sent, batches, table, processed, rounds,
            60_000, POLL_IDLE_MS, BUDGET,
        )  # fmt: skip
        cpu = time.process_time() - t
        done = [(po.starts, po.ends) for po in processed]
        return cpu, (dup, positions, sent, [b for b in batches], done)
    cols = nm.PartitionColumns.from_table(table, horizon)
    native_members = []
    for ps in owned:
        o = nm.OwnedPartitions(cols)
        o.complete_join(ps, ps)
        native_members.append(o)
    nbatches = [nm.Triples() for _ in owned]
    nprocessed = nm.ProcessedTable(len(table))
    fn = driver.run_native if which == "native (C calls)" else driver.run_native_python
    t = time.process_time()
    dup = fn(native_members, nbatches, nprocessed, rounds, 60_000, POLL_IDLE_MS, BUDGET)
    cpu = time.process_time() - t
    done = [nprocessed.intervals(p) for p in range(len(table))]
    return cpu, (
        dup,
        [o.positions() for o in native_members],
        [o.sent_offsets() for o in native_members],
        [b.triples() for b in nbatches],
        done,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=20, help="polls per member in one run")
    ap.add_argument("--repeats", type=int, default=5, help="alternating runs per driver")
    args = ap.parse_args(argv)
    nm = native.cython_build("kafka_rebalance.sim", "native_members")
    if nm is None:
        print("no fresh build of sim/native_members.pyx (pip install -e .)", file=sys.stderr)
        return 2
    if not native.is_compiled(compiled.KERNELS):
        print(
            "poll_kernels is not compiled (mypyc): the comparison needs its build", file=sys.stderr
        )
        return 2
    try:
        driver = build("native_polls")
    except ImportError as e:  # Cython is a build requirement, in the dev extras, not a dependency
        print(f"the driver needs Cython ({e}): pip install -e '.[dev]'", file=sys.stderr)
        return 2
    drivers = ["poll_kernels", "native (C calls)", "native (Python-level methods)"]
    times: dict[str, list[float]] = {d: [] for d in drivers}
    states = {}
    for _ in range(args.repeats):
        for d in drivers:
            cpu, states[d] = run(driver, nm, args.members, args.rounds, d)
            times[d].append(cpu)
    ref = states["poll_kernels"]
    for d in drivers[1:]:
        assert states[d] == ref, f"{d} differs from poll_kernels"
    polls = args.members * args.rounds
    print(f"{args.members} members x 10 partitions, {args.rounds} polls each ({polls:,} polls/run)")
    print("| kernels | us per poll, best | median | runs |")
    print("|---|---:|---:|---:|")
    for d in drivers:
        best, med = min(times[d]) / polls * 1e6, statistics.median(times[d]) / polls * 1e6
        print(f"| {d} | {best:.2f} | {med:.2f} | {len(times[d])} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
