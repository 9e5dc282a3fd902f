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
plan pins to a log dir are moved there with AlterReplicaLogDirs once the batch
is submitted (retried while the broker does not have the replica yet, for at
most `log_dir_timeout_ms`, as the tool's --timeout), throttled by
`replica.alter.log.dirs.io.max.bytes.per.second` when a log-dir throttle is set,
and the batch is done only when they are in their dir.

Which partitions are still moving is ListPartitionReassignments' answer, never
metadata: a broker's metadata can lag the controller for a moment after a
reassignment completes, so the final replica check retries for a few seconds
before it calls a difference an error.

`stop` (a callable) is polled between steps and while waiting: when it says yes
the run ends with `Interrupted` at a step boundary, the state file consistent,
submitted reassignments left running and throttles left in place.
"""

from __future__ import annotations

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
    REPLICA_ALTER_LOG_DIRS_IO_MAX,
    Batch,
    PartitionMove,
)
from ..io_util import atomic_write_json
from ..model import ClusterSnapshot
from .execute_plan import (  # noqa: F401 - re-exported: the executor's public names
    COMPLETED,
    DONE,
    PENDING,
    STATE_VERSION,
    SUBMITTED,
    THROTTLED,
    ExecutionPlan,
    batch_json,
    batches_from_state,
    default_state_path,
    load_state,
    min_seconds,
    move_json,
    plan_digest,
    plan_execution,
    plan_from_state,
    state_from_plan,
    write_batch_files,
)

BROKER, TOPIC = 4, 2
SET, DELETE = 0, 1
ELECTION_NOT_NEEDED = 84


class Admin(Protocol):  # what the executor needs from kafka/admin.py's KafkaAdmin
    def snapshot(self) -> ClusterSnapshot: ...
    def live_brokers(self) -> set[int]: ...
    def replica_assignment(self, topics=None) -> dict: ...
    def list_partition_reassignments(self, partitions=None) -> dict: ...
    def alter_partition_reassignments(self, targets) -> dict: ...
    def incremental_alter_configs(self, resource_type: int, name: str, ops) -> None: ...
    def elect_preferred(self, partitions) -> dict: ...
    def alter_replica_log_dirs(self, moves) -> dict: ...
    def describe_replica_log_dirs(self, replicas) -> dict: ...


class ExecutionError(RuntimeError):
    """The cluster refused a step or did not reach the planned state."""


class Interrupted(Exception):
    """`stop` said yes: the run ended at a step boundary (state saved, nothing rolled back)."""

    def __init__(self, in_flight: list[tuple[str, int]]) -> None:
        super().__init__(f"interrupted with {len(in_flight)} reassignment(s) in flight")
        self.in_flight = in_flight


METADATA_CATCH_UP_S = 10.0  # how long metadata may lag ListPartitionReassignments after completion


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
    stop: Callable[[], bool] = field(default=lambda: False)
    log_dir_timeout_ms: int = 10000  # the reassign tool's --timeout
    sleep: Callable[[float], None] = time.sleep

    def _check_stop(self) -> None:
        if self.stop():
            in_flight = [
                (m.topic, m.partition)
                for entry, batch in zip(self.state["batches"], batches_from_state(self.state))
                if entry["status"] == SUBMITTED
                for m in batch.moves
            ]
            raise Interrupted(in_flight)

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
        ran = 0
        for entry, batch in zip(self.state["batches"], batches):
            if entry["status"] == DONE:
                continue
            if self.max_batches is not None and ran >= self.max_batches:
                self.log(f"stopping after {ran} batch(es) as asked; resume with --resume")
                return self.state
            self._check_stop()
            self._run_batch(entry, batch)
            ran += 1
        if self.state.get("election") is None:
            if self.state.get("leaders_before_election") is None:
                # recorded before the first election request: a resume after a kill that came
                # after the brokers elected (answer lost) still reports what was elected
                self.state["leaders_before_election"] = self._leaders(batches)
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
            self._check_stop()
            self._submit(batch, batch.moves)
            names = ",".join(f"{m.topic}-{m.partition}" for m in sorted(batch.moves, key=_tp))
            self.log(
                f"{label}: Successfully started partition reassignment"
                f"{'' if len(batch.moves) == 1 else 's'} for {names}"
            )
            self._step(entry, SUBMITTED)
        if entry["status"] == SUBMITTED:
            self._resubmit_lost(batch)
            self._start_log_dir_moves(batch)
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

    def _log_dir_brokers(self, batch: Batch) -> list[int]:
        return sorted({b for m in batch.moves for b, _d in m.log_dir_moves})

    def _set_throttles(self, batch: Batch) -> None:
        configs = batch.throttle.broker_configs()
        for broker in self._live(configs):
            self.admin.incremental_alter_configs(
                BROKER, str(broker), [(k, SET, v) for k, v in configs[broker].items()]
            )
        topic_configs = batch.throttle.topic_configs()
        if topic_configs:
            topic_configs = self._with_other_moves(batch, topic_configs)
        for topic, cfg in sorted(topic_configs.items()):
            self.admin.incremental_alter_configs(
                TOPIC, topic, [(k, SET, v) for k, v in cfg.items()]
            )
        if configs:
            self.log(f"The inter-broker throttle limit was set to {batch.throttle.rate} B/s")
        rate = self.state.get("log_dir_throttle")
        if rate is not None and self._log_dir_brokers(batch):
            for broker in self._live(self._log_dir_brokers(batch)):
                self.admin.incremental_alter_configs(
                    BROKER, str(broker), [(REPLICA_ALTER_LOG_DIRS_IO_MAX, SET, str(rate))]
                )
            self.log(f"The replica-alter-dir throttle limit was set to {rate} B/s")

    def _with_other_moves(self, batch: Batch, topic_configs: dict) -> dict:
        """Keep the throttled replicas of reassignments already running on the same topics (the
        topic config is replaced whole), as the tool's calculateProposedMoveMap does."""
        mine = {(m.topic, m.partition) for m in batch.moves}
        topics = set(topic_configs)
        out = {t: dict(c) for t, c in topic_configs.items()}
        for (topic, part), r in sorted(self.admin.list_partition_reassignments().items()):
            if topic not in topics or (topic, part) in mine:
                continue
            sources = sorted(set(r.replicas) - set(r.adding))
            for key, extra in (
                (LEADER_THROTTLED_REPLICAS, [f"{part}:{b}" for b in sources]),
                (
                    FOLLOWER_THROTTLED_REPLICAS,
                    [f"{part}:{b}" for b in r.adding if b not in sources],
                ),
            ):
                have = [x for x in out[topic].get(key, "").split(",") if x]
                out[topic][key] = ",".join(sorted(set(have) | set(extra)))
        return out

    def _clear_throttles(self, batch: Batch) -> None:
        if self.state.get("log_dir_throttle") is not None and self._log_dir_brokers(batch):
            for broker in self._live(self._log_dir_brokers(batch)):
                self.admin.incremental_alter_configs(
                    BROKER, str(broker), [(REPLICA_ALTER_LOG_DIRS_IO_MAX, DELETE, None)]
                )
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

    def _dir_moves(self, batch: Batch) -> dict[tuple[str, int, int], str]:
        return {(m.topic, m.partition, b): d for m in batch.moves for b, d in m.log_dir_moves}

    def _start_log_dir_moves(self, batch: Batch) -> None:
        moves = self._dir_moves(batch)
        if moves:
            from .reassign_tool import start_log_dir_moves

            try:
                start_log_dir_moves(self.admin, moves, self.log_dir_timeout_ms, self.log)
            except (TimeoutError, RuntimeError) as exc:
                raise ExecutionError(f"{exc}; the state file allows --resume") from None

    def _dirs_pending(self, moves: dict) -> set[tuple[str, int, int]]:
        if not moves:
            return set()
        infos = self.admin.describe_replica_log_dirs(moves)
        return {r for r, d in moves.items() if infos.get(r, (None, None)) != (d, None)}

    def _wait(self, batch: Batch, label: str) -> None:
        keys = {(m.topic, m.partition) for m in batch.moves}
        dir_moves = self._dir_moves(batch)
        start = time.monotonic()
        total = len(keys) + len(dir_moves)
        while True:
            ongoing = set(self.admin.list_partition_reassignments(keys)) & keys
            dirs = self._dirs_pending(dir_moves) if not ongoing else set(dir_moves)
            if self.progress is not None:
                self.progress(label, total - len(ongoing) - len(dirs), total)
            if not ongoing and not dirs:
                return
            self._check_stop()
            if self.batch_timeout_s is not None and time.monotonic() - start > self.batch_timeout_s:
                left = ", ".join(f"{t}-{p}" for t, p in sorted(ongoing)) or ", ".join(
                    f"{t}-{p} on broker {b}" for t, p, b in sorted(dirs)
                )
                raise ExecutionError(
                    f"{label} still running after {self.batch_timeout_s:.0f} s: {left}; "
                    "the state file allows --resume"
                )
            self.sleep(self.poll_interval_s)

    def _verify(self, batch: Batch) -> None:
        """The controller says the batch is done; metadata may lag it a moment, so look again."""
        deadline = time.monotonic() + METADATA_CATCH_UP_S
        while True:
            current = self.admin.replica_assignment({m.topic for m in batch.moves})
            wrong = [
                (m, current.get((m.topic, m.partition)))
                for m in batch.moves
                if current.get((m.topic, m.partition)) != m.new_replicas
            ]
            if not wrong:
                return
            if time.monotonic() >= deadline or self.admin.list_partition_reassignments(
                {(m.topic, m.partition) for m, _ in wrong}
            ):
                break
            self.sleep(min(self.poll_interval_s, 0.5))
        detail = "; ".join(
            f"{m.topic}-{m.partition}: expected {list(m.new_replicas)}, found "
            f"{list(found) if found is not None else None}"
            for m, found in wrong
        )
        raise ExecutionError(f"replica sets do not match the plan: {detail}")

    def _leaders(self, batches: list[Batch]) -> dict[str, int] | None:
        leaders = getattr(self.admin, "leaders", None)
        if leaders is None:
            return None
        keys = {(m.topic, m.partition) for b in batches for m in b.moves}
        now = leaders({t for t, _ in keys})
        return {f"{t}-{p}": now.get((t, p), -1) for t, p in sorted(keys)}

    def _elect(self, batches: list[Batch]) -> dict:
        keys = sorted({(m.topic, m.partition) for b in batches for m in b.moves})
        results = self.admin.elect_preferred(keys) if keys else {}
        preferred = {(m.topic, m.partition): m.new_replicas[0] for b in batches for m in b.moves}
        before = self.state.get("leaders_before_election") or {}
        # ELECTION_NOT_NEEDED for a partition whose leader was not its preferred replica before the
        # election started: an earlier, interrupted run of this election elected it
        earlier = {
            k
            for k, (c, _) in results.items()
            if c == ELECTION_NOT_NEEDED
            and f"{k[0]}-{k[1]}" in before
            and before[f"{k[0]}-{k[1]}"] != preferred.get(k)
        }
        elected = [k for k, (c, _) in results.items() if c == 0 or k in earlier]
        not_needed = [
            k for k, (c, _) in results.items() if c == ELECTION_NOT_NEEDED and k not in earlier
        ]
        failed = {
            f"{t}-{p}": msg or f"error {c}"
            for (t, p), (c, msg) in sorted(results.items())
            if c not in (0, ELECTION_NOT_NEEDED)
        }
        by_earlier = f" ({len(earlier)} by the interrupted run)" if earlier else ""
        self.log(
            f"preferred leader election: {len(elected)} elected{by_earlier}, {len(not_needed)} "
            f"already led by the preferred replica, {len(failed)} failed"
        )
        return {
            "partitions": len(keys),
            "elected": len(elected),
            "elected_by_interrupted_run": len(earlier),
            "not_needed": len(not_needed),
            "failed": failed,
        }


def _tp(m: PartitionMove) -> tuple[str, int]:
    return (m.topic, m.partition)


def _rate(rate: int | None) -> str:
    return "no throttle" if rate is None else f"{rate} B/s"
