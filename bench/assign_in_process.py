"""One assignor on the side-by-side harness's inputs, in this process alone: warm, and with the
CPU caches made cold between calls (what the harness's alternation with Java does to Python).

    python bench/assign_in_process.py --case 1 --assignor uniform

Needs ../shared/java-assignors (its `side_by_side.py` builds the cases; Java is not started).
Prints, per pass (fresh, then owned: every member owning its fresh result at generation 1), the
best, 10th percentile and median of 200 warm calls, then of 60 calls each after writing 64 MiB.
Every call gets the same spec object, as the harness does.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT.parent / "shared" / "java-assignors"
sys.path.insert(0, str(ROOT / "src"))

from kafka_rebalance.assign.registry import get_assignor  # noqa: E402


def _times(assign, spec, runs: int, junk: np.ndarray | None) -> list[float]:
    out = []
    for _ in range(runs):
        if junk is not None:
            junk += 1.0  # 64 MiB written: the spec's objects leave L2 and most of L3
        t = time.perf_counter()
        assign(spec)
        out.append(time.perf_counter() - t)
    return sorted(out)


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
    args = ap.parse_args()
    if not (HARNESS / "side_by_side.py").is_file():
        print(
            f"error: {HARNESS}/side_by_side.py not found (../shared beside the repo)",
            file=sys.stderr,
        )
        return 2
    sys.path.insert(0, str(HARNESS))
    import side_by_side as harness

    spec, _, source = harness.build_case(args.case, args.source, 1)
    assignor = get_assignor(args.assignor)
    # the harness's owned pass owns Java's result as read back from its dump (read_dump): a topic
    # str object per partition, not the shared ones of our own result
    owned = harness.with_owned(spec, _read_back(harness, assignor.assign(spec)), 1)
    junk = np.ones(64 * 1024 * 1024 // 8)
    print(f"case {args.case} ({source}), {args.assignor}")
    for label, cold in (("warm", None), ("cold", junk)):
        for name, s in (("fresh", spec), ("owned", owned)):
            ts = _times(assignor.assign, s, 200 if cold is None else 60, cold)
            best, p10, med = ts[0], ts[len(ts) // 10], ts[len(ts) // 2]
            print(
                f"  {label} {name}: best {best * 1e3:.3f} ms, p10 {p10 * 1e3:.3f} ms, "
                f"median {med * 1e3:.3f} ms"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
