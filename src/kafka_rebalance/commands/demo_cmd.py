"""`kafka-rebalance demo`: the main job, end to end on an embedded default (no cluster needed)."""

from __future__ import annotations

from pathlib import Path

from rich.table import Table

from ..errors import InputError
from ..output import add_format_flag, emit, stderr


def register(sub) -> None:
    p = sub.add_parser(
        "demo", help="run the whole toolkit end to end on an embedded default and write a report"
    )
    p.add_argument(
        "--out",
        default="demo-out",
        help="folder for results, plans and the report (default demo-out)",
    )
    p.add_argument(
        "--scale", type=int, default=1, help="make the embedded cluster and group N times larger"
    )
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--master", help="Spark master (default local[*], or SPARK_MASTER)")
    add_format_flag(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..demo.run import Demo, DemoConfig

    if args.scale < 1:
        raise InputError(f"must be >= 1, got {args.scale}", field="--scale")
    steps = ["cluster", "telemetry", "simulate", "spark", "plan", "execute", "report"]
    with stderr.status("starting the demo...") as status:

        def progress(step: str, what: str) -> None:
            i = steps.index(step) + 1 if step in steps else 0
            if what.startswith("done"):
                stderr.print(f"[green]✓[/green] [{i}/{len(steps)}] {step}: {what}")
            else:
                status.update(f"[{i}/{len(steps)}] {step}: {what}")

        result = Demo(
            DemoConfig(Path(args.out), args.scale, args.seed, args.master), progress
        ).run()
    emit(result, args.format, _table)
    return 0


def _table(console, r: dict) -> None:
    t = Table(title="kafka-rebalance demo")
    t.add_column("step")
    t.add_column("seconds", justify="right")
    for k, v in r["timings_s"].items():
        t.add_row(k, f"{v:.1f}")
    console.print(t)
    p = r["plan"]
    console.print(
        f"add-broker plan: {p['replica_moves']} replica moves (lower bound {p['lower_bound_moves']}), "
        f"executed in {r['execute']['batches']} batches against the simulated cluster"
    )
    console.print("plans:")
    for f in r["plans"]:
        console.print(f"  {f}")
    console.print(f"report: [bold]{r['report']}[/bold]")
