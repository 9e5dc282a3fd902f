"""`kafka-rebalance cluster plan`: a reassignment plan for kafka-reassign-partitions.sh."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.text import Text

from .. import io_util, output, textfmt
from ..cluster.planner import DEFAULT_PLAN_BAND, GOAL_NAMES, Mode, PlanOptions, parse_goals
from ..cluster.planner.optimizer import check_band, check_brokers_for_mode, check_capacity_threshold
from ..cluster.planner.options import DEFAULT_CAPACITY_THRESHOLDS, DEFAULT_MAX_REPLICAS_PER_BROKER
from ..errors import InputError
from ..io_publish import check_output_paths
from ..ops.cluster import check_seed, plan
from ..ops.cluster_source import read_capacity_file
from .cluster_common import add_source, as_flag, load_snapshot, parse_ids, parse_racks


def register(sub) -> None:
    pl = sub.add_parser(
        "plan",
        help="reassignment plan for kafka-reassign-partitions.sh",
        epilog="Goals are Cruise Control's (names and default order: docs/formats.md section 3). "
        'Exit code 1 when the plan is refused ("refused": true: a hard goal is not met, or replicas '
        "remain on dead or removed brokers; nothing is written); 2 on bad input.",
    )
    add_source(pl)
    pl.add_argument("--mode", choices=[m.value for m in Mode], default=Mode.FULL.value)
    pl.add_argument(
        "--brokers",
        metavar="IDS",
        help="brokers added (add-brokers), removed (remove-brokers) or demoted (demote)",
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
        default=None,
        help="highest share of a broker's disk and network-in capacity a plan may fill (default 0.8)",
    )
    pl.add_argument(
        "--capacity",
        metavar="FILE",
        help="Cruise Control capacity file (capacity.json, capacityJBOD.json, capacityCores.json): "
        "DISK MB (or per log dir), CPU %% or num.cores, NW_IN/NW_OUT KB/s; broker -1 the default",
    )
    pl.add_argument(
        "--goals",
        metavar="G1,G2,...",
        help="full mode: Cruise Control goals, highest priority first (default: its default.goals; "
        f"known: {', '.join(GOAL_NAMES)})",
    )
    for flag, what, default in (
        ("--disk-capacity-threshold", "disk", 0.8),
        ("--network-inbound-capacity-threshold", "network in", 0.8),
        ("--network-outbound-capacity-threshold", "network out", 0.8),
        ("--cpu-capacity-threshold", "CPU", 0.7),
    ):
        pl.add_argument(
            flag,
            type=float,
            default=None,
            metavar="SHARE",
            help=f"highest share of a broker's {what} capacity (default {default})",
        )
    pl.add_argument(
        "--max-replicas-per-broker",
        type=int,
        default=DEFAULT_MAX_REPLICAS_PER_BROKER,
        metavar="N",
        help="ReplicaCapacityGoal's limit (default 10000)",
    )
    pl.add_argument(
        "--exclude-topics",
        metavar="REGEX",
        help="topics (whole name matched) whose replicas and leaders never move",
    )
    pl.add_argument(
        "--exclude-brokers-for-leadership",
        metavar="IDS",
        help="brokers that take no new leadership",
    )
    pl.add_argument(
        "--exclude-brokers-for-replica-move",
        metavar="IDS",
        help="brokers that receive no replica",
    )
    pl.add_argument(
        "--demote-brokers",
        metavar="IDS",
        help="demote these brokers (mode demote): they lead nothing and stand last in every "
        "replica list; no data moves",
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


THRESHOLD_FLAGS = {
    "size_bytes": "disk_capacity_threshold",
    "bytes_in": "network_inbound_capacity_threshold",
    "nw_out": "network_outbound_capacity_threshold",
    "cpu": "cpu_capacity_threshold",
}


def plan_options(args: argparse.Namespace) -> PlanOptions:
    """Thresholds and exclusions of the command line, checked before any cluster is read."""
    thresholds = dict(DEFAULT_CAPACITY_THRESHOLDS)
    if args.capacity_threshold is not None:
        try:
            check_capacity_threshold(args.capacity_threshold)
        except InputError as exc:
            raise as_flag(exc) from None
        thresholds.update(size_bytes=args.capacity_threshold, bytes_in=args.capacity_threshold)
    for res, attr in THRESHOLD_FLAGS.items():
        if getattr(args, attr) is not None:
            thresholds[res] = getattr(args, attr)
    try:
        return PlanOptions(
            capacity_thresholds=thresholds,
            max_replicas_per_broker=args.max_replicas_per_broker,
            exclude_topics=args.exclude_topics,
            exclude_brokers_for_leadership=tuple(
                parse_ids(args.exclude_brokers_for_leadership, "--exclude-brokers-for-leadership")
            ),
            exclude_brokers_for_replica_move=tuple(
                parse_ids(
                    args.exclude_brokers_for_replica_move, "--exclude-brokers-for-replica-move"
                )
            ),
        )
    except InputError as exc:
        raise as_flag(exc) from None


def run_plan(args: argparse.Namespace) -> int:
    # Outputs and numbers first: a bad flag is reported before a live cluster is read.
    check_output_paths({"--output": args.output, "--election-output": args.election_output})
    check_seed(args.seed, "--seed")
    brokers = parse_ids(args.brokers, "--brokers")
    if args.demote_brokers:
        if args.mode not in (Mode.FULL.value, Mode.DEMOTE.value) or brokers:
            raise InputError(
                "--demote-brokers is a plan of its own: no --mode or --brokers with it",
                field="--demote-brokers",
            )
        args.mode = Mode.DEMOTE.value
        brokers = parse_ids(args.demote_brokers, "--demote-brokers")
    options = plan_options(args)
    goals = None
    try:
        check_band(args.band)
        if args.capacity_threshold is not None:
            check_capacity_threshold(args.capacity_threshold)
        check_brokers_for_mode(args.mode, brokers)
        if args.goals is not None:
            goals = parse_goals(args.goals)
    except InputError as exc:
        raise as_flag(exc) from None
    capacity = read_capacity_file(args.capacity) if args.capacity else None
    snap = load_snapshot(args)
    if capacity is not None:
        from ..cluster.capacity_file import apply_capacities

        try:  # a broker the capacity file does not cover: the error names the file
            snap = apply_capacities(snap, capacity)
        except InputError as exc:
            raise exc.in_file(args.capacity) from None
        capacity = None
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
            goals=goals,
            options=options,
            capacity=capacity,
        )
    except InputError as exc:
        raise as_flag(exc) from None
    result = res.to_json()
    if res.plan.refused:
        # a hard goal is not met: no file a script could apply by mistake
        output.emit(result, args.format, _plan_table)
        return 1
    outputs = []
    if args.output:
        outputs.append((args.output, res.reassignment_json(), None))
        result["output"] = args.output
    if args.election_output:
        outputs.append((args.election_output, res.election_json(), None))
        result["election_output"] = args.election_output
    io_util.write_json_files(
        outputs
    )  # both or neither, never one run's plan with another's election
    output.emit(result, args.format, _plan_table)
    # A plan that leaves replicas on a dead or removed broker did not do what was asked: say so in the code.
    return 0 if res.complete else 1


def _goal_figure(m: dict) -> str:
    if not m or "value" not in m:
        return textfmt.NA
    if m.get("measure") == "max used/capacity":
        return textfmt.percent(m["value"])
    if m.get("measure") == "max/mean":
        return textfmt.ratio(m["value"], 2)
    return textfmt.count(m["value"])


def _goal_limit(m: dict) -> str:
    if not m or "limit" not in m:
        return textfmt.NA
    if m.get("measure") == "max used/capacity":
        return textfmt.percent(m["limit"], 0)
    if m.get("measure") == "max/mean":
        return textfmt.ratio(m["limit"], 2)
    return textfmt.count(m["limit"])


def _plan_table(console: Console, r: dict) -> None:
    console.print(
        f"mode {r['mode']}: {r['headline']} (lower bound {textfmt.count(r['lower_bound_moves'])} "
        f"moves), {textfmt.bytes_(r['bytes_moved'])} moved, "
        f"{textfmt.count(r['leader_changes'])} leader changes"
    )
    textfmt.print_table(
        console,
        "max/mean",
        ["resource", ">before", ">after"],
        [(k, textfmt.ratio(r["before"][k]), textfmt.ratio(r["after"][k])) for k in r["before"]],
    )
    goals = [g for g in r["goals"] if "before" in g]
    if goals:
        textfmt.print_table(
            console,
            "goals (in priority order)",
            ["goal", ">before", ">after", ">limit", "met"],
            [
                (
                    g["goal"] + (" (hard)" if g["hard"] else ""),
                    _goal_figure(g["before"]),
                    _goal_figure(g["after"]),
                    _goal_limit(g["after"] or g["before"]),
                    textfmt.yes_no(g["satisfied"]),
                )
                for g in goals
            ],
        )
    for u in r.get("unmet", []):
        console.print(Text(f"not met: {textfmt.escape_controls(u)}", style="yellow"))
    if "log_dirs" in r:
        ld = r["log_dirs"]
        console.print(
            f"log dirs: {textfmt.count(ld['moves'])} replicas change directory inside their broker "
            f"({textfmt.bytes_(ld['bytes_moved'])}); worst directory/mean "
            f"{textfmt.ratio(ld['before'], 2)} -> {textfmt.ratio(ld['after'], 2)}"
        )
    if r.get("cpu_source"):
        console.print(Text(f"CPU: {textfmt.escape_controls(r['cpu_source'])}"))
    for v in r["violations"][:20]:
        console.print(Text(textfmt.escape_controls(v), style="red"))
    if len(r["violations"]) > 20:
        console.print(Text(f"... and {len(r['violations']) - 20:,} more", style="red"))
    if r.get("refused"):
        console.print(
            Text(
                "refused: a hard goal is not met (see above); no reassignment file written",
                style="red",
            )
        )
    elif not r["complete"]:
        console.print(
            Text("incomplete: replicas remain on dead or removed brokers (see above)", style="red")
        )
    elif not r["goals_satisfied"]:
        console.print(
            Text(
                "not every goal was met (the lower bound is for meeting all of them)",
                style="yellow",
            )
        )
