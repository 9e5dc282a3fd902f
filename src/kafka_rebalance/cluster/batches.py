"""Split a reassignment plan into execution batches and compute the replication throttle.

Pure: no I/O, no clock. What `kafka-reassign-partitions.sh --execute --throttle`
does for one reassignment, done here per batch:

* broker configs `leader.replication.throttled.rate` and
  `follower.replication.throttled.rate` (bytes/s) on every live broker that is
  a source or a destination of a move in the batch (a dead one can take no
  config, and sends nothing);
* topic config `leader.replication.throttled.replicas`: `partition:broker`
  for every replica the partition has now (any of them may serve the fetch);
* topic config `follower.replication.throttled.replicas`: `partition:broker`
  for every replica being added.

Both lists are sorted as strings and joined by commas, as the tool's TreeSet
does (so `10:1` sorts before `1:2`).

Batching: a move occupies one slot on each broker that gains or loses a replica
of the partition (destinations and sources); a batch holds at most
`max_moves_per_broker` slots per broker and `max_moves` partitions in all.
Moves are taken largest first (size_bytes, then topic and partition): a batch
lasts as long as its slowest copy, so putting copies of similar size together
wastes the least wall time, and the biggest copies start while the throttle
budget is fresh. Each batch is filled first-fit from that order, so the output
is the same for the same input.

A plan's `log_dirs` stay with their move into the batch JSON, so a batch file
run by `kafka-reassign-partitions.sh` moves the replica where the plan said.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath

from ..errors import InputError
from .kafka_json import ANY_LOG_DIR, Reassignment, parse_reassignment_json
from .kafka_json import reassignment_json as kafka_reassignment_json

LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_THROTTLED_RATE = "follower.replication.throttled.rate"
LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
REPLICA_ALTER_LOG_DIRS_IO_MAX = "replica.alter.log.dirs.io.max.bytes.per.second"
# What the tool deletes when it clears throttles (ReassignPartitionsCommand.BROKER_LEVEL_THROTTLES ...).
BROKER_LEVEL_THROTTLES = (
    LEADER_THROTTLED_RATE,
    FOLLOWER_THROTTLED_RATE,
    REPLICA_ALTER_LOG_DIRS_IO_MAX,
)
TOPIC_LEVEL_THROTTLES = (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS)


@dataclass(frozen=True, slots=True)
class PartitionMove:
    """One partition of a plan: where its replicas are and where they go."""

    topic: str
    partition: int
    old_replicas: tuple[int, ...]
    new_replicas: tuple[int, ...]
    size_bytes: float = 0.0
    # The plan's `log_dirs`, one per new replica ("any" = the broker picks); None when the plan gave none.
    log_dirs: tuple[str, ...] | None = None

    @property
    def log_dir_moves(self) -> tuple[tuple[int, str], ...]:
        """(broker, absolute log dir) for every replica the plan pins to a directory."""
        if self.log_dirs is None:
            return ()
        return tuple((b, d) for b, d in zip(self.new_replicas, self.log_dirs) if d != ANY_LOG_DIR)

    @property
    def adding(self) -> tuple[int, ...]:
        return tuple(b for b in self.new_replicas if b not in self.old_replicas)

    @property
    def removing(self) -> tuple[int, ...]:
        return tuple(b for b in self.old_replicas if b not in self.new_replicas)

    @property
    def brokers_busy(self) -> frozenset[int]:
        """Brokers that send or receive data for this move (each counts one slot)."""
        return frozenset(self.adding) | frozenset(self.removing)

    @property
    def bytes_moved(self) -> float:
        return self.size_bytes * len(self.adding)

    @property
    def changes(self) -> bool:
        """A new replica list, or a replica pinned to a log dir (the tool moves it even in place)."""
        return self.old_replicas != self.new_replicas or bool(self.log_dir_moves)


@dataclass(frozen=True, slots=True)
class Throttle:
    """The configs the reassignment tool sets for one batch (rate None = no throttle)."""

    rate: int | None
    brokers: tuple[int, ...]
    leader_replicas: tuple[tuple[str, str], ...]  # (topic, "p:b,p:b")
    follower_replicas: tuple[tuple[str, str], ...]

    def broker_configs(self) -> dict[int, dict[str, str]]:
        if self.rate is None:
            return {}
        value = str(int(self.rate))
        return {
            b: {LEADER_THROTTLED_RATE: value, FOLLOWER_THROTTLED_RATE: value} for b in self.brokers
        }

    def topic_configs(self) -> dict[str, dict[str, str]]:
        if self.rate is None:
            return {}
        out: dict[str, dict[str, str]] = {}
        for topic, value in self.leader_replicas:
            out.setdefault(topic, {})[LEADER_THROTTLED_REPLICAS] = value
        for topic, value in self.follower_replicas:
            out.setdefault(topic, {})[FOLLOWER_THROTTLED_REPLICAS] = value
        return out

    def to_json(self) -> dict:
        return {
            "rate": self.rate,
            "brokers": {str(b): c for b, c in self.broker_configs().items()},
            "topics": self.topic_configs(),
        }


@dataclass(frozen=True, slots=True)
class Batch:
    index: int
    moves: tuple[PartitionMove, ...]
    throttle: Throttle

    @property
    def bytes_moved(self) -> float:
        return sum(m.bytes_moved for m in self.moves)

    def reassignment_json(self) -> dict:
        return reassignment_json(self.moves)

    def broker_load(self) -> dict[int, int]:
        load: dict[int, int] = {}
        for m in self.moves:
            for b in m.brokers_busy:
                load[b] = load.get(b, 0) + 1
        return dict(sorted(load.items()))


def reassignment_json(moves: Iterable[PartitionMove]) -> dict:
    """The JSON `kafka-reassign-partitions.sh --execute` reads, in the tool's own layout, sorted by partition."""
    parts = sorted(moves, key=lambda m: (m.topic, m.partition))
    return kafka_reassignment_json(
        Reassignment(m.topic, m.partition, m.new_replicas, m.log_dirs) for m in parts
    )


