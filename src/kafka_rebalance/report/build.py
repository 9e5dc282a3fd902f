"""Turn a results document (RESULTS/report.json, written by the demo) into report sections.

The document is plain JSON so any job can contribute to it; every key is
optional and a missing part is said, not silently dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import textfmt
from ..errors import InputError
from ..fields import show
from ..io_util import atomic_write_text, read_structured
from .html import (
    RESOURCES,
    Section,
    bar_figure,
    broker_load_figure,
    broker_order,
    lag_figure,
    moves_figure,
    ownership_timeline_figure,
    render_html,
)
from .trace import failing_field

REPORT_JSON = "report.json"
PROTOCOL_LABELS = {
    "eager": "eager (classic)",
    "cooperative": "cooperative (KIP-429)",
    "static": "static (KIP-345)",
    "consumer": "consumer (KIP-848)",
}


def _shaped(path: Path, doc: Any, build: Callable[[Any], list[Section]]) -> list[Section]:
    """`build(doc)`'s sections of the file at `path`; a recognised output whose fields have the
    wrong types (a hand-edited result) is the user's input error naming the file, the field and
    its value (found by building again over a traced copy), not a traceback."""
    try:
        return build(doc)
    except InputError as exc:
        # the sections carry the file's short name; an error names the path the user gave
        raise InputError(exc.message, source=str(path), field=exc.field) from None
    except (TypeError, KeyError, ValueError, AttributeError, IndexError) as exc:
        where = failing_field(build, doc)
        if where is None:
            raise InputError(
                f"a field has the wrong type or is missing ({type(exc).__name__}: {exc})",
                source=str(path),
            ) from None
        field, value = where
        raise InputError(
            f"unexpected value {show(value)} ({type(exc).__name__}: {exc})",
            source=str(path),
            field=field,
        ) from None


def moves_intro(doc: Mapping[str, Any]) -> str:
    return doc.get(
        "moves_intro", "Replicas each plan moves; the lower bound is what any valid plan must move."
    )


REPORT_HTML = "report.html"


# ---- validation: every field the sections read, checked before anything is drawn or written ----------------

_KIND = {
    dict: "an object",
    list: "a list",
    str: "a string",
    "number": "a number",
    "scalar": "a string, number, true/false or null",
    "number or empty": 'a number, null or ""',
}


class _Check:
    """Checks one document; errors name the file, the field path (`sweep.rows[0]`) and the bad value."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, value: Any, wanted: str) -> None:
        shown = repr(value)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise InputError(
            f"expected {wanted}, got {type(value).__name__} {shown}", source=self.source, field=path
        )

    def is_(self, path: str, value: Any, kind: Any, optional: bool = False) -> Any:
        if value is None and optional:
            return value
        ok = {
            "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "scalar": lambda v: v is None or isinstance(v, (str, int, float, bool)),
            "number or empty": lambda v: (
                v is None or v == "" or (isinstance(v, (int, float)) and not isinstance(v, bool))
            ),
        }
        good = ok[kind](value) if isinstance(kind, str) else isinstance(value, kind)
        if not good:
            self.fail(path, value, _KIND[kind])
        return value

    def numbers_by_key(self, path: str, value: Any) -> None:
        for k, v in self.is_(path, value, dict).items():
            self.is_(f"{path}.{k}", v, "number")

    def rows(self, path: str, value: Any, width: int | None = None) -> None:
        for i, row in enumerate(self.is_(path, value, list)):
            self.is_(f"{path}[{i}]", row, list)
            if width is not None and len(row) != width:
                raise InputError(
                    f"expected {width} cells (one per column), got {len(row)}: {row!r}"[:200],
                    source=self.source,
                    field=f"{path}[{i}]",
                )
            for j, cell in enumerate(row):
                self.is_(f"{path}[{i}][{j}]", cell, "scalar")

    def strings(self, path: str, value: Any) -> list:
        for i, v in enumerate(self.is_(path, value, list)):
            self.is_(f"{path}[{i}]", v, str)
        return value


