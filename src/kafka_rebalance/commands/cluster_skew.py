"""`kafka-rebalance cluster skew`: broker skew per resource and leader imbalance per broker."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console
from rich.text import Text

from .. import output, textfmt
from ..cluster.leader_skew import DEFAULT_LEADER_IMBALANCE_PER_BROKER_PERCENTAGE
from ..cluster.planner.optimizer import check_band
from ..cluster.skew import DEFAULT_BALANCE_THRESHOLD
from ..errors import InputError
from ..ops.cluster import check_percentage, skew
from .cluster_common import add_source, load_snapshot


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
    s.add_argument(
        "--check",
        action="store_true",
        help="exit 3 when a resource is above the band or a broker's leader imbalance is above "
        "the percentage (for scripts and alerts)",
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
    if args.check:
        findings = skew_check_findings(result)
        for f in findings:
            print(f"check failed: {f}", file=sys.stderr)
        return 3 if findings else 0
    return 0


def skew_check_findings(r: dict) -> list[str]:
    """What `cluster skew --check` reports: resources above the band, brokers whose leader
    imbalance is above leader.imbalance.per.broker.percentage."""
    out = [
        f"{res} max/mean {textfmt.ratio(r['max_over_mean'][res])} is above the band "
        f"{textfmt.ratio(r['threshold'])}"
        for res in r["skewed"]
    ]
    pct = r["leader_imbalance"]["zk"]["leader_imbalance_per_broker_percentage"]
    ratio = {b["broker"]: b["leader_imbalance_ratio"] for b in r["brokers"]}
    out += [
        f"broker {b} leader imbalance {textfmt.percent(ratio.get(b), 0)} is above "
        f"leader.imbalance.per.broker.percentage {textfmt.number(pct)}%"
        for b in r["leader_imbalance"]["zk"]["brokers_over"]
    ]
    return out


_LOAD_RESOURCES = ("bytes_in", "bytes_out", "messages_in", "size_bytes", "cpu")


def _skew_table(console: Console, r: dict) -> None:
    brokers = sorted(r["brokers"], key=lambda b: b["broker"])
    # no load data (a snapshot without `load`): bytes are n/a, never zeros or a ratio of zeros
    has_load = any(b.get(k) for b in brokers for k in _LOAD_RESOURCES)
    c = textfmt.count
    any_dead = not all(b["alive"] for b in brokers)
    if has_load:
        in_unit, bytes_in = textfmt.bytes_column([b["bytes_in"] for b in brokers], True)
        out_unit, bytes_out = textfmt.bytes_column([b["bytes_out"] for b in brokers], True)
        size_unit, size = textfmt.bytes_column([b["size_bytes"] for b in brokers])
    else:
        in_unit = out_unit = size_unit = ""
        bytes_in = bytes_out = size = [textfmt.NA] * len(brokers)
    textfmt.print_table(
        console,
        "broker load" + ("" if has_load else " (no load data: bytes n/a)"),
        [
            ">broker",
            "rack",
            *(["alive"] if any_dead else []),
            ">replicas",
            ">leaders",
            ">preferred leaders",
            f">in {in_unit}".rstrip(),
            f">out {out_unit}".rstrip(),
            f">size {size_unit}".rstrip(),
            ">leader imbalance",
        ],
        [
            [
                str(b["broker"]),
                b["rack"] or "-",
                *([textfmt.yes_no(b["alive"])] if any_dead else []),
                c(b["replicas"]),
                c(b["leaders"]),
                c(b["preferred_leaders"]),
                bytes_in[i],
                bytes_out[i],
                size[i],
                textfmt.percent(b["leader_imbalance_ratio"], 0),
            ]
            for i, b in enumerate(brokers)
        ],
        row_styles=[None if b["alive"] else "dim" for b in brokers],
    )
    thr = r["threshold"]
    rows, styles = [], []
    for k, v in r["max_over_mean"].items():
        empty = not has_load and k in _LOAD_RESOURCES
        rows.append(
            [
                k.replace("_", " "),
                textfmt.NA if empty else textfmt.ratio(v),
                "-" if empty else ("above the band" if v > thr else "ok"),
            ]
        )
        styles.append("red" if not empty and v > thr else None)
    textfmt.print_table(
        console,
        f"max/mean per resource (band {textfmt.ratio(thr)})",
        ["resource", ">max/mean", "verdict"],
        rows,
        row_styles=styles,
    )
    li = r["leader_imbalance"]
    pct = li["zk"]["leader_imbalance_per_broker_percentage"]
    over = li["zk"]["brokers_over"]
    console.print(
        Text(
            f"leader imbalance above {textfmt.number(pct)}%: "
            + (f"brokers {textfmt.ids(over)}" if over else "no broker")
            + f"; partitions not led by their preferred replica: "
            f"{c(li['kraft']['imbalanced_partitions'])}"
        )
    )
