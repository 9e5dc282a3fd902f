"""Hostile inputs, full disks and kills for the pipeline jobs (issue 17 for `kafka-rebalance pipeline`).

Every case ends cleanly: bad input exits 2, a runtime failure 1, with one error line naming the
file or flag, the field and the value, no traceback, and no output created or changed. A kill
(SIGKILL to the job's whole process group, JVM included) at a seeded moment leaves every output
folder with one run's complete set, the old or the new, never a mix; the next run removes what
the killed one left. Cases: 4 offsets and 3 lag schema errors, 3 non-finite samples, 4 `--load`
files, an output under a file, 3 set-switch cases, 2 full-disk writers (one subprocess), and
seeded kills of a worker running all 4 jobs (one subprocess per seed). In-process jobs share the
session's Spark; the old outputs are tiny (corpus captures, 12 samples, 2-member grids).
"""

from __future__ import annotations

import json
import math
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_rebalance.cli import main
from kafka_rebalance.io_publish import hidden_name, recover
from kafka_rebalance.io_publish import publish_folder as switch_in

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(__file__).parent / "data" / "consumer_offsets_corpus.jsonl"
T0 = 1_700_000_000_000
RUN_A, RUN_B = (
    "java classic range, 2 members, 2 topics; offsets of one topic deleted",
    ("java classic cooperative-sticky, 3 members, rack"),
)
GROUP = {RUN_A: "corpus-range-653614", RUN_B: "corpus-coop-653614"}
KILL_SEEDS = (11,)
OUTPUTS = {
    "offsets": (
        "commits.parquet",
        "latest_offsets.parquet",
        "group_metadata.parquet",
        "quarantine.parquet",
        "rebalances.parquet",
    ),
    "lag": ("lag.parquet", "group_status.parquet", "quarantine.parquet"),
    "load-model": (
        "quarantine.parquet",
        "partition_load.parquet",
        "snapshot.json",
        "broker_load.parquet",
    ),
    "sweep": ("sweep.parquet",),
}


# ---- inputs ---------------------------------------------------------------------------------


def corpus_records(made_by: str, path: Path) -> Path:
    """One capture of the real-broker corpus as Kafka-source Parquet (what `--records` reads)."""
    recs = [json.loads(ln) for ln in CORPUS.read_text().splitlines() if ln.strip()]
    recs = [r for r in recs if r["made_by"] == made_by]
    pq.write_table(
        pa.table(
            {
                "key": pa.array([bytes.fromhex(r["key"]) for r in recs], pa.binary()),
                "value": pa.array(
                    [None if r["value"] is None else bytes.fromhex(r["value"]) for r in recs],
                    pa.binary(),
                ),
                "topic": ["__consumer_offsets"] * len(recs),
                "partition": pa.array([r["partition"] for r in recs], pa.int32()),
                "offset": pa.array([r["offset"] for r in recs], pa.int64()),
                "timestamp": pa.array([T0 + 1000 * r["offset"] for r in recs], pa.timestamp("ms")),
            }
        ),
        path,
    )
    return path


def samples(topic: str, path: Path, bad: tuple[float, ...] = ()) -> Path:
    rows = [
        {
            "ts": pd.Timestamp(T0 + 60_000 * w + 1000 * i, unit="ms"),
            "broker": 1,
            "topic": topic,
            "partition": p,
            "is_leader": True,
            "bytes_in": 10.0,
            "bytes_out": 20.0,
            "messages_in": 1.0,
            "size_bytes": 5.0,
        }
        for w in range(2)
        for i in range(3)
        for p in range(2)
    ]
    for row, value in zip(rows, bad):  # one bad value a row, from the first row on
        row["bytes_in"] = value
    table = pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False)
    # from_pandas reads NaN as null: the column again from Python floats, NaN kept
    i = table.column_names.index("bytes_in")
    table = table.set_column(i, "bytes_in", pa.array([r["bytes_in"] for r in rows], pa.float64()))
    pq.write_table(table, path)
    return path