def validate(doc: Mapping[str, Any], source: str = REPORT_JSON) -> None:
    """Raise InputError (file, field path, value) for the first malformed field build_sections would read."""
    c = _Check(source)
    for key in ("title", "subtitle", "moves_intro"):
        c.is_(key, doc.get(key), str, optional=True)
    for k, v in (c.is_("sources", doc.get("sources"), dict, optional=True) or {}).items():
        c.is_(f"sources.{k}", v, str)
    ex = c.is_("execute", doc.get("execute"), dict, optional=True)
    for k, v in (ex or {}).items():
        c.is_(f"execute.{k}", v, "scalar")
    for k, v in (c.is_("cards", doc.get("cards"), dict, optional=True) or {}).items():
        c.is_(f"cards.{k}", v, "scalar")
    load = c.is_("broker_load", doc.get("broker_load"), dict, optional=True)
    if load:
        c.is_("broker_load.intro", load.get("intro"), str, optional=True)
        before = c.is_("broker_load.before", load.get("before"), dict)
        for side, loads in (
            ("before", before),
            ("after", c.is_("broker_load.after", load.get("after"), dict, True)),
        ):
            for res, per_broker in (loads or {}).items():
                c.numbers_by_key(f"broker_load.{side}.{res}", per_broker)
        if not any(r in before for r in RESOURCES):
            raise InputError(
                f"no resource to plot: expected one of {', '.join(RESOURCES)}, got {sorted(before)!r}",
                source=source,
                field="broker_load.before",
            )
        ratios = c.is_("broker_load.max_over_mean", load.get("max_over_mean"), dict, optional=True)
        for side in ("before", "after"):
            for r, v in (
                c.is_(f"broker_load.max_over_mean.{side}", (ratios or {}).get(side), dict, True)
                or {}
            ).items():
                c.is_(f"broker_load.max_over_mean.{side}.{r}", v, "scalar")
    leaders = c.is_("leaders", doc.get("leaders"), dict, optional=True)
    for stage, counts in (leaders or {}).items():
        if stage == "intro":
            c.is_("leaders.intro", counts, str)
        else:
            c.numbers_by_key(f"leaders.{stage}", counts)
    moves = c.is_("moves", doc.get("moves"), dict, optional=True)
    if moves:
        c.numbers_by_key("moves", moves)
        plans = c.is_("plans", doc.get("plans"), list, optional=True) or []
        for i, plan in enumerate(plans):
            for k, v in c.is_(f"plans[{i}]", plan, dict).items():
                c.is_(f"plans[{i}].{k}", v, "scalar")
    for protocol, o in (
        c.is_("ownership", doc.get("ownership"), dict, optional=True) or {}
    ).items():
        path = f"ownership.{protocol}"
        c.is_(path, o, dict)
        c.is_(f"{path}.duration_ms", o.get("duration_ms"), "number", optional=True)
        for name, fields in (
            ("intervals", ("start_ms", "end_ms")),
            ("stops", ("start_ms", "end_ms")),
        ):
            for i, iv in enumerate(c.is_(f"{path}.{name}", o.get(name), list, optional=True) or []):
                c.is_(f"{path}.{name}[{i}]", iv, dict)
                for f in fields:
                    c.is_(f"{path}.{name}[{i}].{f}", iv.get(f), "number")
                if name == "intervals":
                    c.is_(f"{path}.{name}[{i}].member", iv.get("member"), str)
                    c.is_(f"{path}.{name}[{i}].partition", iv.get("partition"), "scalar")
    for name, summary in (c.is_("compare", doc.get("compare"), dict, optional=True) or {}).items():
        path = f"compare.{name}"
        c.is_(path, summary, dict)
        for k in COMPARE_KEYS:
            c.is_(
                f"{path}.{k}",
                summary.get(k),
                "number" if k in COMPARE_PLOTTED else "scalar",
                optional=True,
            )
        records = c.is_(f"{path}.records", summary.get("records"), dict, optional=True) or {}
        for k in ("duplicates", "lost"):
            c.is_(f"{path}.records.{k}", records.get(k), "scalar")
    lag = c.is_("lag", doc.get("lag"), dict, optional=True)
    if lag:
        c.is_("lag.title", lag.get("title"), str, optional=True)
        for name, points in (
            c.is_("lag.series", lag.get("series"), dict, optional=True) or {}
        ).items():
            for i, pt in enumerate(c.is_(f"lag.series.{name}", points, list)):
                if not (isinstance(pt, list) and len(pt) == 2):
                    c.fail(f"lag.series.{name}[{i}]", pt, "an [x, y] pair")
                for j in (0, 1):
                    c.is_(f"lag.series.{name}[{i}][{j}]", pt[j], "number", optional=True)
        st = c.is_("lag.statuses", lag.get("statuses"), dict, optional=True)
        if st:
            cols = c.strings("lag.statuses.columns", st.get("columns"))
            c.rows("lag.statuses.rows", st.get("rows"), len(cols))
    sweep = c.is_("sweep", doc.get("sweep"), dict, optional=True)
    if sweep and sweep.get("rows"):
        cols = c.strings("sweep.columns", sweep.get("columns"))
        c.rows("sweep.rows", sweep.get("rows"), len(cols))
        if "label_columns" in sweep:
            c.strings("sweep.label_columns", sweep["label_columns"])
        if "metrics" in sweep:
            c.strings("sweep.metrics", sweep["metrics"])
        c.is_("sweep.metric", sweep.get("metric"), str, optional=True)
        for m in sweep.get("metrics", [sweep.get("metric", "unavailable_partition_ms")]):
            if m in cols:
                j = cols.index(m)
                for i, row in enumerate(sweep["rows"]):
                    c.is_(f"sweep.rows[{i}][{j}]", row[j], "number or empty")


