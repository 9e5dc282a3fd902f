"""What `kafka-reassign-partitions.sh` does besides executing: --verify, --list, --cancel, rollback JSON.

Same admin calls and the same output lines as Kafka's ReassignPartitionsCommand (trunk
1eb7644349cb), so an operator's scripts that read those lines keep working:

* `--verify`: "Status of partition reassignment:" then per partition "Reassignment of partition
  T-P is completed." / "... is still in progress." / "There is no active reassignment of partition
  T-P, but replica set is 1,2 rather than 3,4."; per replica pinned to a log dir the log-dir lines;
  then, when nothing at all is reassigning in the cluster and no log-dir move is left, the broker
  throttles of every broker (and of the plan's) and the topic throttles of the plan's topics are
  cleared ("Clearing broker-level throttles on brokers 1,2,3", "Clearing topic-level throttles on
  topics t"), unless `--preserve-throttles`;
* `--list`: "Current partition reassignments:" and "T-P: replicas: 1,2,3. adding: 3. removing:
  1.", or "No partition reassignments found.";
* `--cancel`: cancels the plan's partitions that are reassigning (Kafka's own test: no adding
  replica, or some removing replica), "Successfully cancelled partition reassignment(s) for:
  T-P,...", or "None of the specified partition reassignments are active."; log-dir moves in
  flight go back to their current dir; throttles are cleared as in --verify.

Sorting: partitions by topic then partition; replicas by broker, then topic and partition.
Topic and broker sets print in the order Java's HashSet happens to give; ours are sorted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from ..cluster.batches import BROKER_LEVEL_THROTTLES, TOPIC_LEVEL_THROTTLES
from ..cluster.kafka_json import ANY_LOG_DIR
from .admin import BROKER, DELETE, REPLICA_NOT_AVAILABLE, TOPIC, OngoingReassignment, error_text

Partition = tuple[str, int]
Replica = tuple[str, int, int]  # topic, partition, broker


def tp(key: Partition) -> str:
    return f"{key[0]}-{key[1]}"


def _ints(xs: Iterable[int]) -> str:
    return ",".join(str(x) for x in xs)


def _plural(n: int) -> str:
    return "" if n == 1 else "s"


def replica_log_dirs(
    target: Mapping[Partition, tuple[int, ...]], log_dirs: Mapping[Partition, tuple[str, ...]]
) -> dict[Replica, str]:
    """The plan's replicas pinned to a log dir ("any" ones left out, as the tool does)."""
    out: dict[Replica, str] = {}
    for key, reps in target.items():
        for broker, d in zip(reps, log_dirs.get(key, ())):
            if d != ANY_LOG_DIR:
                out[(key[0], key[1], broker)] = d
    return out


def reassignment_json_text(
    assignment: Mapping[Partition, Iterable[int]], log_dirs: Mapping[Replica, str] | None = None
) -> str:
    """ReassignPartitionsCommand.formatAsReassignmentJson: compact, sorted, log_dirs always there."""
    log_dirs = log_dirs or {}
    parts = []
    for key in sorted(assignment):
        reps = list(assignment[key])
        parts.append(
            {
                "topic": key[0],
                "partition": key[1],
                "replicas": reps,
                "log_dirs": [log_dirs.get((key[0], key[1], r), ANY_LOG_DIR) for r in reps],
            }
        )
    return json.dumps({"version": 1, "partitions": parts}, separators=(",", ":"))


def rollback_text(current: Mapping[Partition, Iterable[int]]) -> str:
    """The lines `--execute` prints before it changes anything."""
    return (
        "Current partition replica assignment\n\n"
        f"{reassignment_json_text(current)}\n\n"
        "Save this to use as the --reassignment-json-file option during rollback"
    )


# ---------------------------------------------------------------------------
# --verify


@dataclass(frozen=True)
class PartitionState:
    current: tuple[int, ...]
    target: tuple[int, ...]
    done: bool


def partition_states(
    admin, target: Mapping[Partition, tuple[int, ...]]
) -> tuple[dict[Partition, PartitionState], bool]:
    """findPartitionReassignmentStates: per plan partition, and whether anything reassigns at all."""
    ongoing = admin.list_partition_reassignments()
    states: dict[Partition, PartitionState] = {}
    rest = [k for k in target if k not in ongoing]
    current = admin.replica_assignment({t for t, _ in rest}) if rest else {}
    for key, reps in target.items():
        if key in ongoing:
            states[key] = PartitionState(ongoing[key].replicas, tuple(reps), False)
        else:
            states[key] = PartitionState(tuple(current.get(key, ())), tuple(reps), True)
    return states, bool(ongoing)


