"""`cluster execute --verify | --list | --cancel`, the rollback JSON, and Ctrl-C/SIGTERM during --execute.

The actions print kafka-reassign-partitions.sh's own lines (kafka/reassign_tool.py) on stdout;
with `--format json` they print one JSON object with the same facts and the lines under "lines".
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
from pathlib import Path

from ..errors import InputError
from ..io_util import atomic_write_text
from ..output import emit, stderr
from ..textfmt import escape_controls

INTERRUPTED = 130


def _admin(args: argparse.Namespace):
    from ..kafka.admin import KafkaAdmin

    return KafkaAdmin(args.bootstrap_server, args.command_config)


def _run_action(args: argparse.Namespace, name: str, body) -> int:
    """Run one tool action: its lines to stdout (text) or collected (json); errors exit 1."""
    from kafka.errors import KafkaError

    from ..kafka.admin import AdminError

    lines: list[str] = []
    text = args.format != "json"

    def out(line: str) -> None:
        if not line:
            return
        lines.append(line)
        if text:
            print(line, flush=True)

    try:
        with _admin(args) as admin:
            result = body(admin, out)
    except (AdminError, KafkaError, RuntimeError, TimeoutError) as exc:
        stderr.print(f"[red]kafka-rebalance cluster execute --{name}: Error: {exc}[/red]")
        return 1
    if not text:
        emit({"action": name, **result, "lines": lines}, "json")
    return 0


def run_list(args: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..kafka.reassign_tool import list_text, tp

    if not args.bootstrap_server:
        raise InputError("--list needs --bootstrap-server", field="--list")

    def body(admin, out):
        ongoing = admin.list_partition_reassignments()
        out(list_text(ongoing))
        return {
            "reassignments": {
                tp(k): {
                    "replicas": list(r.replicas),
                    "adding": list(r.adding),
                    "removing": list(r.removing),
                }
                for k, r in sorted(ongoing.items())
            }
        }

    return _run_action(args, "list", body)


def run_verify(args: argparse.Namespace, target: dict, log_dirs: dict) -> int:
    from ..kafka.reassign_tool import replica_log_dirs, verify

    moves = replica_log_dirs(target, log_dirs)
    return _run_action(
        args,
        "verify",
        lambda admin, out: verify(admin, target, moves, args.preserve_throttles, out),
    )


def run_cancel(args: argparse.Namespace, target: dict, log_dirs: dict) -> int:
    from ..kafka.execute import default_state_path, load_state, plan_digest
    from ..kafka.reassign_tool import cancel, replica_log_dirs

    moves = replica_log_dirs(target, log_dirs)
    rc = _run_action(
        args,
        "cancel",
        lambda admin, out: cancel(admin, target, moves, args.preserve_throttles, args.timeout, out),
    )
    # Our execution of this plan (if one is unfinished) ends here: a new --execute may start.
    state_path = (
        Path(args.state_file)
        if args.state_file
        else default_state_path(args.reassignment_json_file)
    )
    if rc == 0 and state_path.exists():
        from ..io_util import atomic_write_json, read_structured

        try:
            state = load_state(state_path)
        except InputError as exc:  # the cancel went through: say why the file is left as it is
            stderr.print(
                f"execution state not marked cancelled: {escape_controls(str(exc))}", markup=False
            )
            return rc
        digest = plan_digest(read_structured(args.reassignment_json_file))
        if state.get("plan_digest") == digest and state.get("phase") not in (
            "finished",
            "cancelled",
        ):
            state["phase"] = "cancelled"
            atomic_write_json(state_path, state, indent=None)
            stderr.print(f"execution state {state_path} marked cancelled")
    return rc


def print_rollback(
    args: argparse.Namespace, admin, target: dict, state: dict, state_path: Path
) -> None:
    """Before the first change: the current replicas as the tool prints them, also saved to a file."""
    from ..kafka.reassign_tool import reassignment_json_text, rollback_text

    current = admin.replica_assignment({t for t, _ in target})
    current = {k: v for k, v in current.items() if k in target}
    path = state_path.with_name(Path(args.reassignment_json_file).name + ".rollback.json")
    atomic_write_text(path, reassignment_json_text(current) + "\n")
    state["rollback_file"] = str(path)
    text = rollback_text(current) + f"\n(also written to {path})"
    if args.format == "json":
        print(text, file=sys.stderr, flush=True)
    else:
        print(text, flush=True)


class StopOnSignal:
    """SIGINT/SIGTERM ask the executor to stop at the next step boundary; a second one interrupts now."""

    def __init__(self) -> None:
        self.signal_name: str | None = None
        self._old: dict = {}

    def requested(self) -> bool:
        return self.signal_name is not None

    def _handle(self, signum, _frame) -> None:
        if self.signal_name is not None:
            raise KeyboardInterrupt
        self.signal_name = signal.Signals(signum).name
        stderr.print(
            f"{self.signal_name}: stopping before the next step (reassignments already submitted "
            "keep running); send it again to stop at once"
        )

    def __enter__(self) -> StopOnSignal:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)


def commands_after_stop(args: argparse.Namespace, state_path: Path) -> dict[str, str]:
    """The exact commands to check, cancel or resume the stopped execution."""
    base = [
        "kafka-rebalance",
        "cluster",
        "execute",
        "--bootstrap-server",
        args.bootstrap_server,
        "--reassignment-json-file",
        args.reassignment_json_file,
    ]
    if args.command_config:
        base += ["--command-config", args.command_config]
    resume = [*base, "--state-file", str(state_path), "--execute", "--resume"]
    if args.poll_interval != 1.0:
        resume += ["--poll-interval", str(args.poll_interval)]
    return {
        "verify": shlex.join([*base, "--verify"]),
        "cancel": shlex.join([*base, "--state-file", str(state_path), "--cancel"]),
        "resume": shlex.join(resume),
    }


def interrupted_report(
    args: argparse.Namespace,
    state_path: Path,
    in_flight: list[tuple[str, int]],
    signal_name: str | None,
) -> int:
    """What is still running and how to go on; exit status 130."""
    from ..kafka.reassign_tool import tp

    cmds = commands_after_stop(args, state_path)
    names = ",".join(tp(k) for k in sorted(in_flight))
    lines = [
        f"Stopped by {signal_name or 'an interrupt'}: no new batch was started; "
        + (
            f"{len(in_flight)} partition reassignment(s) still in flight and left running: {names}"
            if in_flight
            else "no partition reassignment of this plan is in flight"
        ),
        "Throttles set for the batch in flight stay in place until it is verified or cancelled.",
        f"Check:  {cmds['verify']}",
        f"Cancel: {cmds['cancel']}",
        f"Resume: {cmds['resume']}",
    ]
    for line in lines:
        print(line, file=sys.stderr, flush=True)
    if args.format == "json":
        emit(
            {
                "mode": "execute",
                "interrupted": signal_name or "interrupt",
                "state_file": str(state_path),
                "in_flight": [tp(k) for k in sorted(in_flight)],
                "commands": cmds,
            },
            "json",
        )
    return INTERRUPTED
