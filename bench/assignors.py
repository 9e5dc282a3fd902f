"""Assignors beside Kafka's own Java assignors, in one run (not a test: numbers for BENCHMARKS.md).

Runs `../shared/java-assignors/side_by_side.py` (Kafka's assignors compiled
from Kafka's sources, warmed up, alternating single `assign()` calls with
ours on the same group; read its README) on issue 2's five cases and writes
its table, with the command and the machine, into BENCHMARKS.md. The
ratio is Python / Java (below 1 = faster than Java); *identical* compares
every member's partitions with Java's.

    .venv/bin/python bench/assignors.py                     # cases 1-5, write BENCHMARKS.md
    .venv/bin/python bench/assignors.py --cases 1,2,3 --no-write
    .venv/bin/python bench/assignors.py --from-json rows.json --cases 1,2,3   # a harness run's JSON
    .venv/bin/python bench/assignors.py --python-only       # no JDK/harness: our times alone

Cases 1-3 get `--repeat` (default 20) alternating timed runs per side after
the warm-up; cases 4 and 5 (a million partitions) take a few minutes: Java
runs them cold, once, as the harness does by default. Without the harness
(../shared/java-assignors, or --harness) or without a JDK (`java`, `javac`)
it says so, leaves the table in BENCHMARKS.md as it is and exits 0, so
`make bench` goes on to the other benchmarks.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _machine import machine

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "BENCHMARKS.md"
SECTION = "bench/assignors.py"
HARNESS = ROOT.parent / "shared" / "java-assignors" / "side_by_side.py"
ALL = ("range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "server-range")

CASES = {
    1: "2,000 consumers, 100 topics x 100 partitions, all subscribed",
    2: "case 1 with 1,999 members owning a balanced assignment (generation 1), c1999 joining",
    3: "100 consumers, 50 topics x 20 partitions, each subscribed to 5..25 random topics",
    4: "500 topics x 2,000 partitions (1,000,000), 2,000 consumers, all subscribed",
    5: "case 4, but the last consumer subscribes to t000 only",
}


def fmt_s(x: float) -> str:
    return f"{x * 1000:,.1f} ms" if x < 1 else f"{x:,.2f} s"


def commit() -> str:
    """The checkout's commit (short), `-dirty` when src/ has uncommitted changes; `unknown`
    outside git. Stamped on each row so a pooled table says what code it measured."""
    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "--", "src"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("-dirty" if dirty else "") if head else "unknown"


def row_commits(r: dict) -> list[str]:
    """The commit(s) a row was measured at (`unknown` for a bare harness row)."""
    return list(r.get("commits") or [r.get("commit") or "unknown"])


def run_harness(
    harness: Path, cases: list[int], assignors: str, extra: list[str], repeat: int
) -> list[dict]:
    """One harness run per case (a failure in one case keeps the others); all rows. Cases 1-3
    get `repeat` timed runs per side; cases 4-5 the harness's default (one cold run)."""
    rows: list[dict] = []
    env = dict(os.environ, KAFKA_REBALANCE_ROOT=str(ROOT))
    for case in cases:
        with tempfile.TemporaryDirectory(prefix="bench-assignors-") as tmp:
            out = Path(tmp) / "rows.json"
            cmd = [sys.executable, str(harness), "--case", str(case), "--assignor", assignors]
            cmd += ["--json", str(out), *extra]
            if case < 4 and "--repeat" not in extra:
                cmd += ["--repeat", str(repeat)]
            print(f"# {' '.join(cmd)}", file=sys.stderr, flush=True)
            proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=sys.stderr)
            if not out.exists():
                raise SystemExit(
                    f"the harness wrote no rows for case {case} (exit {proc.returncode})"
                )
            rows += json.loads(out.read_text(encoding="utf-8"))
    at = commit()
    for r in rows:
        r["commit"] = at
    return rows


