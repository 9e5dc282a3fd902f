"""Report sections for any single JSON output of the toolkit (docs/formats.md section 6).

`kafka-rebalance report PATH` takes a results folder or one JSON file. A file is recognised
by its shape (`kind_of`): the demo's report.json, a reassignment plan (Kafka's JSON), `cluster
plan`/`skew`/`describe`/`execute` results, a cluster snapshot, a `simulate` summary or
`--compare`, a pipeline `sweep`/`lag`/`load-model`/`offsets` summary. Each kind becomes
sections titled with the file it came from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .. import textfmt
from ..errors import InputError
from .html import RESOURCES, Section, bar_figure, broker_load_figure, broker_order

REPORT_KEYS = ("broker_load", "leaders", "moves", "ownership", "compare", "lag", "sweep")


def _has(doc: Mapping[str, Any], *keys: str) -> bool:
    return all(k in doc for k in keys)


def kind_of(doc: Any) -> str | None:
    """Which toolkit output `doc` is, or None."""
    if not isinstance(doc, dict):
        return None
    parts = doc.get("partitions")
    if (
        "version" in doc
        and isinstance(parts, list)
        and all(isinstance(p, dict) and "replicas" in p for p in parts)
    ):
        return "reassignment"
    if _has(doc, "mode", "plan") and isinstance(doc["plan"], dict) and "batches" in doc["plan"]:
        return "execute"
    if _has(doc, "replica_moves", "lower_bound_moves", "before", "after"):
        return "plan"
    brokers = doc.get("brokers")
    if isinstance(brokers, list) and "max_over_mean" in doc:
        return "skew"
    if isinstance(brokers, list) and isinstance(parts, list):
        return "snapshot"
    if _has(doc, "alive_brokers", "under_replicated_partitions"):
        return "describe"
    if _has(doc, "rebalances", "unavailable_partition_ms", "records"):
        return "simulate"
    if "by_variant" in doc or _has(doc, "scenarios", "skipped", "failed"):
        return "sweep"
    if isinstance(doc.get("groups"), dict) and "lag_rows" in doc:
        return "lag"
    if _has(doc, "valid_partitions", "ready"):
        return "load-model"
    if _has(doc, "commits", "offset_tombstones"):
        return "offsets"
    if any(k in doc for k in (*REPORT_KEYS, "title", "cards")):
        return "report"
    return None


KINDS = (
    "report",
    "reassignment",
    "plan",
    "skew",
    "snapshot",
    "describe",
    "execute",
    "simulate",
    "compare",
    "sweep",
    "lag",
    "load-model",
    "offsets",
)


def _kv_section(title: str, doc: Mapping[str, Any], source: str, skip: tuple = ()) -> Section:
    rows = [
        [textfmt.label(k), textfmt.by_name(k, v)]
        for k, v in doc.items()
        if k not in skip and not (isinstance(v, (list, dict)) and len(v) > 8)
    ]
    sec = Section(f"{title}: {source}", source=source)
    sec.tables.append(("", ["field", "value"], rows))
    return sec


def _reassignment(doc: dict, source: str) -> list[Section]:
    parts = sorted(doc["partitions"], key=lambda p: (str(p["topic"]), broker_order(p["partition"])))
    per_broker: dict[str, int] = {}
    for p in parts:
        for b in p["replicas"]:
            per_broker[str(b)] = per_broker.get(str(b), 0) + 1
    brokers = sorted(per_broker, key=broker_order)
    sec = Section(
        f"Reassignment plan: {source}",
        f"{len(parts):,} partitions get a new replica list; each broker's replicas among them.",
        source=source,
    )
    sec.figures.append(
        bar_figure(
            "Target replicas per broker in the plan",
            brokers,
            {"replicas": [per_broker[b] for b in brokers]},
            "replicas",
        )
    )
    sec.figures[-1].update_xaxes(title_text="broker")
    sec.tables.append(
        (
            "partitions and their target replicas",
            ["topic", "partition", "replicas"],
            [[p["topic"], p["partition"], textfmt.ids(p["replicas"])] for p in parts],
        )
    )
    return [sec]


def _broker_load(brokers: list[dict], key: str) -> dict[str, dict[str, float]]:
    have_load = any(b.get("bytes_in") or b.get("size_bytes") for b in brokers)
    res = [r for r in RESOURCES if r in ("replicas", "leaders") or have_load]
    return {r: {str(b[key]): float(b.get(r) or 0) for b in brokers} for r in res}


def _skew(doc: dict, source: str) -> list[Section]:
    brokers = sorted(doc["brokers"], key=lambda b: broker_order(b["broker"]))
    has_load = any(b.get("bytes_in") or b.get("size_bytes") for b in brokers)
    sec = Section(
        f"Broker skew: {source}",
        f"Each resource per broker; a resource is skewed when max/mean exceeds the band "
        f"{textfmt.ratio(doc.get('threshold'))}."
        + ("" if has_load else " This cluster has no load data: bytes show n/a."),
        source=source,
    )
    sec.figures.append(
        broker_load_figure(_broker_load(brokers, "broker"), None, title="Broker load")
    )
    rate = (lambda v: textfmt.rate(v)) if has_load else (lambda v: textfmt.NA)
    size = (lambda v: textfmt.bytes_(v)) if has_load else (lambda v: textfmt.NA)
    sec.tables.append(
        (
            "per broker",
            ["broker", "rack", "alive", "replicas", "leaders", "bytes in", "bytes out", "size"],
            [
                [
                    b["broker"],
                    b.get("rack") or "-",
                    textfmt.yes_no(b.get("alive", True)),
                    textfmt.count(b.get("replicas")),
                    textfmt.count(b.get("leaders")),
                    rate(b.get("bytes_in")),
                    rate(b.get("bytes_out")),
                    size(b.get("size_bytes")),
                ]
                for b in brokers
            ],
        )
    )
    mom = doc.get("max_over_mean") or {}
    sec.tables.append(
        (
            "max / mean per resource",
            ["resource", "max / mean"],
            [
                [
                    r.replace("_", " "),
                    textfmt.NA
                    if not has_load and r != "replicas" and "leader" not in r
                    else textfmt.ratio(v),
                ]
                for r, v in mom.items()
            ],
        )
    )
    return [sec]


def _snapshot(doc: dict, source: str) -> list[Section]:
    import dataclasses

    from ..cluster.skew import DEFAULT_BALANCE_THRESHOLD, skew_report
    from ..cluster.snapshot import parse_snapshot

    try:
        snap = parse_snapshot(doc)
    except InputError as exc:
        raise exc.in_file(source) from None
    rep = skew_report(snap, DEFAULT_BALANCE_THRESHOLD)
    as_skew = {
        "brokers": [dataclasses.asdict(b) for b in rep.brokers],
        "max_over_mean": rep.max_over_mean,
        "threshold": rep.threshold,
    }
    return _skew(as_skew, source)


def _plan(doc: dict, source: str) -> list[Section]:
    res = [r for r in doc["before"] if r in doc["after"]]
    sec = Section(
        f"Plan: {source}",
        f"mode {doc.get('mode', '?')}: {textfmt.count(doc['replica_moves'])} replica moves "
        f"(lower bound {textfmt.count(doc['lower_bound_moves'])}), "
        f"{textfmt.bytes_(doc.get('bytes_moved'))} moved, "
        f"{textfmt.count(doc.get('leader_changes'))} leader changes.",
        source=source,
    )
    sec.figures.append(
        bar_figure(
            "max / mean per resource, before and after the plan",
            res,
            {"before": [doc["before"][r] for r in res], "after": [doc["after"][r] for r in res]},
            "max / mean",
        )
    )
    sec.tables.append(
        (
            "max / mean per resource",
            ["resource", "before", "after"],
            [
                [
                    r.replace("_", " "),
                    textfmt.ratio(doc["before"][r]),
                    textfmt.ratio(doc["after"][r]),
                ]
                for r in res
            ],
        )
    )
    skip = ("before", "after", "violations", "reassignments")
    sec.tables.append(
        (
            "summary",
            ["field", "value"],
            [
                [k.replace("_", " "), textfmt.by_name(k, v)]
                for k, v in doc.items()
                if k not in skip and not isinstance(v, (list, dict))
            ],
        )
    )
    if doc.get("violations"):
        sec.tables.append(("goals not met", ["violation"], [[v] for v in doc["violations"]]))
    return [sec]


def _execute(doc: dict, source: str) -> list[Section]:
    plan = doc["plan"]
    simulated = bool(doc.get("simulated"))
    where = "a simulated cluster" if simulated else "the cluster"
    mode = doc.get("mode")
    label = "dry run" if mode == "dry-run" else f"executed on {where}"
    title = f"Plan execution ({'simulated' if simulated else label}): {source}"
    status = doc.get("status") or {}
    batches = sorted(plan["batches"], key=lambda b: int(b["index"]))
    sec = Section(
        title,
        f"{textfmt.count(plan.get('partitions'))} partitions, "
        f"{textfmt.count(plan.get('replica_moves'))} replica moves, "
        f"{textfmt.bytes_(plan.get('bytes_moved'))} in {len(batches)} batches ({label}).",
        source=source + (" (simulated cluster)" if simulated else ""),
    )
    sec.figures.append(
        bar_figure(
            "Replica moves per batch" + (" (simulated)" if simulated else ""),
            [str(int(b["index"]) + 1) for b in batches],
            {"replica moves": [b["replica_moves"] for b in batches]},
            "replica moves",
        )
    )
    sec.figures[-1].update_xaxes(title_text="batch")
    sec.tables.append(
        (
            "batches",
            ["batch", "partitions", "replica moves", "bytes", "status"],
            [
                [
                    int(b["index"]) + 1,
                    textfmt.count(b["partitions"]),
                    textfmt.count(b["replica_moves"]),
                    textfmt.bytes_(b["bytes_moved"]),
                    status.get(str(b["index"]), "planned"),
                ]
                for b in batches
            ],
        )
    )
    return [sec]


def _simulate(doc: dict, source: str) -> list[Section]:
    sec = _kv_section("Simulation", doc, source, skip=("timeline",))
    tl = doc.get("timeline") or []
    if tl:
        sec.tables.append(
            (
                "rebalances",
                ["at", "generation", "cause"],
                [[textfmt.duration_ms(r["ts_ms"]), r["generation"], r["cause"]] for r in tl],
            )
        )
    return [sec]


def _sweep(doc: dict, source: str) -> list[Section]:
    sec = _kv_section("Sweep", doc, source, skip=("by_variant", "errors"))
    rows = doc.get("by_variant") or []
    if rows:
        cols = list(rows[0])
        labels = [f"{r.get('protocol')} / {r.get('assignor')}" for r in rows]
        sec.figures.append(
            bar_figure(
                "Mean stop-the-world cost per configuration",
                labels,
                {
                    m: [r.get(m) or 0 for r in rows]
                    for m in ("unavailable_partition_ms", "member_paused_ms")
                    if m in cols
                },
                "ms",
            )
        )
        sec.tables.append(
            (
                "means over seeds",
                [c.replace("_", " ") for c in cols],
                [[textfmt.by_name(c, r[c]) for c in cols] for r in rows],
            )
        )
    return [sec]


def _lag(doc: dict, source: str) -> list[Section]:
    sec = _kv_section("Lag", doc, source, skip=("groups",))
    groups = doc.get("groups") or {}
    sec.tables.append(
        (
            "Burrow status per group",
            ["group", "status", "complete", "total lag", "partitions", "worst partition"],
            [
                [
                    name,
                    g["status"],
                    textfmt.percent(g.get("complete"), 0),
                    textfmt.count(g.get("total_lag")),
                    textfmt.count(g.get("partitions")),
                    f"{g['maxlag']['topic']}-{g['maxlag']['partition']}: "
                    f"{textfmt.count(g['maxlag']['current_lag'])}, {g['maxlag']['status']}"
                    if g.get("maxlag")
                    else "-",
                ]
                for name, g in sorted(groups.items())
            ],
        )
    )
    return [sec]


SECTIONS: dict[str, Callable[[dict, str], list[Section]]] = {
    "reassignment": _reassignment,
    "skew": _skew,
    "snapshot": _snapshot,
    "plan": _plan,
    "execute": _execute,
    "simulate": _simulate,
    "sweep": _sweep,
    "lag": _lag,
    "describe": lambda d, s: [_kv_section("Cluster", d, s)],
    "load-model": lambda d, s: [_kv_section("Load model", d, s)],
    "offsets": lambda d, s: [_kv_section("__consumer_offsets", d, s)],
}


def sections_for(doc: Any, source: str) -> list[Section]:
    """The sections of one non-report output; InputError when it is no toolkit output."""
    kind = kind_of(doc)
    if kind is None or kind == "report":
        shown = sorted(doc)[:8] if isinstance(doc, dict) else type(doc).__name__
        raise InputError(
            "not an output of kafka-rebalance this report reads (a plan, skew, describe, "
            "snapshot, execute, simulate summary or --compare, sweep, lag, load-model or offsets "
            f"JSON, or a demo report.json); found {shown}",
            source=source,
        )
    return SECTIONS[kind](doc, source)


def short_name(path: Path, root: Path | None = None) -> str:
    """A file's name as the report shows it: relative to the folder given, else its name."""
    if root is not None:
        try:
            return str(path.relative_to(root))
        except ValueError:
            pass
    return path.name
