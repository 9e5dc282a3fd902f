"""`kafka-rebalance cluster describe|skew|elect|plan|generate` (and `execute`, from cluster_execute).

Every subcommand reads a cluster from `--snapshot FILE` (docs/formats.md section 3
JSON, or the text of `kafka-topics --describe`) or from a live cluster with
`--bootstrap-server HOST:PORT [--command-config FILE]`. Files are written
atomically in the exact JSON of Kafka's own tools.
"""

from __future__ import annotations

import argparse
import importlib
import math
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from .. import io_util, output
from ..cluster import kafka_json
from ..cluster.election import Controller, auto_leader_rebalance, preferred_election
from ..cluster.generate import generate_reassignment
from ..cluster.leader_skew import (
    DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE,
    kraft_imbalanced_partitions,
    zk_leader_imbalance,
)
from ..cluster.planner import DEFAULT_PLAN_BAND, Mode, plan
from ..cluster.planner.optimizer import check_band, check_brokers_for_mode, check_capacity_threshold
from ..cluster.skew import DEFAULT_BALANCE_THRESHOLD, skew_report
from ..cluster.snapshot import (
    alive_inferred,
    parse_snapshot,
    parse_snapshot_text,
    snapshot_to_json,
    with_loads,
)
from ..errors import InputError
from ..model import ClusterSnapshot, PartitionLoad


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "cluster",
        help="broker and leader skew, preferred leader election, reassignment plans",
        description="Cluster rebalancing on a snapshot or a live cluster.",
    )
    sub = p.add_subparsers(dest="cluster_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])

    d = sub.add_parser("describe", help="summary of the cluster; --output writes the snapshot JSON")
    _source(d)
    d.add_argument(
        "--output", metavar="FILE", help="write the snapshot as JSON (docs/formats.md section 3)"
    )
    output.add_format_flag(d)
    d.set_defaults(func=run_describe)

    s = sub.add_parser("skew", help="broker skew per resource and leader imbalance per broker")
    _source(s)
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

    e = sub.add_parser("elect", help="preferred leader election JSON for kafka-leader-election.sh")
    _source(e)
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

    pl = sub.add_parser(
        "plan",
        help="reassignment plan for kafka-reassign-partitions.sh",
        epilog='Exit code 1 (with "complete": false and the violations) when replicas '
        "remain on dead or removed brokers; 2 on bad input.",
    )
    _source(pl)
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

    g = sub.add_parser("generate", help="emulate kafka-reassign-partitions.sh --generate")
    _source(g)
    g.add_argument(
        "--topics-to-move-json-file",
        metavar="F",
        help='{"version": 1, "topics": [...]} (default all)',
    )
    g.add_argument(
        "--broker-list", metavar="IDS", help="brokers to place on (default: alive brokers)"
    )
    g.add_argument(
        "--seed", type=int, default=0, help="seed of the java.util.Random Kafka leaves unseeded"
    )
    g.add_argument("--output", metavar="FILE", help="write the proposed reassignment JSON here")
    output.add_format_flag(g)
    g.set_defaults(func=run_generate)

    try:
        execute = importlib.import_module(".cluster_execute", __package__)
    except ModuleNotFoundError as exc:
        if exc.name != f"{__package__}.cluster_execute":
            raise
    else:
        execute.register_execute(sub)


def _source(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--snapshot", metavar="FILE", help="snapshot JSON or `kafka-topics --describe` text"
    )
    src.add_argument("--bootstrap-server", metavar="HOST:PORT", help="read a live cluster")
    p.add_argument(
        "--command-config", metavar="FILE", help="client properties for --bootstrap-server"
    )
    p.add_argument(
        "--load",
        metavar="PATH",
        help="partition loads to use: the load model's partition_load.parquet (file or folder) "
        "or a snapshot JSON with `load`",
    )


def load_snapshot(args) -> ClusterSnapshot:
    snap = read_snapshot(args)
    if getattr(args, "load", None):
        snap = with_loads(snap, read_loads(args.load))
    return snap


def read_loads(path: str) -> dict[tuple[str, int], PartitionLoad]:
    """Per-partition load from the pipeline's partition_load.parquet or from a snapshot JSON."""
    p = Path(path)
    if not p.exists():
        raise InputError("file not found", source=str(p))
    if p.suffix.lower() == ".json":
        try:
            snap = parse_snapshot(io_util.read_structured(p))
        except InputError as exc:
            raise exc.in_file(str(p)) from None
        return {(x.topic, x.partition): x.load for x in snap.partitions if x.load is not None}
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(str(p))
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's input error
        raise InputError(f"cannot read Parquet: {exc}", source=str(p)) from None
    cols = set(table.column_names)
    for need in ("topic", "partition", "bytes_in", "bytes_out", "messages_in", "size_bytes"):
        if need not in cols:
            raise InputError("missing column", source=str(p), field=need)
    d = table.to_pydict()
    cpu = d.get("cpu") or [0.0] * table.num_rows
    out = {}
    for i in range(table.num_rows):
        vals = [d[k][i] for k in ("bytes_in", "bytes_out", "messages_in", "size_bytes")]
        if any(v is None for v in vals):
            continue
        out[(d["topic"][i], int(d["partition"][i]))] = PartitionLoad(
            *map(float, vals), cpu=float(cpu[i] or 0.0)
        )
    return out


def read_snapshot(args) -> ClusterSnapshot:
    """The cluster of `--snapshot FILE` (JSON or describe text) or `--bootstrap-server`."""
    if getattr(args, "snapshot", None):
        path = Path(args.snapshot)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError("file not found", source=str(path)) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read: {exc}", source=str(path)) from None
        try:
            snap = parse_snapshot_text(text)
        except InputError as exc:
            raise exc.in_file(str(path)) from None
        # the brokers inferred *alive* (the set also holds those inferred dead from leaderless partitions)
        guessed = [b.id for b in snap.brokers if b.alive and b.id in alive_inferred(snap)]
        if guessed:
            # stderr: stdout stays one JSON object under --format json
            print(
                f"note: {path}: brokers {sorted(guessed)} are taken as alive: the describe text does not say "
                "(no Offline: list covers them); a plan would keep replicas on them",
                file=sys.stderr,
            )
        return snap
    from ..kafka.admin import snapshot_from_bootstrap

    return snapshot_from_bootstrap(args.bootstrap_server, args.command_config)


def _racks(text: str | None, flag: str) -> dict[int, str]:
    """`ID:RACK,ID:RACK` -> {id: rack}."""
    out: dict[int, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        bid, sep, rack = item.partition(":")
        try:
            key = int(bid)
        except ValueError:
            key = None
        if not sep or key is None or not rack.strip():
            raise InputError(f"expected ID:RACK, got {item!r}", field=flag)
        if key in out:
            raise InputError(f"broker {key} given twice", field=flag)
        out[key] = rack.strip()
    return out


def _ids(text: str | None, flag: str) -> list[int]:
    if not text:
        return []
    try:
        ids = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"expected comma-separated broker ids, got {text!r}", field=flag) from None
    for i, b in enumerate(ids):
        if b < 0:  # Kafka's node ids are >= 0; -1 means "no broker"
            raise InputError(f"broker ids are >= 0, got {b}", field=flag)
        if b in ids[:i]:
            raise InputError(f"broker {b} given twice", field=flag)
    return ids


JAVA_LONG_MIN, JAVA_LONG_MAX = -(1 << 63), (1 << 63) - 1


def _check_seed(seed: int, flag: str = "--seed") -> None:
    """The seed of a java.util.Random is a Java long."""
    if not JAVA_LONG_MIN <= seed <= JAVA_LONG_MAX:
        raise InputError(f"a Java long ({JAVA_LONG_MIN}..{JAVA_LONG_MAX}), got {seed}", field=flag)


def _check_percentage(pct: float, flag: str = "--leader-imbalance-per-broker-percentage") -> None:
    if not (math.isfinite(pct) and 0.0 <= pct <= 100.0):
        raise InputError(f"a percentage: a number in [0, 100], got {pct!r}", field=flag)


# -- describe --------------------------------------------------------------------


def describe(snap: ClusterSnapshot) -> dict[str, Any]:
    alive = {b.id for b in snap.brokers if b.alive}
    racks: dict[str, int] = {}
    for b in snap.brokers:
        racks[b.rack or ""] = racks.get(b.rack or "", 0) + 1
    under = sum(1 for p in snap.partitions if len(p.isr) < len(p.replicas))
    offline = sum(1 for p in snap.partitions if p.leader is None or p.leader not in alive)
    return {
        "brokers": len(snap.brokers),
        "alive_brokers": len(alive),
        "racks": {k or "(none)": v for k, v in sorted(racks.items())},
        "topics": len({p.topic for p in snap.partitions}),
        "partitions": len(snap.partitions),
        "replicas": sum(len(p.replicas) for p in snap.partitions),
        "under_replicated_partitions": under,
        "offline_partitions": offline,
        "not_led_by_preferred": len(kraft_imbalanced_partitions(snap)),
        "has_load": any(p.load is not None for p in snap.partitions),
    }


def run_describe(args) -> int:
    snap = load_snapshot(args)
    result = describe(snap)
    if args.output:
        io_util.atomic_write_json(args.output, snapshot_to_json(snap), indent=None)
        result["output"] = args.output
    output.emit(result, args.format, _kv_table("cluster"))
    return 0


# -- skew ------------------------------------------------------------------------


def skew(snap: ClusterSnapshot, threshold: float, percentage: float) -> dict[str, Any]:
    rep = skew_report(snap, threshold)
    zk = {b.broker: b for b in zk_leader_imbalance(snap, percentage)}
    brokers = []
    for b in rep.brokers:
        z = zk.get(b.broker)
        brokers.append(
            {
                "broker": b.broker,
                "rack": b.rack,
                "alive": b.alive,
                "replicas": b.replicas,
                "leaders": b.leaders,
                "preferred_leaders": b.preferred_leaders,
                "bytes_in": b.bytes_in,
                "bytes_out": b.bytes_out,
                "messages_in": b.messages_in,
                "size_bytes": b.size_bytes,
                "leader_imbalance_ratio": z.ratio if z else 0.0,
                "leader_imbalance_triggered": bool(z and z.triggered),
            }
        )
    worst = sorted(rep.topics, key=lambda t: (-t.ratio, t.topic))[:10]
    return {
        "brokers": brokers,
        "max_over_mean": rep.max_over_mean,
        "threshold": threshold,
        "skewed": rep.skewed,
        "leader_imbalance": {
            "zk": {
                "leader_imbalance_per_broker_percentage": percentage,
                "brokers_over": [b.broker for b in zk.values() if b.triggered],
            },
            "kraft": {"imbalanced_partitions": len(kraft_imbalanced_partitions(snap))},
        },
        "topic_spread": {
            "max_ratio": max((t.ratio for t in rep.topics), default=1.0),
            "worst": [
                {
                    "topic": t.topic,
                    "replicas": t.replicas,
                    "max_per_broker": t.max_per_broker,
                    "min_per_broker": t.min_per_broker,
                    "ratio": t.ratio,
                }
                for t in worst
            ],
        },
    }


def run_skew(args) -> int:
    try:
        check_band(args.threshold)  # skew's threshold is a balance band: the planner's check
    except InputError as exc:
        raise InputError(exc.message, source=exc.source, field="--threshold") from None
    _check_percentage(args.leader_imbalance_per_broker_percentage)
    result = skew(load_snapshot(args), args.threshold, args.leader_imbalance_per_broker_percentage)
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
        t.add_row(*[_fmt(b[c]) for c in cols], style=None if b["alive"] else "dim")
    console.print(t)
    m = Table(title=f"max/mean (band {r['threshold']})")
    m.add_column("resource")
    m.add_column("max/mean", justify="right")
    for k, v in r["max_over_mean"].items():
        m.add_row(k, f"{v:.3f}", style="red" if v > r["threshold"] else None)
    console.print(m)


# -- elect -----------------------------------------------------------------------


def run_elect(args) -> int:
    _check_percentage(args.leader_imbalance_per_broker_percentage)
    snap = load_snapshot(args)
    if args.auto:
        res = auto_leader_rebalance(
            snap, Controller(args.auto), args.leader_imbalance_per_broker_percentage
        )
        tps = [tp for tp, _, _ in res.elected]
        result: dict[str, Any] = {
            "controller": args.auto,
            "passes": res.passes,
            "elect": len(tps),
            "partitions": [
                {"topic": tp.topic, "partition": tp.partition, "from": old, "to": new}
                for tp, old, new in res.elected
            ],
            "still_not_preferred": len(kraft_imbalanced_partitions(res.after)),
        }
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
        ep = preferred_election(snap, only, topics)
        tps = list(ep.elect)
        result = {
            "elect": len(tps),
            "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in tps],
            "skipped": [
                {
                    "topic": s.tp.topic,
                    "partition": s.tp.partition,
                    "reason": s.reason.value,
                    "detail": s.detail,
                }
                for s in ep.skipped
            ],
        }
    if args.output:
        io_util.atomic_write_json(args.output, kafka_json.election_json(tps))
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


# -- plan ------------------------------------------------------------------------


def plan_command(
    snap: ClusterSnapshot,
    mode: str,
    brokers: list[int],
    band: float = DEFAULT_PLAN_BAND,
    capacity_threshold: float = 0.8,
    leaders_by: str = "count",
    compare_generate: bool = False,
    seed: int = 0,
    topic_spread: bool = True,
    broker_racks: dict[int, str] | None = None,
):
    if compare_generate:
        _check_seed(seed)
    try:
        res = plan(
            snap,
            mode,
            brokers,
            band=band,
            capacity_threshold=capacity_threshold,
            leaders_by_bytes=(leaders_by == "bytes"),
            topic_spread=topic_spread,
            broker_racks=broker_racks,
        )
    except InputError as exc:
        raise _as_flag(exc) from None
    result = res.summary()
    if compare_generate:
        # The plan's brokers: in add-brokers mode they include added brokers the snapshot did not list
        # (given by --broker-racks or, without racks, by --brokers alone); --generate must place on them too.
        brokers_after = res.after_snapshot.brokers
        targets = [
            b.id
            for b in brokers_after
            if b.alive and not (res.mode is Mode.REMOVE_BROKERS and b.id in brokers)
        ]
        gen = generate_reassignment(
            ClusterSnapshot(brokers_after, snap.partitions), targets, seed=seed
        )
        moves = 0
        for p in snap.partitions:
            new = gen.get((p.topic, p.partition))
            if new is not None:
                moves += len(set(new) - set(p.replicas))
        result["generate"] = {"replica_moves": moves, "seed": seed}
    return res, result


def _as_flag(exc: InputError) -> InputError:
    """The planner's error, naming the command-line flag instead of the parameter."""
    flags = {
        "brokers": "--brokers",
        "broker_racks": "--broker-racks",
        "band": "--band",
        "capacity_threshold": "--capacity-threshold",
    }
    return InputError(exc.message, source=exc.source, field=flags.get(exc.field, exc.field))


def run_plan(args) -> int:
    # Numbers first: a bad flag is reported before a live cluster is read.
    _check_seed(args.seed)
    brokers = _ids(args.brokers, "--brokers")
    try:
        check_band(args.band)
        check_capacity_threshold(args.capacity_threshold)
        check_brokers_for_mode(args.mode, brokers)
    except InputError as exc:
        raise _as_flag(exc) from None
    snap = load_snapshot(args)
    res, result = plan_command(
        snap,
        args.mode,
        brokers,
        args.band,
        args.capacity_threshold,
        args.leaders_by,
        args.compare_generate,
        args.seed,
        not args.no_topic_spread,
        _racks(args.broker_racks, "--broker-racks"),
    )
    if args.output:
        io_util.atomic_write_json(
            args.output, kafka_json.reassignment_json(res.reassignments), indent=None
        )
        result["output"] = args.output
    if args.election_output:
        after = {p.tp: p for p in res.after_snapshot.partitions}
        tps = [
            p.tp
            for p in snap.partitions
            if after[p.tp].leader != p.leader and after[p.tp].leader is not None
        ]
        io_util.atomic_write_json(args.election_output, kafka_json.election_json(tps), indent=None)
        result["election_output"] = args.election_output
    output.emit(result, args.format, _plan_table)
    # A plan that leaves replicas on a dead or removed broker did not do what was asked: say so in the code.
    return 0 if res.complete else 1


def _plan_table(console: Console, r: dict) -> None:
    console.print(
        f"mode {r['mode']}: {r['replica_moves']} replica moves (lower bound {r['lower_bound_moves']}), "
        f"{_fmt(r['bytes_moved'])} bytes moved, {r['leader_changes']} leader changes"
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


# -- generate --------------------------------------------------------------------


def run_generate(args) -> int:
    topics = None
    if args.topics_to_move_json_file:
        try:
            topics = kafka_json.parse_topics_to_move_json(
                io_util.read_structured(args.topics_to_move_json_file)
            )
        except InputError as exc:
            raise exc.in_file(args.topics_to_move_json_file) from None
    _check_seed(args.seed)
    brokers = _ids(args.broker_list, "--broker-list") or None
    snap = load_snapshot(args)
    gen = generate_reassignment(snap, brokers, topics, seed=args.seed)
    current = {(p.topic, p.partition): p.replicas for p in snap.partitions}
    entries = [kafka_json.Reassignment(t, n, tuple(r)) for (t, n), r in gen.items()]
    moves = sum(len(set(e.replicas) - set(current[(e.topic, e.partition)])) for e in entries)
    result = {"partitions": len(entries), "replica_moves": moves, "seed": args.seed}
    if args.output:
        io_util.atomic_write_json(args.output, kafka_json.reassignment_json(entries), indent=None)
        result["output"] = args.output
    output.emit(result, args.format, _kv_table("--generate"))
    return 0


# -- helpers ---------------------------------------------------------------------


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) >= 1e4 or v != int(v) else str(int(v))
    return str(v)


def _kv_table(title: str):
    def render(console: Console, r: dict) -> None:
        t = Table(title=title)
        t.add_column("key")
        t.add_column("value", justify="right")
        for k, v in r.items():
            t.add_row(
                k,
                _fmt(v)
                if not isinstance(v, dict)
                else ", ".join(f"{a}={_fmt(b)}" for a, b in v.items()),
            )
        console.print(t)

    return render