def partition_states_text(states: Mapping[Partition, PartitionState]) -> str:
    lines = ["Status of partition reassignment:"]
    for key in sorted(states):
        s = states[key]
        if not s.done:
            lines.append(f"Reassignment of partition {tp(key)} is still in progress.")
        elif s.current == s.target:
            lines.append(f"Reassignment of partition {tp(key)} is completed.")
        else:
            lines.append(
                f"There is no active reassignment of partition {tp(key)}, but replica set is "
                f"{_ints(s.current)} rather than {_ints(s.target)}."
            )
    return "\n".join(lines)


def log_dir_states(admin, moves: Mapping[Replica, str]) -> dict[Replica, tuple[str, ...]]:
    """findLogDirMoveStates: (kind, current, future) per replica pinned to a log dir."""
    if not moves:
        return {}
    infos = admin.describe_replica_log_dirs(moves)
    out: dict[Replica, tuple[str, ...]] = {}
    for replica, target_dir in moves.items():
        if replica not in infos:
            out[replica] = ("missing-replica",)
            continue
        cur, fut = infos[replica]
        if cur is None:
            out[replica] = ("missing-log-dir",)
        elif fut is None:
            out[replica] = ("completed",) if cur == target_dir else ("cancelled", cur)
        else:
            out[replica] = ("active", cur, fut)
    return out


def _replica_name(r: Replica) -> str:
    """TopicPartitionReplica.toString: topic-partition-broker."""
    return f"{r[0]}-{r[1]}-{r[2]}"


def log_dir_states_text(
    states: Mapping[Replica, tuple[str, ...]], moves: Mapping[Replica, str]
) -> str:
    lines = []
    for r in sorted(states, key=lambda r: (r[2], r[0], r[1])):
        state, target_dir = states[r], moves[r]
        name = f"{r[0]}-{r[1]}"
        if state[0] == "missing-log-dir":
            lines.append(
                f"Partition {name} is not found in any live log dir on broker {r[2]}. There is "
                "likely an offline log directory on the broker."
            )
        elif state[0] == "missing-replica":
            lines.append(
                f"Partition {name} cannot be found in any live log directory on broker {r[2]}."
            )
        elif state[0] == "active":
            if state[2] == target_dir:
                lines.append(f"Reassignment of replica {_replica_name(r)} is still in progress.")
            else:
                lines.append(
                    f"Partition {name} on broker {r[2]} is being moved to log dir {state[2]} "
                    f"instead of {target_dir}."
                )
        elif state[0] == "cancelled":
            lines.append(
                f"Partition {name} on broker {r[2]} is not being moved from log dir {state[1]} to "
                f"{target_dir}."
            )
        else:
            lines.append(f"Reassignment of replica {_replica_name(r)} completed successfully.")
    return "\n".join(lines)


def clear_all_throttles(
    admin, target: Mapping[Partition, Iterable[int]], out: Callable[[str], None]
) -> None:
    """clearAllThrottles: broker throttles on every live broker and the plan's, topic throttles of its topics."""
    brokers = set(admin.live_brokers())
    for reps in target.values():
        brokers.update(reps)
    out(
        f"Clearing broker-level throttles on broker{_plural(len(brokers))} {_ints(sorted(brokers))}"
    )
    admin.alter_configs(
        [
            (BROKER, str(b), [(k, DELETE, None) for k in BROKER_LEVEL_THROTTLES])
            for b in sorted(brokers)
        ]
    )
    topics = sorted({t for t, _ in target})
    out(f"Clearing topic-level throttles on topic{_plural(len(topics))} {','.join(topics)}")
    admin.alter_configs(
        [(TOPIC, t, [(k, DELETE, None) for k in TOPIC_LEVEL_THROTTLES]) for t in topics]
    )


