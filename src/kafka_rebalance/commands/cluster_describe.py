"""`kafka-rebalance cluster describe`: a summary of the cluster; `--output` writes the snapshot JSON."""

from __future__ import annotations

import argparse

from rich.console import Console

from .. import io_util, output, textfmt
from ..cluster.snapshot import snapshot_to_json
from ..io_publish import check_output_paths
from ..ops.cluster import describe
from .cluster_common import add_source, kv_table, load_snapshot


def register(sub) -> None:
    d = sub.add_parser("describe", help="summary of the cluster; --output writes the snapshot JSON")
    add_source(d)
    d.add_argument(
        "--output", metavar="FILE", help="write the snapshot as JSON (docs/formats.md section 3)"
    )
    output.add_format_flag(d)
    d.set_defaults(func=run_describe)


def run_describe(args: argparse.Namespace) -> int:
    check_output_paths({"--output": args.output})
    snap = load_snapshot(args)
    reassignments = None
    if args.bootstrap_server:
        from ..kafka.admin import KafkaAdmin

        with KafkaAdmin(args.bootstrap_server, args.command_config) as admin:
            reassignments = admin.list_partition_reassignments()
    result = describe(snap, reassignments).to_json()
    if args.output:
        io_util.atomic_write_json(args.output, snapshot_to_json(snap), indent=None)
        result["output"] = args.output
    output.emit(result, args.format, _table)
    return 0


def _table(console: Console, r: dict) -> None:
    moving = r.get("reassignments", [])
    kv_table("cluster")(console, {k: v for k, v in r.items() if k != "reassignments"})
    if moving:
        # kafka-topics.sh --describe's fields for each moving partition (--format json for scripts)
        textfmt.print_table(
            console,
            "partitions being reassigned",
            [
                "topic",
                ">partition",
                ">leader",
                "replicas",
                "isr",
                "adding",
                "removing",
            ],
            [
                [
                    m["topic"],
                    str(m["partition"]),
                    "none" if m["leader"] is None else str(m["leader"]),
                    textfmt.ids(m["replicas"]),
                    textfmt.ids(m["isr"]),
                    textfmt.ids(m["adding"]),
                    textfmt.ids(m["removing"]),
                ]
                for m in moving
            ],
        )
