"""One self-contained HTML report: every plot embedded, plotly.js inline, no network.

The page records how rendering went in `#render-status` (plots expected,
plots rendered, script errors) so a headless browser test can check it.
"""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from .. import textfmt

RESOURCES = ("replicas", "leaders", "bytes_in", "bytes_out", "size_bytes")


@dataclass
class Section:
    title: str
    intro: str = ""
    figures: list[go.Figure] = field(default_factory=list)
    tables: list[tuple[str, Sequence[str], Sequence[Sequence[Any]]]] = field(default_factory=list)
    source: str = ""  # the input or plan the section shows: every chart's title names it
    key: str = ""  # the results document's key it renders


# Linear axes print plain numbers with thousands separators: never 1e+09, never 1.2G.
NUMBER_FORMAT = ",.2~f"


def _fmt(v: Any) -> str:
    """A cell for people: numbers in fixed point with separators, no Python reprs."""
    if isinstance(v, str):
        return html.escape(v) if v else "-"
    return html.escape(textfmt.cell(v))


def _table_html(title: str, header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A table inside its own box: a wide one scrolls there, never the page."""
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_fmt(c)}</td>" for c in row) + "</tr>" for row in rows)
    cap = f"<caption>{html.escape(title)}</caption>" if title else ""
    return (
        f"<div class='tablebox'><table>{cap}<thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
    )


def plain_axes(fig: go.Figure) -> go.Figure:
    """Tick and hover labels in fixed point on every axis (plotly would write 2e+9 or 2G)."""
    fig.update_xaxes(tickformat=NUMBER_FORMAT, hoverformat=NUMBER_FORMAT)
    fig.update_yaxes(tickformat=NUMBER_FORMAT, hoverformat=NUMBER_FORMAT)
    return fig


def titled(fig: go.Figure, source: str) -> go.Figure:
    """The chart's title, followed by the input or plan it shows."""
    if not source:
        return fig
    title = fig.layout.title.text or ""
    if source not in title:
        fig.update_layout(title=f"{title}<br><sup>{html.escape(source)}</sup>")
    return fig


_RATES = ("bytes_in", "bytes_out")


def unit_of(resource: str, values: Sequence[float]) -> tuple[float, str]:
    """(divisor, unit) so a resource's values plot as small plain numbers: bytes in B..TiB."""
    if resource not in _RATES and "bytes" not in resource:
        return 1.0, "count"
    top = max((abs(v) for v in values if v is not None), default=0.0)
    divisor, unit = 1.0, "B"
    for u in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        if top < divisor * 1024:
            break
        divisor *= 1024
        unit = u
    return divisor, unit + ("/s" if resource in _RATES else "")


# --------------------------------------------------------------------------- figures


def broker_order(b: Any) -> tuple:
    """Numeric broker ids in numeric order, then any other names (mixed keys must not fail to compare)."""
    s = str(b)
    return (0, int(s), "") if s.lstrip("-").isdigit() else (1, 0, s)


def broker_load_figure(
    before: dict[str, dict[str, float]],
    after: dict[str, dict[str, float]] | None,
    resources: Sequence[str] = RESOURCES,
    title: str = "Broker load before / after the plan",
) -> go.Figure:
    """Per resource, each broker's load before (and after) the plan, in units (grouped bars)."""
    present = [r for r in resources if r in before]
    if (
        not present
    ):  # build.validate rejects this; a bare call gets an empty figure, not plotly's ValueError
        return go.Figure().update_layout(title="Broker load: no resource to plot")
    units = [
        unit_of(r, [*before[r].values(), *((after or {}).get(r) or {}).values()]) for r in present
    ]
    fig = make_subplots(
        rows=len(present),
        cols=1,
        subplot_titles=[
            r.replace("_", " ") + ("" if u == "count" else f" ({u})")
            for r, (_, u) in zip(present, units)
        ],
        vertical_spacing=0.06,
    )
    for i, (res, (div, unit)) in enumerate(zip(present, units), start=1):
        brokers = sorted(before[res], key=broker_order)
        fig.add_trace(
            go.Bar(
                x=[str(b) for b in brokers],
                y=[before[res][b] / div for b in brokers],
                name="before" if after else "now",
                marker_color="#d62728",
                showlegend=i == 1,
                legendgroup="before",
            ),
            row=i,
            col=1,
        )
        if after and res in after:
            fig.add_trace(
                go.Bar(
                    x=[str(b) for b in brokers],
                    y=[after[res].get(b, 0) / div for b in brokers],
                    name="after",
                    marker_color="#2ca02c",
                    showlegend=i == 1,
                    legendgroup="after",
                ),
                row=i,
                col=1,
            )
        fig.update_yaxes(title_text=unit, row=i, col=1)
    fig.update_layout(
        barmode="group",
        height=260 * max(1, len(present)),
        title=title,
        margin=dict(t=80, b=30),
    )
    plain_axes(fig)
    fig.update_xaxes(type="category")
    fig.update_xaxes(title_text="broker", row=len(present), col=1)
    return fig


def moves_figure(moves: dict[str, float]) -> go.Figure:
    """Replica moves of our plan against the lower bound and Kafka's --generate."""
    names = list(moves)
    fig = go.Figure(
        go.Bar(
            x=names,
            y=[moves[n] for n in names],
            text=[f"{moves[n]:,.0f}" for n in names],
            textposition="auto",
            marker_color=["#1f77b4", "#7f7f7f", "#ff7f0e", "#9467bd"][: len(names)],
        )
    )
    fig.update_layout(
        title="Replica moves: plan vs lower bound vs kafka-reassign-partitions --generate",
        yaxis_title="replica moves (log scale)",
        yaxis_type="log",
        height=380,
    )
    return plain_axes(fig)


def ownership_timeline_figure(
    protocol: str,
    intervals: Sequence[dict[str, Any]],
    duration_ms: int,
    stops: Sequence[dict[str, Any]] = (),
) -> go.Figure:
    """Who owned each partition over time; gaps are where that partition's world stopped."""
    members = sorted({iv["member"] for iv in intervals})
    colour = {m: i for i, m in enumerate(members)}
    palette = [
        "#1f77b4",
        "#ff7f0e",
        "#2ca02c",
        "#d62728",
        "#9467bd",
        "#8c564b",
        "#e377c2",
        "#7f7f7f",
        "#bcbd22",
        "#17becf",
    ]
    fig = go.Figure()
    by_member: dict[str, list[dict[str, Any]]] = {}
    for iv in intervals:
        by_member.setdefault(iv["member"], []).append(iv)
    for m, ivs in by_member.items():
        fig.add_trace(
            go.Bar(
                y=[iv["partition"] for iv in ivs],
                x=[max((iv["end_ms"] - iv["start_ms"]) / 1000.0, 1e-3) for iv in ivs],
                base=[iv["start_ms"] / 1000.0 for iv in ivs],
                orientation="h",
                marker_color=palette[colour[m] % len(palette)],
                name=m,
                hovertemplate="%{y} owned by "
                + html.escape(m)
                + "<br>%{base:.1f}s +%{x:.1f}s<extra></extra>",
            )
        )
    for st in stops:
        fig.add_vrect(
            x0=st["start_ms"] / 1000.0,
            x1=st["end_ms"] / 1000.0,
            fillcolor="red",
            opacity=0.08,
            line_width=0,
        )
    fig.update_layout(
        title=f"Partition ownership: {protocol}",
        barmode="overlay",
        height=max(300, 18 * len({iv["partition"] for iv in intervals}) + 120),
        xaxis_title="simulated seconds",
        xaxis_range=[0, duration_ms / 1000.0],
        bargap=0.15,
    )
    plain_axes(fig)
    # partitions in numeric order (t-2 before t-10), top to bottom
    order = sorted({iv["partition"] for iv in intervals}, key=partition_order)
    fig.update_yaxes(
        type="category", categoryorder="array", categoryarray=order, autorange="reversed"
    )
    return fig


def partition_order(p: Any) -> tuple:
    """`topic-12` sorts by topic, then by the partition number."""
    topic, sep, num = str(p).rpartition("-")
    return (topic, int(num), "") if sep and num.isdigit() else (str(p), -1, "")


def lag_figure(
    series: dict[str, tuple[Sequence[float], Sequence[float]]],
    title: str = "Consumer lag",
    x_title: str = "seconds",
) -> go.Figure:
    """Lag curves, one per group (or group/partition): x = seconds, y = records behind."""
    fig = go.Figure()
    for name, (xs, ys) in series.items():
        fig.add_trace(go.Scatter(x=list(xs), y=list(ys), mode="lines", name=name))
    fig.update_layout(title=title, xaxis_title=x_title, yaxis_title="lag (records)", height=380)
    return plain_axes(fig)


def bar_figure(
    title: str, categories: Sequence[str], series: dict[str, Sequence[float]], y_title: str
) -> go.Figure:
    fig = go.Figure()
    divisor = 1.0
    if y_title == "ms":  # durations plot in seconds: 200 rather than 200,000
        divisor, y_title = 1000.0, "seconds"
    for name, ys in series.items():
        fig.add_trace(
            go.Bar(
                x=list(categories),
                y=[None if y is None else y / divisor for y in ys],
                name=name.removesuffix("_ms").replace("_", " "),
            )
        )
    fig.update_layout(title=title, barmode="group", yaxis_title=y_title, height=400)
    plain_axes(fig)
    fig.update_xaxes(type="category")
    return fig


# --------------------------------------------------------------------------- page

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;background:#fafafa;color:#222}
header{background:#1f2d3d;color:#fff;padding:18px 32px}header h1{margin:0;font-size:24px}
header p{margin:4px 0 0;opacity:.8}
main{padding:16px 32px;max-width:1400px;box-sizing:border-box}
h1,h2,p,caption,.card{overflow-wrap:anywhere}
.tablebox{overflow-x:auto;max-width:100%}
@media (max-width:700px){main{padding:8px 10px}header{padding:12px 14px}section{padding:8px 10px}
.card{min-width:0;flex:1 1 40%}}
section{background:#fff;border:1px solid #e3e3e3;border-radius:8px;padding:12px 20px;margin:18px 0}
h2{margin:6px 0 8px;font-size:19px}.intro{color:#555;margin:0 0 8px}
.cards{display:flex;flex-wrap:wrap;gap:12px}.card{background:#fff;border:1px solid #e3e3e3;border-radius:8px;
padding:10px 16px;min-width:160px}.card .v{font-size:22px;font-weight:600}.card .k{color:#666;font-size:13px}
table{border-collapse:collapse;margin:10px 0;font-size:13px}caption{text-align:left;font-weight:600;padding:4px 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}th{background:#f0f3f6}td:first-child,th:first-child{text-align:left}
.plot{min-height:200px;width:100%}
"""


# Installed before plotly.js so errors anywhere on the page are recorded.
_EARLY = """
window.__reportErrors = [];
window.addEventListener('error', function(e) { window.__reportErrors.push(String(e.message || e)); });
window.addEventListener('unhandledrejection', function(e) { window.__reportErrors.push('unhandled rejection: ' + String(e.reason)); });
"""


def render_html(
    title: str, subtitle: str, cards: dict[str, Any], sections: Sequence[Section]
) -> str:
    """The whole page as one string; plots are rendered by inline plotly.js on load."""
    plot_specs: list[tuple[str, str]] = []
    parts: list[str] = []
    for si, sec in enumerate(sections):
        parts.append(f"<section><h2>{html.escape(sec.title)}</h2>")
        if sec.intro:
            parts.append(f"<p class='intro'>{html.escape(sec.intro)}</p>")
        for fi, fig in enumerate(sec.figures):
            div_id = f"plot-{si}-{fi}"
            plot_specs.append((div_id, titled(fig, sec.source).to_json()))
            parts.append(f"<div class='plot' id='{div_id}'></div>")
        for t in sec.tables:
            parts.append(_table_html(*t))
        parts.append("</section>")
    card_html = "".join(
        f"<div class='card'><div class='v'>{_fmt(v)}</div><div class='k'>{html.escape(k)}</div></div>"
        for k, v in cards.items()
    )
    specs_js = ",\n".join(f"[{json.dumps(d)}, {spec}]" for d, spec in plot_specs)
    script = f"""
(function() {{
  var specs = [{specs_js}];
  var rendered = 0;
  var status = document.getElementById('render-status');
  function done() {{
    status.setAttribute('data-expected', String(specs.length));
    status.setAttribute('data-rendered', String(rendered));
    status.setAttribute('data-errors', JSON.stringify(window.__reportErrors));
    // the page must never scroll sideways: a wide table scrolls in its own box
    status.setAttribute('data-scrollwidth', String(document.scrollingElement.scrollWidth));
    status.setAttribute('data-innerwidth', String(window.innerWidth));
    status.setAttribute('data-done', 'true');
  }}
  var pending = specs.map(function(s) {{
    try {{
      return Plotly.newPlot(s[0], s[1].data, s[1].layout, {{responsive: true, displaylogo: false}})
        .then(function(gd) {{
          // rendered = visible and with drawn traces, not just an empty frame
          var drawn = gd.querySelectorAll('.trace, .point, .bars path, .scatterlayer path').length;
          if (gd.offsetWidth > 0 && gd.offsetHeight > 0 && drawn > 0) rendered += 1;
        }})
        .catch(function(err) {{ window.__reportErrors.push(String(err)); }});
    }} catch (err) {{ window.__reportErrors.push(String(err)); return Promise.resolve(); }}
  }});
  Promise.all(pending).then(done, done);
}})();
"""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{_STYLE}</style>
<script type="text/javascript">{_EARLY}</script>
<script type="text/javascript">{get_plotlyjs()}</script>
</head><body>
<header><h1>{html.escape(title)}</h1><p>{html.escape(subtitle)}</p></header>
<main>
<div class="cards">{card_html}</div>
{"".join(parts)}
<div id="render-status" data-done="false" hidden></div>
</main>
<script type="text/javascript">{script}</script>
</body></html>
"""
