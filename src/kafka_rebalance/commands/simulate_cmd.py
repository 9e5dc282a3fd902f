"""`kafka-rebalance simulate FILE`: run the deterministic rebalance simulator on a scenario.

Output (docs/formats.md section 2): the summary object; `--events-out PATH` writes
the event log (`.jsonl` or `.parquet`) the Spark pipeline reads; `--compare
eager,cooperative,static,consumer` runs the same scenario under each protocol
choice and prints them side by side (`{"compare": {name: summary}}`). `--core` picks the simulator
core (docs/sim-native.md): the output is the same on either; which one ran goes to stderr when
`--core` is given.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console

from .. import io_util, limits, output, textfmt
from ..errors import InputError
from ..ops.simulate import COMPARE_VARIANTS, check_variants, compare, simulate
from ..sim.api import CORES
from ..sim.scenario import parse_simulation_scenario

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "simulate",
        help="simulate a consumer group through restarts, crashes and failovers",
        description="Replay a simulation scenario (YAML or JSON, docs/formats.md section 2) over a virtual clock "
        "and report what every rebalance cost: stop-the-world time, moves, duplicates, losses, lag.",
    )
    p.add_argument("file", metavar="FILE", help="simulation scenario")
    p.add_argument(
        "--events-out",
        metavar="PATH",
        default=None,
        help="write the event log to PATH (.jsonl or .parquet)",
    )
    p.add_argument(
        "--compare",
        metavar="LIST",
        default=None,
        help=f"comma-separated variants to run side by side: {','.join(COMPARE_VARIANTS)}",
    )
    p.add_argument(
        "--core",
        choices=CORES,
        default=None,
        help="the simulator core: auto (default: the native core when it claims the scenario, "
        "else the reference), native (an error naming why when it does not claim it) or reference "
        "(the Python simulator); the output is the same on either, and which one ran is noted on "
        "stderr when this flag is given",
    )
    output.add_format_flag(p)
    p.set_defaults(func=run)


def _load(path: str):
    doc = io_util.read_structured(path)
    try:
        return parse_simulation_scenario(doc)
    except InputError as exc:
        raise exc.in_file(path) from None


def _check_memory(sc, path: str, events_out: bool) -> None:
    """Refuse a scenario whose simulation would not fit in the memory available (before it runs)."""
    partitions = sum(t.partitions for t in sc.topics) + sum(
        e.count for e in sc.events if e.kind == "add_partitions"
    )
    members = len(sc.members) + sum(1 for e in sc.events if e.kind == "join")
    estimate = limits.simulate_memory(
        members, partitions, sc.duration_ms, sc.poll_idle_ms, events_out
    )
    try:
        limits.check_memory(
            estimate,
            f"simulating {members:,} members over {partitions:,} partitions"
            + (" with the event log" if events_out else ""),
        )
    except InputError as exc:
        raise exc.in_file(path) from None


def _core_error(exc: InputError) -> InputError:
    """The api's refusal of a core, as an error about the flag that asked for it."""
    return InputError(exc.message, field="--core") if exc.field == "core" else exc


def _note_core(args, core: str, reason: str | None) -> None:
    """Which core ran, on stderr (stdout stays the same on either), when `--core` was asked for."""
    if args.core is not None:
        why = f" (the native core does not claim this scenario: {reason})" if reason else ""
        print(f"kafka-rebalance simulate: core {core}{why}", file=sys.stderr)


def run(args) -> int:
    sc = _load(args.file)
    core = args.core or "auto"
    if args.events_out and not args.events_out.endswith((".jsonl", ".parquet")):
        raise InputError("expected a path ending in .jsonl or .parquet", field="--events-out")
    from ..io_publish import check_output_paths

    check_output_paths({"--events-out": args.events_out})  # before the simulation, not after
    _check_memory(sc, args.file, bool(args.events_out))
    if args.compare:
        names = [n.strip() for n in args.compare.split(",") if n.strip()]
        try:
            check_variants(names)
        except InputError as exc:
            raise InputError(exc.message, field="--compare") from None
        if args.events_out:
            raise InputError("--events-out cannot be combined with --compare", field="--events-out")
        with _Progress(sc.duration_ms * len(names)) as prog:

            def cb(name: str, now: int, end: int) -> None:
                prog.update(names.index(name) * sc.duration_ms + now, f"{name}")

            try:
                result = compare(sc, names, progress=cb, core=core).to_json()
            except InputError as exc:
                raise _core_error(exc) from None
        output.emit(result, args.format, _compare_table)
        return 0
    with _Progress(sc.duration_ms) as prog:
        try:
            res = simulate(
                sc,
                progress=lambda now, end: prog.update(now, sc.name or "simulate"),
                events=bool(args.events_out),
                core=core,
            )
        except InputError as exc:
            raise _core_error(exc) from None
    _note_core(args, res.core, res.core_reason)
    if args.events_out:
        res.write_events(args.events_out)
    output.emit(res.summary, args.format, _table)
    return 0


class _Progress:
    """A rich progress bar on stderr for runs that take a while (silent when stderr is not a terminal)."""

    def __init__(self, total: int) -> None:
        self.total = max(total, 1)
        self._p: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> _Progress:
        if output.stderr.is_terminal:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self._p = progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.percentage:>3.0f}%"),
                TimeElapsedColumn(),
                console=output.stderr,
                transient=True,
            )
            progress.__enter__()
            self._task = progress.add_task("simulating", total=self.total)
        return self

    def update(self, completed: int, desc: str) -> None:
        if self._p is not None and self._task is not None:
            self._p.update(self._task, completed=completed, description=desc)

    def __exit__(self, *exc: Any) -> None:
        if self._p is not None:
            self._p.__exit__(*exc)


_D, _C = textfmt.duration_ms, textfmt.count
_ROWS = (
    ("rebalances", lambda s: _C(s["rebalances"])),
    ("generation", lambda s: _C(s["generation"])),
    ("partitions unavailable (summed)", lambda s: _D(s["unavailable_partition_ms"])),
    ("members paused (summed)", lambda s: _D(s["member_paused_ms"])),
    ("partitions moved", lambda s: _C(s["partitions_moved"])),
    ("revocations", lambda s: _C(s["revocations"])),
    ("records produced", lambda s: _C(s["records"]["produced"])),
    ("records processed", lambda s: _C(s["records"]["processed"])),
    ("duplicates", lambda s: _C(s["records"]["duplicates"])),
    ("lost", lambda s: _C(s["records"]["lost"])),
    ("lag max (records)", lambda s: _C(s["lag"]["max"])),
    ("lag final (records)", lambda s: _C(s["lag"]["final"])),
)


def _table(console: Console, s: dict) -> None:
    textfmt.print_table(
        console, "simulation summary", ["metric", ">value"], [(k, f(s)) for k, f in _ROWS]
    )
    if s.get("timeline"):
        textfmt.print_table(
            console,
            "rebalances",
            [">at", ">generation", "cause"],
            [(_D(r["ts_ms"]), _C(r["generation"]), r["cause"]) for r in s["timeline"]],
        )


def _compare_table(console: Console, obj: dict) -> None:
    runs = obj["compare"]
    textfmt.print_table(
        console,
        "protocol comparison",
        ["metric", *(">" + name for name in runs)],
        [(label, *(f(s) for s in runs.values())) for label, f in _ROWS],
    )
