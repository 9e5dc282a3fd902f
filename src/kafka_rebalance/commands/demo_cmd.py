"""`kafka-rebalance demo`: the main job, end to end on an embedded default (no cluster needed)."""

from __future__ import annotations

import os
from pathlib import Path

from rich.text import Text

from .. import limits, textfmt
from ..errors import InputError
from ..fields import INT64_MAX
from ..io_publish import (
    adopt,
    check_output_paths,
    clean_stale,
    publish_folder,
    remove_folder,
    staging_folder,
)
from ..output import add_format_flag, emit, stderr
from ..pipeline.session import check_chosen_master, check_master  # noqa: F401 (re-exported)


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


def check_out(out: Path) -> None:
    """The results folder: writable, and holding nothing but an earlier demo's results (the demo
    replaces the whole folder, so a folder of other files is refused, not emptied)."""
    check_output_paths({"--out": out}, folders=("--out",))
    if out.is_dir() and any(out.iterdir()) and not (out / "report.json").is_file():
        raise InputError(
            f"{out} holds files that are not a demo's results (no report.json); the demo replaces "
            "the whole folder: choose another --out or empty it",
            field="--out",
        )


def validate(args) -> None:
    """Everything the demo is given, checked before any work: a bad flag leaves nothing behind."""
    if args.scale < 1:
        raise InputError(f"must be >= 1, got {args.scale}", field="--scale")
    limits.check("demo_scale", args.scale, field="--scale")
    limits.check_memory(
        limits.demo_memory(args.scale), f"the demo at scale {args.scale:,}", "--scale"
    )
    # a Java long (the --generate emulation's java.util.Random), >= 0 for numpy
    if not 0 <= args.seed <= INT64_MAX:
        raise InputError(f"an integer in [0, {INT64_MAX}], got {args.seed}", field="--seed")
    check_out(Path(args.out))
    clean_stale(Path(args.out).absolute().parent)  # what a killed demo left, even if we stop here
    check_chosen_master(args.master)


def _outside(exc: OSError, stage: Path, out: Path) -> OSError:
    """An error about a file of the staging folder, naming the file in the user's --out."""
    name = exc.filename2 if exc.filename2 is not None else exc.filename
    if name is None:
        return exc
    text = os.fsdecode(name)
    if text.startswith(str(stage)):
        text = str(out) + text[len(str(stage)) :]
    return OSError(exc.errno, exc.strerror or str(exc), text)


def _moved(value, stage: str, out: str):
    if isinstance(value, str):
        return out + value[len(stage) :] if value.startswith(stage) else value
    if isinstance(value, list):
        return [_moved(v, stage, out) for v in value]
    if isinstance(value, dict):
        return {k: _moved(v, stage, out) for k, v in value.items()}
    return value


def run(args) -> int:
    from ..demo.run import Demo, DemoConfig

    validate(args)
    out = Path(args.out)
    missing = [p for p in [out.absolute(), *out.absolute().parents] if not p.exists()]
    stage = staging_folder(out.absolute())
    try:
        result = _run_demo(Demo, DemoConfig, stage, args)
        # the demo's results are its visible files; hidden ones are the user's: kept, as is the mode
        adopt(stage, out, lambda name: not name.startswith("."))
        publish_folder(stage, out)
    except BaseException as exc:
        # nothing half-made stays: the staging folder goes, and the folders made for it
        remove_folder(stage)
        for p in missing[1:]:
            try:
                p.rmdir()
            except OSError:
                break
        if isinstance(exc, OSError):
            raise _outside(exc, stage, out) from None
        raise
    emit(_moved(result, str(stage), str(out)), args.format, _table)
    return 0


def _run_demo(Demo, DemoConfig, stage: Path, args) -> dict:
    steps = ["cluster", "telemetry", "simulate", "spark", "plan", "execute", "report"]
    with stderr.status("starting the demo...") as status:

        def progress(step: str, what: str) -> None:
            i = steps.index(step) + 1 if step in steps else 0
            if what.startswith("done"):
                stderr.print(f"[green]✓[/green] [{i}/{len(steps)}] {step}: {what}")
            else:
                status.update(f"[{i}/{len(steps)}] {step}: {what}")

        return Demo(DemoConfig(stage, args.scale, args.seed, args.master), progress).run()


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
