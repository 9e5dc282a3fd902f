"""`kafka-rebalance group lag`: Burrow status and time lag per group, a table or JSON per sample.

`--once` takes `--samples` polls `--interval` apart, evaluates and exits; without it the
monitor polls forever (Ctrl-C stops it), printing each evaluation and serving the latest on
`--prometheus-port` (127.0.0.1). `--check` exits 3 as soon as an evaluated group is not OK.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from rich.console import Console

from .. import textfmt
from ..errors import InputError
from ..kafka.group_lag import GroupLag, LagCollector, LagMonitor, serve_metrics
from ..kafka.groups import GroupAdmin
from ..pipeline.burrow import BurrowConfig, Status


def register_lag(sub, connection, fmt, guard) -> None:
    p = sub.add_parser(
        "lag",
        help="lag monitor: Burrow's status rules, kafka-lag-exporter's time lag, Prometheus",
    )
    connection(p)
    p.add_argument(
        "--group",
        action="append",
        default=[],
        metavar="GROUP",
        help="repeatable (default: every group)",
    )
    p.add_argument(
        "--interval",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds between samples (default 30)",
    )
    p.add_argument("--once", action="store_true", help="take --samples samples, evaluate, exit")
    p.add_argument(
        "--samples", type=int, default=1, metavar="N", help="samples for --once (default 1)"
    )
    p.add_argument("--check", action="store_true", help="exit 3 when a group is not OK")
    p.add_argument("--prometheus-port", type=int, metavar="P", help="serve metrics on 127.0.0.1:P")
    p.add_argument("--cluster-name", default="kafka", help="the cluster_name label (default kafka)")
    p.add_argument(
        "--intervals",
        type=int,
        default=10,
        help="Burrow's storage.intervals: commits in the window (default 10)",
    )
    p.add_argument(
        "--min-distance",
        type=int,
        default=0,
        metavar="S",
        help="Burrow's storage.min-distance in seconds (default 0)",
    )
    p.add_argument(
        "--expire-group",
        type=int,
        default=604_800,
        metavar="S",
        help="Burrow's storage.expire-group in seconds (default 7 days)",
    )
    p.add_argument(
        "--minimum-complete",
        type=float,
        default=0.0,
        help="Burrow's evaluator.minimum-complete (default 0)",
    )
    p.add_argument(
        "--allowed-lag", type=int, default=0, help="Burrow's evaluator.allowed-lag (default 0)"
    )
    fmt(p)
    p.set_defaults(func=guard(run_lag))


def run_lag(args: argparse.Namespace) -> int:
    if not args.interval > 0:
        raise InputError(f"must be > 0 (seconds), got {args.interval}", field="--interval")
    if args.samples < 1:
        raise InputError(f"must be >= 1, got {args.samples}", field="--samples")
    if args.prometheus_port is not None and not 0 <= args.prometheus_port <= 65535:
        raise InputError(
            f"must be a port 0-65535, got {args.prometheus_port}", field="--prometheus-port"
        )
    if args.format == "kafka":
        raise InputError(
            "kafka-consumer-groups.sh has no lag monitor: use table or json", field="--format"
        )
    config = BurrowConfig(
        args.intervals,
        args.min_distance,
        args.expire_group,
        args.minimum_complete,
        args.allowed_lag,
    )
    config.check()
    with GroupAdmin(args.bootstrap_server, args.command_config, args.timeout) as admin:
        monitor = LagMonitor(admin, tuple(dict.fromkeys(args.group)), config)
        collector = LagCollector(monitor, args.cluster_name)
        server = None
        if args.prometheus_port is not None:
            try:
                server = serve_metrics(collector, args.prometheus_port)
            except OSError as exc:
                raise InputError(
                    f"cannot listen on 127.0.0.1:{args.prometheus_port}: {exc.strerror}",
                    field="--prometheus-port",
                ) from None
        try:
            n = 0
            while True:
                monitor.sample(int(time.time() * 1000))
                n += 1
                if args.once and n < args.samples:
                    time.sleep(args.interval)
                    continue
                result = monitor.evaluate()
                collector.update(result)
                _print(result, args.format)
                if args.check and any(g.status != Status.OK for g in result):
                    return 3
                if args.once:
                    return 0
                time.sleep(args.interval)
        finally:
            if server is not None:
                server.shutdown()


def _print(result: list[GroupLag], fmt: str) -> None:
    if fmt == "json":
        sys.stdout.write(
            json.dumps({"ts_ms": int(time.time() * 1000), "groups": [g.to_json() for g in result]})
            + "\n"
        )
        sys.stdout.flush()
        return
    console = Console()
    textfmt.print_table(
        console,
        "consumer group lag (Burrow status, kafka-lag-exporter time lag)",
        ["GROUP", "STATE", "STATUS", ">TOTAL-LAG", ">MAX-LAG", ">MAX-TIME-LAG", ">COMPLETE"],
        [
            [
                g.group,
                g.state,
                g.status.name,
                textfmt.count(g.total_lag),
                textfmt.count(g.max_lag),
                textfmt.duration_s(g.max_time_lag_s, na=textfmt.NA),
                textfmt.percent(g.complete),
            ]
            for g in result
        ],
    )
    bad = [g for g in result if g.status != Status.OK]
    for g in bad:
        textfmt.print_table(
            console,
            f"{g.group}: {g.status.name}",
            [
                "TOPIC",
                ">PARTITION",
                ">COMMITTED",
                ">LOG-END-OFFSET",
                ">LAG",
                ">TIME-LAG",
                "STATUS",
                "CONSUMER-ID",
            ],
            [
                [
                    p.topic,
                    textfmt.count(p.partition),
                    textfmt.count(p.committed),
                    textfmt.count(p.log_end_offset),
                    textfmt.count(p.lag),
                    textfmt.duration_s(p.time_lag_s, na=textfmt.NA),
                    p.status.name,
                    p.consumer_id or textfmt.DASH,
                ]
                for p in g.partitions
            ],
        )
