"""`kafka-rebalance cluster elect`: preferred leader election JSON for kafka-leader-election.sh."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.table import Table

from .. import io_util, output
from ..cluster import kafka_json
from ..cluster.leader_skew import DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE
from ..errors import InputError
from ..ops.cluster import auto_elect, check_percentage, elect
from .cluster_common import add_source, load_snapshot


def register(sub) -> None:
    e = sub.add_parser("elect", help="preferred leader election JSON for kafka-leader-election.sh")
    add_source(e)
    e.add_argument(
        "--path-to-json-file", metavar="F", help='only these partitions ({"partitions": [...]})'
    )
    e.add_argument("--topics", metavar="T1,T2", help="only these topics")
    e.add_argument("--output", metavar="FILE", help="write the election JSON here")
    e.add_argument(
        "--auto",
        choices=("zk", "kraft"),
        default=None,
        help="instead: what auto.leader.rebalance.enable would do with this controller",
    )
    e.add_argument(
        "--leader-imbalance-per-broker-percentage",
        type=float,
        default=DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE,
        metavar="PCT",
    )
    output.add_format_flag(e)
    e.set_defaults(func=run_elect)


def run_elect(args: argparse.Namespace) -> int:
    pct = args.leader_imbalance_per_broker_percentage
    check_percentage(pct, "--leader-imbalance-per-broker-percentage")
    snap = load_snapshot(args)
    res: Any
    if args.auto:
        res = auto_elect(snap, args.auto, pct)
    else:
        only = None
        if args.path_to_json_file:
            try:
                only = kafka_json.parse_election_json(
                    io_util.read_structured(args.path_to_json_file)
                )
            except InputError as exc:
                raise exc.in_file(args.path_to_json_file) from None
        topics = [t for t in args.topics.split(",") if t] if args.topics else None
        res = elect(snap, only, topics)
    result = res.to_json()
    if args.output:
        io_util.atomic_write_json(args.output, res.election_json())
        result["output"] = args.output
    output.emit(result, args.format, _elect_table)
    return 0


def _elect_table(console: Console, r: dict) -> None:
    if "controller" in r:
        console.print(
            f"{r['controller']} controller with auto.leader.rebalance.enable: {r['elect']} elections in "
            f"{r['passes']} pass(es); {r['still_not_preferred']} partitions still not on their preferred "
            f"leader"
        )
    console.print(
        f"partitions to elect: {r['elect']}"
        + (f" (written to {r['output']})" if r.get("output") else "")
    )
    if r.get("skipped"):
        t = Table(title="skipped")
        for c in ("topic", "partition", "reason", "detail"):
            t.add_column(c)
        for s in r["skipped"]:
            t.add_row(s["topic"], str(s["partition"]), s["reason"], s["detail"])
        console.print(t)
