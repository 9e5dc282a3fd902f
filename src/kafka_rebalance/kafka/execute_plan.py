"""The execution plan and its state file: batches, throttles and per-batch JSON (no cluster calls).

`plan_execution` pairs a plan with the cluster's placement and splits it into batches; the state
file (JSON, rewritten atomically by the executor after every step) records the batches as first
computed and each one's step, so a resume never re-splits from a cluster that has changed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ..cluster.batches import (
    Batch,
    PartitionMove,
    moves_from_plan,
    plan_batches,
    reassignment_json,
    throttle_for,
)
from ..errors import InputError
from ..io_util import loads_json
from ..model import ClusterSnapshot

STATE_VERSION = 1
PENDING, THROTTLED, SUBMITTED, COMPLETED, DONE = (
    "pending",
    "throttled",
    "submitted",
    "completed",
    "done",
)


@dataclass(frozen=True)
class ExecutionPlan:
    batches: tuple[Batch, ...]
    throttle: int | None
    plan_digest: str
    offline: frozenset[int] = frozenset()  # brokers down when planned: no throttle is set on them
    max_moves_per_broker: int | None = (
        None  # the caps the batches were split with (recorded for --resume)
    )
    max_moves: int | None = None

    def to_json(self) -> dict:
        moves = [m for b in self.batches for m in b.moves]
        return {
            "throttle": self.throttle,
            "partitions": len(moves),
            "replica_moves": sum(len(m.adding) for m in moves),
            "bytes_moved": sum(m.bytes_moved for m in moves),
            "batches": [batch_json(b, self.throttle) for b in self.batches],
        }


def batch_json(b: Batch, throttle: int | None) -> dict:
    return {
        "index": b.index,
        "partitions": len(b.moves),
        "replica_moves": sum(len(m.adding) for m in b.moves),
        "bytes_moved": b.bytes_moved,
        "broker_slots": {str(k): v for k, v in b.broker_load().items()},
        "min_seconds": min_seconds(b, throttle),
        "throttle": b.throttle.to_json(),
        "reassignment": b.reassignment_json(),
        "moves": [move_json(m) for m in b.moves],
    }


def move_json(m: PartitionMove) -> dict:
    d = {
        "topic": m.topic,
        "partition": m.partition,
        "from": list(m.old_replicas),
        "to": list(m.new_replicas),
        "size_bytes": m.size_bytes,
    }
    if m.log_dirs is not None:
        d["log_dirs"] = list(m.log_dirs)
    return d


def min_seconds(b: Batch, throttle: int | None) -> float | None:
    """Lower bound on the batch's duration: the busiest broker's bytes in or out at the throttle rate."""
    if not throttle:
        return None
    inbound: dict[int, float] = {}
    outbound: dict[int, float] = {}
    for m in b.moves:
        src = m.old_replicas[0] if m.old_replicas else None
        for d in m.adding:
            inbound[d] = inbound.get(d, 0.0) + m.size_bytes
            if src is not None:
                outbound[src] = outbound.get(src, 0.0) + m.size_bytes
    busiest = max([*inbound.values(), *outbound.values(), 0.0])
    return busiest / throttle


def plan_digest(doc: object) -> str:
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def plan_execution(
    target: dict[tuple[str, int], tuple[int, ...]],
    snapshot: ClusterSnapshot,
    *,
    throttle: int | None,
    max_moves_per_broker: int | None,
    max_moves: int | None,
    digest: str = "",
    log_dirs: dict[tuple[str, int], tuple[str, ...]] | None = None,
    source: str | None = None,
) -> ExecutionPlan:
    """Pair the plan with the cluster's placement and split it into batches (pure).

    `target` is in the plan file's order, so errors name the entry (`partitions[3].replicas`) of `source`.
    """
    current = {(p.topic, p.partition): p.replicas for p in snapshot.partitions}
    sizes = {
        (p.topic, p.partition): (p.load.size_bytes if p.load else 0.0) for p in snapshot.partitions
    }
    alive = {b.id: b.alive for b in snapshot.brokers}
    for i, ((topic, part), reps) in enumerate(target.items()):
        for r in reps:
            if r not in alive:
                # ReassignPartitionsCommand.verifyBrokerIds: "Unknown broker id 99".
                raise InputError(
                    f"Unknown broker id {r}: partition {topic}-{part} names a broker the cluster "
                    f"does not have (replicas {list(reps)})",
                    source=source,
                    field=f"partitions[{i}].replicas",
                )
            if not alive[r]:
                # As the reassign tool's verifyBrokerIds (describeCluster lists live brokers only): a copy
                # to a dead broker would never finish.
                raise InputError(
                    f"Unknown broker id {r}: broker {r} is not alive, so partition {topic}-{part} "
                    f"cannot be copied there (replicas {list(reps)})",
                    source=source,
                    field=f"partitions[{i}].replicas",
                )
    try:
        moves = moves_from_plan(target, current, sizes, log_dirs)
    except InputError as exc:
        raise exc.in_file(source) if source else exc from None
    offline = frozenset(b for b, up in alive.items() if not up)
    batches = plan_batches(
        moves,
        max_moves_per_broker=max_moves_per_broker,
        max_moves=max_moves,
        throttle=throttle,
        offline=offline,
    )
    return ExecutionPlan(tuple(batches), throttle, digest, offline, max_moves_per_broker, max_moves)


# ---------------------------------------------------------------------------
# State file


def state_from_plan(
    plan: ExecutionPlan, bootstrap: str, log_dir_throttle: int | None = None
) -> dict:
    return {
        "version": STATE_VERSION,
        "log_dir_throttle": log_dir_throttle,
        "plan_digest": plan.plan_digest,
        "bootstrap": bootstrap,
        "throttle": plan.throttle,
        "offline_brokers": sorted(plan.offline),
        "phase": "batches",
        "max_moves_per_broker": plan.max_moves_per_broker,
        "max_moves": plan.max_moves,
        "batches": [
            {"index": b.index, "status": PENDING, "moves": [move_json(m) for m in b.moves]}
            for b in plan.batches
        ],
        "election": None,
    }


def batches_from_state(state: dict) -> list[Batch]:
    offline = frozenset(state.get("offline_brokers", ()))
    out = []
    for b in state["batches"]:
        moves = tuple(
            PartitionMove(
                m["topic"],
                m["partition"],
                tuple(m["from"]),
                tuple(m["to"]),
                float(m.get("size_bytes", 0.0)),
                tuple(m["log_dirs"]) if m.get("log_dirs") is not None else None,
            )
            for m in b["moves"]
        )
        out.append(Batch(b["index"], moves, throttle_for(moves, state.get("throttle"), offline)))
    return out


def plan_from_state(state: dict, digest: str) -> ExecutionPlan:
    return ExecutionPlan(
        tuple(batches_from_state(state)),
        state.get("throttle"),
        digest,
        frozenset(state.get("offline_brokers", ())),
        state.get("max_moves_per_broker"),
        state.get("max_moves"),
    )


def load_state(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("no state file to resume from", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the state file: {exc}", source=str(path)) from None

    state = loads_json(text, path)
    if (
        not isinstance(state, dict)
        or state.get("version") != STATE_VERSION
        or "batches" not in state
    ):
        raise InputError(f"not an execution state file (version {STATE_VERSION})", source=str(path))
    from .execute_state import validate_state

    validate_state(state, str(path))
    return state


def default_state_path(plan_file: str) -> Path:
    p = Path(plan_file)
    return p.with_name(p.name + ".state.json")


def write_batch_files(plan: ExecutionPlan, out_dir: str) -> list[str]:
    """One `kafka-reassign-partitions.sh` JSON per batch (batch-001.json, ...)."""
    import re

    from ..io_util import write_json_files

    files = [
        (Path(out_dir) / f"batch-{b.index + 1:03d}.json", reassignment_json(b.moves), 2)
        for b in plan.batches
    ]
    mine = {p.name for p, _, _ in files}
    # an earlier, longer plan's last batches would be read as this plan's: they go with the set
    stale = [
        p
        for p in (sorted(Path(out_dir).iterdir()) if Path(out_dir).is_dir() else [])
        if re.fullmatch(r"batch-\d{3,}\.json", p.name) and p.name not in mine
    ]
    # one set: a kill never leaves one run's batch 1 with another's batch 2
    write_json_files(files, remove=stale)
    return [str(p) for p, _, _ in files]
