"""`kafka-rebalance pipeline load-model|offsets|lag|sweep`: the Spark jobs (docs/formats.md section 5).

Spark runs local by default (`local[*]`, bound to 127.0.0.1) or on any
master given by `--master`, `--conf spark.master=...`, spark-submit or
SPARK_MASTER. Spark stays quiet: the JVM this command starts writes its log
to a file (`_spark.log` in the output folder; `--verbose` shows it on
stderr instead), and a progress line per stage goes to stderr when it is a
terminal (or with `--progress`). With `--format json` the summary is the only
thing on stdout: while a job runs, file descriptor 1 points elsewhere.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import output, textfmt
from ..errors import InputError, RuntimeFailure


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "pipeline",
        help="Spark jobs over telemetry: load model, offsets, lag, simulation sweeps",
        description="PySpark jobs that turn metric samples, __consumer_offsets records and log-end offsets into "
        "a load model, offset and rebalance history, lag with Burrow's statuses, and simulation sweeps.",
    )
    sub = p.add_subparsers(dest="job", metavar="JOB")

    lm = sub.add_parser(
        "load-model", help="metric samples -> per-partition load (Cruise Control's rules)"
    )
    lm.add_argument(
        "--samples", required=True, metavar="PATH", help="metric samples: a Parquet file or folder"
    )
    lm.add_argument("--out", required=True, metavar="DIR")
    lm.add_argument(
        "--snapshot",
        metavar="FILE",
        default=None,
        help="cluster snapshot to fill with load (brokers and replicas are inferred otherwise)",
    )
    lm.add_argument("--window-ms", type=int, default=3_600_000)
    lm.add_argument("--windows", type=int, default=5)
    lm.add_argument(
        "--min-samples", type=int, default=3, help="samples for a partition's window to count"
    )
    lm.add_argument(
        "--min-valid-ratio",
        type=float,
        default=0.995,
        help="share of partitions with enough valid windows for the model to be ready",
    )
    lm.add_argument(
        "--min-valid-windows", type=int, default=1, help="windows the model needs to be ready"
    )
    _common(lm, _load_model)

    of = sub.add_parser(
        "offsets", help="__consumer_offsets records -> commits, latest offsets, group history"
    )
    src = of.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--records", metavar="PATH", help="records in Spark's Kafka-source schema (Parquet)"
    )
    src.add_argument(
        "--bootstrap-server", metavar="HOST:PORT", help="read the topic live from a cluster"
    )
    of.add_argument(
        "--topic", default="__consumer_offsets", help="topic to read with --bootstrap-server"
    )
    of.add_argument("--out", required=True, metavar="DIR")
    _common(of, _offsets)

    lg = sub.add_parser(
        "lag", help="commits + log-end offsets -> lag over time and Burrow's statuses"
    )
    lsrc = lg.add_mutually_exclusive_group(required=True)
    lsrc.add_argument("--offsets", metavar="DIR", help="output folder of `pipeline offsets`")
    lsrc.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT",
        help="a live cluster: commits from __consumer_offsets, log-end offsets from the brokers now",
    )
    lg.add_argument(
        "--log-end",
        metavar="PATH",
        help="log-end samples: ts, topic, partition, log_end_offset (with --offsets)",
    )
    lg.add_argument("--out", required=True, metavar="DIR")
    lg.add_argument(
        "--intervals", type=int, default=10, help="Burrow storage.intervals (commits kept)"
    )
    lg.add_argument(
        "--min-distance", type=int, default=0, help="Burrow storage.min-distance (seconds)"
    )
    lg.add_argument("--allowed-lag", type=int, default=0, help="Burrow evaluator.allowed-lag")
    lg.add_argument(
        "--minimum-complete",
        type=float,
        default=0.0,
        help="Burrow evaluator.minimum-complete: fraction (0..1) of the commit ring filled to evaluate",
    )
    lg.add_argument(
        "--group-interval-ms", type=int, default=60_000, help="bucket of the group status timeline"
    )
    lg.add_argument(
        "--check",
        action="store_true",
        help="exit 3 when any group's Burrow status is not OK (for scripts and alerts)",
    )
    _common(lg, _lag)

    sw = sub.add_parser("sweep", help="a grid of simulation scenarios, one Spark task each")
    sw.add_argument("grid", metavar="GRID", help="grid file (YAML or JSON): base scenario and axes")
    sw.add_argument("--out", required=True, metavar="DIR")
    _common(sw, _sweep)

    p.set_defaults(func=lambda args: (p.print_help(sys.stderr), 2)[1])


def _common(parser, job) -> None:
    parser.add_argument(
        "--master",
        default=None,
        help="Spark master (default: spark.master from --conf, spark-submit's, SPARK_MASTER, else local[*])",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for the session (repeatable), as spark-submit's --conf",
    )
    parser.add_argument("--shuffle-partitions", type=int, default=8)
    parser.add_argument(
        "--verbose", action="store_true", help="Spark's log on stderr instead of a file"
    )
    parser.add_argument(
        "--progress",
        action="store_true",
        help="a progress line per Spark stage on stderr even when it is not a terminal",
    )
    output.add_format_flag(parser)
    parser.set_defaults(func=lambda args: _run(args, job))


def spark_conf(pairs: list[str]) -> dict[str, str]:
    """`--conf KEY=VALUE` flags as a dict; a flag without `=` or with an empty key is bad input."""
    conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"expected KEY=VALUE, got {pair!r}", source="--conf")
        conf[key.strip()] = value
    return conf


@contextlib.contextmanager
def _fds_to(fd: int, *targets: int) -> Iterator[None]:
    """Point file descriptors `targets` at `fd` (processes started meanwhile inherit it), then restore them."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(t) for t in targets]
    for t in targets:
        os.dup2(fd, t)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for t, s in zip(targets, saved):
            os.dup2(s, t)
            os.close(s)


