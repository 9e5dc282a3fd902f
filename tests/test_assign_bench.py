"""bench/assignors.py (what `make bench` runs for the assignors): the table it writes, and that it
skips the side-by-side table, saying why, with exit 0 when Kafka's harness or a JDK is absent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "assignors.py"
BENCHMARKS = ROOT / "BENCHMARKS.md"


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


def _text(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.exists() else None


def test_without_the_harness_the_table_is_skipped_with_exit_0() -> None:
    before = _text(BENCHMARKS)
    done = _run("--harness", "/nonexistent/side_by_side.py", "--cases", "1")
    assert done.returncode == 0, done.stderr
    assert "harness not found at /nonexistent/side_by_side.py" in done.stderr
    assert "table is skipped" in done.stderr
    assert done.stdout == ""
    assert _text(BENCHMARKS) == before


def test_without_a_jdk_the_table_is_skipped_with_exit_0(tmp_path: Path) -> None:
    harness = tmp_path / "side_by_side.py"
    harness.write_text("raise SystemExit('must not run')\n", encoding="utf-8")
    before = _text(BENCHMARKS)
    env = dict(os.environ, PATH=str(tmp_path))  # no java, no javac
    done = _run("--harness", str(harness), "--cases", "1", env=env)
    assert done.returncode == 0, done.stderr
    assert "no JDK here (java and javac not on PATH" in done.stderr
    assert _text(BENCHMARKS) == before


def test_rows_of_a_harness_run_become_the_table(tmp_path: Path) -> None:
    row = {
        "case": 1,
        "pass": "owned",
        "assignor": "sticky",
        "java_best": 0.0139,
        "java_median": 0.0182,
        "python_best": 0.0029,
        "python_median": 0.0041,
        "identical": True,
        "differing_members": 0,
        "repeat": 20,
    }
    slow = dict(row, assignor="uniform", java_best=0.0005, python_best=0.0021, identical=False)
    slow["differing_members"] = 3
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps([row, slow]), encoding="utf-8")
    done = _run("--from-json", str(rows), "--cases", "1", "--no-write")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "| 1 | owned | sticky | 13.9 ms | 18.2 ms | 2.9 ms | 4.1 ms | 0.21 | 0.23 | yes |" in out
    assert "| 1 | owned | uniform | 0.5 ms |" in out
    assert "NO (3 members differ)" in out
    assert "Rows at ratio (best) <= 1.0: 1 of 2; outputs identical on 1 of 2 rows." in out
    assert "Slower than Java: 1 owned uniform (4.20)." in out
    assert "CPUs" in out and "Python 3." in out


def test_pooled_runs_give_best_and_median_over_all(tmp_path: Path) -> None:
    base = {"case": 3, "pass": "fresh", "assignor": "range", "differing_members": 0}
    one = dict(base, java_runs=[0.004, 0.006], python_runs=[0.002, 0.009], identical=True)
    two = dict(base, java_runs=[0.005, 0.001], python_runs=[0.003, 0.004], identical=True)
    for row in (one, two):
        for side in ("java", "python"):
            row[f"{side}_best"] = min(row[f"{side}_runs"])
            row[f"{side}_median"] = sorted(row[f"{side}_runs"])[1]
    files = []
    for i, row in enumerate((one, two)):
        files.append(tmp_path / f"run{i}.json")
        files[-1].write_text(json.dumps([row]), encoding="utf-8")
    pooled = _run("--from-json", *map(str, files), "--pool", "--cases", "3", "--no-write")
    assert pooled.returncode == 0, pooled.stderr
    # java 1.0 / 4.5 ms (median of 1, 4, 5, 6), python 2.0 / 3.5 ms (of 2, 3, 4, 9)
    assert (
        "| 3 | fresh | range | 1.0 ms | 4.5 ms | 2.0 ms | 3.5 ms | 2.00 | 0.78 | yes |"
        in pooled.stdout
    )
    last = _run("--from-json", *map(str, files), "--cases", "3", "--no-write")
    assert (
        "| 3 | fresh | range | 1.0 ms | 5.0 ms | 3.0 ms | 4.0 ms | 3.00 | 0.80 | yes |"
        in last.stdout
    )


def test_pooled_rows_keep_each_runs_commit(tmp_path: Path) -> None:
    base = {"case": 1, "pass": "fresh", "assignor": "range", "differing_members": 0}
    base |= {"identical": True, "java_best": 0.002, "java_median": 0.002}
    base |= {"python_best": 0.001, "python_median": 0.001}
    one = dict(base, java_runs=[0.002], python_runs=[0.001], commit="aaa1111")
    two = dict(base, java_runs=[0.002], python_runs=[0.001])  # a bare harness row
    files = [tmp_path / "one.json", tmp_path / "two.json"]
    for f, row in zip(files, (one, two)):
        f.write_text(json.dumps([row]), encoding="utf-8")
    pooled = _run("--from-json", *map(str, files), "--pool", "--cases", "1", "--no-write")
    assert pooled.returncode == 0, pooled.stderr
    assert "| commit |" in pooled.stdout
    assert "| 0.50 | 0.50 | yes | aaa1111, unknown |" in pooled.stdout
    assert "Measured at commit(s): aaa1111, unknown" in pooled.stdout


def test_pooling_refuses_a_row_without_its_runs(tmp_path: Path) -> None:
    row = {"case": 2, "pass": "owned", "assignor": "sticky", "differing_members": 0}
    row |= {"identical": True, "java_best": 0.002, "java_median": 0.003}
    row |= {"python_best": 0.001, "python_median": 0.002, "java_runs": [0.002, 0.003]}
    files = [tmp_path / "a.json", tmp_path / "b.json"]
    for f in files:
        f.write_text(json.dumps([row]), encoding="utf-8")
    done = _run("--from-json", *map(str, files), "--pool", "--cases", "2", "--no-write")
    assert done.returncode == 2
    assert f"--pool: {files[0]}: row case 2 owned sticky has no python_runs" in done.stderr
    assert done.stdout == ""
    # without --pool a later row replaces the earlier one: no samples needed
    assert _run("--from-json", *map(str, files), "--cases", "2", "--no-write").returncode == 0