def side_by_side_table(rows: list[dict]) -> list[str]:
    head = [
        "case",
        "pass",
        "assignor",
        "Java best",
        "Java median",
        "Python best",
        "Python median",
        "ratio best",
        "ratio median",
        "identical",
        "commit",
    ]
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['case']} | {r['pass']} | {r['assignor']} | error: {r['error']} |")
            continue
        same = "yes" if r["identical"] else f"NO ({r['differing_members']:,} members differ)"
        cells = [
            str(r["case"]),
            r["pass"],
            r["assignor"],
            fmt_s(r["java_best"]),
            fmt_s(r["java_median"]),
            fmt_s(r["python_best"]),
            fmt_s(r["python_median"]),
            f"{r['python_best'] / r['java_best']:.2f}",
            f"{r['python_median'] / r['java_median']:.2f}",
            same,
            ", ".join(row_commits(r)),
        ]
        out.append("| " + " | ".join(cells) + " |")
    return out


def missing_runs(r: dict) -> str:
    """The per-run samples a row lacks for pooling ('' when it has them, or is an error row)."""
    if "error" in r:
        return ""
    return " and ".join(f"{s}_runs" for s in ("java", "python") if not r.get(f"{s}_runs"))


def pool_rows(a: dict, b: dict) -> dict:
    """One row from two runs of it: every timed run of both, best and median over them. Both
    must carry their runs (`missing_runs`): a best counted as one run biases the median down."""
    if "error" in a or "error" in b:
        return b if "error" in a else a
    out = dict(b)
    out.pop("commit", None)
    out["commits"] = list(dict.fromkeys(row_commits(a) + row_commits(b)))
    for side in ("java", "python"):
        runs = list(a[f"{side}_runs"]) + list(b[f"{side}_runs"])
        out[f"{side}_runs"] = runs
        out[f"{side}_best"] = min(runs)
        out[f"{side}_median"] = statistics.median(runs)
    out["identical"] = bool(a["identical"]) and bool(b["identical"])
    out["differing_members"] = max(a.get("differing_members", 0), b.get("differing_members", 0))
    out["runs_pooled"] = a.get("runs_pooled", 1) + b.get("runs_pooled", 1)
    return out


def _repeats(rows: list[dict]) -> str:
    warm = sorted(
        {len(r.get("python_runs") or ()) or int(r.get("repeat", 10)) for r in rows if r["case"] < 4}
    )
    text = "/".join(map(str, warm)) or "10"
    pooled = sorted({int(r.get("runs_pooled", 1)) for r in rows if r["case"] < 4} - {1})
    if pooled:
        text += " (" + "/".join(map(str, pooled)) + " harness runs pooled)"
    return text


def summary(rows: list[dict]) -> str:
    ok = [r for r in rows if "error" not in r]
    at_most_one = [r for r in ok if r["python_best"] <= r["java_best"]]
    slower = [
        f"{r['case']} {r['pass']} {r['assignor']} ({r['python_best'] / r['java_best']:.2f})"
        for r in ok
        if r["python_best"] > r["java_best"]
    ]
    text = (
        f"Rows at ratio (best) <= 1.0: {len(at_most_one)} of {len(rows)}; outputs identical on "
        f"{sum(bool(r['identical']) for r in ok)} of {len(rows)} rows."
    )
    if slower:
        text += " Slower than Java: " + ", ".join(slower) + "."
    return text


def _missing_harness(harness: Path) -> str:
    """Why Kafka's assignors cannot run beside ours here ('' when they can)."""
    if not harness.is_file():
        return f"Kafka's Java assignors harness not found at {harness} (--harness PATH)"
    absent = [tool for tool in ("java", "javac") if shutil.which(tool) is None]
    if absent:
        return f"no JDK here ({' and '.join(absent)} not on PATH; the harness needs JDK 17+)"
    return ""


