"""`kafka-rebalance cluster plan`: a reassignment plan for kafka-reassign-partitions.sh."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from .. import io_util, output
from ..cluster.planner import DEFAULT_PLAN_BAND, Mode
from ..cluster.planner.optimizer import check_band, check_brokers_for_mode, check_capacity_threshold
from ..errors import InputError
from ..ops.cluster import check_seed, plan
from .cluster_common import add_source, as_flag, fmt, load_snapshot, parse_ids, parse_racks


def register(sub) -> None:
    pl = sub.add_parser(
        "plan",
        help="reassignment plan for kafka-reassign-partitions.sh",
        epilog='Exit code 1 (with "complete": false and the violations) when replicas '
        "remain on dead or removed brokers; 2 on bad input.",
    )
    add_source(pl)
    pl.add_argument("--mode", choices=[m.value for m in Mode], default=Mode.FULL.value)
    pl.add_argument(
        "--brokers", metavar="IDS", help="brokers added (add-brokers) or removed (remove-brokers)"
    )
    pl.add_argument(
        "--broker-racks",
        metavar="ID:RACK,...",
        help="add-brokers: racks of added brokers the snapshot does not list (needed when the "
        "cluster has racks)",
    )
    pl.add_argument("--output", metavar="FILE", help="write the reassignment JSON here")
    pl.add_argument(
        "--election-output",
        metavar="FILE",
        help="also write the leader election JSON to run once the reassignment completes",
    )
    pl.add_argument(
        "--band",
        type=float,
        default=DEFAULT_PLAN_BAND,
        help="target max/mean per resource (default 1.09, inside Cruise Control's 1.10)",
    )
    pl.add_argument(
        "--capacity-threshold",
        type=float,
        default=0.8,
        help="highest share of a broker's disk capacity a plan may fill (default 0.8)",
    )
    pl.add_argument(
        "--leaders-by",
        choices=("count", "bytes"),
        default="count",
        help="leaders mode: even leader counts only (exact), or also leader bytes",
    )
    pl.add_argument(
        "--no-topic-spread",
        action="store_true",
        help="full mode: skip the per-topic replica spread goal (fewer moves)",
    )
    pl.add_argument(
        "--compare-generate",
        action="store_true",
        help="also count the moves of kafka-reassign-partitions.sh --generate (emulated)",
    )
    pl.add_argument("--seed", type=int, default=0, help="seed of the --generate emulation")
    output.add_format_flag(pl)
    pl.set_defaults(func=run_plan)


def run_plan(args: argparse.Namespace) -> int:
    # Numbers first: a bad flag is reported before a live cluster is read.
    check_seed(args.seed, "--seed")
    brokers = parse_ids(args.brokers, "--brokers")
    try:
        check_band(args.band)
        check_capacity_threshold(args.capacity_threshold)
        check_brokers_for_mode(args.mode, brokers)
    except InputError as exc:
        raise as_flag(exc) from None
    snap = load_snapshot(args)
    racks = parse_racks(args.broker_racks, "--broker-racks")
    try:
        res = plan(
            snap,
            args.mode,
            brokers,
            band=args.band,
            capacity_threshold=args.capacity_threshold,
            leaders_by=args.leaders_by,
            compare_generate=args.compare_generate,
            seed=args.seed,
            topic_spread=not args.no_topic_spread,
            broker_racks=racks,
        )
    except InputError as exc:
        raise as_flag(exc) from None
    result = res.to_json()
    if args.output:
        io_util.atomic_write_json(args.output, res.reassignment_json(), indent=None)
        result["output"] = args.output
    if args.election_output:
        io_util.atomic_write_json(args.election_output, res.election_json(), indent=None)
        result["election_output"] = args.election_output
    output.emit(result, args.format, _plan_table)
    # A plan that leaves replicas on a dead or removed broker did not do what was asked: say so in the code.
    return 0 if res.complete else 1


def _plan_table(console: Console, r: dict) -> None:
    console.print(
        f"mode {r['mode']}: {r['replica_moves']} replica moves (lower bound {r['lower_bound_moves']}), "
        f"{fmt(r['bytes_moved'])} bytes moved, {r['leader_changes']} leader changes"
    )
    t = Table(title="max/mean")
    for c in ("resource", "before", "after"):
        t.add_column(c, justify="right")
    for k in r["before"]:
        t.add_row(k, f"{r['before'][k]:.3f}", f"{r['after'][k]:.3f}")
    console.print(t)
    for v in r["violations"]:
        console.print(f"[red]{v}[/red]")
    if not r["complete"]:
        console.print(
            "[red]incomplete: replicas remain on dead or removed brokers (see above)[/red]"
        )
    elif not r["goals_satisfied"]:
        console.print(
            "[yellow]not every goal was met (the lower bound is for meeting all of them)[/yellow]"
        )
