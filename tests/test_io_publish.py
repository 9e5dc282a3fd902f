"""One folder switch and one leftover rule for every writer (the demo, the pipeline, write_files).

The rule (io_temp): a temporary of a live process is never touched; a dead one's is removed,
or restored (an old folder whose target is missing), or finished (a journal). This process's
own are live unless a job about to write that target vouches none of its writes is open.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kafka_rebalance import io_publish, io_temp
from kafka_rebalance.io_publish import hidden_name, publish_folder, recover
from kafka_rebalance.io_temp import clean_stale


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.fixture
def live_pid():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield p.pid
    finally:
        p.kill()
        p.wait()


def _names(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _leftovers(folder, target: str, pid: int) -> list[str]:
    """A staged folder and an old folder of `target` by `pid`, in both naming schemes."""
    names = [
        f".{target}.kr-{pid}-0123abcd.tmp",
        f".{target}.kr-{pid}-89abcdef.old",
        f".{target}.tmp-{pid}-0123abcd",
        f".{target}.old-{pid}-89abcdef",
    ]
    for n in names:
        (folder / n).mkdir()
        (folder / n / "part-0.parquet").write_text(n)
    return names


def test_another_live_processs_leftovers_are_never_touched(tmp_path, live_pid):
    out = tmp_path / "out"
    out.mkdir()
    names = _leftovers(tmp_path, "out", live_pid)
    inside = _leftovers(out, "commits.parquet", live_pid)
    assert recover(out) == [] and clean_stale(tmp_path) == [] and clean_stale(out) == []
    assert _names(tmp_path) == sorted([*names, "out"]) and _names(out) == sorted(inside)


def test_a_dead_processs_leftovers_are_removed_and_its_old_set_restored(tmp_path):
    pid = _dead_pid()
    out = tmp_path / "out"
    _leftovers(tmp_path, "out", pid)
    (tmp_path / ".out.tmp-0123abcd").mkdir()  # the earliest scheme: no PID, always stale
    done = recover(out)
    assert _names(tmp_path) == ["out"], done
    assert (out / "part-0.parquet").read_text().startswith(".out."), "an old set was put back"
    assert sum(d.startswith("restored") for d in done) == 1


def test_clean_stale_applies_the_same_rule_to_the_pipelines_names(tmp_path):
    """A writer cleaning a folder (write_files, the demo's staging) clears the pipeline's
    leftovers too: one rule, whichever code wrote them."""
    pid = _dead_pid()
    (tmp_path / "out").mkdir()
    _leftovers(tmp_path, "out", pid)
    clean_stale(tmp_path)
    assert _names(tmp_path) == ["out"]


def test_own_temporaries_are_live_unless_a_job_on_that_target_starts(tmp_path):
    out, other = tmp_path / "out", tmp_path / "other"
    mine_out = tmp_path / hidden_name("out")
    mine_other = tmp_path / hidden_name("other")
    mine_out.mkdir()
    mine_other.mkdir()
    assert clean_stale(tmp_path) == []  # a writer of this process may be using them
    recover(out)  # a job on `out` starts: none of this process's writes to `out` is open
    assert _names(tmp_path) == [mine_other.name]
    recover(other)
    assert _names(tmp_path) == []


def test_a_week_old_temporary_of_a_running_pid_is_stale(tmp_path, live_pid):
    """The PID was reused: a temporary older than STALE_AGE_S is not that process's."""
    entry = tmp_path / f".a.json.kr-{live_pid}-0123abcd.tmp"
    entry.write_text("x")
    assert not io_temp.is_stale(entry, live_pid)
    os.utime(entry, (0, 0))
    assert io_temp.is_stale(entry, live_pid)


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
def test_publish_folder_switches_whole_and_leaves_nothing_hidden(tmp_path, monkeypatch, exchange):
    if not exchange:
        monkeypatch.setattr(io_publish, "exchange", lambda a, b: False)
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.json").write_text("old")
    stage = io_publish.staging_folder(out)
    (stage / "new.json").write_text("new")
    ino = stage.stat().st_ino
    publish_folder(stage, out)
    assert _names(out) == ["new.json"] and out.stat().st_ino == ino
    assert _names(tmp_path) == ["out"]


def test_a_switch_cut_between_its_two_renames_is_put_back_by_the_next_job(tmp_path, monkeypatch):
    monkeypatch.setattr(io_publish, "exchange", lambda a, b: False)
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.json").write_text("old")
    stage = io_publish.staging_folder(out)
    real, calls = os.replace, []

    def replace(a, b):  # the second rename (stage into place) never happens: a kill
        calls.append(a)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(a, b)

    monkeypatch.setattr(io_publish.os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        publish_folder(stage, out)
    monkeypatch.setattr(io_publish.os, "replace", real)
    assert not out.exists()
    recover(out)  # the same process, as a new job: its cut switch is not open any more
    assert _names(out) == ["old.json"] and _names(tmp_path) == ["out"]


def test_the_pipeline_switches_folders_with_the_one_switch():
    from kafka_rebalance.pipeline import io as pipeline_io

    assert pipeline_io.switch_in is io_publish.publish_folder
    assert pipeline_io.recover is io_publish.recover
    assert pipeline_io.hidden_name is io_temp.hidden_name
