"""`kafka-rebalance cluster describe`: a summary of the cluster; `--output` writes the snapshot JSON."""

from __future__ import annotations

import argparse

from .. import io_util, output
from ..cluster.snapshot import snapshot_to_json
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
    snap = load_snapshot(args)
    result = describe(snap).to_json()
    if args.output:
        io_util.atomic_write_json(args.output, snapshot_to_json(snap), indent=None)
        result["output"] = args.output
    output.emit(result, args.format, kv_table("cluster"))
    return 0
