"""Peak memory and time of every hostile input case (issue 17; not a test: numbers for BENCHMARKS.md).

Runs each hand-made case of tests/test_hostile_limits.py (wrong nested types, ids beyond int32,
limits, memory refusals, flags) and of tests/test_hostile_inputs.py (huge, deep, non-finite and
aliased JSON/YAML) as its own `kafka-rebalance` process, and reads the process's peak resident
memory (ru_maxrss from wait4) and wall time. The budget per case is 1 GB and 10 s; a case "ends
cleanly" when it exits 2 with one error line and no traceback.

    .venv/bin/python bench/hostile.py            # all cases, write the table into BENCHMARKS.md
    .venv/bin/python bench/hostile.py --no-write
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import test_hostile_inputs as old  # noqa: E402
import test_hostile_limits as new  # noqa: E402

MEMORY_BUDGET = 1 << 30
TIME_BUDGET = 10.0
SECTION = "## Hostile inputs (`bench/hostile.py`)"
BEFORE = (
    "Before the limits and typed fields (same machine, a probe run with a 20 s timeout and a 3 "
    "GiB address-space cap): `assign` with `partitions: 1000000000000`, `rounds: 1000000000`, `"
    "rf: 1000000000` or `--rounds 1000000000`, and `simulate` with `partitions: 1000000000000`,"
    " `members.count: 1000000`, `duration_ms: 10^15` or an `add_partitions` event of 10^12 part"
    "itions all still ran at 20 s; `members.rack` as a list and `produce_rate: 1e300` were trac"
    "ebacks; broker ids and partitions beyond int32, a generation of 2^40 and a 10^30 `at_ms` w"
    "ere accepted with exit 0. Each is now refused (an `rf` above the rack count is read as the"
    " rack count, in 1 s) in about the interpreter's start-up time (table above)."
)


def _cases(tmp: Path):
    """(name, format, argv) for every case, inputs written under `tmp`."""
    for name in sorted(new.CASES):
        case = new.CASES[name]
        d = tmp / name
        d.mkdir()
        f = new.write_input(d, case.fmt, case.content, case.as_yaml, case.suffix)
        yield name, case.fmt, [*new._argv(case.fmt, f, d), *case.flags]
    for name in new.FLAG_CASES:
        d = tmp / name
        d.mkdir()
        (d / "grid.yaml").write_text(
            f"base_file: {new.EX / 'crash.yaml'}\ngrid:\n  seeds: 1000000\n"
        )
        yield name, "flags", new._flag_cases(d)[name][0]
    for cmd, kind in old.CASES:
        d = tmp / f"{cmd}-{kind}"
        d.mkdir()
        suffix, content, _ = old.HOSTILE[kind]
        f = d / ("report.json" if cmd == "report" else f"hostile{suffix}")
        f.write_text(content, encoding="utf-8")
        yield f"{cmd}-{kind}", "huge/deep/non-finite", old._commands(d, f)[cmd]


def run_case(argv: list[str]) -> tuple[int, float, int, str]:
    """(exit code, wall seconds, peak RSS bytes, stderr) of one CLI process, reaped with wait4
    to read its own ru_maxrss."""
    code = "import sys; from kafka_rebalance import cli; sys.exit(cli.main(sys.argv[1:]))"
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", code, *argv], stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        return proc.returncode, wall, usage.ru_maxrss * 1024, err.read()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("-k", default=None, help="only cases whose name holds this")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="hostile-bench-") as tmp:
        for name, fmt, argv in _cases(Path(tmp)):
            if args.k and args.k not in name:
                continue
            rc, wall, rss, err = run_case(argv)
            lines = err.strip().splitlines()
            clean = rc == 2 and len(lines) == 1 and "Traceback" not in err
            rows.append((name, fmt, rc, wall, rss, clean))
            print(
                f"{name:55s} rc={rc} {wall:5.2f}s {rss / 2**20:7.1f} MiB {'ok' if clean else 'NOT CLEAN: ' + err[-200:]}",
                flush=True,
            )
    table = _table(rows)
    print(table)
    if not args.no_write and not args.k:
        _write(table)
    return 0 if all(r[5] for r in rows) else 1


def _table(rows) -> str:
    by_fmt: dict[str, list] = {}
    for r in rows:
        by_fmt.setdefault(r[1], []).append(r)
    clean = sum(1 for r in rows if r[5])
    over = [r for r in rows if r[3] > TIME_BUDGET or r[4] > MEMORY_BUDGET]
    out = [
        SECTION,
        "",
        f"{len(rows)} hostile cases ({len(rows) - len(old.CASES)} of tests/test_hostile_limits.py, "
        f"{len(old.CASES)} of tests/test_hostile_inputs.py), each its own `kafka-rebalance` "
        f"process; peak RSS from `wait4`. {clean} of {len(rows)} end cleanly (exit 2, one error "
        f"line, no traceback); {len(over)} over the budget of 1 GB and 10 s. Machine: "
        f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        "shared with five other sessions' work (times are noisy: the floor is the interpreter "
        "start and imports, about 1 s of each).",
        "",
        "| inputs | cases | clean | time median | time max | peak RSS median | peak RSS max |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for fmt, rs in sorted(by_fmt.items()):
        times = sorted(r[3] for r in rs)
        mems = sorted(r[4] for r in rs)
        out.append(
            f"| {fmt} | {len(rs)} | {sum(1 for r in rs if r[5])} | {times[len(times) // 2]:.2f} s "
            f"| {times[-1]:.2f} s | {mems[len(mems) // 2] / 2**20:.0f} MiB "
            f"| {mems[-1] / 2**20:.0f} MiB |"
        )
    worst = sorted(rows, key=lambda r: -r[4])[:5]
    out += ["", "The five with the highest peak memory:", ""]
    out += ["| case | time | peak RSS |", "|---|---:|---:|"]
    out += [f"| {r[0]} | {r[3]:.2f} s | {r[4] / 2**20:.0f} MiB |" for r in worst]
    out += ["", BEFORE, "", "    .venv/bin/python bench/hostile.py", ""]
    return "\n".join(out)


def _write(table: str) -> None:
    path = ROOT / "BENCHMARKS.md"
    text = path.read_text()
    if SECTION in text:
        start = text.index(SECTION)
        nxt = re.search(r"\n## ", text[start + len(SECTION) :])
        end = start + len(SECTION) + nxt.start() + 1 if nxt else len(text)
        text = text[:start] + table + "\n" + text[end:]
    else:
        text = text.rstrip("\n") + "\n\n" + table + "\n"
    path.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