def throttle_for(
    moves: Sequence[PartitionMove], rate: int | None, offline: AbstractSet[int] = frozenset()
) -> Throttle:
    """ReassignPartitionsCommand.calculateLeaderThrottles / calculateFollowerThrottles for these moves.

    The rate goes on every live source and destination: a broker that is down cannot take a config
    (the reassign tool fails there too), and it sends no data anyway. The replica lists keep every
    replica, as the tool's do: they are topic configs, stored by the controller.
    """
    leader: dict[str, set[str]] = {}
    follower: dict[str, set[str]] = {}
    brokers: set[int] = set()
    for m in moves:
        sources = set(m.old_replicas)
        destinations = set(m.new_replicas) - sources
        leader.setdefault(m.topic, set()).update(f"{m.partition}:{s}" for s in sources)
        follower.setdefault(m.topic, set()).update(f"{m.partition}:{d}" for d in destinations)
        brokers |= sources | destinations
    return Throttle(
        rate=None if rate is None else int(rate),
        brokers=tuple(sorted(brokers - set(offline))),
        leader_replicas=tuple((t, ",".join(sorted(v))) for t, v in sorted(leader.items())),
        follower_replicas=tuple((t, ",".join(sorted(v))) for t, v in sorted(follower.items())),
    )


def move_order(move: PartitionMove) -> tuple:
    return (-move.bytes_moved, -move.size_bytes, move.topic, move.partition)