def log_end(commits_dir: Path, path: Path) -> Path:
    """Log-end samples before and after a run's commits, on the partitions it committed."""
    c = pq.read_table(commits_dir / "commits.parquet").to_pandas()
    first, last = c["commit_ts"].min(), c["commit_ts"].max()
    rows = []
    for (topic, part), g in c.groupby(["topic", "partition"]):
        top = int(g["offset"].max())
        rows.append((first - pd.Timedelta(seconds=1), topic, int(part), 0))
        rows.append((last + pd.Timedelta(seconds=1), topic, int(part), top + 5))
    pd.DataFrame(rows, columns=["ts", "topic", "partition", "log_end_offset"]).to_parquet(
        path, index=False
    )
    return path


def grid(assignor: str, path: Path) -> Path:
    doc = {
        "base": {
            "name": "hostile",
            "seed": 3,
            "duration_ms": 20_000,
            "protocol": "classic",
            "group": {"id": "g", "assignors": [assignor]},
            "topics": [{"name": "t", "partitions": 2, "produce_rate": 10}],
            "members": {"count": 2},
        },
        "grid": {"protocol": ["classic"], "assignor": [assignor]},
    }
    path.write_text(json.dumps(doc))
    return path


TAG_COLUMN = {"offsets": "group", "lag": "group", "load-model": "topic", "sweep": "assignor"}


def tags(job: str, out: Path) -> set[str]:
    """Which run (its group, topic or grid name) each output of `out` holds; every output must exist."""
    found: set[str] = set()
    for name in OUTPUTS[job]:
        f = out / name
        assert f.exists(), f"{f} missing: an incomplete set"
        if name == "snapshot.json":
            found |= {p["topic"] for p in json.loads(f.read_text())["partitions"]}
            continue
        t = pq.read_table(f)
        for col in (TAG_COLUMN[job],):
            if col in t.column_names:
                vals = {v for v in t.column(col).to_pylist() if v is not None}
                found |= vals
    return found


@pytest.fixture(scope="module")
def jobs(spark, tmp_path_factory):
    """Per job: (argv of run A, argv of run B, out folder, tag of A, tag of B), olds written by A."""
    d = tmp_path_factory.mktemp("hostile-jobs")
    recs = {r: corpus_records(r, d / f"records-{i}.parquet") for i, r in enumerate((RUN_A, RUN_B))}
    offs = {}
    for i, r in enumerate((RUN_A, RUN_B)):
        offs[r] = d / f"offsets-in-{i}"
        assert main(["pipeline", "offsets", "--records", str(recs[r]), "--out", str(offs[r])]) == 0
    leo = {r: log_end(offs[r], d / f"leo-{i}.parquet") for i, r in enumerate((RUN_A, RUN_B))}
    smp = {t: samples(t, d / f"samples-{t}.parquet") for t in ("ta", "tb")}
    grids = {n: grid(n, d / f"grid-{n}.json") for n in ("range", "roundrobin")}
    spec = {
        "offsets": (
            [["--records", str(recs[r])] for r in (RUN_A, RUN_B)],
            (GROUP[RUN_A], GROUP[RUN_B]),
        ),
        "lag": (
            [["--offsets", str(offs[r]), "--log-end", str(leo[r])] for r in (RUN_A, RUN_B)],
            (GROUP[RUN_A], GROUP[RUN_B]),
        ),
        "load-model": (
            [
                ["--samples", str(smp[t]), "--window-ms", "60000", "--windows", "2"]
                for t in ("ta", "tb")
            ],
            ("ta", "tb"),
        ),
        "sweep": ([[str(grids[n])] for n in ("range", "roundrobin")], ("range", "roundrobin")),
    }
    out = {}
    for job, (argvs, names) in spec.items():
        o = d / f"out-{job}"
        a, b = ([job, *argv, "--out", str(o), "--shuffle-partitions", "2"] for argv in argvs)
        if job == "offsets":  # run A's set is the one written above for lag's input: copy it
            shutil.copytree(offs[RUN_A], o)
        else:
            assert main(["pipeline", *a]) == 0
        assert tags(job, o) == {names[0]}
        out[job] = (a, b, o, names[0], names[1])
    return out


