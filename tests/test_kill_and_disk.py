"""Kills and full disks for every command that writes outside the Spark pipeline (issue 17: classes
5 and 11, the kill tests).

Full disk: each writer runs in a subprocess under RLIMIT_FSIZE with SIGXFSZ ignored, so write()
fails with EFBIG as it would with ENOSPC. It must exit 1 with one line naming the user's path (not
a hidden temporary), leave no partial or temporary file, and leave the old output intact.

Kills: each command runs in a subprocess that SIGKILLs itself just before its K-th file operation
(os.open, os.fsync, os.replace; K drawn with a fixed seed from the operations a whole run makes),
or after a seeded random delay. Afterwards every output is whole (the old bytes or the new ones);
the next run finishes or removes what the killed one left, so the outputs are one run's set and no
temporary remains.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kill_and_disk_runs import (
    OLD,
    RUNNER,
    SNAPSHOT,
    files,
    hidden,
    placement,
    prepare,
    run,
    sim_for,
    target_of,
    write_old,
    writers,
)

FULL_DISK = [
    (name, limit)
    for name in (
        "plan",
        "elect",
        "generate",
        "describe",
        "report",
        "execute-batch-files",
        "execute-state",
        "simulate-events",
    )
    # 150 B: the first write fails; 700 B: a small file of a set fits, a later one does not
    for limit in ((150, 700) if name in ("plan", "execute-batch-files") else (400,))
]


@pytest.mark.parametrize(("name", "limit"), FULL_DISK)
def test_full_disk_exit_1_names_the_path_keeps_the_old_output(name, limit, tmp_path, capsys):
    w = tmp_path
    prepare(w)
    capsys.readouterr()
    argv, outputs = writers(w)[name]
    if name == "execute-state":  # the state file is the executor's journal: no old one to resume
        outputs_old: list[str] = []
    else:
        outputs_old = outputs
    write_old(w, outputs_old)
    before = files(w)
    with sim_for(name) as sim:
        proc = run(f"fsize:{limit}", argv, sim)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1, proc.stderr
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "File too large" in lines[0] and ".kr-" not in lines[0], lines[0]
    assert any(str(w / o) in lines[0] for o in outputs), lines[0]
    assert files(w) == before  # old outputs intact, nothing new
    assert hidden(w) == []


def test_full_disk_in_the_demo_leaves_no_folder(tmp_path):
    out = tmp_path / "new" / "demo"
    proc = run("fsize:300", ["demo", "--out", out])
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1, proc.stderr[-3000:]
    err = [ln for ln in lines if "error:" in ln]
    assert len(err) == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert str(out) in err[0] and ".kr-" not in err[0] and "File too large" in err[0], err[0]
    assert list(tmp_path.iterdir()) == []  # neither the folder, its staging, nor the parent it made


def test_full_disk_in_the_demo_keeps_the_old_results(tmp_path):
    out = tmp_path / "demo"
    out.mkdir()
    (out / "report.json").write_bytes(OLD)
    (out / "report.html").write_bytes(b"<p>old</p>")
    before = files(tmp_path)
    proc = run("fsize:300", ["demo", "--out", out])
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert files(tmp_path) == before and hidden(tmp_path) == []


# -- kills ----------------------------------------------------------------------------------------

KILLS_PER_WRITER = 2


def _new_outputs(tmp_path: Path, name: str) -> tuple[dict[str, bytes], int]:
    """The outputs of a whole run (in a workdir of their own) and how many file operations it made."""
    ref = tmp_path / "ref"
    prepare(ref)
    argv, outputs = writers(ref)[name]
    with sim_for(name) as sim:
        proc = run("count", argv, sim)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ops = int(proc.stderr.strip().splitlines()[-1].split()[1])
    return {o: _comparable(name, o, (ref / o).read_bytes(), ref) for o in outputs}, ops


def _comparable(name: str, o: str, data: bytes, w: Path) -> object:
    """What must equal between two workdirs: the bytes, except the paths of the workdir."""
    if o.endswith("st.json"):  # the execution's outcome (its rollback_file names the workdir)
        doc = json.loads(data)
        election = {k: v for k, v in doc["election"].items() if k != "elected_by_interrupted_run"}
        return doc["phase"], [b["status"] for b in doc["batches"]], election
    if name == "report":  # the page names its input file
        return data.replace(str(w).encode(), b"WORKDIR")
    return data


@pytest.mark.parametrize(
    "name", ["plan", "report", "execute-batch-files", "execute-state", "simulate-events"]
)
def test_kill_at_seeded_file_operations_leaves_old_or_new(name, tmp_path, capsys):
    new, ops = _new_outputs(tmp_path, name)
    capsys.readouterr()
    rng = random.Random(f"17-{name}")
    # two points where a kill can fall between files of a set or between steps, one elsewhere
    kills = KILLS_PER_WRITER if name in ("plan", "execute-state") else 1
    points = sorted(rng.sample(range(1, ops + 1), min(kills, ops)))
    for k in points:
        w = tmp_path / f"k{k}"
        prepare(w)
        capsys.readouterr()
        argv, outputs = writers(w)[name]
        if name != "execute-state":
            write_old(w, outputs)
        kinds: list[str] = []
        with sim_for(name) as sim:  # one cluster for the killed run and the next one
            proc = run(f"kill:{k}", argv, sim)
            assert proc.returncode == -signal.SIGKILL, (k, proc.returncode, proc.stderr[-2000:])
            for o in outputs:
                p = w / o
                if name == "execute-state":  # no old execution: absent, or whole
                    if p.exists() and o.endswith("st.json"):
                        from kafka_rebalance.kafka.execute import load_state

                        load_state(p)  # it loads and passes every check
                    elif p.exists():
                        assert _comparable(name, o, p.read_bytes(), w) == new[o], (k, o)
                    continue
                data = p.read_bytes()
                assert data == OLD or _comparable(name, o, data, w) == new[o], (k, o)
                kinds.append("old" if data == OLD else "new")
            if len(set(kinds)) > 1:
                # killed between the renames of one set: its journal is there, and it finishes the set
                assert any(p.endswith(".publish") for p in hidden(w)), (k, kinds, hidden(w))
            # the next run: finishes or removes what the killed one left, then writes its own
            state = w / "out" / "st.json"
            if name == "execute-state" and state.exists():
                from kafka_rebalance.kafka.execute import load_state

                assert load_state(state)["phase"] != "finished"  # the kill came before the end
                argv = [*argv, "--resume"]
            proc = run("run", argv, sim)
            assert proc.returncode == 0, (k, proc.stderr[-3000:])
            if sim is not None:
                assert placement(sim.snapshot()) == target_of(w)
        assert hidden(w) == [], (k, hidden(w))
        for o in outputs:
            assert _comparable(name, o, (w / o).read_bytes(), w) == new[o], (k, o)


def test_a_set_killed_between_its_renames_is_finished_by_the_next_run(tmp_path):
    """Kill exactly between plan.json's rename and the election file's: a mix, with its journal;
    the next writer in that folder (here `cluster describe --output`) completes the set first."""
    w = tmp_path
    prepare(w)
    argv, outputs = writers(w)["plan"]
    write_old(w, outputs)
    new, _ops = _new_outputs(tmp_path / "x", "plan")
    # count the os.replace calls: temps of both files, the journal, then the two renames
    code = RUNNER.replace('for name in ("open", "fsync", "replace")', 'for name in ("replace",)')
    proc = subprocess.run(
        [sys.executable, "-c", code, "kill:3", json.dumps([str(a) for a in argv])],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert (w / "out" / "p.json").read_bytes() == new["out/p.json"]
    assert (w / "out" / "e.json").read_bytes() == OLD  # the mix a kill there leaves on disk
    assert [h for h in hidden(w) if h.endswith(".publish")]
    other = ["cluster", "describe", "--snapshot", str(SNAPSHOT), "--output", w / "out" / "s.json"]
    assert run("run", other).returncode == 0
    assert (w / "out" / "e.json").read_bytes() == new["out/e.json"]
    assert hidden(w) == []


def test_kill_at_seeded_times_leaves_old_or_new(tmp_path):
    """Kills at wall-clock points of `cluster plan` (seeded): whole files, cleaned by the next run."""
    new, _ops = _new_outputs(tmp_path, "plan")
    rng = random.Random(23)
    for i in range(2):
        w = tmp_path / f"t{i}"
        prepare(w)
        argv, outputs = writers(w)["plan"]
        write_old(w, outputs)
        p = subprocess.Popen(
            [sys.executable, "-c", RUNNER, "run", json.dumps([str(a) for a in argv])],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.3, 2.5))
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=60)
        for o in outputs:
            assert (w / o).read_bytes() in (OLD, new[o]), (i, o)
        assert run("run", argv).returncode == 0
        assert hidden(w) == [] and all((w / o).read_bytes() == new[o] for o in outputs)


def test_a_killed_demo_leaves_the_old_results_and_the_next_run_cleans(tmp_path):
    """SIGKILL in the demo at seeded file operations (its first steps, before Spark): the old
    folder whole; the next demo run (here one refused for a bad --master) removes the staging."""
    out = tmp_path / "demo"
    out.mkdir()
    (out / "report.json").write_bytes(OLD)
    before = files(tmp_path)
    for k in sorted(random.Random(29).sample(range(1, 12), 2)):
        proc = run(f"kill:{k}", ["demo", "--out", out])
        assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
        assert files(tmp_path) == before
        assert hidden(tmp_path), k  # the killed run's staging folder, left for the next run
    proc = run("run", ["demo", "--out", out, "--master", "nowhere"])
    assert proc.returncode == 2 and "--master" in proc.stderr
    assert hidden(tmp_path) == [] and files(tmp_path) == before


def test_stale_temporaries_are_told_apart_by_pid_and_age(tmp_path):
    from kafka_rebalance import io_publish

    live = tmp_path / f".a.json.kr-{os.getpid()}-0123abcd.tmp"
    dead_pid = 2**22 + 12345  # above pid_max's default: no such process
    dead = tmp_path / f".a.json.kr-{dead_pid}-0123abcd.tmp"
    dead_dir = tmp_path / f".demo.kr-{dead_pid}-89abcdef.tmp"
    foreign = tmp_path / ".a.json.tmp"  # not ours: never touched
    for f in (live, dead, foreign):
        f.write_text("x")
    dead_dir.mkdir()
    (dead_dir / "inside.json").write_text("x")
    old = tmp_path / f".b.json.kr-{os.getppid()}-0123abcd.tmp"
    old.write_text("x")
    os.utime(old, (0, 0))  # a live PID, but a week old: reused, stale
    io_publish.clean_stale(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, foreign.name])


def test_a_folder_switch_killed_halfway_is_undone_by_the_next_run(tmp_path):
    """Where renameat2 cannot exchange, the old folder waits as `.NAME.kr-PID-RAND.old`; a kill
    before the new one is in place leaves no folder at NAME, and the next run puts the old back."""
    from kafka_rebalance import io_publish

    target = tmp_path / "demo"
    old = tmp_path / f".demo.kr-{2**22 + 7}-0123abcd.old"
    old.mkdir()
    (old / "report.json").write_bytes(OLD)
    io_publish.clean_stale(tmp_path)
    assert (target / "report.json").read_bytes() == OLD and hidden(tmp_path) == []


def test_publish_folder_replaces_whole(tmp_path):
    from kafka_rebalance import io_publish

    target = tmp_path / "out"
    target.mkdir()
    (target / "old-only.json").write_text("1")
    stage = io_publish.staging_folder(target)
    (stage / "new.json").write_text("2")
    io_publish.publish_folder(stage, target)
    assert sorted(p.name for p in target.iterdir()) == ["new.json"] and hidden(tmp_path) == []
