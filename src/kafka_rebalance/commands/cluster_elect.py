"""`kafka-rebalance cluster elect`: leader election JSON for kafka-leader-election.sh, or (--execute) the election.

With `--execute` it elects through the Admin API (ElectLeaders) with kafka-leader-election.sh's flags
(`--election-type PREFERRED|UNCLEAN`, `--topic`/`--partition`, `--all-topic-partitions`,
`--path-to-json-file`, `--admin.config`) and prints its lines: "Successfully completed leader
election (PREFERRED) for partitions ...", "Valid replica already elected for partitions ...",
"Error completing leader election (PREFERRED) for partition: T-P: <exception>"; exit 1 when a
partition could not be elected ("N replica(s) could not be elected" on stderr), as the tool.
Bad flags exit 2 (the tool exits 1 for those too).
"""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console
from rich.text import Text

from .. import io_util, output, textfmt
from ..cluster import kafka_json
from ..cluster.leader_skew import DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE
from ..errors import InputError
from ..io_publish import check_output_paths
from ..ops.cluster import auto_elect, check_percentage, elect
from .cluster_common import add_source, load_snapshot, read_input


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
    e.add_argument(
        "--execute",
        action="store_true",
        help="elect now through the Admin API, as kafka-leader-election.sh (default: write JSON)",
    )
    e.add_argument(
        "--election-type",
        type=str.upper,
        choices=("PREFERRED", "UNCLEAN"),
        default=None,
        help="--execute: PREFERRED (the first live in-sync replica) or UNCLEAN (only partitions "
        "without a leader); case-insensitive as the tool (default PREFERRED)",
    )
    e.add_argument("--topic", metavar="T", help="--execute: the topic of --partition")
    e.add_argument("--partition", type=int, metavar="P", help="--execute: one partition of --topic")
    e.add_argument(
        "--all-topic-partitions",
        action="store_true",
        help="--execute: every partition the election type applies to",
    )
    e.add_argument(
        "--admin.config",
        dest="admin_config",
        metavar="FILE",
        help="client properties, as kafka-leader-election.sh (same as --command-config)",
    )
    output.add_format_flag(e)
    e.set_defaults(func=run_elect)


def run_elect(args: argparse.Namespace) -> int:
    check_output_paths({"--output": getattr(args, "output", None)})
    if getattr(args, "admin_config", None):
        if args.command_config and args.command_config != args.admin_config:
            raise InputError(
                "give --admin.config or --command-config, not both", field="--admin.config"
            )
        args.command_config = args.admin_config
    if args.execute:
        from .cluster_elect_live import run_elect_execute

        return run_elect_execute(args)
    for flag, given in (
        ("--election-type", args.election_type == "UNCLEAN"),
        ("--topic", args.topic),
        ("--partition", args.partition is not None),
        ("--all-topic-partitions", args.all_topic_partitions),
    ):
        if given:
            raise InputError(
                "only with --execute (the JSON is for a preferred election)", field=flag
            )
    pct = args.leader_imbalance_per_broker_percentage
    check_percentage(pct, "--leader-imbalance-per-broker-percentage")
    snap = load_snapshot(args)
    res: Any
    if args.auto:
        res = auto_elect(snap, args.auto, pct)
    else:
        only = None
        if args.path_to_json_file:
            only = read_input(args.path_to_json_file, kafka_json.parse_election_json)
        topics = [t for t in args.topics.split(",") if t] if args.topics else None
        res = elect(snap, only, topics)
    result = res.to_json()
    if args.output:
        io_util.atomic_write_json(args.output, res.election_json())
        result["output"] = args.output
    output.emit(result, args.format, _elect_table)
    return 0


def _elect_table(console: Console, r: dict) -> None:
    c = textfmt.count
    if "controller" in r:
        console.print(
            Text(
                f"{r['controller']} controller with auto.leader.rebalance.enable: "
                f"{c(r['elect'])} elections in {c(r['passes'])} passes; "
                f"{c(r['still_not_preferred'])} partitions still not on their preferred leader"
            )
        )
    console.print(
        Text(
            f"partitions to elect: {c(r['elect'])}"
            + (f" (written to {r['output']})" if r.get("output") else "")
        )
    )
    if r.get("skipped"):
        skipped = sorted(r["skipped"], key=lambda s: (s["topic"], s["partition"]))
        textfmt.print_table(
            console,
            "skipped",
            ["topic", ">partition", "reason", "detail"],
            [[s["topic"], str(s["partition"]), s["reason"], s["detail"]] for s in skipped],
        )