# ---- bad input: exit 2, one line naming file, field and value; nothing written ---------------


def snapshot_of(folder: Path) -> dict[str, bytes]:
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def one_error(capsys, argv, code: int, *needles: str) -> str:
    capsys.readouterr()
    assert main(argv) == code
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in cap.err, cap.err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    assert cap.out == ""
    return lines[0]


def source_table(**over) -> pa.Table:
    cols = {
        "key": pa.array([b"\x00\x01\x00\x01g"], pa.binary()),
        "value": pa.array([b"\x00\x03"], pa.binary()),
        "topic": ["__consumer_offsets"],
        "partition": pa.array([0], pa.int32()),
        "offset": pa.array([0], pa.int64()),
        "timestamp": pa.array([T0], pa.timestamp("ms")),
    }
    cols.update(over)
    return pa.table(cols)


OFFSETS_BAD = {
    "string key": (dict(key=pa.array(["0001000167"], pa.string())), "key", "0001000167"),
    "string partition": (dict(partition=pa.array(["zero"], pa.string())), "partition", "zero"),
    "null-typed partition": (dict(partition=pa.array([None], pa.null())), "partition", "null"),
    "float offset": (dict(offset=pa.array([1.5], pa.float64())), "offset", "1.5"),
}


@pytest.mark.parametrize("case", sorted(OFFSETS_BAD))
def test_offsets_input_of_the_wrong_type_is_one_schema_error(spark, jobs, capsys, tmp_path, case):
    over, field, value = OFFSETS_BAD[case]
    src = tmp_path / "bad.parquet"
    pq.write_table(source_table(**over), src)
    out = jobs["offsets"][2]
    before = snapshot_of(out)
    argv = ["pipeline", "offsets", "--records", str(src), "--out", str(out)]
    one_error(capsys, argv, 2, str(src), field, value)
    assert snapshot_of(out) == before


LAG_BAD = {
    "string partition": ("partition", pa.array(["p0", "p1"], pa.string()), "p0"),
    "null-typed partition": ("partition", pa.array([None, None], pa.null()), "null"),
    "string offset": ("log_end_offset", pa.array(["10", "x"], pa.string()), "10"),
}


@pytest.mark.parametrize("case", sorted(LAG_BAD))
def test_lag_log_end_of_the_wrong_type_is_one_schema_error(spark, jobs, capsys, tmp_path, case):
    field, col, value = LAG_BAD[case]
    cols = {
        "ts": pa.array([T0, T0 + 1], pa.timestamp("ms")),
        "topic": ["t", "t"],
        "partition": pa.array([0, 1], pa.int32()),
        "log_end_offset": pa.array([10, 20], pa.int64()),
    }
    cols[field] = col
    src = tmp_path / "leo.parquet"
    pq.write_table(pa.table(cols), src)
    a, _b, out, _ta, _tb = jobs["lag"]
    before = snapshot_of(out)
    argv = ["pipeline", "lag", "--offsets", a[2], "--log-end", str(src), "--out", str(out)]
    one_error(capsys, argv, 2, str(src), field, value)
    assert snapshot_of(out) == before


