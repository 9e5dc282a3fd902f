"""Checking an execution state file before a resume trusts it.

The state file is ours, but a person may edit it (its plan digest still matching the plan), or
a disk may corrupt it. A resume acts on the cluster from it, so every field is checked for its
type and range, and every move against the plan, before anything is sent: a wrong field is one
InputError naming the file, the field and the value, never a traceback halfway through a batch.
"""

from __future__ import annotations

import math
from typing import Any

from ..errors import InputError
from ..fields import INT32_MAX, INT64_MAX, integer, show

PHASES = ("batches", "election", "finished", "cancelled")
STATUSES = ("pending", "throttled", "submitted", "completed", "done")


class _Checker:
    """The state file's checks, through fields.py (values shown as JSON writes them)."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, field: str, what: str, value: Any) -> InputError:
        return InputError(f"{what}, got {show(value)}", source=self.source, field=field)

    def int_(
        self, value: Any, field: str, least: int = 0, most: int = INT64_MAX, none: bool = False
    ) -> None:
        if value is None and none:
            return
        what = f"an integer in [{least}, {most}]" + (" or null" if none else "")
        try:
            integer(value, field, lo=least, hi=most, what=what)
        except InputError as exc:
            raise exc.in_file(self.source) from None

    def str_(self, value: Any, field: str) -> None:
        if not isinstance(value, str) or not value:
            raise self.fail(field, "a non-empty string", value)

    def list_(self, value: Any, field: str) -> list:
        if not isinstance(value, list):
            raise self.fail(field, "a list", value)
        return value

    def dict_(self, value: Any, field: str) -> dict:
        if not isinstance(value, dict):
            raise self.fail(field, "an object", value)
        return value


def validate_state(state: dict, source: str) -> None:
    """Raise InputError naming the first field of `state` whose type or value is wrong."""
    c = _Checker(source)
    c.str_(state.get("plan_digest"), "plan_digest")
    if state.get("phase") not in PHASES:
        raise c.fail("phase", f"one of {', '.join(PHASES)}", state.get("phase"))
    c.int_(state.get("throttle"), "throttle", none=True)
    c.int_(state.get("log_dir_throttle"), "log_dir_throttle", none=True)
    c.int_(state.get("max_moves_per_broker"), "max_moves_per_broker", 1, INT32_MAX, none=True)
    c.int_(state.get("max_moves"), "max_moves", 1, INT32_MAX, none=True)
    for i, b in enumerate(c.list_(state.get("offline_brokers", []), "offline_brokers")):
        c.int_(b, f"offline_brokers[{i}]", 0, INT32_MAX)
    batches = c.list_(state.get("batches"), "batches")
    for i, entry in enumerate(batches):
        where = f"batches[{i}]"
        c.dict_(entry, where)
        if entry.get("index") != i or isinstance(entry.get("index"), bool):
            raise c.fail(f"{where}.index", f"{i} (batches in order)", entry.get("index"))
        if entry.get("status") not in STATUSES:
            raise c.fail(f"{where}.status", f"one of {', '.join(STATUSES)}", entry.get("status"))
        moves = c.list_(entry.get("moves"), f"{where}.moves")
        if not moves:
            raise c.fail(f"{where}.moves", "at least one move", moves)
        for j, m in enumerate(moves):
            _check_move(c, m, f"{where}.moves[{j}]")
    election = state.get("election")
    if election is not None:
        c.dict_(election, "election")
        for key in ("partitions", "elected", "not_needed"):
            c.int_(election.get(key), f"election.{key}")
        c.dict_(election.get("failed", {}), "election.failed")
    leaders = state.get("leaders_before_election")
    if leaders is not None:
        for k, v in c.dict_(leaders, "leaders_before_election").items():
            c.int_(v, f"leaders_before_election.{k}", -1, INT32_MAX, none=True)
    for i, ch in enumerate(c.list_(state.get("throttle_changes", []), "throttle_changes")):
        c.dict_(ch, f"throttle_changes[{i}]")


def _check_move(c: _Checker, m: Any, where: str) -> None:
    c.dict_(m, where)
    c.str_(m.get("topic"), f"{where}.topic")
    c.int_(m.get("partition"), f"{where}.partition", 0, INT32_MAX)
    for key in ("from", "to"):
        reps = c.list_(m.get(key), f"{where}.{key}")
        for k, b in enumerate(reps):
            c.int_(b, f"{where}.{key}[{k}]", 0, INT32_MAX)
        if len(set(reps)) != len(reps):
            raise c.fail(f"{where}.{key}", "distinct broker ids", reps)
    if not m["to"]:
        raise c.fail(f"{where}.to", "at least one replica", m["to"])
    size = m.get("size_bytes", 0.0)
    if (
        isinstance(size, bool)
        or not isinstance(size, (int, float))
        or not (math.isfinite(size) and size >= 0)
    ):
        raise c.fail(f"{where}.size_bytes", "a finite number >= 0", size)
    dirs = m.get("log_dirs")
    if dirs is not None:
        dirs = c.list_(dirs, f"{where}.log_dirs")
        if len(dirs) != len(m["to"]) or not all(isinstance(d, str) and d for d in dirs):
            raise c.fail(
                f"{where}.log_dirs", f"{len(m['to'])} log dirs (strings), one per replica", dirs
            )


def check_state_matches_plan(state: dict, target: dict, log_dirs: dict, source: str) -> None:
    """Every move of the state is one of the plan's: a resume applies the plan, nothing else."""
    c = _Checker(source)
    seen: set[tuple[str, int]] = set()
    for i, entry in enumerate(state["batches"]):
        for j, m in enumerate(entry["moves"]):
            key = (m["topic"], m["partition"])
            where = f"batches[{i}].moves[{j}]"
            if key in seen:
                raise c.fail(
                    f"{where}.partition", "each partition once", f"{key[0]}-{key[1]} again"
                )
            seen.add(key)
            if key not in target:
                raise c.fail(where, "a partition of the plan", f"{key[0]}-{key[1]}")
            if tuple(m["to"]) != tuple(target[key]):
                raise c.fail(f"{where}.to", f"the plan's replicas {list(target[key])}", m["to"])
            want = log_dirs.get(key) if log_dirs else None
            got = tuple(m["log_dirs"]) if m.get("log_dirs") is not None else None
            if want is not None and got is not None and tuple(want) != got:
                raise c.fail(
                    f"{where}.log_dirs", f"the plan's log dirs {list(want)}", m["log_dirs"]
                )
