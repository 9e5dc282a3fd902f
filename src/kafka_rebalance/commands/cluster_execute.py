"""`kafka-rebalance cluster execute`: apply a reassignment plan in throttled batches (dry run by default).

Registered by commands/cluster_cmd.py through `register(cluster_subparsers)`.
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

from .. import textfmt
from ..cluster.batches import parse_log_dirs, parse_reassignment
from ..errors import InputError
from ..fields import INT32_MAX, INT64_MAX
from ..io_publish import check_output_paths
from ..io_util import read_structured
from ..output import add_format_flag, emit, stderr

# Cruise Control's defaults: num.concurrent.partition.movements.per.broker=5,
# max.num.cluster.partition.movements=1250.
DEFAULT_MAX_MOVES_PER_BROKER = 5
DEFAULT_MAX_MOVES = 1250
MAX_POLL_INTERVAL_S = 3600  # an hour between polls
MAX_BATCH_TIMEOUT_S = 30 * 24 * 3600  # a month per batch


def register(cluster_subparsers) -> argparse.ArgumentParser:
    p = cluster_subparsers.add_parser(
        "execute",
        help="apply a reassignment plan in throttled batches (dry run unless --execute); "
        "--verify, --list, --cancel as kafka-reassign-partitions.sh",
        description="Split a kafka-reassign-partitions.sh plan into batches under concurrency caps, then "
        "(with --execute) apply them one by one: set the replication throttle, "
        "alter_partition_reassignments, move replicas to the plan's log dirs, wait, verify, clear "
        "the throttle; finally elect the preferred leaders. Without an action nothing is written "
        "to the cluster. --verify, --list and --cancel do what kafka-reassign-partitions.sh does, "
        "with its output lines. Ctrl-C or SIGTERM during --execute stops before the next step, "
        "leaves what was submitted running and the throttles in place, prints the --verify, "
        "--cancel and resume commands and exits 130.",
    )
    p.add_argument(
        "--reassignment-json-file",
        metavar="PLAN.json",
        help='the plan: {"version":1,"partitions":[{"topic","partition","replicas","log_dirs"?}]}; '
        'log_dirs ("any" or absolute paths): --execute moves the replica to that log dir with '
        "AlterReplicaLogDirs (required except with --list)",
    )
    actions = p.add_mutually_exclusive_group()
    actions.add_argument(
        "--verify",
        action="store_true",
        help="show whether the plan's reassignments completed; when none is running, clear the "
        "throttles (unless --preserve-throttles)",
    )
    actions.add_argument(
        "--list", action="store_true", help="list every partition reassignment in flight"
    )
    actions.add_argument(
        "--cancel",
        action="store_true",
        help="cancel the plan's reassignments in flight (Kafka restores the original replicas) "
        "and clear the throttles (unless --preserve-throttles)",
    )
    p.add_argument(
        "--preserve-throttles",
        action="store_true",
        help="--verify/--cancel: leave broker and topic throttles as they are",
    )
    p.add_argument(
        "--additional",
        action="store_true",
        help="--execute even though other reassignments are running; with an unfinished "
        "execution of this plan, resume it (with --throttle: at the new rate), as resubmitting "
        "with kafka-reassign-partitions.sh --additional does",
    )
    p.add_argument(
        "--replica-alter-log-dirs-throttle",
        type=int,
        default=None,
        metavar="BYTES_PER_S",
        help="throttle of moves between log dirs of one broker "
        "(replica.alter.log.dirs.io.max.bytes.per.second on the brokers that move one)",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--bootstrap-server", metavar="HOST:PORT", help="the live cluster")
    src.add_argument("--snapshot", metavar="FILE", help="a cluster snapshot (dry run only)")
    p.add_argument(
        "--command-config",
        metavar="FILE",
        help="client properties (security.protocol, sasl.*, ssl.*)",
    )
    p.add_argument(
        "--throttle",
        type=int,
        default=None,
        metavar="BYTES_PER_S",
        help="inter-broker replication throttle, as kafka-reassign-partitions.sh --throttle. With "
        "--resume it changes the throttle of the running execution, as the tool's --additional "
        "--throttle does: the new rate is recorded in the state file, set at once on the batch "
        "in flight and used by the later batches (without it, the saved rate is kept)",
    )
    p.add_argument(
        "--max-moves-per-broker",
        type=int,
        default=None,
        metavar="N",
        help=f"partition moves in flight per broker, sources and destinations "
        f"(default {DEFAULT_MAX_MOVES_PER_BROKER}); fixed when an execution starts: --resume "
        f"refuses a different value",
    )
    p.add_argument(
        "--max-moves",
        type=int,
        default=None,
        metavar="N",
        help=f"partition moves per batch in the whole cluster (default {DEFAULT_MAX_MOVES}); fixed "
        f"when an execution starts: --resume refuses a different value",
    )
    p.add_argument(
        "--state-file", metavar="F", help="execution state (default: PLAN.json.state.json)"
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted execution from its state file",
    )
    actions.add_argument(
        "--execute", action="store_true", help="really apply the plan (default: dry run)"
    )
    p.add_argument("--output-dir", metavar="DIR", help="write one reassignment JSON per batch here")
    p.add_argument(
        "--max-batches",
        type=int,
        default=None,
        metavar="N",
        help="apply at most N batches in this run, then stop (resume later)",
    )
    p.add_argument(
        "--poll-interval",
        type=float,
        default=1.0,
        metavar="S",
        help="seconds between list_partition_reassignments polls (default 1)",
    )
    p.add_argument(
        "--timeout",
        type=int,
        default=10000,
        metavar="MS",
        help="as the tool's --timeout: how long to retry starting a log-dir move while the "
        "replica is not on its broker yet (default 10000 ms)",
    )
    p.add_argument(
        "--batch-timeout",
        type=float,
        default=None,
        metavar="S",
        help="give up on a batch after S seconds (the state file allows --resume)",
    )
    add_format_flag(p)
    p.set_defaults(func=run_execute)
    return p


def _table(console, result: dict) -> None:
    from rich.text import Text

    plan = result["plan"]
    mode = result["mode"]
    c = textfmt.count
    throttle = textfmt.rate(plan["throttle"]) if plan["throttle"] is not None else "none"
    statuses = result.get("status") or {}
    batches = sorted(plan["batches"], key=lambda b: b["index"])
    textfmt.print_table(
        console,
        f"cluster execute ({mode}): {c(plan['partitions'])} partitions, "
        f"{c(plan['replica_moves'])} replica moves, {textfmt.bytes_(plan['bytes_moved'])}, "
        f"throttle {throttle}",
        [
            ">batch",
            ">partitions",
            ">replica moves",
            ">bytes",
            ">busiest broker slots",
            ">least time at throttle",
            "status",
        ],
        [
            [
                str(b["index"] + 1),
                c(b["partitions"]),
                c(b["replica_moves"]),
                textfmt.bytes_(b["bytes_moved"]),
                c(max(b["broker_slots"].values(), default=0)),
                textfmt.duration_s(b["min_seconds"]),
                statuses.get(str(b["index"]), "planned"),
            ]
            for b in batches
        ],
    )
    if batches and plan["throttle"] is not None:
        first = batches[0]["throttle"]
        same: dict[tuple, list[str]] = {}  # brokers with the same configs share one row each
        for k, cfg in first["brokers"].items():
            same.setdefault(tuple(cfg.items()), []).append(str(k))
        rows = [
            [("broker " if len(ids) == 1 else "brokers ") + ", ".join(ids), n, _config_value(n, v)]
            for items, ids in same.items()
            for n, v in items
        ]
        rows += [
            [f"topic {k}", n, _config_value(n, v)]
            for k, cfg in first["topics"].items()
            for n, v in cfg.items()
        ]
        textfmt.print_table(
            console,
            "batch 1 throttle configs (kafka-configs --alter --add-config)",
            ["entity", "config", "value"],
            rows,
        )
    for path in result.get("batch_files") or []:
        console.print(Text(f"wrote {path}"))
    if result.get("election"):
        e = result["election"]
        earlier = e.get("elected_by_interrupted_run") or 0
        by = f" ({c(earlier)} by the interrupted run)" if earlier else ""
        console.print(
            f"preferred leader election: {c(e['elected'])} elected{by}, {c(e['not_needed'])} not "
            f"needed, {c(len(e['failed']))} failed"
        )
    if result.get("error"):
        console.print(Text(f"error: {result['error']}", style="red"))
    if mode == "dry-run":
        console.print("dry run: nothing was written to the cluster; add --execute to apply")


def _config_value(name: str, value) -> str:
    """A throttle config as kafka-configs takes it, readable: rates with their unit, replica
    lists with spaces (kafka-configs wants them in brackets, without the spaces)."""
    text = str(value)
    if name.endswith(".rate") and text.isdigit():
        return f"{text} ({textfmt.rate(int(text))})"
    return text.replace(",", ", ")


def _check_flags(args: argparse.Namespace) -> None:
    """Bad numbers name the flag they came from."""
    # -1 is the tool's "no throttle" (its default)
    for name in ("throttle", "replica_alter_log_dirs_throttle"):
        if getattr(args, name) == -1:
            setattr(args, name, None)
    for flag, value, least in (
        ("--max-moves-per-broker", args.max_moves_per_broker, 1),
        ("--max-moves", args.max_moves, 1),
        ("--max-batches", args.max_batches, 1),
        ("--throttle", args.throttle, 0),
        ("--replica-alter-log-dirs-throttle", args.replica_alter_log_dirs_throttle, 0),
        ("--timeout", args.timeout, 0),
    ):
        if value is not None and value < least:
            raise InputError(f"must be >= {least}, got {value}", field=flag)
    for flag, value, most in (
        ("--max-moves-per-broker", args.max_moves_per_broker, INT32_MAX),
        ("--max-moves", args.max_moves, INT32_MAX),
        ("--max-batches", args.max_batches, INT32_MAX),
        ("--throttle", args.throttle, INT64_MAX),  # a LONG broker/topic config
        ("--replica-alter-log-dirs-throttle", args.replica_alter_log_dirs_throttle, INT64_MAX),
        ("--timeout", args.timeout, INT32_MAX),
    ):
        if value is not None and value > most:
            raise InputError(f"must be <= {most:,}, got {value}", field=flag)
    # checked before anything is submitted: time.sleep(inf) fails only after the first batch went out
    for flag, value, most in (
        ("--poll-interval", args.poll_interval, MAX_POLL_INTERVAL_S),
        ("--batch-timeout", args.batch_timeout, MAX_BATCH_TIMEOUT_S),
    ):
        if value is None:
            continue
        if not math.isfinite(value) or not 0 < value <= most:
            raise InputError(
                f"a number of seconds in (0, {most:,}], got {textfmt.escape_controls(str(value))}",
                field=flag,
            )


def _check_batch_paths(output_dir: str | None) -> None:
    """The batch files inside --output-dir are replaced as one set: one that cannot be a file
    (a folder at batch-NNN.json) is refused before any work, not found after some are written."""
    if not output_dir or not Path(output_dir).is_dir():
        return
    for p in sorted(Path(output_dir).iterdir()):
        if re.fullmatch(r"batch-\d{3,}\.json", p.name) and p.is_dir():
            raise InputError(f"{p} is a directory, not a batch file", field="--output-dir")


def _caps(args: argparse.Namespace) -> tuple[int, int]:
    return (
        DEFAULT_MAX_MOVES_PER_BROKER
        if args.max_moves_per_broker is None
        else args.max_moves_per_broker,
        DEFAULT_MAX_MOVES if args.max_moves is None else args.max_moves,
    )


def run_execute(args: argparse.Namespace) -> int:
    from ..kafka.execute import (
        ExecutionError,
        Executor,
        default_state_path,
        plan_digest,
        plan_execution,
        plan_from_state,
        write_batch_files,
    )

    if args.list:
        from .cluster_reassign import run_list

        return run_list(args)
    plan_file = args.reassignment_json_file
    if not plan_file:
        raise InputError("required (except with --list)", field="--reassignment-json-file")
    doc = read_structured(plan_file)
    try:
        target = parse_reassignment(doc)
        log_dirs = parse_log_dirs(doc)
    except InputError as exc:
        raise exc.in_file(plan_file) from None
    if not target:
        # ReassignPartitionsCommand.parseExecuteAssignmentArgs refuses it the same way.
        raise InputError(
            "Partition reassignment list cannot be empty", source=plan_file, field="partitions"
        )
    digest = plan_digest(doc)
    _check_flags(args)
    action = next((a for a in ("execute", "verify", "cancel") if getattr(args, a)), None)
    if action and not args.bootstrap_server:
        raise InputError(
            f"--{action} needs --bootstrap-server (a snapshot can only be dry-run)",
            field=f"--{action}",
        )
    if args.resume and not args.execute:
        raise InputError("--resume applies changes: add --execute", field="--resume")
    if action in ("verify", "cancel"):
        from .cluster_reassign import run_cancel, run_verify

        return (run_verify if action == "verify" else run_cancel)(args, target, log_dirs)
    state_path = Path(args.state_file) if args.state_file else default_state_path(plan_file)
    check_output_paths(
        {
            "--state-file": state_path if args.execute else None,
            # written beside the state file before the first change (cluster_reassign.print_rollback)
            "--state-file's rollback file": (
                state_path.with_name(Path(plan_file).name + ".rollback.json")
                if args.execute and not args.resume
                else None
            ),
            "--output-dir": args.output_dir,
        },
        folders=("--output-dir",),
    )
    _check_batch_paths(args.output_dir)
    per_broker, max_moves = _caps(args)

    if not args.execute:
        from kafka.errors import KafkaError

        from ..kafka.admin import AdminError
        from ..ops.cluster_source import read_snapshot

        try:
            snapshot = read_snapshot(args.snapshot, args.bootstrap_server, args.command_config)
        except (AdminError, KafkaError) as exc:
            stderr.print(
                f"[red]kafka-rebalance cluster execute: cannot read the cluster: {exc}[/red]"
            )
            return 1
        plan = plan_execution(
            target,
            snapshot,
            throttle=args.throttle,
            max_moves_per_broker=per_broker,
            max_moves=max_moves,
            digest=digest,
            log_dirs=log_dirs,
            source=plan_file,
        )
        files = write_batch_files(plan, args.output_dir) if args.output_dir else []
        emit({"mode": "dry-run", "plan": plan.to_json(), "batch_files": files}, args.format, _table)
        return 0

    if args.resume:  # a wrong state file is reported before the cluster is contacted
        _resume_state(state_path, digest, target, log_dirs)

    from kafka.errors import KafkaError

    from ..kafka.admin import AdminError, KafkaAdmin
    from ..kafka.execute import Interrupted
    from .cluster_reassign import StopOnSignal, interrupted_report, print_rollback

    state = None
    try:
        with KafkaAdmin(args.bootstrap_server, args.command_config) as admin:
            state, plan, fresh = _prepare(admin, args, target, digest, state_path, log_dirs)
            files = write_batch_files(plan, args.output_dir) if args.output_dir else []
            if fresh:
                print_rollback(args, admin, target, state, state_path)
            with StopOnSignal() as stop:
                executor = Executor(
                    admin,
                    state,
                    state_path,
                    poll_interval_s=args.poll_interval,
                    batch_timeout_s=args.batch_timeout,
                    max_batches=args.max_batches,
                    log=lambda msg: stderr.print(msg),
                    stop=stop.requested,
                    log_dir_timeout_ms=args.timeout,
                )
                if not fresh and args.replica_alter_log_dirs_throttle is not None:
                    state["log_dir_throttle"] = args.replica_alter_log_dirs_throttle
                executor.save()
                if (args.resume or args.additional) and not fresh and args.throttle is not None:
                    executor.change_throttle(args.throttle)
                with _progress() as progress:
                    executor.progress = progress
                    state = executor.run()
        error = None
    except Interrupted as exc:
        return interrupted_report(args, state_path, exc.in_flight, stop.signal_name)
    except KeyboardInterrupt:  # a second signal (or Ctrl-C outside the run): stop where we are
        in_flight = [
            (m["topic"], m["partition"])
            for b in (state or {}).get("batches", [])
            if b["status"] == "submitted"
            for m in b["moves"]
        ]
        return interrupted_report(args, state_path, in_flight, "a second signal")
    except (ExecutionError, AdminError, KafkaError) as exc:
        # A refusal or a broker that cannot be reached: say which, keep the state file for --resume.
        error = str(exc) if not isinstance(exc, KafkaError) or str(exc) else type(exc).__name__
        stderr.print(f"[red]kafka-rebalance cluster execute: {error}[/red]")
        if state is None:
            return 1
    status = {str(b["index"]): b["status"] for b in state["batches"]}
    emit(
        {
            "mode": "execute",
            "state_file": str(state_path),
            "phase": state.get("phase"),
            "status": status,
            "plan": plan_from_state(state, digest).to_json(),
            "batch_files": files if error is None else [],
            "election": state.get("election"),
            "throttle_changes": state.get("throttle_changes", []),
            "error": error,
        },
        args.format,
        _table,
    )
    return 1 if error else 0


def _prepare(
    admin, args: argparse.Namespace, target: dict, digest: str, state_path: Path, log_dirs: dict
):
    """The execution state to run: the state file's when resuming, else a fresh split of the plan."""
    from ..kafka.execute import load_state, plan_execution, plan_from_state, state_from_plan

    per_broker, max_moves = _caps(args)
    if args.additional and not args.resume and state_path.exists():
        old = load_state(state_path)
        if old.get("phase") not in ("finished", "cancelled") and old.get("plan_digest") == digest:
            args.resume = True  # resubmitting the running plan: continue it (at the new throttle)
    if args.resume:
        state = _resume_state(state_path, digest, target, log_dirs)
        # The batches were split when the execution started; a resume continues them, it cannot re-split.
        for flag, key, value in (
            ("--max-moves-per-broker", "max_moves_per_broker", args.max_moves_per_broker),
            ("--max-moves", "max_moves", args.max_moves),
        ):
            if value is None or value == state.get(key):
                continue
            if state.get(key) is None:
                stderr.print(
                    f"{flag} {value} ignored: the batches of {state_path} are already split"
                )
                continue
            raise InputError(
                f"{value} conflicts with the execution being resumed (its batches were split with "
                f"{key}={state[key]} in {state_path}); drop the flag to continue, or let it "
                "finish and start a new execution",
                field=flag,
            )
        return state, plan_from_state(state, digest), False
    if state_path.exists():
        old = load_state(state_path)
        if old.get("phase") not in ("finished", "cancelled"):
            raise InputError(
                "an unfinished execution exists: use --resume, or delete the file",
                source=str(state_path),
            )
    if not args.additional and admin.list_partition_reassignments():
        from ..kafka.execute import ExecutionError

        # ReassignPartitionsCommand's CANNOT_EXECUTE_BECAUSE_OF_EXISTING_MESSAGE (exit 1).
        raise ExecutionError(
            "Cannot execute because there is an existing partition assignment.  Use --additional "
            "to override this and create a new partition assignment in addition to the existing "
            "one. The --additional flag can also be used to change the throttle by resubmitting "
            "the current reassignment."
        )
    plan = plan_execution(
        target,
        admin.snapshot(),
        throttle=args.throttle,
        max_moves_per_broker=per_broker,
        max_moves=max_moves,
        digest=digest,
        log_dirs=log_dirs,
        source=args.reassignment_json_file,
    )
    return (
        state_from_plan(plan, args.bootstrap_server, args.replica_alter_log_dirs_throttle),
        plan,
        True,
    )


def _resume_state(state_path: Path, digest: str, target: dict, log_dirs: dict) -> dict:
    """The state file to resume, checked field by field and move by move against the plan."""
    from ..kafka.execute import load_state
    from ..kafka.execute_state import check_state_matches_plan

    state = load_state(state_path)
    if state.get("plan_digest") != digest:
        raise InputError("the state file belongs to a different plan", source=str(state_path))
    check_state_matches_plan(state, target, log_dirs, str(state_path))
    return state


class _progress:
    """A rich progress bar on stderr, one task per batch."""

    def __enter__(self):
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self._p = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=stderr,
            transient=False,
        )
        self._p.__enter__()
        self._tasks: dict[str, int] = {}
        return self.update

    def update(self, label: str, done: int, total: int) -> None:
        if label not in self._tasks:
            self._tasks[label] = self._p.add_task(label, total=total)
        self._p.update(self._tasks[label], completed=done)

    def __exit__(self, *exc) -> None:
        self._p.__exit__(*exc)