def python_only(cases: list[int], assignors: list[str], repeat: int) -> list[str]:
    """Our times alone (no JDK): best of `repeat` per pass, in this process."""
    sys.path.insert(0, str(ROOT / "src"))
    from dataclasses import replace

    from kafka_rebalance.assign.registry import get_assignor
    from kafka_rebalance.model import (
        GroupSpec,
        MemberSubscription,
        TopicMetadata,
        parse_group_scenario,
    )

    vectors = ROOT / "tests" / "vectors" / "assignors-large"
    out = ["| case | assignor | fresh | owned |", "|---|---|---|---|"]
    for case in cases:
        if case in (2, 3):
            name = (
                "uniform_2000c_100t_x_100p_join.json"
                if case == 2
                else "nonuniform_100c_50t_x_20p.json"
            )
            spec = parse_group_scenario(json.loads((vectors / name).read_text("utf-8"))).spec
        else:
            n_topics, n_parts = (100, 100) if case == 1 else (500, 2000)
            topics = {f"t{i:03d}": TopicMetadata(f"t{i:03d}", n_parts) for i in range(n_topics)}
            names = tuple(topics)
            spec = GroupSpec(
                topics,
                tuple(
                    MemberSubscription(f"c{i:04d}", ("t000",) if case == 5 and i == 1999 else names)
                    for i in range(2000)
                ),
            )
        for a in assignors:
            assignor = get_assignor(a)
            fresh_s, result = _best(assignor, spec, repeat if case < 4 else 1)
            owned = GroupSpec(
                spec.topics,
                tuple(
                    replace(m, owned=tuple(result.get(m.member_id, ())), generation=1)
                    for m in spec.members
                ),
            )
            owned_s, _ = _best(assignor, owned, repeat if case < 4 else 1)
            out.append(f"| {case} | {a} | {fmt_s(fresh_s)} | {fmt_s(owned_s)} |")
    return out


def _best(assignor, spec, repeat: int) -> tuple[float, dict]:
    best, result = float("inf"), {}
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = assignor.assign(spec)
        best = min(best, time.perf_counter() - t0)
    return best, result


def section(
    body: list[str], command: str, started: str, load: str, cases: list[int], rendered: bool = False
) -> str:
    lines = [
        f"<!-- {SECTION}:start -->",
        f"## Partition assignors beside Kafka's Java assignors (`{SECTION}`)",
        "",
        f"Command: `{command}` (`make bench` measures afresh: the harness on cases 1-5)  ",
        (
            f"Table written {started} from earlier harness runs (when and at what load: below) on "
            f"{machine(java=True)}."
            if rendered
            else f"Run {started} on {machine(java=True)}; load average at start {load}."
        )
        + " On a shared machine "
        "absolute times are noisy: the two sides alternate single runs, and the ratio is what "
        "counts.",
        "",
        "Cases (issue 2):",
        "",
    ]
    lines += [f"{k}. {v}" for k, v in CASES.items() if k in cases]
    lines += [""] + body + ["", f"<!-- {SECTION}:end -->", ""]
    return "\n".join(lines)


