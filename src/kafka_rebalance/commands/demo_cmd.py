"""`kafka-rebalance demo`: the main job, end to end on an embedded default (no cluster needed)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text

from .. import limits, textfmt
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
    limits.check("demo_scale", args.scale, field="--scale")
    limits.check_memory(
        limits.demo_memory(args.scale), f"the demo at scale {args.scale:,}", "--scale"
    )
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
    textfmt.print_table(
        console,
        "kafka-rebalance demo",
        ["step", ">took"],
        [(k, textfmt.duration_s(v)) for k, v in r["timings_s"].items()],
    )
    p = r["plan"]
    c = textfmt.count
    console.print(
        f"add-broker plan: {c(p['replica_moves'])} replica moves (lower bound "
        f"{c(p['lower_bound_moves'])}), executed in {c(r['execute']['batches'])} batches "
        "against the simulated cluster",
        markup=False,
    )
    console.print("plans:")
    for f in r["plans"]:
        console.print(f"  {f}", markup=False, highlight=False)
    console.print(Text.assemble("report: ", (str(r["report"]), "bold")))
