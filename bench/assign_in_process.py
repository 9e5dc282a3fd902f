"""One assignor on the side-by-side harness's inputs, in this process alone: warm, and with the
CPU caches made cold between calls (what the harness's alternation with Java does to Python).

    python bench/assign_in_process.py --case 1 --assignor uniform

Needs ../shared/java-assignors (its `side_by_side.py` builds the cases; Java is not started).
Prints, per pass (fresh, then owned: every member owning its fresh result at generation 1), the
best, 10th percentile and median of 200 warm calls, then of 60 calls each after writing 64 MiB.
Every call gets the same spec object, as the harness does.

    python bench/assign_in_process.py --case 2 --assignor uniform --after-others --control

`--after-others` first runs range, roundrobin, sticky and cooperative-sticky on cases 1-3 (fresh,
and owned for the sticky ones), keeping their inputs and results alive, and builds the measured
owned input after them, as the harness's `--assignor all` run does (its objects then sit in a
heap the earlier rows fragmented). `--control` times a fixed piece of work that uses no str hash
(sorting 20,000 ints) in the same rounds: its best moves with the machine's state (another
process on the other core, a slow episode), so compare runs by the ratio to it, e.g. across
PYTHONHASHSEED values. Each pass also prints how many cyclic GC collections ran inside the
timed calls, and which path the uniform assignor takes (its Cython kernels or not).
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT.parent / "shared" / "java-assignors"
sys.path.insert(0, str(ROOT / "src"))

from kafka_rebalance.assign.registry import get_assignor  # noqa: E402

_CONTROL_INTS = list(range(20_000, 0, -1))


def _control() -> None:
    """A fixed piece of work without str hashing: its time follows the machine, not the seed."""
    sorted(_CONTROL_INTS)


def _times(
    assign, spec, runs: int, junk: np.ndarray | None, control: list[float] | None
) -> tuple[list[float], int]:
    """Sorted call times, and the cyclic GC collections that started inside the timed calls."""
    out = []
    started = [0]
    inside = [False]

    def count(phase: str, info: dict) -> None:
        if phase == "start" and inside[0]:
            started[0] += 1

    gc.callbacks.append(count)
    try:
        result = None
        for _ in range(runs):
            if junk is not None:
                junk += 1.0  # 64 MiB written: the spec's objects leave L2 and most of L3
            if control is not None:
                t = time.perf_counter()
                _control()
                control.append(time.perf_counter() - t)
            inside[0] = True
            t = time.perf_counter()
            result = assign(spec)  # the result before is freed here, as in the harness
            out.append(time.perf_counter() - t)
            inside[0] = False
        del result
    finally:
        gc.callbacks.remove(count)
    return sorted(out), started[0]


def _others(harness, source: str) -> list[object]:
    """The harness's earlier rows of an `--assignor all` run: range, roundrobin, sticky and
    cooperative-sticky on cases 1-3 (the sticky ones' owned passes too), every input and result
    kept alive."""
    alive: list[object] = []
    for case in (1, 2, 3):
        spec, _, _ = harness.build_case(case, source, 1)
        alive.append(spec)
        for name in ("range", "roundrobin", "sticky", "cooperative-sticky"):
            assignor = get_assignor(name)
            result = assignor.assign(spec)
            alive.append(result)
            if name in ("sticky", "cooperative-sticky"):
                owned = harness.with_owned(spec, _read_back(harness, result), 1)
                alive.extend((owned, assignor.assign(owned)))
    return alive


def _path(name: str) -> str:
    if name != "uniform":
        return ""
    from kafka_rebalance.assign import uniform

    if uniform.NATIVE is not None:
        return "; path: the Cython kernels (uniform_native*.pyx)"
    return "; path: " + ("the mypyc kernels" if uniform.USE_COMPILED else "pure Python")


def _read_back(harness, result: dict) -> dict:
    """`result` written in the harness's dump format and read back with its read_dump."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "dump.txt"
        lines = [
            f"{mid} " + (",".join(f"{tp.topic}:{tp.partition}" for tp in tps) or "-")
            for mid, tps in result.items()
        ]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return harness.read_dump(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", type=int, choices=(1, 2, 3), default=1)
    ap.add_argument("--assignor", default="uniform")
    ap.add_argument("--source", default="vector", help="the harness's --source (default: vector)")
    ap.add_argument(
        "--after-others",
        action="store_true",
        help="run the other assignors on cases 1-3 first, keeping their objects (the `all` run)",
    )
    ap.add_argument(
        "--control", action="store_true", help="time a fixed hash-free job in the same rounds"
    )
    args = ap.parse_args()
    if not (HARNESS / "side_by_side.py").is_file():
        print(
            f"error: {HARNESS}/side_by_side.py not found (../shared beside the repo)",
            file=sys.stderr,
        )
        return 2
    sys.path.insert(0, str(HARNESS))
    import side_by_side as harness

    alive = _others(harness, args.source) if args.after_others else []
    spec, _, source = harness.build_case(args.case, args.source, 1)
    assignor = get_assignor(args.assignor)
    # the harness's owned pass owns Java's result as read back from its dump (read_dump): a topic
    # str object per partition, not the shared ones of our own result
    owned = harness.with_owned(spec, _read_back(harness, assignor.assign(spec)), 1)
    junk = np.ones(64 * 1024 * 1024 // 8)
    others = f"; after the other assignors ({len(alive)} objects kept)" if alive else ""
    print(f"case {args.case} ({source}), {args.assignor}{_path(args.assignor)}{others}")
    control: list[float] | None = [] if args.control else None
    for label, cold in (("warm", None), ("cold", junk)):
        for name, s in (("fresh", spec), ("owned", owned)):
            ts, collections = _times(assignor.assign, s, 200 if cold is None else 60, cold, control)
            best, p10, med = ts[0], ts[len(ts) // 10], ts[len(ts) // 2]
            print(
                f"  {label} {name}: best {best * 1e3:.3f} ms, p10 {p10 * 1e3:.3f} ms, "
                f"median {med * 1e3:.3f} ms; GC collections inside the calls: {collections}"
            )
    if control:
        print(f"  control (20,000 ints sorted, no str hash): best {min(control) * 1e3:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
