"""`kafka-rebalance report RESULTS`: the self-contained HTML report."""

from __future__ import annotations

from ..output import add_format_flag, emit


def register(sub) -> None:
    p = sub.add_parser(
        "report", help="write the HTML report from a results folder (RESULTS/report.json)"
    )
    p.add_argument("results", help="results folder written by `demo` (or its report.json)")
    p.add_argument("--out", help="HTML file to write (default RESULTS/report.html)")
    add_format_flag(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..report.build import write_report

    target = write_report(args.results, args.out)
    emit(
        {"report": str(target)},
        args.format,
        lambda c, o: c.print(f"report written to [bold]{o['report']}[/bold]"),
    )
    return 0
