"""The four jobs on a standalone Spark cluster (spark_cluster fixture), submitted with spark-submit.

Each job runs once through spark-submit on the cluster with `file://` URIs and globs for its inputs
and outputs, and its tables equal the same job's on local[2] from plain paths (rows as sets, floats
within 1e-9 relative); offsets runs once more on plain paths, where the executors write
commits.parquet themselves. load-model goes through `spark-submit --master URL
.../kafka_rebalance/__main__.py pipeline load-model` (stdout is its JSON alone); the other jobs run
one after the other in one spark-submit application (`cli.main` per job, each one's stdout kept
apart), which spares each a driver and executors of its own. Without a file system shared by the
driver and the executors each job fails with exit 1 and says why, never exit 0.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest
import yaml

import kafka_rebalance
from kafka_rebalance.cli import main
from test_pipeline_cli import TINY_GRID

pytestmark = pytest.mark.timeout(1800)

TELEMETRY = Path(__file__).resolve().parents[1] / "examples" / "telemetry"
MAIN = Path(kafka_rebalance.__file__).resolve().parent / "__main__.py"
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"
# what a job's stderr must not carry by default: log4j's lines, the JVM's warnings
LOG_LINE = re.compile(r"(^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (INFO|WARN|ERROR))|log4j|^WARNING: ", re.M)
# columns that measure the run, not its result
TIMING = {"wall_ms"}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """The example telemetry under names globs pick out, and a tiny sweep grid."""
    d = tmp_path_factory.mktemp("inputs")
    for f in TELEMETRY.glob("*.parquet"):
        shutil.copy(f, d / f"{f.stem}-0.parquet")
    (d / "grid.yaml").write_text(yaml.safe_dump(TINY_GRID))
    return d


def argv(job: str, inp: Path, out: str, offsets: str | None = None) -> list[str]:
    if (
        job == "offsets-paths"
    ):  # a plain path: the executors read, decode and write commits themselves
        return ["offsets", "--records", str(inp / "consumer_offsets-0.parquet"), "--out", out]
    if job == "load-model":
        return ["load-model", "--samples", _uri(inp, "metric_samples-*.parquet"), "--out", out]
    if job == "offsets":
        return ["offsets", "--records", _uri(inp, "consumer_offsets-*.parquet"), "--out", out]
    if job == "lag":
        leo = _uri(inp, "log_end_offsets-*.parquet")
        return ["lag", "--offsets", str(offsets), "--log-end", leo, "--out", out]
    return ["sweep", str(inp / "grid.yaml"), "--out", out]


def _uri(folder: Path, pattern: str) -> str:
    return f"file://{folder}/{pattern}"


def local_argv(job: str, inp: Path, out: Path, offsets: Path | None = None) -> list[str]:
    """The same job on plain local paths."""
    a = argv(job, inp, str(out), str(offsets) if offsets else None)
    return [x.replace(f"file://{inp}/", f"{inp}/").replace("-*.parquet", "-0.parquet") for x in a]


@pytest.fixture(scope="module")
def local_runs(spark, inputs, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("local")
    for job in ("load-model", "offsets", "lag", "sweep"):
        a = local_argv(job, inputs, root / job, root / "offsets")
        assert main(["pipeline", *a, "--shuffle-partitions", "4", "--format", "json"]) == 0
    return root


JOBS_SCRIPT = """
import contextlib, io, json, sys
from kafka_rebalance.cli import main
results = {}
for job, argv in json.loads(sys.argv[1]):  # in order: lag reads what offsets wrote
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    results[job] = {"code": code, "stdout": out.getvalue()}
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def cluster_runs(spark_cluster, inputs, tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("cluster")
    cmds = {}
    for job in ("load-model", "offsets", "lag", "sweep", "offsets-paths"):
        out = str(root / job) if job == "offsets-paths" else f"file://{root}/{job}"
        a = argv(job, inputs, out, f"file://{root}/offsets")
        cmds[job] = ["pipeline", *a, "--shuffle-partitions", "4", "--format", "json"]
    submit = [str(SPARK_SUBMIT), "--master", spark_cluster.url]
    first = subprocess.run(
        [*submit, str(MAIN), *cmds.pop("load-model")],
        env=spark_cluster.env(),
        capture_output=True,
        text=True,
        timeout=400,
    )
    script = root / "jobs.py"
    script.write_text(JOBS_SCRIPT)
    rest = subprocess.run(
        [*submit, str(script), json.dumps(list(cmds.items()))],
        env=spark_cluster.env(),
        capture_output=True,
        text=True,
        timeout=800,
    )
    assert rest.returncode == 0, rest.stderr[-3000:]
    done = json.loads(rest.stdout.strip().splitlines()[-1])
    results = {"load-model": first}
    for job, r in done.items():
        results[job] = SimpleNamespace(returncode=r["code"], stdout=r["stdout"], stderr=rest.stderr)
    return root, results


def rows(folder: Path) -> list[tuple]:
    t = pq.read_table(folder)
    keep = [c for c in t.column_names if c not in TIMING]
    return sorted(
        (tuple(_hashable(v) for v in r.values()) for r in t.select(keep).to_pylist()), key=repr
    )


def _hashable(v):
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return v


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=0)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def assert_same_tables(local: Path, cluster: Path) -> None:
    names = sorted(p.name for p in local.glob("*.parquet"))
    assert names and names == sorted(p.name for p in cluster.glob("*.parquet"))
    for name in names:
        want, got = rows(local / name), rows(cluster / name)
        assert len(want) == len(got), name
        assert all(same(w, g) for w, g in zip(want, got)), name


