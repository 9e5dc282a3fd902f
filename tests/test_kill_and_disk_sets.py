"""Output sets under failures (issue 17, classes 5 and 11): a full disk leaves no folder it made, the
batch files of a longer earlier plan go with the new set, a set killed between its renames is
finished from another working directory, a journal whose new file is gone is kept with a clear
error, a set with a folder among its targets writes nothing, a rename failing midway puts the old
set back, and `cluster execute` refuses a batch path that is a folder before writing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from kill_and_disk_runs import (
    OLD,
    SNAPSHOT,
    hidden,
    prepare,
    run,
    writers,
)


def test_full_disk_leaves_no_folder_it_made(tmp_path):
    """Outputs in folders that do not exist yet: a failed write removes the folders it made."""
    argv = [
        "cluster",
        "plan",
        "--snapshot",
        SNAPSHOT,
        "--output",
        tmp_path / "a" / "b" / "p.json",
        "--election-output",
        tmp_path / "c" / "e.json",
    ]
    proc = run("fsize:1000", argv)
    assert proc.returncode == 1 and "File too large" in proc.stderr, proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_batch_files_of_a_longer_earlier_plan_go_with_the_new_set(tmp_path, capsys):
    """--output-dir held batch-001..040 of an earlier, longer plan: the folder ends with this
    plan's batch files only (a batch left behind would be applied as part of this plan)."""
    w = tmp_path
    prepare(w)
    capsys.readouterr()
    argv, _outputs = writers(w)["execute-batch-files"]
    for i in range(1, 41):
        (w / "out" / f"batch-{i:03d}.json").write_bytes(OLD)
    (w / "out" / "notes.txt").write_text("the user's")  # not a batch file: kept
    proc = run("run", [*argv, "--format", "json"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    written = json.loads(proc.stdout)["batch_files"]
    assert 1 < len(written) < 40
    left = sorted(p.name for p in (w / "out").iterdir())
    assert left == sorted([Path(f).name for f in written] + ["notes.txt"])
    assert all(Path(f).read_bytes() != OLD for f in written) and hidden(w) == []


# -- sets: a kill with relative paths, a failed rename midway (review of main) ---------------------

KILL_AT_REPLACE = r"""
import os, signal, sys
from kafka_rebalance import io_util
n, real = [0], os.replace
def replace(a, b):
    n[0] += 1
    if n[0] == int(sys.argv[1]):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(a, b)
io_util.os.replace = replace
io_util.write_files([("out/x.json", "new x"), ("out/y.json", "new y")])
"""


def _kill_between_renames(w: Path) -> None:
    """write_files with paths relative to `w`, killed after the journal and the first rename."""
    (w / "out").mkdir(parents=True)
    for n in ("x", "y"):
        (w / "out" / f"{n}.json").write_text(f"old {n}")
    # os.replace calls: the journal (1), x (2), y (3): killed just before y's rename
    proc = subprocess.run(
        [sys.executable, "-c", KILL_AT_REPLACE, "3"], cwd=w, capture_output=True, timeout=60
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert (w / "out" / "x.json").read_text() == "new x"
    assert (w / "out" / "y.json").read_text() == "old y"  # the mix the journal must finish


def test_a_set_killed_with_relative_paths_is_finished_from_another_cwd(tmp_path, monkeypatch):
    from kafka_rebalance.io_util import clean_stale

    _kill_between_renames(tmp_path / "a")
    (tmp_path / "b").mkdir()
    monkeypatch.chdir(tmp_path / "b")
    done = clean_stale(tmp_path / "a" / "out")
    assert any(d.startswith("finished ") for d in done), done
    assert (tmp_path / "a" / "out" / "y.json").read_text() == "new y"
    assert sorted(p.name for p in (tmp_path / "a" / "out").iterdir()) == ["x.json", "y.json"]


def test_a_journal_whose_new_file_is_gone_is_kept_with_a_clear_error(tmp_path):
    from kafka_rebalance.errors import RuntimeFailure
    from kafka_rebalance.io_util import clean_stale

    _kill_between_renames(tmp_path)
    out = tmp_path / "out"
    for p in out.iterdir():
        if p.name.startswith(".y.json.") and p.name.endswith(".tmp"):
            p.unlink()  # y's new version lost: the set cannot be finished
    with pytest.raises(RuntimeFailure, match=r"y\.json: a killed run's set cannot be finished"):
        clean_stale(out)
    assert [p for p in out.iterdir() if p.name.endswith(".publish")]  # kept: not "finished"
    assert (out / "y.json").read_text() == "old y"


def test_a_set_with_a_directory_among_its_targets_writes_nothing(tmp_path):
    from kafka_rebalance.io_util import write_files

    (tmp_path / "x.json").write_text("old x")
    (tmp_path / "y.json").mkdir()
    with pytest.raises(IsADirectoryError) as e:
        write_files([(tmp_path / "x.json", "new x"), (tmp_path / "y.json", "new y")])
    assert e.value.filename == str(tmp_path / "y.json")
    assert (tmp_path / "x.json").read_text() == "old x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json", "y.json"]


def test_a_rename_failing_midway_puts_the_old_set_back(tmp_path, monkeypatch):
    from kafka_rebalance import io_util

    for n in ("x", "y"):
        (tmp_path / f"{n}.json").write_text(f"old {n}")
    real = os.replace

    def replace(a, b):
        if Path(b).name == "y.json":  # a folder made there after the checks
            raise IsADirectoryError(21, "Is a directory", str(b))
        return real(a, b)

    monkeypatch.setattr(io_util.os, "replace", replace)
    with pytest.raises(IsADirectoryError):
        io_util.write_files(
            [(tmp_path / "x.json", "new x"), (tmp_path / "y.json", "new y"), (tmp_path / "z", "z")]
        )
    monkeypatch.setattr(io_util.os, "replace", real)
    assert (tmp_path / "x.json").read_text() == "old x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.json", "y.json"]


def test_execute_refuses_a_batch_path_that_is_a_folder_before_writing(tmp_path):
    """The review's repro: batch-002.json made a folder; a 3-batch run wrote batch-001 then failed."""
    w = tmp_path
    prepare(w)
    argv, _outputs = writers(w)["execute-batch-files"]
    assert run("run", argv).returncode == 0
    before = {p.name: p.read_bytes() for p in (w / "out").iterdir()}
    assert len(before) >= 2
    (w / "out" / "batch-002.json").unlink()
    (w / "out" / "batch-002.json").mkdir()
    proc = run("run", [*argv[:-4], "--max-moves-per-broker", "2", "--output-dir", w / "out"])
    assert proc.returncode == 2, proc.stderr
    assert "--output-dir" in proc.stderr and "batch-002.json" in proc.stderr
    after = {p.name: p.read_bytes() for p in (w / "out").iterdir() if p.is_file()}
    assert after == {k: v for k, v in before.items() if k != "batch-002.json"}
    assert hidden(w) == []
