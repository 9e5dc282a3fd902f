"""`kafka-rebalance pipeline load-model|offsets|lag|sweep`: the Spark jobs (docs/formats.md section 5).

Spark runs local by default (`local[*]`, bound to 127.0.0.1) or on any
master given by `--master` (or SPARK_MASTER). With `--format json` the
summary is the only thing on stdout: while a job runs, file descriptor 1
points at stderr, so nothing Spark or its JVM prints can reach stdout.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

from .. import output, textfmt


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
    lg.add_argument(
        "--offsets", required=True, metavar="DIR", help="output folder of `pipeline offsets`"
    )
    lg.add_argument(
        "--log-end",
        required=True,
        metavar="PATH",
        help="log-end samples: ts, topic, partition, log_end_offset",
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
        "--master", default=None, help="Spark master (default local[*], or SPARK_MASTER)"
    )
    parser.add_argument("--shuffle-partitions", type=int, default=8)
    output.add_format_flag(parser)
    parser.set_defaults(func=lambda args: _run(args, job))


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Point fd 1 at stderr while Spark runs (the JVM inherits it), then restore it."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _run(args, job) -> int:
    from ..pipeline.session import get_spark

    t0 = time.perf_counter()
    check = _PRECHECKS.get(job)
    # options and small inputs: refused before Spark starts, nothing written; the job gets what was checked
    checked = check(args) if check is not None else None
    with _stdout_to_stderr():
        spark = get_spark(args.master, args.shuffle_partitions, f"kafka-rebalance-{args.job}")
        summary = job(spark, args, checked)
    summary["wall_s"] = round(time.perf_counter() - t0, 3)
    output.emit(summary, args.format, _table)
    if getattr(args, "check", False):
        findings = lag_check_findings(summary)
        for f in findings:
            print(f"check failed: {f}", file=sys.stderr)
        return 3 if findings else 0
    return 0


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
        rows.append((k.replace("_", " "), textfmt.by_name(k, v)))
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