COMPARE_KEYS = (
    "rebalances",
    "unavailable_partition_ms",
    "member_paused_ms",
    "partitions_moved",
    "revocations",
)
COMPARE_PLOTTED = ("unavailable_partition_ms", "member_paused_ms")


def _fmt_cell(column: str, v: Any) -> str:
    """A table cell in the unit its column name says (`*_ms`, `*bytes*`), `-` when absent."""
    return "-" if v is None or v == "" else textfmt.by_name(column, v)


def build_sections(
    doc: Mapping[str, Any], source: str = REPORT_JSON, note_missing: bool = True
) -> list[Section]:
    """The report's sections; InputError (nothing drawn) when a field is malformed (validate: after it,
    every section's field is an object or absent)."""
    validate(doc, source)
    sections: list[Section] = []
    load = doc.get("broker_load")
    if load:
        sec = Section(
            "Broker load before and after the plan",
            load.get(
                "intro",
                "Each resource per broker; the plan should flatten the red bars into green ones.",
            ),
        )
        sec.figures.append(broker_load_figure(load.get("before", {}), load.get("after")))
        ratios = load.get("max_over_mean")
        if ratios:
            b, a = ratios.get("before") or {}, ratios.get("after") or {}
            before_load = load.get("before") or {}
            # a resource with no data (all zero, e.g. bytes without a load model) is n/a, not 1.000
            empty = {r for r, v in before_load.items() if not any(v.values())}
            rows = [
                [r.replace("_", " ")]
                + [
                    textfmt.NA if r in empty else textfmt.ratio(side.get(r) or None)
                    for side in (b, a)
                ]
                for r in sorted(set(b) | set(a))
            ]
            sec.tables.append(("max / mean per resource", ["resource", "before", "after"], rows))
        sec.key = "broker_load"
        sections.append(sec)
    leaders = doc.get("leaders")
    if leaders:
        sec = Section(
            "Leader distribution",
            leaders.get(
                "intro",
                "Leaders per broker: after a rolling restart, "
                "after preferred leader election, after leader balancing.",
            ),
        )
        stages = {k: v for k, v in leaders.items() if isinstance(v, dict)}
        brokers = sorted({b for v in stages.values() for b in v}, key=broker_order)
        sec.figures.append(
            bar_figure(
                "Leaders per broker",
                [str(b) for b in brokers],
                {k: [v.get(b, 0) for b in brokers] for k, v in stages.items()},
                "leaders",
            )
        )
        sec.key = "leaders"
        sections.append(sec)
    moves = doc.get("moves")
    if moves:
        sec = Section(
            "Replica moves versus the lower bound and Kafka's --generate", moves_intro(doc)
        )
        sec.figures.append(
            moves_figure({k: float(v) for k, v in moves.items() if isinstance(v, (int, float))})
        )
        plans = doc.get("plans")
        if isinstance(plans, list) and plans:
            header = list(plans[0].keys())
            sec.tables.append(
                (
                    "plans",
                    [h.replace("_", " ") for h in header],
                    [[_fmt_cell(h, p.get(h)) for h in header] for p in plans],
                )
            )
        sec.key = "moves"
        sections.append(sec)
    ownership = doc.get("ownership")
    if ownership:
        sec = Section(
            "Partition ownership per protocol",
            "Each bar is a partition owned by a member; gaps and shaded bands are where the world stopped.",
        )
        for protocol, o in ownership.items():
            sec.figures.append(
                ownership_timeline_figure(
                    PROTOCOL_LABELS.get(protocol, protocol),
                    o.get("intervals") or [],
                    int(o.get("duration_ms") or 0),
                    o.get("stops") or [],
                )
            )
        sec.key = "ownership"
        sections.append(sec)
    compare = doc.get("compare")
    if compare:
        sec = Section("What a rolling restart costs under each protocol")
        names = list(compare)
        labels = [PROTOCOL_LABELS.get(n, n) for n in names]
        keys = list(COMPARE_KEYS)
        sec.figures.append(
            bar_figure(
                "Stop-the-world cost",
                labels,
                {k: [compare[n].get(k, 0) for n in names] for k in COMPARE_PLOTTED},
                "ms",
            )
        )
        rows = [
            [PROTOCOL_LABELS.get(n, n)]
            + [_fmt_cell(k, compare[n].get(k)) for k in keys]
            + [
                _fmt_cell("duplicates", (compare[n].get("records") or {}).get("duplicates")),
                _fmt_cell("lost", (compare[n].get("records") or {}).get("lost")),
            ]
            for n in names
        ]
        header = ["protocol"] + [k.removesuffix("_ms").replace("_", " ") for k in keys]
        sec.tables.append(("side by side", header + ["duplicates", "lost"], rows))
        sec.key = "compare"
        sections.append(sec)
    lag = doc.get("lag")
    if lag:
        sec = Section("Lag and Burrow status")
        series: dict[str, tuple[Sequence[float], Sequence[float]]] = {
            str(k): ([p[0] for p in v], [p[1] for p in v])
            for k, v in (lag.get("series") or {}).items()
        }
        if series:
            sec.figures.append(lag_figure(series, lag.get("title", "Consumer lag")))
        st = lag.get("statuses")
        if st:
            sec.tables.append(
                (
                    "Burrow evaluation",
                    [c.replace("_", " ") for c in st["columns"]],
                    [[_fmt_cell(c, v) for c, v in zip(st["columns"], r)] for r in st["rows"]],
                )
            )
        sec.key = "lag"
        sections.append(sec)
    sweep = doc.get("sweep")
    if sweep and sweep.get("rows"):
        cols, rows = sweep["columns"], sweep["rows"]
        label_cols = [c for c in sweep.get("label_columns", cols[:3]) if c in cols]
        metrics = [
            m
            for m in sweep.get("metrics", [sweep.get("metric", "unavailable_partition_ms")])
            if m in cols
        ]
        labels = [" / ".join(str(r[cols.index(c)]) for c in label_cols) for r in rows]
        sec = Section(
            "Simulation sweep",
            f"{len(rows)} simulations run as Spark tasks ({' / '.join(label_cols)}).",
        )
        if metrics:
            sec.figures.append(
                bar_figure(
                    "Stop-the-world cost per configuration",
                    labels,
                    {m: [r[cols.index(m)] for r in rows] for m in metrics},
                    "ms",
                )
            )
        sec.tables.append(
            (
                "sweep results",
                [c.removesuffix("_ms").replace("_", " ") for c in cols],
                [[_fmt_cell(c, v) for c, v in zip(cols, r)] for r in rows],
            )
        )
        sec.key = "sweep"
        sections.append(sec)
    ex = doc.get("execute")
    if ex:
        simulated = bool(ex.get("simulated"))
        where = "a simulated cluster (simulated)" if simulated else "the cluster"
        sec = Section(
            f"Plan execution on {where}",
            f"The plan was applied batch by batch on {where}: "
            + ", ".join(f"{k.replace('_', ' ')} {_fmt_cell(k, v)}" for k, v in ex.items()),
        )
        sec.key = "execute"
        sections.append(sec)
    sources = doc.get("sources") or {}
    for sec in sections:
        key = sec.key
        label = sources.get(key) or Path(source).name
        simulated = key == "execute" and bool(doc["execute"].get("simulated"))
        sec.source = label + (" (simulated)" if simulated else "")
    missing = [
        k
        for k in ("broker_load", "leaders", "moves", "ownership", "compare", "lag", "sweep")
        if not doc.get(k)
    ]
    if missing and note_missing:
        sections.append(
            Section(
                "Not in these results",
                "These parts were not produced by the run: " + ", ".join(missing),
            )
        )
    return sections