@pytest.mark.parametrize("job", ["load-model", "offsets", "lag", "sweep", "offsets-paths"])
def test_spark_submit_on_the_cluster_gives_the_local_tables(job, local_runs, cluster_runs):
    root, results = cluster_runs
    res = results[job]
    assert res.returncode == 0, res.stderr[-3000:]
    summary = json.loads(res.stdout)
    local = job.removesuffix("-paths")
    assert summary["out"] == (str(root / job) if job != local else f"file://{root}/{job}")
    assert_same_tables(local_runs / local, root / job)
    if job == "load-model":
        want = json.loads((local_runs / job / "snapshot.json").read_text())
        assert json.loads((root / job / "snapshot.json").read_text()) == want


FAILURE_SCRIPT = """
import json, sys
from pyspark import SparkContext
from kafka_rebalance.cli import main
codes = [main(argv) for argv in json.loads(sys.argv[1])]
shipped = any("kafka_rebalance-" in f for f in SparkContext._active_spark_context._python_includes)
print(json.dumps({"codes": codes, "shipped": shipped}))
"""
# makes the executors' Python unable to import kafka_rebalance (but from a zip addPyFile ships)
HIDE_PACKAGE = """
import os, sys
sys.path[:] = [p for p in sys.path if p.endswith(".zip") or not os.path.isdir(os.path.join(p, "kafka_rebalance"))]
"""


def test_without_a_shared_file_system_every_job_fails_with_exit_1(spark_cluster, inputs, tmp_path):
    """Outputs on a path only the executors see: exit 1 naming the cause, never exit 0, stderr quiet.

    The executors here cannot import the package: the first job ships it (addPyFile) and succeeds.
    """
    if spark_cluster.executor_only is None:
        pytest.skip("no unprivileged mount namespaces here (unshare -rm) to hide a folder")
    hidden = spark_cluster.executor_only
    offsets = f"file://{tmp_path}/offsets-shared"
    runs = [
        ["pipeline", *argv(job, inputs, str(hidden / job), offsets), "--master", spark_cluster.url]
        for job in ("load-model", "offsets", "lag", "sweep", "offsets-paths")
    ]
    # lag needs an offsets folder the driver reads: written first where both sides see it
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(HIDE_PACKAGE)
    first = ["pipeline", *argv("offsets", inputs, offsets), "--master", spark_cluster.url]
    runs.insert(0, [*first, "--conf", f"spark.executorEnv.PYTHONPATH={hide}"])
    res = subprocess.run(
        [sys.executable, "-c", FAILURE_SCRIPT, json.dumps(runs)],
        env=spark_cluster.env(),
        capture_output=True,
        text=True,
        timeout=400,
    )
    result = json.loads(res.stdout.strip().splitlines()[-1])
    assert result["codes"] == [0, 1, 1, 1, 1, 1], res.stderr[-3000:]
    assert result["shipped"]
    assert res.stderr.count("likely share no file system") == 5, res.stderr
    assert not LOG_LINE.search(res.stderr), res.stderr  # Spark's log went to a file
