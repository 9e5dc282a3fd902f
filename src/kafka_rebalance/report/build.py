"""Turn a results document (RESULTS/report.json, written by the demo) into report sections.

The document is plain JSON so any job can contribute to it; every key is
optional and a missing part is said, not silently dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..errors import InputError
from ..io_util import atomic_write_text, read_structured
from .html import (Section, bar_figure, broker_load_figure, lag_figure, moves_figure, ownership_timeline_figure,
                   render_html)

REPORT_JSON = "report.json"
PROTOCOL_LABELS = {"eager": "eager (classic)", "cooperative": "cooperative (KIP-429)",
                   "static": "static (KIP-345)", "consumer": "consumer (KIP-848)"}


def moves_intro(doc: Mapping[str, Any]) -> str:
    return doc.get("moves_intro", "Replicas each plan moves; the lower bound is what any valid plan must move.")
REPORT_HTML = "report.html"


def _expect(doc: Mapping[str, Any], key: str, kind: type, source: str) -> Any:
    value = doc.get(key)
    if value is not None and not isinstance(value, kind):
        raise InputError(f"expected {kind.__name__}, got {type(value).__name__}", source=source, field=key)
    return value


def build_sections(doc: Mapping[str, Any], source: str = REPORT_JSON) -> list[Section]:
    sections: list[Section] = []
    load = _expect(doc, "broker_load", dict, source)
    if load:
        sec = Section("Broker load before and after the plan",
                      load.get("intro", "Each resource per broker; the plan should flatten the red bars into green ones."))
        sec.figures.append(broker_load_figure(load.get("before", {}), load.get("after")))
        ratios = load.get("max_over_mean")
        if ratios:
            rows = [[r, ratios.get("before", {}).get(r, ""), ratios.get("after", {}).get(r, "")]
                    for r in sorted(set(ratios.get("before", {})) | set(ratios.get("after", {})))]
            sec.tables.append(("max / mean per resource", ["resource", "before", "after"], rows))
        sections.append(sec)
    leaders = _expect(doc, "leaders", dict, source)
    if leaders:
        sec = Section("Leader distribution", leaders.get("intro", "Leaders per broker: after a rolling restart, "
                                                          "after preferred leader election, after leader balancing."))
        stages = {k: v for k, v in leaders.items() if isinstance(v, dict)}
        brokers = sorted({b for v in stages.values() for b in v}, key=lambda b: int(b) if str(b).isdigit() else b)
        sec.figures.append(bar_figure("Leaders per broker", [str(b) for b in brokers],
                                      {k: [v.get(b, 0) for b in brokers] for k, v in stages.items()}, "leaders"))
        sections.append(sec)
    moves = _expect(doc, "moves", dict, source)
    if moves:
        sec = Section("Replica moves versus the lower bound and Kafka's --generate",
                      moves_intro(doc))
        sec.figures.append(moves_figure({k: float(v) for k, v in moves.items() if isinstance(v, (int, float))}))
        plans = doc.get("plans")
        if isinstance(plans, list) and plans:
            header = list(plans[0].keys())
            sec.tables.append(("plans", header, [[p.get(h, "") for h in header] for p in plans]))
        sections.append(sec)
    ownership = _expect(doc, "ownership", dict, source)
    if ownership:
        sec = Section("Partition ownership per protocol",
                      "Each bar is a partition owned by a member; gaps and shaded bands are where the world stopped.")
        for protocol, o in ownership.items():
            sec.figures.append(ownership_timeline_figure(PROTOCOL_LABELS.get(protocol, protocol), o.get("intervals", []), int(o.get("duration_ms", 0)),
                                                         o.get("stops", [])))
        sections.append(sec)
    compare = _expect(doc, "compare", dict, source)
    if compare:
        sec = Section("What a rolling restart costs under each protocol")
        names = list(compare)
        labels = [PROTOCOL_LABELS.get(n, n) for n in names]
        keys = ["rebalances", "unavailable_partition_ms", "member_paused_ms", "partitions_moved", "revocations"]
        sec.figures.append(bar_figure("Stop-the-world cost", labels,
                                      {k: [compare[n].get(k, 0) for n in names] for k in ("unavailable_partition_ms", "member_paused_ms")},
                                      "ms"))
        rows = [[PROTOCOL_LABELS.get(n, n)] + [compare[n].get(k, "") for k in keys] +
                [compare[n].get("records", {}).get("duplicates", ""), compare[n].get("records", {}).get("lost", "")]
                for n in names]
        sec.tables.append(("side by side", ["protocol"] + keys + ["duplicates", "lost"], rows))
        sections.append(sec)
    lag = _expect(doc, "lag", dict, source)
    if lag:
        sec = Section("Lag and Burrow status")
        series = {k: ([p[0] for p in v], [p[1] for p in v]) for k, v in lag.get("series", {}).items()}
        if series:
            sec.figures.append(lag_figure(series, lag.get("title", "Consumer lag")))
        st = lag.get("statuses")
        if st:
            sec.tables.append(("Burrow evaluation", st.get("columns", []), st.get("rows", [])))
        sections.append(sec)
    sweep = _expect(doc, "sweep", dict, source)
    if sweep and sweep.get("rows"):
        cols, rows = sweep["columns"], sweep["rows"]
        label_cols = [c for c in sweep.get("label_columns", cols[:3]) if c in cols]
        metrics = [m for m in sweep.get("metrics", [sweep.get("metric", "unavailable_partition_ms")]) if m in cols]
        labels = [" / ".join(str(r[cols.index(c)]) for c in label_cols) for r in rows]
        sec = Section("Simulation sweep", f"{len(rows)} simulations run as Spark tasks "
                      f"({' / '.join(label_cols)}).")
        if metrics:
            sec.figures.append(bar_figure("Stop-the-world cost per configuration", labels,
                                          {m: [r[cols.index(m)] for r in rows] for m in metrics}, "ms"))
        sec.tables.append(("sweep results", cols, rows))
        sections.append(sec)
    missing = [k for k in ("broker_load", "leaders", "moves", "ownership", "compare", "lag", "sweep") if not doc.get(k)]
    if missing:
        sections.append(Section("Not in these results", "These parts were not produced by the run: " + ", ".join(missing)))
    return sections


def write_report(results: str | Path, out: str | Path | None = None) -> Path:
    """Read RESULTS (a folder holding report.json, or the JSON itself) and write the HTML page."""
    path = Path(results)
    doc_path = path / REPORT_JSON if path.is_dir() else path
    doc = read_structured(doc_path)
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object", source=str(doc_path))
    sections = build_sections(doc, str(doc_path))
    page = render_html(doc.get("title", "kafka-rebalance report"), doc.get("subtitle", ""), doc.get("cards", {}), sections)
    target = Path(out) if out else doc_path.parent / REPORT_HTML
    atomic_write_text(target, page)
    return target