def _log_file(args) -> Path:
    """Where the JVM's output goes until the job ends: a temp file, copied under --out afterwards."""
    fd, name = tempfile.mkstemp(prefix=f"kafka-rebalance-{args.job}-", suffix=".log")
    os.close(fd)
    return Path(name)


def check_out_folder(out: str) -> None:
    """The job switches a whole new folder in for --out: the current folder, one holding it, or /
    cannot be switched (the rename fails after the whole job): refused before Spark starts."""
    from ..pipeline.io import is_local

    if not is_local(out):
        return
    from ..io_publish import check_output_paths

    check_output_paths({"--out": out}, folders=("--out",))
    where = Path(os.path.abspath(out))
    cwd = Path(os.path.abspath(os.getcwd()))
    if where == cwd or where in cwd.parents:
        what = "/" if where.parent == where else "the current folder or one holding it"
        raise InputError(
            f"{out} is {what}; the job replaces its output folder as a whole: give a new "
            "or dedicated folder",
            field="--out",
        )


def _keep_log(log: Path, out: str) -> Path:
    """Copy the log under a local output folder the job wrote (else it stays where it is)."""
    from ..io_util import write_file_with
    from ..pipeline.io import is_local

    target = Path(out) / "_spark.log"
    if is_local(out) and Path(out).is_dir():
        try:
            write_file_with(target, lambda tmp: shutil.copyfile(log, tmp))
            log.unlink()
            return target
        except OSError:
            pass  # the log stays where it is; the summary names it
    return log


