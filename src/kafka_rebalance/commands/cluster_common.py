"""What the `cluster` subcommands share: the snapshot source flags, flag parsing, table helpers."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, TypeVar

from rich.console import Console

from .. import io_util, limits, textfmt
from ..errors import InputError
from ..fields import INT32_MAX
from ..model import ClusterSnapshot
from ..ops.cluster_source import load_snapshot as _load_snapshot

T = TypeVar("T")


def add_source(p: argparse.ArgumentParser) -> None:
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


def load_snapshot(args: argparse.Namespace) -> ClusterSnapshot:
    """The cluster of `--snapshot` or `--bootstrap-server`, with the loads of `--load`; refused
    when its plan would need more memory than the machine has available."""
    snap = _load_snapshot(
        getattr(args, "snapshot", None),
        getattr(args, "bootstrap_server", None),
        getattr(args, "command_config", None),
        getattr(args, "load", None),
    )
    replicas = sum(len(p.replicas) for p in snap.partitions)
    estimate = limits.cluster_memory(len(snap.brokers), len(snap.partitions), replicas)
    where = getattr(args, "snapshot", None) or getattr(args, "bootstrap_server", None)
    try:
        limits.check_memory(
            estimate,
            f"a cluster of {len(snap.brokers):,} brokers and {len(snap.partitions):,} partitions",
        )
    except InputError as exc:
        raise InputError(exc.message, source=where) from None
    return snap


# The library's parameter names, as the command line spells them.
FLAGS = {
    "brokers": "--brokers",
    "broker_racks": "--broker-racks",
    "band": "--band",
    "capacity_threshold": "--capacity-threshold",
    "goals": "--goals",
    "exclude_topics": "--exclude-topics",
    "exclude_brokers_for_leadership": "--exclude-brokers-for-leadership",
    "exclude_brokers_for_replica_move": "--exclude-brokers-for-replica-move",
    "max_replicas_per_broker": "--max-replicas-per-broker",
    "disk_capacity_threshold": "--disk-capacity-threshold",
    "network_inbound_capacity_threshold": "--network-inbound-capacity-threshold",
    "network_outbound_capacity_threshold": "--network-outbound-capacity-threshold",
    "cpu_capacity_threshold": "--cpu-capacity-threshold",
    "seed": "--seed",
    "leader_imbalance_per_broker_percentage": "--leader-imbalance-per-broker-percentage",
}


def as_flag(exc: InputError) -> InputError:
    """The library's error, naming the command-line flag instead of the parameter."""
    field = FLAGS.get(exc.field, exc.field) if exc.field else None
    return InputError(exc.message, source=exc.source, field=field)


def read_input(path: str, parse: Callable[[Any], T]) -> T:
    """`parse` of the JSON or YAML file the user named; its errors name the file."""
    try:
        return parse(io_util.read_structured(path))
    except InputError as exc:
        raise exc.in_file(path) from None


def parse_racks(text: str | None, flag: str) -> dict[int, str]:
    """`ID:RACK,ID:RACK` -> {id: rack}."""
    out: dict[int, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        bid, sep, rack = item.partition(":")
        try:
            key: int | None = int(bid)
        except ValueError:
            key = None
        if not sep or key is None or not rack.strip():
            raise InputError(f"expected ID:RACK, got {item!r}", field=flag)
        if not 0 <= key <= INT32_MAX:
            raise InputError(f"broker ids are int32 >= 0, got {key}", field=flag)
        if key in out:
            raise InputError(f"broker {key} given twice", field=flag)
        out[key] = rack.strip()
    return out


def parse_ids(text: str | None, flag: str) -> list[int]:
    if not text:
        return []
    try:
        ids = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"expected comma-separated broker ids, got {text!r}", field=flag) from None
    limits.check("brokers", len(ids), field=flag)
    seen: set[int] = set()
    for b in ids:
        if b < 0:  # Kafka's node ids are >= 0; -1 means "no broker"
            raise InputError(f"broker ids are >= 0, got {b}", field=flag)
        if b > INT32_MAX:
            raise InputError(f"broker ids are int32 (at most {INT32_MAX}), got {b}", field=flag)
        if b in seen:
            raise InputError(f"broker {b} given twice", field=flag)
        seen.add(b)
    return ids


def kv_table(title: str):
    """A `field  value` table of a flat result, each value in the unit its name says."""

    def render(console: Console, r: dict) -> None:
        textfmt.print_kv(
            console, title, [(textfmt.label(k), textfmt.by_name(k, v)) for k, v in r.items()]
        )

    return render