def plan_batches(
    moves: Iterable[PartitionMove],
    *,
    max_moves_per_broker: int | None = None,
    max_moves: int | None = None,
    throttle: int | None = None,
    offline: AbstractSet[int] = frozenset(),
) -> list[Batch]:
    """Every changing move in exactly one batch, caps respected, largest first (no throttle on `offline`)."""
    # Named by the command's flags: the CLI is the only place these numbers come from.
    if max_moves_per_broker is not None and max_moves_per_broker < 1:
        raise InputError(
            f"must be >= 1, got {max_moves_per_broker}", field="--max-moves-per-broker"
        )
    if max_moves is not None and max_moves < 1:
        raise InputError(f"must be >= 1, got {max_moves}", field="--max-moves")
    if throttle is not None and throttle < 0:
        raise InputError(f"must be >= 0, got {throttle}", field="--throttle")
    pending = sorted((m for m in moves if m.changes), key=move_order)
    seen: set[tuple[str, int]] = set()
    for m in pending:
        if (m.topic, m.partition) in seen:
            raise InputError(
                f"partition {m.topic}-{m.partition} appears twice in the plan", field="partitions"
            )
        seen.add((m.topic, m.partition))
    # First fit over batches in move order. This equals "fill batch 1 greedily from the ordered list, then
    # batch 2 from what is left, ..." (a move lands in the first batch where it fits given the moves before
    # it), but each broker keeps a pointer to its first batch with a free slot, so batches that cannot take
    # the move are skipped without looking: near-linear instead of batches x moves.
    loads: list[dict[int, int]] = []
    members: list[list[PartitionMove]] = []
    first_free: dict[int, int] = {}
    first_open = 0
    for m in pending:
        busy = m.brokers_busy
        k = max([first_open, *(first_free.get(b, 0) for b in busy)])
        while True:
            if k == len(loads):
                loads.append({})
                members.append([])
            if (max_moves is None or len(members[k]) < max_moves) and (
                max_moves_per_broker is None
                or all(loads[k].get(b, 0) < max_moves_per_broker for b in busy)
            ):
                break
            k += 1
        members[k].append(m)
        for b in busy:
            loads[k][b] = loads[k].get(b, 0) + 1
            if max_moves_per_broker is not None:
                f = first_free.get(b, 0)
                while f < len(loads) and loads[f].get(b, 0) >= max_moves_per_broker:
                    f += 1
                first_free[b] = f
        if max_moves is not None:
            while first_open < len(members) and len(members[first_open]) >= max_moves:
                first_open += 1
    return [
        Batch(i, tuple(ms), throttle_for(ms, throttle, offline)) for i, ms in enumerate(members)
    ]


# ---------------------------------------------------------------------------
# Reading the tool's JSON and pairing it with the current placement.


def parse_reassignment(doc: object) -> dict[tuple[str, int], tuple[int, ...]]:
    """Target replicas per partition of the tool's JSON, in the file's order (validated by kafka_json)."""
    return {(r.topic, r.partition): r.replicas for r in parse_reassignment_json(doc)}


def _is_absolute(path: str) -> bool:
    return PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute()


def parse_log_dirs(doc: object) -> dict[tuple[str, int], tuple[str, ...]]:
    """The `log_dirs` of every plan entry that has them, in the file's order.

    The tool reads them as strings, one per replica ("Size of replicas list ... is different from size of
    log dirs list ..."); each is "any" or a directory the broker has in `log.dirs`, which the broker matches
    by absolute path (LogManager: "Log dir ... is not found in the config"). A relative path can never
    match, so it is refused here instead of by every broker at run time.
    """
    entries = parse_reassignment_json(doc)
    out: dict[tuple[str, int], tuple[str, ...]] = {}
    for i, r in enumerate(entries):
        if r.log_dirs is None:
            continue
        for j, d in enumerate(r.log_dirs):
            if d != ANY_LOG_DIR and not _is_absolute(d):
                raise InputError(
                    f'expected "{ANY_LOG_DIR}" or an absolute log dir path for replica '
                    f"{r.replicas[j]}, got {d!r}",
                    field=f"partitions[{i}].log_dirs",
                )
        out[(r.topic, r.partition)] = r.log_dirs
    return out


def moves_from_plan(
    target: Mapping[tuple[str, int], Sequence[int]],
    current: Mapping[tuple[str, int], Sequence[int]],
    sizes: Mapping[tuple[str, int], float] | None = None,
    log_dirs: Mapping[tuple[str, int], Sequence[str]] | None = None,
) -> list[PartitionMove]:
    """Pair each planned partition with its current replicas; unknown partitions are an input error.

    `target` is in the plan file's order, so the error names the entry (`partitions[3]`).
    """
    sizes = sizes or {}
    log_dirs = log_dirs or {}
    moves = []
    for i, key in enumerate(target):
        if key not in current:
            # ReassignPartitionsCommand.getReplicaAssignmentForPartitions: "Unable to find partition: t-0"
            raise InputError(
                f"Unable to find partition: {key[0]}-{key[1]} (it does not exist in the cluster)",
                field=f"partitions[{i}]",
            )
        dirs = log_dirs.get(key)
        moves.append(
            PartitionMove(
                key[0],
                key[1],
                tuple(current[key]),
                tuple(target[key]),
                float(sizes.get(key, 0.0)),
                None if dirs is None else tuple(dirs),
            )
        )
    return sorted(moves, key=lambda m: (m.topic, m.partition))
