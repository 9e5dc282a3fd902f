"""`kafka-rebalance cluster skew`: broker skew per resource and leader imbalance per broker."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from .. import output
from ..cluster.leader_skew import DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE
from ..cluster.planner.optimizer import check_band
from ..cluster.skew import DEFAULT_BALANCE_THRESHOLD
from ..errors import InputError
from ..ops.cluster import check_percentage, skew
from .cluster_common import add_source, fmt, load_snapshot


def register(sub) -> None:
    s = sub.add_parser("skew", help="broker skew per resource and leader imbalance per broker")
    add_source(s)
    s.add_argument(
        "--threshold",
        type=float,
        default=DEFAULT_BALANCE_THRESHOLD,
        help="balance band: a resource is skewed when max/mean exceeds it (default 1.10)",
    )
    s.add_argument(
        "--leader-imbalance-per-broker-percentage",
        type=float,
        default=DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE,
        metavar="PCT",
        help="the ZooKeeper controller's leader.imbalance.per.broker.percentage (default 10)",
    )
    output.add_format_flag(s)
    s.set_defaults(func=run_skew)


def run_skew(args: argparse.Namespace) -> int:
    try:
        check_band(args.threshold)  # skew's threshold is a balance band: the planner's check
    except InputError as exc:
        raise InputError(exc.message, source=exc.source, field="--threshold") from None
    pct = args.leader_imbalance_per_broker_percentage
    check_percentage(pct, "--leader-imbalance-per-broker-percentage")
    result = skew(load_snapshot(args), args.threshold, pct).to_json()
    output.emit(result, args.format, _skew_table)
    return 0


def _skew_table(console: Console, r: dict) -> None:
    t = Table(title="broker load")
    cols = [
        "broker",
        "rack",
        "replicas",
        "leaders",
        "preferred_leaders",
        "bytes_in",
        "bytes_out",
        "size_bytes",
        "leader_imbalance_ratio",
    ]
    for c in cols:
        t.add_column(c, justify="right")
    for b in r["brokers"]:
        t.add_row(*[fmt(b[c]) for c in cols], style=None if b["alive"] else "dim")
    console.print(t)
    m = Table(title=f"max/mean (band {r['threshold']})")
    m.add_column("resource")
    m.add_column("max/mean", justify="right")
    for k, v in r["max_over_mean"].items():
        m.add_row(k, f"{v:.3f}", style="red" if v > r["threshold"] else None)
    console.print(m)
