"""`kafka-rebalance report RESULTS`: the self-contained HTML report."""

from __future__ import annotations

from ..output import add_format_flag, emit


def register(sub) -> None:
    p = sub.add_parser(
        "report",
        help="write a self-contained HTML report of any result of the toolkit",
        description="Render a results folder (the demo's, or any folder of JSON outputs) or one "
        "JSON output of the toolkit (plan, skew, describe, execute, snapshot, simulate summary or "
        "--compare, sweep, lag, load-model, offsets) as one HTML page; docs/formats.md section 6.",
    )
    p.add_argument("results", metavar="PATH", help="a results folder or one JSON output")
    p.add_argument(
        "--out",
        help="HTML file to write (default PATH/report.html for a folder, NAME.report.html "
        "beside a file)",
    )
    add_format_flag(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..report.build import write_report

    target = write_report(args.results, args.out)
    emit(
        {"report": str(target)},
        args.format,
        lambda c, o: c.print(f"report written to {o['report']}", markup=False, highlight=False),
    )
    return 0
