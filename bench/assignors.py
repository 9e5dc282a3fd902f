"""Benchmark of the partition assignors on issue 2's five cases (not a test: numbers for BENCHMARKS.md).

Each (case, assignor) runs in its own subprocess, twice: pass one on the
case as given ("fresh"), pass two with every member owning its pass-one
result at generation 1 ("owned"). Times are wall-clock `time.perf_counter`
around `assign()` alone (building the group is not timed), best of
`--repeat` runs; memory is the subprocess's peak RSS (`ru_maxrss`), input
included. Where a case comes with Kafka's own output (cases 2 and 3), pass
one is checked against it.

    .venv/bin/python bench/assignors.py                   # all cases, write BENCHMARKS.md
    .venv/bin/python bench/assignors.py --cases 1,2,3 --no-write
    .venv/bin/python bench/assignors.py --cases 4 --assignors range,uniform
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VECTORS = ROOT.parent / "shared" / "vectors" / "assignors-large"
BENCHMARKS = ROOT / "BENCHMARKS.md"
SECTION = "bench/assignors.py"

CASES = {
    1: "2,000 consumers, 100 topics x 100 partitions, all subscribed",
    2: "case 1 with 1,999 members owning a balanced assignment (generation 1), c1999 joining",
    3: "100 consumers, 50 topics x 20 partitions, each subscribed to 5..25 random topics",
    4: "500 topics x 2,000 partitions (1,000,000), 2,000 consumers, all subscribed",
    5: "case 4, but the last consumer subscribes to t000 only",
}

# Kafka's Java assignors on this machine, from issue 2 (seconds): (fresh, owned); None = not given.
# Where the issue gives one number for a case it is compared with pass one.
JAVA: dict[tuple[int, str], tuple[float | None, float | None]] = {
    (1, "sticky"): (0.028, None),
    (1, "cooperative-sticky"): (0.018, None),
    (1, "roundrobin"): (0.032, None),
    (1, "range"): (0.105, None),
    (1, "uniform"): (0.0043, None),
    (2, "sticky"): (0.047, None),
    (2, "cooperative-sticky"): (0.032, None),
    (3, "sticky"): (0.163, None),
    (3, "cooperative-sticky"): (0.060, None),
    (4, "sticky"): (0.36, 5.4),
    (4, "cooperative-sticky"): (0.56, 5.9),
    (4, "range"): (3.8, None),
    (4, "roundrobin"): (5.2, None),
    (5, "sticky"): (11.6, 11.5),
    (5, "cooperative-sticky"): (13.3, 8.6),
    (5, "uniform"): (1.25, 1.0),
    (5, "server-range"): (0.15, None),
}

# A one-off cross-check outside this script (its harness needs Kafka's sources, not in this repo).
VERIFICATION = """\
**Outputs checked against Kafka's own classes** (by hand, outside this script, 2026-11-21 23:40 UTC and again
2026-11-22 00:27 UTC for sticky/cooperative-sticky at commit 690e39a): Kafka's
`RangeAssignor`, `RoundRobinAssignor`, `StickyAssignor`, `CooperativeStickyAssignor` (clients) and
`UniformAssignor`, `RangeAssignor` (group-coordinator), compiled from the mirrored commit with stubs for
logging and user-data serialization, were run on cases 1, 3, 4 and 5 (both passes, owned partitions fed
as the consumer protocol delivers them): every member's partitions were identical to ours for all six
assignors. Case 2 is checked above against the Java output stored in its vector. The same run timed Java
on this machine under the same load (best of 10 for cases 1 and 3, one run for cases 4 and 5, so the JIT
is colder than in the issue's numbers): case 1 range 121 ms, roundrobin 48 ms, sticky 147/181 ms,
cooperative-sticky 106/85 ms, uniform 4.4/2.4 ms, server-range 10.8 ms; case 3 sticky 133/12 ms,
cooperative-sticky 94/2.5 ms; case 4 sticky 1.56/15.3 s, cooperative-sticky 1.15/11.5 s, range 4.3 s,
roundrobin 11.9 s, uniform 0.45/0.07 s, server-range 0.38 s; case 5 sticky 26.7/29.6 s,
cooperative-sticky 29.6/22.9 s, uniform 2.0/0.91 s, server-range 0.42 s, range 5.4 s,
roundrobin 10.0 s (fresh/owned). Java's times vary as much as ours on this shared machine: the second
check measured case 4 sticky 0.60/9.0 s, cooperative-sticky 0.61/7.2 s and case 5 sticky 11.0/14.4 s,
cooperative-sticky 22.4/13.6 s."""

ALL = ("range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "server-range")
DEFAULT_ASSIGNORS = {1: ALL, 2: ALL, 3: ALL, 4: ALL, 5: ALL}


# ----------------------------------------------------------------------------- one run (child)


def build_case(case: int):
    """The case's GroupSpec and, where known, Kafka's pass-one output per assignor."""
    sys.path.insert(0, str(ROOT / "src"))
    from kafka_rebalance.model import (
        GroupSpec,
        MemberSubscription,
        TopicMetadata,
        parse_group_scenario,
    )

    if case in (2, 3):
        name = (
            "uniform_2000c_100t_x_100p_join.json" if case == 2 else "nonuniform_100c_50t_x_20p.json"
        )
        doc = json.loads((VECTORS / name).read_text(encoding="utf-8"))
        return parse_group_scenario(doc).spec, {k: v[0] for k, v in doc.get("expected", {}).items()}
    n_topics, n_parts = (100, 100) if case == 1 else (500, 2000)
    topics = {f"t{i:03d}": TopicMetadata(f"t{i:03d}", n_parts) for i in range(n_topics)}
    names = tuple(topics)
    members = tuple(
        MemberSubscription(f"c{i:04d}", ("t000",) if case == 5 and i == 1999 else names)
        for i in range(2000)
    )
    return GroupSpec(topics, members), {}


def run_child(case: int, assignor_name: str, repeat: int) -> dict:
    sys.path.insert(0, str(ROOT / "src"))
    from kafka_rebalance.assign.registry import get_assignor

    spec, expected = build_case(case)
    assignor = get_assignor(assignor_name)

    def timed(s):
        best, result = None, None
        for _ in range(repeat):
            t0 = time.perf_counter()
            result = assignor.assign(s)
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        return best, result

    fresh_s, first = timed(spec)
    owned_spec = type(spec)(
        spec.topics,
        tuple(
            replace(m, owned=tuple(first.get(m.member_id, ())), generation=1) for m in spec.members
        ),
    )
    owned_s, second = timed(owned_spec)
    matches = None
    if assignor_name in expected:
        want = {m: {(t, p) for t, p in tps} for m, tps in expected[assignor_name].items() if tps}
        got = {m: {(tp.topic, tp.partition) for tp in tps} for m, tps in first.items() if tps}
        matches = want == got
    counts = [len(first.get(m.member_id, ())) for m in spec.members]
    moved = sum(
        1 for m in owned_spec.members for tp in set(m.owned) - set(second.get(m.member_id, ()))
    )
    return {
        "fresh_s": fresh_s,
        "owned_s": owned_s,
        "matches_kafka": matches,
        "assigned": sum(counts),
        "min": min(counts),
        "max": max(counts),
        "pass_two_revoked": moved,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    }


# ----------------------------------------------------------------------------- driver


def run_case(case: int, name: str, repeat: int, timeout: float) -> dict:
    cmd = [sys.executable, __file__, "--child", str(case), name, "--repeat", str(repeat)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": f"exit {proc.returncode}: {tail}"}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["wall_s"] = time.perf_counter() - t0
    return out


def fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x * 1000:.1f} ms" if x < 1 else f"{x:.2f} s"


def ratio(ours: float | None, java: float | None) -> str:
    if ours is None or java is None:
        return "-"
    return f"{ours / java:.2f}x"


def rows(results: list[dict]) -> list[list[str]]:
    out = []
    for r in results:
        java = JAVA.get((r["case"], r["assignor"]), (None, None))
        if "error" in r:
            out.append(
                [
                    str(r["case"]),
                    r["assignor"],
                    r["error"],
                    "",
                    fmt_s(java[0]),
                    "",
                    "",
                    fmt_s(java[1]),
                    "",
                    "",
                    "",
                ]
            )
            continue
        check = {None: "-", True: "yes", False: "NO"}[r["matches_kafka"]]
        out.append(
            [
                str(r["case"]),
                r["assignor"],
                fmt_s(r["fresh_s"]),
                fmt_s(java[0]),
                ratio(r["fresh_s"], java[0]),
                fmt_s(r["owned_s"]),
                fmt_s(java[1]),
                ratio(r["owned_s"], java[1]),
                f"{r['min']}/{r['max']}",
                check,
                f"{r['peak_rss_mb']:.0f} MB",
            ]
        )
    return out


HEADERS = [
    "case",
    "assignor",
    "fresh",
    "Java fresh",
    "ratio",
    "owned",
    "Java owned",
    "ratio",
    "min/max",
    "= Kafka",
    "peak RSS",
]


def markdown(results: list[dict], argv: list[str], started: str, load: str) -> str:
    lines = [
        f"<!-- {SECTION}:start -->",
        f"## Partition assignors (`{SECTION}`)",
        "",
        f"Command: `.venv/bin/python bench/assignors.py{(' ' + ' '.join(argv)) if argv else ''}`  ",
        f"Run {started} on {platform.machine()} with {os.cpu_count()} CPUs, Python {platform.python_version()}; "
        f"load average at start {load} (the machine is shared, so times are noisy).",
        "",
        "Cases (issue 2):",
        "",
    ]
    lines += [f"{k}. {v}" for k, v in CASES.items()]
    lines += [
        "",
        "Each case runs in a fresh subprocess per assignor, twice: *fresh* (the case as given) and *owned* "
        "(every member owning its pass-one result at generation 1). Times are `assign()` alone, best of the "
        "repeats; *ratio* is ours / Kafka's Java time from issue 2 (below 1 = faster than Java; where the "
        "issue gives one number it is compared with pass one). *min/max* are partitions per member after pass "
        "one; *= Kafka* compares pass one with the Java output stored in the case's vector (cases 2 and 3 only). "
        "Peak RSS is the whole subprocess, input included.",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "|" + "|".join("---" for _ in HEADERS) + "|",
    ]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in rows(results)]
    lines += ["", VERIFICATION, "", f"<!-- {SECTION}:end -->", ""]
    return "\n".join(lines)


def write_section(text: str) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from kafka_rebalance.io_util import atomic_write_text

    start, end = f"<!-- {SECTION}:start -->", f"<!-- {SECTION}:end -->"
    current = (
        BENCHMARKS.read_text(encoding="utf-8")
        if BENCHMARKS.exists()
        else "# Benchmarks\n\nOne section per benchmark script under `bench/`; each script rewrites only its own section.\n\n"
    )
    if start in current and end in current:
        before, rest = current.split(start, 1)
        after = rest.split(end, 1)[1].lstrip("\n")
        new = before + text + ("\n" + after if after else "")
    else:
        new = current.rstrip("\n") + "\n\n" + text
    atomic_write_text(BENCHMARKS, new)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cases", default="1,2,3,4,5")
    ap.add_argument("--assignors", default=None, help="comma-separated subset (default: all six)")
    ap.add_argument(
        "--repeat",
        type=int,
        default=None,
        help="runs per pass, best kept (default 5, 1 for cases 4-5)",
    )
    ap.add_argument(
        "--timeout", type=float, default=900.0, help="seconds per (case, assignor) subprocess"
    )
    ap.add_argument("--no-write", action="store_true", help="do not update BENCHMARKS.md")
    ap.add_argument("--child", nargs=2, metavar=("CASE", "ASSIGNOR"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        print(json.dumps(run_child(int(args.child[0]), args.child[1], args.repeat or 1)))
        return 0

    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=True)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    cases = [int(c) for c in args.cases.split(",") if c]
    chosen = args.assignors.split(",") if args.assignors else None
    results = []
    for case in cases:
        for name in DEFAULT_ASSIGNORS[case]:
            if chosen and name not in chosen:
                continue
            repeat = args.repeat or (1 if case >= 4 else 5)
            console.print(f"case {case} {name} ...", end=" ")
            r = run_case(case, name, repeat, args.timeout)
            r.update(case=case, assignor=name)
            console.print(r.get("error") or f"{fmt_s(r['fresh_s'])} / {fmt_s(r['owned_s'])}")
            results.append(r)

    table = Table(title="Assignors vs Kafka's Java times (issue 2)")
    for h in HEADERS:
        table.add_column(h, justify="left" if h == "assignor" else "right")
    for row in rows(results):
        table.add_row(*row)
    Console(width=200).print(table)
    if not args.no_write:
        write_section(markdown(results, argv, started, load))
        console.print(f"wrote the {SECTION} section of {BENCHMARKS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
