"""Checking an execution state file before a resume trusts it.

The state file is ours, but a person may edit it (its plan digest still matching the plan), or
a disk may corrupt it. A resume acts on the cluster from it, so every field is checked for its
type and range, and every move against the plan, before anything is sent: a wrong field is one
InputError naming the file, the field and the value, never a traceback halfway through a batch.
The checks are fields.py's readers, as for every other input format.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .. import fields as F
from ..errors import InputError

PHASES = ("batches", "election", "finished", "cancelled")
STATUSES = ("pending", "throttled", "submitted", "completed", "done")


@contextmanager
def _in_file(source: str) -> Iterator[None]:
    """A field error raised inside names the state file."""
    try:
        yield
    except InputError as exc:
        raise exc.in_file(source) from None


def validate_state(state: dict, source: str) -> None:
    """Raise InputError naming the first field of `state` whose type or value is wrong."""
    with _in_file(source):
        _validate(state)


def _validate(state: dict) -> None:
    F.string(state.get("plan_digest"), "plan_digest")
    F.one_of(state.get("phase"), "phase", PHASES)
    F.optional_integer(state.get("throttle"), "throttle", lo=0)
    F.optional_integer(state.get("log_dir_throttle"), "log_dir_throttle", lo=0)
    for key in ("max_moves_per_broker", "max_moves"):
        F.optional_integer(state.get(key), key, lo=1, hi=F.INT32_MAX)
    F.int_list(state.get("offline_brokers", []), "offline_brokers", F.broker_id, unique=False)
    for i, entry in enumerate(F.array(state.get("batches"), "batches")):
        where = F.at("batches", i)
        F.mapping(entry, where)
        if entry.get("index") != i or isinstance(entry.get("index"), bool):
            raise F.expected(f"{i} (batches in order)", entry.get("index"), f"{where}.index")
        F.one_of(entry.get("status"), f"{where}.status", STATUSES)
        moves = F.array(entry.get("moves"), f"{where}.moves", empty=False, what="a list of moves")
        for j, m in enumerate(moves):
            _check_move(m, F.at(f"{where}.moves", j))
    election = state.get("election")
    if election is not None:
        F.mapping(election, "election")
        for key in ("partitions", "elected", "not_needed"):
            F.integer(election.get(key), f"election.{key}", lo=0)
        F.mapping(election.get("failed", {}), "election.failed")
    leaders = state.get("leaders_before_election")
    if leaders is not None:
        for k, v in F.mapping(leaders, "leaders_before_election").items():
            F.optional_integer(v, f"leaders_before_election.{k}", lo=-1, hi=F.INT32_MAX)
    for i, ch in enumerate(F.array(state.get("throttle_changes", []), "throttle_changes")):
        F.mapping(ch, F.at("throttle_changes", i))


def _check_move(m: Any, where: str) -> None:
    F.mapping(m, where)
    F.string(m.get("topic"), f"{where}.topic")
    F.partition(m.get("partition"), f"{where}.partition")
    F.int_list(m.get("from"), f"{where}.from", F.broker_id, what="broker ids")
    to = F.int_list(m.get("to"), f"{where}.to", F.broker_id, what="broker ids", empty=False)
    F.number(m.get("size_bytes", 0.0), f"{where}.size_bytes", lo=0, what="a finite number >= 0")
    dirs = m.get("log_dirs")
    if dirs is not None:
        F.strings(dirs, f"{where}.log_dirs", what="log dirs")
        if len(dirs) != len(to):
            raise F.expected(f"{len(to)} log dirs, one per replica", dirs, f"{where}.log_dirs")


def check_state_matches_plan(state: dict, target: dict, log_dirs: dict, source: str) -> None:
    """Every move of the state is one of the plan's: a resume applies the plan, nothing else."""
    with _in_file(source):
        seen: set[tuple[str, int]] = set()
        for i, entry in enumerate(state["batches"]):
            for j, m in enumerate(entry["moves"]):
                key = (m["topic"], m["partition"])
                where = f"batches[{i}].moves[{j}]"
                if key in seen:
                    raise F.expected(
                        "each partition once", f"{key[0]}-{key[1]} again", f"{where}.partition"
                    )
                seen.add(key)
                if key not in target:
                    raise F.expected("a partition of the plan", f"{key[0]}-{key[1]}", where)
                if tuple(m["to"]) != tuple(target[key]):
                    raise F.expected(
                        f"the plan's replicas {list(target[key])}", m["to"], f"{where}.to"
                    )
                want = log_dirs.get(key) if log_dirs else None
                got = tuple(m["log_dirs"]) if m.get("log_dirs") is not None else None
                if want is not None and got is not None and tuple(want) != got:
                    raise F.expected(
                        f"the plan's log dirs {list(want)}", m["log_dirs"], f"{where}.log_dirs"
                    )