def verify(
    admin,
    target: Mapping[Partition, tuple[int, ...]],
    moves: Mapping[Replica, str],
    preserve_throttles: bool,
    out: Callable[[str], None],
) -> dict:
    """The --verify action; returns what it found (for --format json)."""
    states, any_ongoing = partition_states(admin, target)
    out(partition_states_text(states))
    dir_states = log_dir_states(admin, moves)
    out(log_dir_states_text(dir_states, moves))
    moves_ongoing = any(s[0] != "completed" for s in dir_states.values())
    cleared = False
    if not any_ongoing and not moves_ongoing and not preserve_throttles:
        clear_all_throttles(admin, target, out)
        cleared = True
    return {
        "partitions": {
            tp(k): {"current": list(s.current), "target": list(s.target), "done": s.done}
            for k, s in sorted(states.items())
        },
        "reassignments_ongoing": any_ongoing,
        "log_dir_moves": {_replica_name(r): list(s) for r, s in sorted(dir_states.items())},
        "throttles_cleared": cleared,
    }


# ---------------------------------------------------------------------------
# --list


def list_text(ongoing: Mapping[Partition, OngoingReassignment]) -> str:
    lines = []
    for key in sorted(ongoing):
        r = ongoing[key]
        line = f"{tp(key)}: replicas: {_ints(r.replicas)}."
        if r.adding:
            line += f" adding: {_ints(r.adding)}."
        if r.removing:
            line += f" removing: {_ints(r.removing)}."
        lines.append(line)
    if not lines:
        return "No partition reassignments found."
    return "Current partition reassignments:\n" + "\n".join(lines)


# ---------------------------------------------------------------------------
# --cancel and log-dir moves


def start_log_dir_moves(
    admin, moves: Mapping[Replica, str], timeout_ms: int, out: Callable[[str], None]
) -> None:
    """executeMoves: AlterReplicaLogDirs until every replica has started moving (or timeout)."""
    pending = dict(moves)
    deadline = time.monotonic() + timeout_ms / 1000
    while pending:
        results = admin.alter_replica_log_dirs(pending)
        started = []
        for r, code in results.items():
            if code == 0:
                started.append(r)
            elif code != REPLICA_NOT_AVAILABLE:
                raise RuntimeError(
                    f"Failed to alter dir for {_replica_name(r)}: {error_text(code)}"
                )
        for r in sorted(started, key=lambda r: (r[2], r[0], r[1])):
            out(
                f"Successfully started moving log directory to {pending[r]} for replica "
                f"{r[0]}-{r[1]} with broker {r[2]} "
            )
            del pending[r]
        if not pending:
            return
        if time.monotonic() >= deadline:
            names = ",".join(
                _replica_name(r) for r in sorted(pending, key=lambda r: (r[2], r[0], r[1]))
            )
            raise TimeoutError(
                f"Timed out before log directory move{_plural(len(pending))} could be started for: {names}"
            )
        time.sleep(0.1)


def cancel(
    admin,
    target: Mapping[Partition, tuple[int, ...]],
    moves: Mapping[Replica, str],
    preserve_throttles: bool,
    timeout_ms: int,
    out: Callable[[str], None],
) -> dict:
    """The --cancel action; returns the partitions and replicas it cancelled."""
    ongoing = admin.list_partition_reassignments(target.keys())
    cancelling = sorted(k for k, r in ongoing.items() if not r.adding or r.removing)
    if cancelling:
        results = admin.alter_partition_reassignments({k: None for k in cancelling})
        errors = {k: v for k, v in results.items() if v[0] != 0}
        if errors:
            detail = "\n".join(
                f"{tp(k)}: {error_text(c, m).split(': ', 1)[1]}"
                for k, (c, m) in sorted(errors.items())
            )
            raise RuntimeError(
                f"Error cancelling partition reassignment{_plural(len(errors))} for:\n{detail}"
            )
        out(
            f"Successfully cancelled partition reassignment{_plural(len(cancelling))} for: "
            + ",".join(tp(k) for k in cancelling)
        )
    else:
        out("None of the specified partition reassignments are active.")
    back = {r: s[1] for r, s in log_dir_states(admin, moves).items() if s[0] == "active"}
    if back:
        start_log_dir_moves(admin, back, timeout_ms, out)
    else:
        out("None of the specified partition moves are active.")
    if not preserve_throttles:
        clear_all_throttles(admin, target, out)
    return {
        "cancelled": [tp(k) for k in cancelling],
        "log_dir_moves_cancelled": [_replica_name(r) for r in sorted(back)],
    }
