"""Apply a reassignment plan batch by batch: throttle, reassign, wait, verify, unthrottle, elect.

Dry run by default: `plan_execution` computes the batches, throttles and
per-batch JSON and nothing touches a cluster. `Executor.run` applies them, one
batch at a time, through an admin object (kafka/admin.py's KafkaAdmin):

  per batch: pending -> throttled -> submitted -> completed -> done
  then:      election -> finished

The state file (JSON, rewritten atomically after every step) records the
batches as first computed and each one's step, so `--resume` continues where
an interrupted run stopped without recomputing the split from a cluster that
has already changed. Only the throttles this tool set are removed (the
leader/follower rates on the batch's brokers and the throttled-replica lists
on its topics), so an operator's own throttles survive. Broker throttles go
only to brokers the cluster lists as alive when the step runs (a replica may
be moving off a dead broker); a broker that does not answer stops the run with
an ExecutionError/AdminError naming it, and the state file allows --resume.

A resume may change the throttle (`change_throttle`), as the reassign tool's
`--additional --throttle` does; the batch split itself is fixed. Replicas the
plan pins to a log dir are kept in the batches and their JSON, but `run`
refuses them: kafka-python cannot send AlterReplicaLogDirs, and dropping the
move silently would leave the replica in the wrong directory.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..cluster.batches import (
    FOLLOWER_THROTTLED_RATE,
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLED_RATE,
    LEADER_THROTTLED_REPLICAS,
    Batch,
    PartitionMove,
    moves_from_plan,
    plan_batches,
    reassignment_json,
    throttle_for,
)
from ..errors import InputError
from ..io_util import atomic_write_json
from ..model import ClusterSnapshot

STATE_VERSION = 1
BROKER, TOPIC = 4, 2
SET, DELETE = 0, 1
ELECTION_NOT_NEEDED = 84
PENDING, THROTTLED, SUBMITTED, COMPLETED, DONE = (
    "pending",
    "throttled",
    "submitted",
    "completed",
    "done",
)


class Admin(Protocol):  # what the executor needs from kafka/admin.py's KafkaAdmin
    def snapshot(self) -> ClusterSnapshot: ...
    def live_brokers(self) -> set[int]: ...
    def replica_assignment(self, topics=None) -> dict: ...
    def list_partition_reassignments(self) -> dict: ...
    def alter_partition_reassignments(self, targets) -> dict: ...
    def incremental_alter_configs(self, resource_type: int, name: str, ops) -> None: ...
    def elect_preferred(self, partitions) -> dict: ...


class ExecutionError(RuntimeError):
    """The cluster refused a step or did not reach the planned state."""


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


def state_from_plan(plan: ExecutionPlan, bootstrap: str) -> dict:
    return {
        "version": STATE_VERSION,
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
        state = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("no state file to resume from", source=str(path)) from None
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read the state file: {exc}", source=str(path)) from None
    if (
        not isinstance(state, dict)
        or state.get("version") != STATE_VERSION
        or "batches" not in state
    ):
        raise InputError(f"not an execution state file (version {STATE_VERSION})", source=str(path))
    return state


# ---------------------------------------------------------------------------
# Executor


@dataclass
class Executor:
    admin: Admin
    state: dict
    state_path: Path
    poll_interval_s: float = 1.0
    batch_timeout_s: float | None = None
    max_batches: int | None = None
    progress: Callable[[str, int, int], None] | None = None  # (label, done, total)
    on_step: Callable[[int, str], None] | None = (
        None  # called after each state write (tests interrupt here)
    )
    log: Callable[[str], None] = field(default=lambda _msg: None)

    def save(self) -> None:
        atomic_write_json(self.state_path, self.state, indent=None)

    def _step(self, entry: dict, status: str) -> None:
        entry["status"] = status
        self.save()
        if self.on_step is not None:
            self.on_step(entry["index"], status)

    def change_throttle(self, rate: int | None) -> None:
        """A new replication throttle for this execution, as `kafka-reassign-partitions.sh --additional --throttle`.

        Recorded in the state file (so later resumes keep it); the batch in flight (throttled or submitted)
        gets the new rate on its live brokers now, later batches when they start. Throttles are cleared as
        before when each batch completes.
        """
        old = self.state.get("throttle")
        if rate == old:
            return
        self.state["throttle"] = rate
        self.state.setdefault("throttle_changes", []).append({"from": old, "to": rate})
        self.save()
        self.log(f"throttle changed from {_rate(old)} to {_rate(rate)}")
        for entry, batch in zip(self.state["batches"], batches_from_state(self.state)):
            if entry["status"] in (THROTTLED, SUBMITTED):
                self._set_throttles(batch)

    def run(self) -> dict:
        """Apply pending batches (at most `max_batches` this run), then the election. Returns the state."""
        batches = batches_from_state(self.state)
        pinned = [(m, d) for b in batches for m in b.moves for d in m.log_dir_moves]
        if pinned:
            m, (broker, d) = pinned[0]
            raise ExecutionError(
                f"{len(pinned)} replica(s) pinned to a log dir (first: {m.topic}-{m.partition} on "
                f"broker {broker} -> {d}): this client cannot send AlterReplicaLogDirs"
            )
        ran = 0
        for entry, batch in zip(self.state["batches"], batches):
            if entry["status"] == DONE:
                continue
            if self.max_batches is not None and ran >= self.max_batches:
                self.log(f"stopping after {ran} batch(es) as asked; resume with --resume")
                return self.state
            self._run_batch(entry, batch)
            ran += 1
        if self.state.get("election") is None:
            self.state["phase"] = "election"
            self.save()
            self.state["election"] = self._elect(batches)
            self.state["phase"] = "finished"
            self.save()
        return self.state

    def _run_batch(self, entry: dict, batch: Batch) -> None:
        label = f"batch {batch.index + 1}/{len(self.state['batches'])}"
        if entry["status"] == PENDING:
            self._set_throttles(batch)
            self._step(entry, THROTTLED)
        if entry["status"] == THROTTLED:
            self._submit(batch, batch.moves)
            self.log(f"{label}: started {len(batch.moves)} reassignment(s)")
            self._step(entry, SUBMITTED)
        if entry["status"] == SUBMITTED:
            self._resubmit_lost(batch)
            self._wait(batch, label)
            self._verify(batch)
            self._step(entry, COMPLETED)
        if entry["status"] == COMPLETED:
            self._clear_throttles(batch)
            self._step(entry, DONE)
            self.log(f"{label}: done")

    def _live(self, brokers) -> list[int]:
        """The batch's throttled brokers that are up now (one may have died since the plan was made)."""
        live = self.admin.live_brokers()
        down = sorted(set(brokers) - live)
        if down:
            self.log(
                f"broker(s) {', '.join(map(str, down))} not alive: no throttle config set or cleared there"
            )
        return sorted(set(brokers) & live)

    def _set_throttles(self, batch: Batch) -> None:
        configs = batch.throttle.broker_configs()
        for broker in self._live(configs):
            self.admin.incremental_alter_configs(
                BROKER, str(broker), [(k, SET, v) for k, v in configs[broker].items()]
            )
        for topic, topic_configs in sorted(batch.throttle.topic_configs().items()):
            self.admin.incremental_alter_configs(
                TOPIC, topic, [(k, SET, v) for k, v in topic_configs.items()]
            )

    def _clear_throttles(self, batch: Batch) -> None:
        if batch.throttle.rate is None:
            return
        for broker in self._live(batch.throttle.brokers):
            self.admin.incremental_alter_configs(
                BROKER,
                str(broker),
                [(LEADER_THROTTLED_RATE, DELETE, None), (FOLLOWER_THROTTLED_RATE, DELETE, None)],
            )
        for topic in sorted({m.topic for m in batch.moves}):
            self.admin.incremental_alter_configs(
                TOPIC,
                topic,
                [
                    (LEADER_THROTTLED_REPLICAS, DELETE, None),
                    (FOLLOWER_THROTTLED_REPLICAS, DELETE, None),
                ],
            )

    def _submit(self, batch: Batch, moves) -> None:
        if not moves:
            return
        results = self.admin.alter_partition_reassignments(
            {(m.topic, m.partition): m.new_replicas for m in moves}
        )
        errors = {k: v for k, v in results.items() if v[0] != 0}
        if errors:
            detail = "; ".join(
                f"{t}-{p}: error {c} {msg or ''}".strip()
                for (t, p), (c, msg) in sorted(errors.items())
            )
            raise ExecutionError(f"the cluster refused reassignments: {detail}")

    def _resubmit_lost(self, batch: Batch) -> None:
        """After a crash between submit and the state write, start what the cluster does not know about."""
        ongoing = self.admin.list_partition_reassignments()
        current = self.admin.replica_assignment({m.topic for m in batch.moves})
        lost = [
            m
            for m in batch.moves
            if (m.topic, m.partition) not in ongoing
            and current.get((m.topic, m.partition)) != m.new_replicas
        ]
        if lost:
            self.log(f"re-submitting {len(lost)} reassignment(s) the cluster does not show")
            self._submit(batch, lost)

    def _wait(self, batch: Batch, label: str) -> None:
        keys = {(m.topic, m.partition) for m in batch.moves}
        start = time.monotonic()
        total = len(keys)
        while True:
            ongoing = set(self.admin.list_partition_reassignments()) & keys
            if self.progress is not None:
                self.progress(label, total - len(ongoing), total)
            if not ongoing:
                return
            if self.batch_timeout_s is not None and time.monotonic() - start > self.batch_timeout_s:
                left = ", ".join(f"{t}-{p}" for t, p in sorted(ongoing))
                raise ExecutionError(
                    f"{label} still running after {self.batch_timeout_s:.0f} s: {left}; "
                    "the state file allows --resume"
                )
            time.sleep(self.poll_interval_s)

    def _verify(self, batch: Batch) -> None:
        current = self.admin.replica_assignment({m.topic for m in batch.moves})
        wrong = [
            (m, current.get((m.topic, m.partition)))
            for m in batch.moves
            if current.get((m.topic, m.partition)) != m.new_replicas
        ]
        if wrong:
            detail = "; ".join(
                f"{m.topic}-{m.partition}: expected {list(m.new_replicas)}, found "
                f"{list(found) if found is not None else None}"
                for m, found in wrong
            )
            raise ExecutionError(f"replica sets do not match the plan: {detail}")

    def _elect(self, batches: list[Batch]) -> dict:
        keys = sorted({(m.topic, m.partition) for b in batches for m in b.moves})
        results = self.admin.elect_preferred(keys) if keys else {}
        elected = [k for k, (c, _) in results.items() if c == 0]
        not_needed = [k for k, (c, _) in results.items() if c == ELECTION_NOT_NEEDED]
        failed = {
            f"{t}-{p}": msg or f"error {c}"
            for (t, p), (c, msg) in sorted(results.items())
            if c not in (0, ELECTION_NOT_NEEDED)
        }
        self.log(
            f"preferred leader election: {len(elected)} elected, {len(not_needed)} already led by the "
            f"preferred replica, {len(failed)} failed"
        )
        return {
            "partitions": len(keys),
            "elected": len(elected),
            "not_needed": len(not_needed),
            "failed": failed,
        }


def _rate(rate: int | None) -> str:
    return "no throttle" if rate is None else f"{rate} B/s"


def default_state_path(plan_file: str) -> Path:
    p = Path(plan_file)
    return p.with_name(p.name + ".state.json")


def write_batch_files(plan: ExecutionPlan, out_dir: str) -> list[str]:
    """One `kafka-reassign-partitions.sh` JSON per batch (batch-001.json, ...)."""
    paths = []
    for b in plan.batches:
        path = Path(out_dir) / f"batch-{b.index + 1:03d}.json"
        atomic_write_json(path, reassignment_json(b.moves))
        paths.append(str(path))
    return paths