def write_report(results: str | Path, out: str | Path | None = None) -> Path:
    """Read RESULTS and write the HTML page; InputError (nothing written) on a bad input.

    RESULTS is a folder holding the demo's report.json, any other folder of toolkit JSON
    outputs (each file becomes its sections), or one JSON output of the toolkit.
    """
    from ..io_publish import check_output_paths
    from .inputs import kind_of, sections_for, short_name

    check_output_paths({"--out": out})
    path = Path(results)
    if not path.exists():
        raise InputError("no such file or folder", source=str(path))
    title, subtitle = "kafka-rebalance report", ""
    cards: dict[str, Any] = {}
    if path.is_dir() and not (path / REPORT_JSON).exists():
        files = sorted(
            p
            for p in [*path.glob("*.json"), *path.glob("*/*.json")]
            if not p.name.endswith(".state.json")
        )
        sections: list[Section] = []
        unread: list[str] = []
        for f in files:
            doc = read_structured(f)
            name = short_name(f, path)
            kind = kind_of(doc)
            if kind is None:
                unread.append(name)
            elif kind == "report":
                sections += _shaped(
                    f, doc, lambda d: build_sections(d, name, note_missing=f.name == REPORT_JSON)
                )
            else:
                sections += _shaped(f, doc, lambda d: sections_for(d, name))
        if not sections:
            raise InputError(
                "no kafka-rebalance output found: expected report.json or JSON outputs of the "
                f"toolkit (found {len(files)} JSON files, none recognised)",
                source=str(path),
            )
        if unread:
            sections.append(
                Section(
                    "Not read", "Files that are not outputs of the toolkit: " + ", ".join(unread)
                )
            )
        subtitle = f"results in {path}"
        target = Path(out) if out else path / REPORT_HTML
    else:
        doc_path = path / REPORT_JSON if path.is_dir() else path
        doc = read_structured(doc_path)
        if not isinstance(doc, dict):
            raise InputError("expected a JSON object", source=str(doc_path))
        if doc_path.name == REPORT_JSON or kind_of(doc) == "report":
            sections = _shaped(
                doc_path,
                doc,
                lambda d: build_sections(d, str(doc_path), doc_path.name == REPORT_JSON),
            )
            title = doc.get("title") or title
            subtitle = doc.get("subtitle") or ""
            cards = doc.get("cards") or {}
            default = (
                doc_path.parent / REPORT_HTML
                if doc_path.name == REPORT_JSON
                else doc_path.with_name(doc_path.stem + ".report.html")
            )
        else:
            sections = _shaped(doc_path, doc, lambda d: sections_for(d, doc_path.name))
            subtitle = str(doc_path)
            default = doc_path.with_name(doc_path.stem + ".report.html")
        target = Path(out) if out else default
    page = render_html(title, subtitle, cards, sections)
    atomic_write_text(target, page)
    return target
