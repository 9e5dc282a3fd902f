"""bench/sim_callgrind.py: the run it hands to callgrind is bench/simulate.py's case cut after N
restarts, as BENCHMARKS.md's instruction tables were taken (20 restarts: 290 s), and it refuses a
case or restart count it cannot run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from compiled_legs import from_source

ROOT = Path(__file__).resolve().parents[1]
CALLGRIND = from_source(ROOT / "bench" / "sim_callgrind.py", "bench_sim_callgrind")


def test_twenty_restarts_are_the_recorded_290_seconds() -> None:
    assert CALLGRIND.duration_ms(20) == 290_000
    assert CALLGRIND.duration_ms(0) == 90_000


def test_the_child_program_runs_the_case_cut_after_the_restarts() -> None:
    """The program valgrind runs, run here without valgrind: 10 members cut after 2 restarts. The
    restarts start at 60 s, one every 10 s, until the cut at 110 s: 5 members leave (the last 3
    cut short), each leave a rebalance after the group's first."""
    code = CALLGRIND.CHILD.format(
        src=str(ROOT / "src"),
        bench=str(ROOT / "bench"),
        case="rolling-eager",
        members=10,
        duration=CALLGRIND.duration_ms(2),
    )
    code = code.replace(
        "simulate(doc, collect_events=False)", "r = simulate(doc, collect_events=False)"
    )
    code += "print(sum('LeaveGroup' in t['cause'] for t in r.summary['timeline']))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.split()[-1]) == 5


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--case", "day"], "--case: a rolling case is needed, got 'day'"),
        (["--members", "5", "--restarts", "6"], "--restarts: 1..5 (the members), got 6"),
    ],
)
def test_bad_arguments_exit_2_naming_the_flag(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        CALLGRIND.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