def write_section(text: str) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from kafka_rebalance.io_util import atomic_write_text

    start, end = f"<!-- {SECTION}:start -->", f"<!-- {SECTION}:end -->"
    current = (
        BENCHMARKS.read_text(encoding="utf-8")
        if BENCHMARKS.exists()
        else "# Benchmarks\n\nOne section per benchmark script under `bench/`; each script "
        "rewrites only its own section.\n\n"
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
    ap.add_argument("--cases", default="1,2,3,4,5", help="comma-separated (default 1,2,3,4,5)")
    ap.add_argument("--assignors", default="all", help=f"comma-separated, or all: {', '.join(ALL)}")
    ap.add_argument(
        "--harness",
        type=Path,
        default=Path(os.environ.get("JAVA_ASSIGNORS_HARNESS") or HARNESS),
        help="side_by_side.py of Kafka's Java assignors (default ../shared/java-assignors/)",
    )
    ap.add_argument(
        "--from-json",
        type=Path,
        nargs="+",
        help="rows of earlier harness runs (their --json); a later file's row replaces an earlier one",
    )
    ap.add_argument(
        "--pool",
        action="store_true",
        help="--from-json: pool the timed runs of a row found in several files (best and median "
        "over all of them; identical only if identical in each) instead of the later replacing",
    )
    ap.add_argument("--note", default="", help="a sentence added under the table (e.g. how it ran)")
    ap.add_argument("--python-only", action="store_true", help="no JDK: time ours alone")
    ap.add_argument(
        "--repeat",
        type=int,
        default=None,
        help="timed runs per side for cases 1-3 (default 20; --python-only: runs per pass, default 5)",
    )
    ap.add_argument("--no-write", action="store_true", help="do not update BENCHMARKS.md")
    ap.add_argument(
        "--save-json",
        type=Path,
        default=None,
        help="write the harness run's rows, each stamped with this checkout's commit, here "
        "(for --from-json --pool later)",
    )
    args, extra = ap.parse_known_args(argv)
    try:
        cases = [int(c) for c in args.cases.split(",") if c]
    except ValueError:
        ap.error(f"--cases: expected numbers like 1,2,3, got {args.cases!r}")
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        ap.error(f"--cases: unknown case {unknown[0]} (known: 1-5)")
    assignors = list(ALL) if args.assignors == "all" else args.assignors.split(",")
    bad = [a for a in assignors if a not in ALL]
    if bad:
        ap.error(f"--assignors: unknown assignor {bad[0]!r} (known: {', '.join(ALL)})")

    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    shown = [a for i, a in enumerate(argv) if a != "--note" and (i == 0 or argv[i - 1] != "--note")]
    command = ".venv/bin/python bench/assignors.py" + (" " + " ".join(shown) if shown else "")
    if args.python_only:
        body = [
            "Python alone (no JDK here): best of the repeats, *owned* = every member owning "
            "its fresh result at generation 1.",
            "",
            *python_only(cases, assignors, args.repeat or 5),
        ]
    else:
        if args.from_json:
            # a later file's row replaces an earlier one for the same (case, pass, assignor),
            # or with --pool both rows' timed runs count
            by_key: dict[tuple, dict] = {}
            for f in args.from_json:
                for r in json.loads(f.read_text(encoding="utf-8")):
                    key = (r["case"], r["pass"], r["assignor"])
                    lacking = missing_runs(r) if args.pool else ""
                    if lacking:
                        print(
                            f"bench/assignors.py: --pool: {f}: row case {key[0]} {key[1]} "
                            f"{key[2]} has no {lacking} (per-run samples); its best would count "
                            "as one run and bias the pooled median: pool harness runs written "
                            "with every run's time (side_by_side.py --json, --save-json)",
                            file=sys.stderr,
                        )
                        return 2
                    by_key[key] = pool_rows(by_key[key], r) if args.pool and key in by_key else r
            order = {
                (c, p, a): i
                for i, (c, a, p) in enumerate(
                    (c, a, p) for c in CASES for a in ALL for p in ("fresh", "owned")
                )
            }
            rows = sorted(
                by_key.values(), key=lambda r: order[(r["case"], r["pass"], r["assignor"])]
            )
            rows = [r for r in rows if r["case"] in cases and r["assignor"] in assignors]
        else:
            missing = _missing_harness(args.harness)
            if missing:
                print(
                    f"bench/assignors.py: {missing}: the side-by-side table is skipped and "
                    f"{BENCHMARKS.name} keeps its current one (--python-only times ours alone)",
                    file=sys.stderr,
                )
                return 0
            rows = run_harness(args.harness, cases, ",".join(assignors), extra, args.repeat or 20)
            if args.save_json:
                sys.path.insert(0, str(ROOT / "src"))
                from kafka_rebalance.io_util import atomic_write_text

                atomic_write_text(args.save_json, json.dumps(rows, indent=1))
        body = [
            "Measured with Kafka's assignors harness (`side_by_side.py`, its README says how): "
            "Kafka's own assignors (compiled from Kafka's sources) and ours get the same group in "
            "one run; Java is warmed up (at least 2 s of `assign()`, so it runs C2 code) and the "
            f"two sides then alternate {_repeats(rows)} timed runs each, except cases 4 and 5: one "
            "cold run per side. *owned*: every member owns Java's fresh result at generation 1 (the assignors "
            "that read owned partitions). Ratio = Python / Java time (best of the runs, and "
            "median); *identical*: every member's partitions equal Java's.",
            "",
            *side_by_side_table(rows),
            "",
            summary(rows),
            "Measured at commit(s): "
            + ", ".join(dict.fromkeys(c for r in rows for c in row_commits(r)))
            + " (the *commit* column: each row's).",
        ]
        if args.note:
            body += ["", args.note]
    text = section(body, command, started, load, cases, rendered=bool(args.from_json))
    print(text)
    if not args.no_write:
        write_section(text)
        print(f"wrote the {SECTION} section of {BENCHMARKS}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
