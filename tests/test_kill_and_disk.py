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

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT = ROOT / "examples" / "cluster.json"

RUNNER = r"""
import json, os, resource, signal, sys
mode, argv = sys.argv[1], json.loads(sys.argv[2])
from kafka_rebalance import cli
cli.build_parser()
if mode.startswith("fsize:"):
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    limit = int(mode.split(":")[1])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
elif mode.startswith("kill:") or mode == "count":
    stop_at = int(mode.split(":")[1]) if mode != "count" else -1
    seen = [0]
    kill, getpid = os.kill, os.getpid
    def counted(fn):
        def call(*a, **k):
            seen[0] += 1
            if seen[0] == stop_at:
                kill(getpid(), signal.SIGKILL)
            return fn(*a, **k)
        return call
    for name in ("open", "fsync", "replace"):
        setattr(os, name, counted(getattr(os, name)))
rc = cli.main(argv)
if mode == "count":
    sys.stderr.write(f"OPS {seen[0]}\n")
sys.exit(rc)
"""


def run(mode: str, argv: list[str], sim=None, timeout: float = 120):
    """The command in a subprocess; "SIM" in argv stands for `sim`'s bootstrap (a SimCluster here)."""
    args = [str(a).replace("SIM", sim.bootstrap) if sim is not None else str(a) for a in argv]
    return subprocess.run(
        [sys.executable, "-c", RUNNER, mode, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


class sim_for:
    """A simulated cluster (kafka/sim_cluster.py) for the writers that need one, else nothing."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.sim = None

    def __enter__(self):
        if self.name != "execute-state":
            return None
        from kafka_rebalance.kafka.sim_cluster import SimCluster
        from kafka_rebalance.ops.cluster_source import read_snapshot

        self.sim = SimCluster(read_snapshot(str(SNAPSHOT), None, None), speedup=500.0).start()
        return self.sim

    def __exit__(self, *exc) -> None:
        if self.sim is not None:
            self.sim.stop()


def hidden(d: Path) -> list[str]:
    """The writers' temporaries, journals and staging folders left anywhere under `d`."""
    return sorted(str(p.relative_to(d)) for p in d.rglob("*") if ".kr-" in p.name)


def files(d: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(d)): p.read_bytes()
        for p in sorted(d.rglob("*"))
        if p.is_file() and ".kr-" not in str(p)
    }


# -- the writers: argv for a workdir `w` and the outputs each writes -----------------------------


def writers(w: Path) -> dict[str, tuple[list[str], list[str]]]:
    """name -> (argv, outputs relative to w). Inputs: w/in/plan.json (made by `prepare`)."""
    snap = str(SNAPSHOT)
    plan = str(w / "in" / "plan.json")
    return {
        "plan": (
            [
                "cluster",
                "plan",
                "--snapshot",
                snap,
                "--output",
                w / "out" / "p.json",
                "--election-output",
                w / "out" / "e.json",
            ],
            ["out/p.json", "out/e.json"],
        ),
        "elect": (
            ["cluster", "elect", "--snapshot", snap, "--output", w / "out" / "e.json"],
            ["out/e.json"],
        ),
        "generate": (
            [
                "cluster",
                "generate",
                "--snapshot",
                snap,
                "--broker-list",
                "0,1,2",
                "--topics-to-move-json-file",
                w / "in" / "topics.json",
                "--output",
                w / "out" / "g.json",
            ],
            ["out/g.json"],
        ),
        "describe": (
            ["cluster", "describe", "--snapshot", snap, "--output", w / "out" / "s.json"],
            ["out/s.json"],
        ),
        "report": (["report", plan, "--out", w / "out" / "r.html"], ["out/r.html"]),
        "execute-batch-files": (
            [
                "cluster",
                "execute",
                "--reassignment-json-file",
                plan,
                "--snapshot",
                snap,
                "--max-moves-per-broker",
                "1",
                "--output-dir",
                w / "out",
            ],
            [f"out/batch-{i:03d}.json" for i in range(1, 4)],
        ),
        "simulate-events": (
            [
                "simulate",
                ROOT / "examples" / "crash.yaml",
                "--events-out",
                w / "out" / "ev.parquet",
            ],
            ["out/ev.parquet"],
        ),
        "execute-state": (
            [
                "cluster",
                "execute",
                "--reassignment-json-file",
                plan,
                "--bootstrap-server",
                "SIM",
                "--state-file",
                w / "out" / "st.json",
                "--execute",
                "--poll-interval",
                "0.01",
                "--max-moves-per-broker",
                "1",
                "--throttle",
                "100000000",
                "--format",
                "json",
            ],
            ["out/st.json", "out/plan.json.rollback.json"],
        ),
    }


def prepare(w: Path) -> None:
    (w / "in").mkdir(parents=True)
    (w / "out").mkdir()
    (w / "in" / "topics.json").write_text('{"version": 1, "topics": [{"topic": "topic-00000"}]}')
    from kafka_rebalance import cli

    assert (
        cli.main(
            [
                "cluster",
                "plan",
                "--snapshot",
                str(SNAPSHOT),
                "--output",
                str(w / "in" / "plan.json"),
                "--format",
                "json",
            ]
        )
        == 0
    )


OLD = b'{"old": "an earlier run\'s output"}\n'


def write_old(w: Path, outputs: list[str]) -> None:
    for o in outputs:
        (w / o).parent.mkdir(parents=True, exist_ok=True)
        (w / o).write_bytes(OLD)


def placement(snap) -> dict:
    return {(p.topic, p.partition): tuple(p.replicas) for p in snap.partitions}


def target_of(w: Path) -> dict:
    doc = json.loads((w / "in" / "plan.json").read_text())
    want = {(e["topic"], e["partition"]): tuple(e["replicas"]) for e in doc["partitions"]}
    from kafka_rebalance.ops.cluster_source import read_snapshot

    return {**placement(read_snapshot(str(SNAPSHOT), None, None)), **want}


# -- full disk -------------------------------------------------------------------------------------


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


# -- a resumed election reports what the interrupted run elected (class 7) -------------------------


class LostElectionAnswer:
    """The admin of a run killed after its election request reached the brokers, before the
    answer was saved: the election happens, the state file still says it has not."""

    def __init__(self, admin) -> None:
        self.admin = admin

    def __getattr__(self, name):
        return getattr(self.admin, name)

    def elect_preferred(self, partitions):
        self.admin.elect_preferred(partitions)
        raise KeyboardInterrupt


def _interrupt_at_the_election(bootstrap: str, plan_file: Path, state_file: Path) -> dict:
    from kafka_rebalance.cluster.batches import parse_reassignment
    from kafka_rebalance.kafka.admin import KafkaAdmin
    from kafka_rebalance.kafka.execute import (
        Executor,
        load_state,
        plan_digest,
        plan_execution,
        state_from_plan,
    )

    doc = json.loads(plan_file.read_text())
    with KafkaAdmin(bootstrap) as admin:
        plan = plan_execution(
            parse_reassignment(doc),
            admin.snapshot(),
            throttle=None,
            max_moves_per_broker=5,
            max_moves=None,
            digest=plan_digest(doc),
        )
        ex = Executor(
            LostElectionAnswer(admin),
            state_from_plan(plan, bootstrap),
            state_file,
            poll_interval_s=0.05,
        )
        ex.save()
        with pytest.raises(KeyboardInterrupt):
            ex.run()
    state = load_state(state_file)
    assert state["phase"] == "election" and state["election"] is None
    preferred = {f"{e['topic']}-{e['partition']}": e["replicas"][0] for e in doc["partitions"]}
    before = state["leaders_before_election"]
    return {k: v for k, v in before.items() if v != preferred[k]}  # what the lost election elected


def _resume(plan_file: Path, state_file: Path, bootstrap: str, capsys) -> dict:
    from kafka_rebalance import cli

    rc = cli.main(
        [
            "cluster",
            "execute",
            "--reassignment-json-file",
            str(plan_file),
            "--bootstrap-server",
            bootstrap,
            "--state-file",
            str(state_file),
            "--execute",
            "--resume",
            "--poll-interval",
            "0.05",
            "--format",
            "json",
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 0, err
    return json.loads(out)


def test_a_resumed_election_reports_what_the_interrupted_run_elected(tmp_path, capsys):
    from kafka_rebalance import cli
    from kafka_rebalance.kafka.sim_cluster import SimCluster
    from kafka_rebalance.ops.cluster_source import read_snapshot

    plan_file, state_file = tmp_path / "plan.json", tmp_path / "st.json"
    assert (
        cli.main(
            [
                "cluster",
                "plan",
                "--snapshot",
                str(SNAPSHOT),
                "--mode",
                "leaders",
                "--output",
                str(plan_file),
                "--format",
                "json",
            ]
        )
        == 0
    )
    capsys.readouterr()
    with SimCluster(read_snapshot(str(SNAPSHOT), None, None), speedup=500.0) as sim:
        elected = _interrupt_at_the_election(sim.bootstrap, plan_file, state_file)
        assert elected  # the plan changes leaders: a lost answer is not an empty election
        result = _resume(plan_file, state_file, sim.bootstrap, capsys)
        leaders = {f"{p.topic}-{p.partition}": p.leader for p in sim.snapshot().partitions}
    e = result["election"]
    assert result["phase"] == "finished"
    assert e["elected"] == len(elected) == e["elected_by_interrupted_run"], e
    assert e["elected"] + e["not_needed"] == e["partitions"] and not e["failed"]
    doc = json.loads(plan_file.read_text())
    assert all(
        leaders[f"{x['topic']}-{x['partition']}"] == x["replicas"][0] for x in doc["partitions"]
    )


def test_a_resumed_election_on_the_real_broker(real_kafka, tmp_path, capsys):
    """The same on Kafka 4.0: the partitions the lost election moved are reported as elected, and
    kafka-topics.sh shows each led by its preferred replica."""
    from kafka.admin import KafkaAdminClient, NewTopic

    topic = f"faults-elect-{os.getpid()}-{int(time.time())}"
    admin = KafkaAdminClient(bootstrap_servers=real_kafka.bootstrap, request_timeout_ms=30000)
    try:
        ids = sorted(b["node_id"] for b in admin.describe_cluster()["brokers"])[:3]
        start = {p: [ids[(p + i) % 3] for i in range(3)] for p in range(4)}
        admin.create_topics(
            [NewTopic(topic, num_partitions=-1, replication_factor=-1, replica_assignments=start)]
        )
    finally:
        admin.close()
    time.sleep(1.0)  # leaders elected
    # the plan: the same replicas, the last one first (leadership moves, no data)
    doc = {
        "version": 1,
        "partitions": [
            {"topic": topic, "partition": p, "replicas": [r[-1], *r[:-1]]} for p, r in start.items()
        ],
    }
    plan_file, state_file = tmp_path / "plan.json", tmp_path / "st.json"
    plan_file.write_text(json.dumps(doc))
    elected = _interrupt_at_the_election(real_kafka.bootstrap, plan_file, state_file)
    assert len(elected) == 4
    e = _resume(plan_file, state_file, real_kafka.bootstrap, capsys)["election"]
    assert (e["elected"], e["elected_by_interrupted_run"], e["not_needed"], e["failed"]) == (
        4,
        4,
        0,
        {},
    )
    if real_kafka.home is not None:
        out = real_kafka.tool(
            "kafka-topics.sh",
            "--bootstrap-server",
            real_kafka.bootstrap,
            "--describe",
            "--topic",
            topic,
        ).stdout
        rows = [ln for ln in out.splitlines() if "Partition:" in ln and "Leader:" in ln]
        assert len(rows) == 4
        for ln in rows:
            f = ln.split()
            part, leader = int(f[f.index("Partition:") + 1]), int(f[f.index("Leader:") + 1])
            assert leader == doc["partitions"][part]["replicas"][0], ln


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