def _run(args, job) -> int:
    from pyspark.sql import SparkSession

    from ..pipeline.session import check_chosen_master, get_spark

    t0 = time.perf_counter()
    conf = spark_conf(args.conf)
    check_chosen_master(args.master, conf)
    check_out_folder(args.out)
    check = _PRECHECKS.get(job)
    # options and small inputs: refused before Spark starts, nothing written; the job gets what was checked
    checked = check(args) if check is not None else None
    quiet = not args.verbose and SparkSession.getActiveSession() is None
    log = _log_file(args) if quiet else None
    level = "INFO" if args.verbose else "WARN" if quiet else "ERROR"
    try:
        with open(log or os.devnull, "ab") as sink:
            # the JVM (and the Python workers it starts) keep the descriptors they were started with:
            # quiet, its stdout and stderr are the log file; else stderr. Our stdout stays clean.
            target = sink.fileno() if quiet else 2
            with _fds_to(target, *((1, 2) if quiet else (1,))):
                spark = get_spark(
                    args.master, args.shuffle_partitions, f"kafka-rebalance-{args.job}", conf, level
                )
            with _fds_to(target, 1), _progress(spark, args):
                summary = job(spark, args, checked)
    except RuntimeFailure as exc:
        where = f" (Spark's log: {log})" if log is not None else ""
        print(f"kafka-rebalance pipeline {args.job}: error: {exc}{where}", file=sys.stderr)
        return 1
    except Exception as exc:
        if not _is_spark_failure(exc):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        full = _file_system_failure(exc)
        if full is not None:  # before the outputs: Spark's own scratch files (shuffle, spills)
            first = f"{full} writing Spark's local files in {_local_dir()}"
        where = f" (Spark's log: {log})" if log is not None else ""
        print(
            f"kafka-rebalance pipeline {args.job}: Spark job failed: {first}{where}",
            file=sys.stderr,
        )
        return 1
    if log is not None:
        summary["spark_log"] = str(_keep_log(log, args.out))
    summary["wall_s"] = round(time.perf_counter() - t0, 3)
    output.emit(summary, args.format, _table)
    if getattr(args, "check", False):
        findings = lag_check_findings(summary)
        for f in findings:
            print(f"check failed: {f}", file=sys.stderr)
        return 3 if findings else 0
    return 0


def _file_system_failure(exc: BaseException) -> str | None:
    """The file-system error (a full disk, a size limit) a Spark failure's Java trace names, if any."""
    from ..pipeline.io import write_failure

    failure = write_failure(exc, "")
    return None if failure is None else str(failure).split("cannot write: ", 1)[-1]


def _local_dir() -> str:
    """Where Spark writes its scratch files: spark.local.dir (SPARK_LOCAL_DIRS), else the temp dir."""
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    conf = spark.sparkContext.getConf().get("spark.local.dir") if spark is not None else None
    return os.environ.get("SPARK_LOCAL_DIRS") or conf or tempfile.gettempdir()


def _is_spark_failure(exc: BaseException) -> bool:
    """A failure inside Spark (a task, the JVM, an unreachable master), not a bug of ours: exit 1."""
    try:
        from py4j.protocol import Py4JError  # type: ignore[import-untyped]
        from pyspark.errors import PySparkException
    except ImportError:
        return False
    return isinstance(exc, (Py4JError, PySparkException))


@contextlib.contextmanager
def _progress(spark, args) -> Iterator[None]:
    """A progress line per stage on stderr: when it is a terminal, or asked with --progress."""
    if not (args.progress or sys.stderr.isatty()):
        yield
        return
    from rich.console import Console

    from ..pipeline.progress import StageProgress

    with StageProgress(spark, Console(file=sys.stderr, force_terminal=sys.stderr.isatty())):
        yield


def lag_check_findings(summary: dict[str, Any]) -> list[str]:
    """What `pipeline lag --check` reports: every group whose Burrow status is not OK."""
    out = []
    for name, g in sorted((summary.get("groups") or {}).items()):
        if g["status"] != "OK":
            m = g["maxlag"]
            out.append(
                f"group {name} is {g['status']} (total lag {g['total_lag']:,}; worst "
                f"{m['topic']}-{m['partition']} {m['status']} with lag {m['current_lag']:,})"
            )
    return out


def _load_model_config(args):
    from ..pipeline.load_model import LoadModelConfig

    cfg = LoadModelConfig(
        args.window_ms, args.windows, args.min_samples, args.min_valid_ratio, args.min_valid_windows
    )
    cfg.check()
    return cfg


def _load_model(spark, args, cfg) -> dict[str, Any]:
    from ..pipeline.load_model import run_load_model

    res = run_load_model(spark, args.samples, args.out, cfg, snapshot=args.snapshot)
    return res.summary


def _offsets(spark, args, _checked=None) -> dict[str, Any]:
    from ..pipeline.offsets import run_offsets

    if args.bootstrap_server:
        from ..pipeline.kafka_source import read_topic

        return run_offsets(
            spark, None, args.out, source_df=read_topic(spark, args.bootstrap_server, args.topic)
        )
    return run_offsets(spark, args.records, args.out)