def test_non_finite_samples_are_quarantined_with_a_reason_and_valid_json(spark, capsys, tmp_path):
    """NaN, +inf and -inf in one run (one load-model job): each row quarantined with its reason."""
    bad = (math.nan, math.inf, -math.inf)
    src = samples("tn", tmp_path / "s.parquet", bad=bad)
    out = tmp_path / "o"
    capsys.readouterr()
    argv = ["pipeline", "load-model", "--samples", str(src), "--out", str(out)]
    assert main([*argv, "--window-ms", "60000", "--windows", "2", "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["quarantined"] == len(bad)
    q = pq.read_table(out / "quarantine.parquet").to_pylist()
    assert sorted(r["reason"] for r in q) == [
        "bytes_in is NaN",
        "bytes_in is infinite",
        "bytes_in is infinite",
    ]
    for r in q:  # JSON has no NaN or Infinity: null, the reason says which
        assert json.loads(r["detail"])["bytes_in"] is None, r
    text = (out / "snapshot.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    json.loads(text)


LOAD_BAD = {
    "NaN bytes_in": ("bytes_in", math.nan, "nan"),
    "infinite size": ("size_bytes", math.inf, "inf"),
    "string partition": ("partition", "p0", "p0"),
    "null partition": ("partition", None, "null"),
}


@pytest.mark.parametrize("case", sorted(LOAD_BAD))
def test_cluster_load_parquet_refuses_non_finite_and_mistyped_partitions(capsys, tmp_path, case):
    field, value, shown = LOAD_BAD[case]
    rows = {
        "topic": ["orders", "orders"],
        "partition": [0, 1],
        "bytes_in": [1.0, 2.0],
        "bytes_out": [1.0, 2.0],
        "messages_in": [1.0, 2.0],
        "size_bytes": [1.0, 2.0],
    }
    rows[field] = [value, value] if isinstance(value, str) else [rows[field][0], value]
    src = tmp_path / "load.parquet"
    types = {"topic": pa.string(), "partition": pa.int64()}
    pq.write_table(
        pa.table(
            {
                k: pa.array(v, types.get(k, pa.float64()) if k != field or value is None else None)
                for k, v in rows.items()
            }
        ),
        src,
    )
    argv = ["cluster", "skew", "--snapshot", str(ROOT / "examples" / "cluster.json")]
    one_error(capsys, [*argv, "--load", str(src)], 2, str(src), field, shown)


def test_output_under_a_file_is_exit_2_naming_the_path(spark, jobs, capsys, tmp_path):
    (tmp_path / "file").write_text("not a folder")
    a = jobs["sweep"][0]
    out = tmp_path / "file" / "sweep"
    one_error(
        capsys,
        ["pipeline", "sweep", a[1], "--out", str(out)],
        2,
        "--out",
        str(out),
        "is not a folder",
    )
    assert (tmp_path / "file").read_text() == "not a folder"


def test_a_file_that_is_not_parquet_names_the_cause_not_py4j(spark, capsys, tmp_path):
    """Garbage named .parquet: the error says why (Parquet's magic number), not py4j's "An error
    occurred while calling o44.parquet" (issue 17 class 11)."""
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(bytes(range(256)) * 8)
    out = tmp_path / "o"
    one_error(
        capsys,
        ["pipeline", "offsets", "--records", str(bad), "--out", str(out)],
        2,
        str(bad),
        "is not a Parquet file",
    )
    assert not out.exists()


# ---- one set per run: the switch, its fallback, leftovers ------------------------------------


def dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_a_kill_between_the_fallbacks_two_renames_leaves_the_old_set_restored(tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    (target / "a.parquet").write_text("old")
    pid = dead_pid()
    old = tmp_path / f".out.old-{pid}-0123abcd"
    stage = tmp_path / f".out.tmp-{pid}-89abcdef"
    os.replace(target, old)  # the killed run got this far: target aside, stage not yet in place
    stage.mkdir()
    (stage / "a.parquet").write_text("new")
    done = recover(target)
    assert (target / "a.parquet").read_text() == "old"
    assert not old.exists() and not stage.exists(), done
    live = tmp_path / hidden_name("out", "tmp")  # a leftover of this very process, run again:
    live.mkdir()  # stale too (a job never starts while one of its own is open)
    recover(target)
    assert not live.exists()


def test_the_switch_is_one_exchange_and_keeps_nothing_of_the_old_set(tmp_path):
    target, stage = tmp_path / "out", tmp_path / ".out.tmp-1-00000000"
    target.mkdir()
    stage.mkdir()
    (target / "x").write_text("old")
    (stage / "x").write_text("new")
    ino = stage.stat().st_ino
    switch_in(stage, target)
    assert (target / "x").read_text() == "new" and target.stat().st_ino == ino
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_runs_stale_output_goes_and_a_users_file_stays(spark, capsys, tmp_path):
    """Run A wrote consumer_groups.parquet; run B has no KIP-848 group: B's set has none of A's."""
    kip848 = corpus_records(
        "java consumer protocol (KIP-848), uniform, rack", tmp_path / "k.parquet"
    )
    classic = corpus_records(RUN_B, tmp_path / "c.parquet")
    out = tmp_path / "o"
    assert main(["pipeline", "offsets", "--records", str(kip848), "--out", str(out)]) == 0
    assert (out / "consumer_groups.parquet").exists()
    (out / "notes.txt").write_text("mine")
    assert main(["pipeline", "offsets", "--records", str(classic), "--out", str(out)]) == 0
    assert not (out / "consumer_groups.parquet").exists()
    assert (out / "notes.txt").read_text() == "mine"
    assert tags("offsets", out) == {GROUP[RUN_B]}


# ---- full disk: exit 1, one line naming the path, the old outputs intact ---------------------


def _limit_file_size(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


DISK_WORKER = """
import contextlib, io, json, sys
from kafka_rebalance.cli import main
results = []
for argv in json.loads(sys.argv[1]):  # one process, one JVM: each case's error line on its own
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(argv)
    results.append({"code": code, "err": err.getvalue()})
print(json.dumps(results))
"""


@pytest.mark.slow
def test_a_full_disk_fails_with_exit_1_naming_the_output_and_keeps_the_old_set(jobs, tmp_path):
    """RLIMIT_FSIZE in a subprocess (writes past it fail with EFBIG, as on a full disk)."""
    big = tmp_path / "big.parquet"
    n = 60_000  # commits of 20 groups: over the limit once written; the inputs are written before
    from kafka_rebalance.group.records import encode_record, offset_commit_record

    recs = [
        encode_record(offset_commit_record(f"g{i % 20}", "t", i % 7, i, commit_timestamp=T0 + i))
        for i in range(n)
    ]
    pq.write_table(
        source_table(
            key=pa.array([r[0] for r in recs], pa.binary()),
            value=pa.array([r[1] for r in recs], pa.binary()),
            topic=["__consumer_offsets"] * n,
            partition=pa.array([0] * n, pa.int32()),
            offset=pa.array(range(n), pa.int64()),
            timestamp=pa.array([T0 + i for i in range(n)], pa.timestamp("ms")),
        ),
        big,
    )
    # lag's inputs from the same records, many log-end samples: Spark's own Parquet writer
    # (lag.parquet, 20 groups x 14,000 samples) meets the limit as the offsets job's Python
    # writer does; the limit (512 KiB) lets the JVM unpack its native codecs (snappy: 275 KiB)
    assert main(["pipeline", "offsets", "--records", str(big), "--out", str(tmp_path / "bo")]) == 0
    leo = tmp_path / "leo.parquet"
    pd.DataFrame(
        [
            (pd.Timestamp(T0 + 1000 * k, unit="ms"), "t", p, 3 * k)
            for k in range(2000)
            for p in range(7)
        ],
        columns=["ts", "topic", "partition", "log_end_offset"],
    ).to_parquet(leo, index=False)
    cases = {
        "offsets": ["--records", str(big)],
        "lag": ["--offsets", str(tmp_path / "bo"), "--log-end", str(leo)],
    }
    cmds = [
        ["pipeline", job, *argv, "--out", str(jobs[job][2]), "--master", "local[1]"]
        for job, argv in cases.items()
    ]
    before = {job: snapshot_of(jobs[job][2]) for job in cases}
    proc = subprocess.run(
        [sys.executable, "-c", DISK_WORKER, json.dumps(cmds)],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_limit_file_size(512 * 1024),
        cwd=tmp_path,
    )
    assert proc.returncode == 0 and proc.stderr.strip() == "", proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for job, res in zip(cases, results, strict=True):
        out = jobs[job][2]
        lines = res["err"].strip().splitlines()
        assert res["code"] == 1 and len(lines) == 1, (job, res["err"][-3000:])
        # the offsets job fails writing its output; lag fails earlier, in Spark's shuffle files
        where = str(out) if job == "offsets" else f"Spark's local files in {tempfile.gettempdir()}"
        assert where in lines[0] and "File too large" in lines[0], (job, lines[0])
        assert "Traceback" not in res["err"]
        assert snapshot_of(out) == before[job], job
        assert [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")] == []


# ---- kills: the old set or the new, never a mix; the next run cleans up ---------------------

KILL_WORKER = """
import json, os, signal, sys
from kafka_rebalance.cli import main
from kafka_rebalance import io_publish as swap
from kafka_rebalance.pipeline.session import get_spark
runs, (kill_job, when) = json.loads(sys.argv[1]), json.loads(sys.argv[2])
real, current = swap.exchange, [None]


def exchange(a, b):  # the switch of a complete staged set: SIGKILL to the group just around it
    if current[0] == kill_job and when == "before":
        os.killpg(0, signal.SIGKILL)
    done = real(a, b)
    if current[0] == kill_job and when == "after":
        os.killpg(0, signal.SIGKILL)
    return done


swap.exchange = exchange
get_spark("local[1]", 2)
for i, argv in enumerate(runs):
    current[0] = i
    assert main(["pipeline", *argv]) == 0
"""


def hidden_beside(o: Path) -> list[str]:
    return [p.name for p in o.parent.iterdir() if p.name.startswith(f".{o.name}.")]


@pytest.mark.slow
@pytest.mark.parametrize("seed", KILL_SEEDS)
def test_sigkill_at_a_seeded_moment_leaves_one_runs_outputs_and_the_next_run_cleans(
    spark, jobs, tmp_path, seed
):
    """One worker (one JVM) runs every job's run B; the seed picks the job and whether the
    SIGKILL (to its whole process group, JVM included) comes just before or just after the switch.
    Jobs before it hold B's set, jobs after it A's, the killed one either; nothing is mixed."""
    names = list(jobs)
    rng = random.Random(seed)
    kill_job, when = rng.randrange(len(names)), rng.choice(["before", "after"])
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            KILL_WORKER,
            json.dumps([jobs[n][1] for n in names]),
            json.dumps([kill_job, when]),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,  # its JVM and Python workers are in its group: all are killed
    )
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr[-3000:])
    for i, job in enumerate(names):
        _a, _b, o, ta, tb = jobs[job]
        want = [{tb}] if i < kill_job else [{ta}] if i > kill_job else [{ta}, {tb}]
        assert tags(job, o) in want, (seed, job, tags(job, o))
        if i != kill_job:
            assert hidden_beside(o) == [], (job, hidden_beside(o))
    # the next run of the killed job removes what the kill left, and publishes its own set
    a, _b, o, ta, _tb = jobs[names[kill_job]]
    left = hidden_beside(o)
    assert main(["pipeline", *a]) == 0
    assert tags(names[kill_job], o) == {ta}
    hidden = hidden_beside(o) + [p.name for p in o.iterdir() if p.name.startswith(".")]
    assert hidden == [], (names[kill_job], hidden)
    print(f"killed {names[kill_job]} {when} its switch; hidden leftovers found after it: {left}")
