"""The classic group's cost per call: the reference `ClassicGroup` against its native twin, on the
group traffic of a simulated eager rolling restart.

    python bench/sim_group_replay.py --members 1000 --restarts 10 --rounds 3

Runs bench/simulate.py's `rolling-eager` case cut after `--restarts` restarts on the reference path
with its group recording every call the coordinator makes (`sim/reference_sources.py`'s
`RecordingGroup`, as tests/test_sim_native_group_replay.py does), then replays those calls, in alternating rounds, through
(a) `ClassicGroup` (its mypyc build when fresh), called as the coordinator calls it;
(b) the twin's object API (`sim/native_group.pyx`'s `NativeClassicGroup`: requests in, effect
    objects out);
(c) the twin's C-level API from Cython (bench/group_tape.pyx's `CallTape.run`, compiled here under
    build/bench-native: the calls as C structs, each call's effects read from the core's buffer),
    what a native world would pay.
Each round is a fresh group fed every call; CPU time (process_time) per call is reported. The
answers of (a) and (b) are compared call by call once; (c)'s effects, each call's kind, error and
deadline in order (`digest`), must be (b)'s, and its core must end where (b)'s did.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT / "src"), str(HERE)]

from _cython_driver import build  # noqa: E402

EVERY_MS = 10_000


def record(members: int, restarts: int) -> Any:
    """The recording group of one reference run (its `calls` and constructor arguments)."""
    import simulate as bench
    from kafka_rebalance.sim import reference_sources as ref
    from kafka_rebalance.sim.api import simulate

    doc = bench.case_doc("rolling-eager", members)
    doc["duration_ms"] = 60_000 + restarts * EVERY_MS + 30_000
    with ref.patched() as patch:
        ref.use_sources(patch)
        patch.setattr(ref.PURE_COORDINATOR, "ClassicGroup", ref.RecordingGroup)
        ref.RecordingGroup.made = []
        # core="reference": the patched group is the reference's (auto would run the native core)
        simulate(doc, collect_events=False, core="reference")
    (recorded,) = ref.RecordingGroup.made
    return recorded


def replay(group: Any, calls: list) -> float:
    """CPU seconds to feed every call to `group` (bound methods taken before the clock starts)."""
    bound = {m: getattr(group, m) for m in {c[0] for c in calls}}
    work = [(bound[m], args) for m, args, _ in calls]
    t0 = time.process_time()
    for fn, args in work:
        fn(*args)
    return time.process_time() - t0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--restarts", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)

    from kafka_rebalance import group as group_pkg
    from kafka_rebalance import native
    from kafka_rebalance.group.classic_group import ClassicGroup

    twin = native.cython_build("kafka_rebalance.sim", "native_group")
    if twin is None:
        raise SystemExit(
            "sim_group_replay: no fresh build of sim/native_group.pyx (pip install -e .)"
        )
    t0 = time.process_time()
    rec = record(a.members, a.restarts)
    calls = rec.calls
    group_id, config, kw = rec.init
    print(
        f"recorded {len(calls):,} calls in {time.process_time() - t0:.1f} CPU s "
        f"({a.members} members, {a.restarts} restarts); ClassicGroup compiled: "
        f"{group_pkg.CLASSIC_COMPILED}",
        flush=True,
    )
    kinds: dict[str, int] = {}
    for m, _, _ in calls:
        kinds[m] = kinds.get(m, 0) + 1
    print("calls:", ", ".join(f"{k} {v:,}" for k, v in sorted(kinds.items())))

    # once: (b) answers every call as the recording did, and the tape's handles come from it
    model = twin.NativeClassicGroup(group_id, config, **kw)
    for i, (m, args, answer) in enumerate(calls):
        if getattr(model, m)(*args) != answer:
            raise SystemExit(f"sim_group_replay: the twin's answer {i} ({m}) differs")
    tapes = build("group_tape")
    want = tapes.effects_digest([answer for _, _, answer in calls])
    tape = tapes.CallTape(model)
    for m, args, _ in calls:
        tape.add(m, args)

    rows: dict[str, list[float]] = {"a": [], "b": [], "c": []}
    for _ in range(a.rounds):
        rows["a"].append(replay(ClassicGroup(group_id, config, **kw), calls))
        rows["b"].append(replay(twin.NativeClassicGroup(group_id, config, **kw), calls))
        core = tape.fresh_core(group_id, config, **kw)
        t0 = time.process_time()
        got = tape.run(core)
        rows["c"].append(time.process_time() - t0)
        if got != want:
            raise SystemExit("sim_group_replay: the C-level replay's effects differ")
        if core.generation_id != model.generation_id or core.state != model.core.state:
            raise SystemExit("sim_group_replay: the C-level replay ended elsewhere")
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    n = len(calls)
    labels = {
        "a": "(a) `ClassicGroup` (mypyc), as the coordinator calls it",
        "b": "(b) twin, object API (`NativeClassicGroup`)",
        "c": "(c) twin, C-level API from Cython (`CallTape.run`)",
    }
    print(f"\ncommit {commit}; {load}")
    print("| path | us per call, each round | best |")
    print("|---|---|---:|")
    for k, label in labels.items():
        each = " / ".join(f"{t / n * 1e6:.2f}" for t in rows[k])
        print(f"| {label} | {each} | {min(rows[k]) / n * 1e6:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