def _lag_config(args):
    if args.offsets and not args.log_end:
        raise InputError("--log-end is required with --offsets", source="--log-end")
    if args.bootstrap_server and args.log_end:
        raise InputError(
            "--log-end goes with --offsets; with --bootstrap-server the brokers give the log-end offsets",
            source="--log-end",
        )
    from ..pipeline.burrow import BurrowConfig
    from ..pipeline.lag import LagConfig

    cfg = LagConfig(
        BurrowConfig(
            intervals=args.intervals,
            min_distance_s=args.min_distance,
            minimum_complete=args.minimum_complete,
            allowed_lag=args.allowed_lag,
        ),
        group_interval_ms=args.group_interval_ms,
    )
    cfg.check()
    return cfg


def _lag(spark, args, cfg) -> dict[str, Any]:
    from ..pipeline.lag import run_lag

    if args.bootstrap_server:
        from dataclasses import replace

        from ..pipeline.live import live_commits, live_log_end

        commits = live_commits(spark, args.bootstrap_server)
        try:
            leo = live_log_end(spark, args.bootstrap_server, commits)
            live_cfg = replace(cfg, broker_offsets_first=True)  # lag.LagConfig: sampled, then read
            return run_lag(
                spark,
                args.bootstrap_server,
                args.bootstrap_server,
                args.out,
                live_cfg,
                commits,
                leo,
            )
        finally:
            commits.unpersist()
    return run_lag(spark, args.offsets, args.log_end, args.out, cfg)


def _sweep_grid(args):
    from ..io_util import read_structured
    from ..pipeline.sweep import expand_grid

    doc = read_structured(args.grid)
    expand_grid(doc, args.grid)  # every combination parsed: a bad grid never reaches Spark
    return doc


def _sweep(spark, args, grid_doc) -> dict[str, Any]:
    from ..pipeline.sweep import run_sweep

    return run_sweep(spark, args.grid, args.out, grid_doc=grid_doc)


_PRECHECKS = {_load_model: _load_model_config, _lag: _lag_config, _sweep: _sweep_grid}


def _table(console, summary: dict[str, Any]) -> None:
    rows = []
    for k, v in summary.items():
        if k in ("groups", "by_variant"):
            continue
        if isinstance(v, (list, dict)) and len(v) > 8:
            v = f"{len(v)} items, see --format json"
        elif isinstance(v, list) and v and isinstance(v[0], dict):
            v = "; ".join(textfmt.cell(x) for x in v)
        rows.append((textfmt.label(k), textfmt.by_name(k, v)))
    textfmt.print_kv(console, "pipeline", rows)
    if summary.get("groups"):
        groups = []
        for name, v in sorted(summary["groups"].items()):
            m = v["maxlag"]
            groups.append(
                (
                    name,
                    v["status"],
                    textfmt.percent(v["complete"], 0),
                    textfmt.count(v["total_lag"]),
                    textfmt.count(v["partitions"]),
                    f"{m['topic']}-{m['partition']}: {textfmt.count(m['current_lag'])}, {m['status']}",
                )
            )
        textfmt.print_table(
            console,
            "Burrow status per group",
            ["group", "status", ">complete", ">total lag", ">partitions", "max lag partition"],
            groups,
        )
    if summary.get("by_variant"):
        variants = summary["by_variant"]
        cols = list(variants[0])
        numeric = {c for c in cols if isinstance(variants[0][c], (int, float))}
        textfmt.print_table(
            console,
            "sweep, mean over seeds",
            [(">" if c in numeric else "") + c.removesuffix("_ms").replace("_", " ") for c in cols],
            [[_mean_cell(c, r[c]) for c in cols] for r in variants],
        )


def _mean_cell(column: str, v: Any) -> str:
    """A sweep mean: durations in units, other means with one decimal."""
    if isinstance(v, float) and not column.endswith("_ms"):
        return textfmt.ratio(v, 1)
    return textfmt.by_name(column, v)
