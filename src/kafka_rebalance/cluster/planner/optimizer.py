"""The optimizer: orders the goals for a mode, runs them, and reports the plan against its bounds.

Modes (as Cruise Control's endpoints):
- `full`: fix offline replicas, respect disk capacity, then even replica
  counts, disk, bytes in (band x mean), each topic's spread, then leadership
  (counts, bytes out, messages in) without moving data.
- `add-brokers`: only the new brokers receive replicas, filled to the even count.
- `remove-brokers`: the removed brokers' replicas move, nothing else does.
- `leaders`: no data moves; preferred leaders re-chosen among ISR replicas.
- `fix-offline`: only the replicas on dead brokers move (then leaders even out).
Replicas on dead brokers are moved in every mode but `leaders`.

Everything is deterministic: stable sorts, no randomness, ties broken by index.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ...errors import InputError
from ...model import Broker, ClusterSnapshot, PartitionReplicas
from ..kafka_json import Reassignment
from .capacity import CapacityGoal, DiskCapacityGoal, NetworkInboundCapacityGoal
from .goal import Context, Goal
from .leader_distribution import LeaderDistributionGoal
from .offline_replicas import OfflineReplicasGoal
from .replica_distribution import ReplicaDistributionGoal
from .resource_distribution import ResourceDistributionGoal
from .state import PlanState
from .topic_distribution import TopicReplicaDistributionGoal

DEFAULT_PLAN_BAND = 1.09  # a margin inside Cruise Control's 1.10 balance band


class Mode(enum.Enum):
    FULL = "full"
    ADD_BROKERS = "add-brokers"
    REMOVE_BROKERS = "remove-brokers"
    LEADERS = "leaders"
    FIX_OFFLINE = "fix-offline"


@dataclass(frozen=True)
class PlanResult:
    mode: Mode
    reassignments: tuple[Reassignment, ...]
    replica_moves: int
    bytes_moved: float
    lower_bound_moves: int
    leader_changes: int
    optimal_leader_changes: int | None
    before: dict[str, float]
    after: dict[str, float]
    goals: tuple[tuple[str, bool], ...]
    violations: tuple[str, ...]
    after_snapshot: ClusterSnapshot = field(repr=False)

    @property
    def complete(self) -> bool:
        """No replica is left on a dead or removed broker (leaders mode moves no data: always complete)."""
        return all(ok for g, ok in self.goals if g == OfflineReplicasGoal.name)

    @property
    def goals_satisfied(self) -> bool:
        """Every goal met; when not, the lower bound (on reaching all of them) may exceed the moves made."""
        return all(ok for _, ok in self.goals)

    def summary(self) -> dict:
        return {
            "mode": self.mode.value,
            "complete": self.complete,
            "goals_satisfied": self.goals_satisfied,
            "replica_moves": self.replica_moves,
            "bytes_moved": self.bytes_moved,
            "lower_bound_moves": self.lower_bound_moves,
            "leader_changes": self.leader_changes,
            "optimal_leader_changes": self.optimal_leader_changes,
            "partitions_changed": len(self.reassignments),
            "before": self.before,
            "after": self.after,
            "goals": [{"goal": g, "satisfied": ok} for g, ok in self.goals],
            "violations": list(self.violations),
        }


def goals_for(
    mode: Mode, state: PlanState, band: float, capacity_threshold: float, topic_spread: bool = True
) -> list[Goal]:
    hard: list[Goal] = [
        DiskCapacityGoal(capacity_threshold),
        NetworkInboundCapacityGoal(capacity_threshold),
        OfflineReplicasGoal(),
    ]
    if mode is Mode.LEADERS:
        return [LeaderDistributionGoal(band, by_bytes=False)]
    if mode in (Mode.REMOVE_BROKERS, Mode.FIX_OFFLINE):
        return hard + [LeaderDistributionGoal(band)]
    if mode is Mode.ADD_BROKERS:
        return hard + [
            ReplicaDistributionGoal(band=None, receivers=state.new.copy()),
            LeaderDistributionGoal(band),
        ]
    spread: list[Goal] = [TopicReplicaDistributionGoal()] if topic_spread else []
    return (
        hard
        + [
            ReplicaDistributionGoal(band=band),
            ResourceDistributionGoal("size_bytes", band),
            ResourceDistributionGoal("bytes_in", band),
        ]
        + spread
        + [LeaderDistributionGoal(band)]
    )


def plan(
    snapshot: ClusterSnapshot,
    mode: Mode | str = Mode.FULL,
    brokers: Sequence[int] = (),
    band: float = DEFAULT_PLAN_BAND,
    capacity_threshold: float = 0.8,
    leaders_by_bytes: bool = False,
    topic_spread: bool = True,
    broker_racks: Mapping[int, str] | None = None,
) -> PlanResult:
    """Plan a reassignment; `brokers` are the brokers added or removed.

    `topic_spread=False` drops the per-topic spread goal of `full` mode. `broker_racks` gives the racks of
    added brokers the snapshot does not list yet.
    """
    mode = Mode(mode) if not isinstance(mode, Mode) else mode
    check_band(band)
    check_capacity_threshold(capacity_threshold)
    check_brokers_for_mode(mode, brokers)
    if mode is Mode.ADD_BROKERS:
        snapshot = with_new_brokers(snapshot, brokers, broker_racks or {})
    elif broker_racks:
        raise InputError("racks of new brokers are for mode add-brokers only", field="broker_racks")
    ids = {b.id for b in snapshot.brokers}
    for b in brokers:
        if b not in ids:
            raise InputError(f"broker {b} is not in the cluster", field="brokers")
    if mode in (Mode.ADD_BROKERS, Mode.REMOVE_BROKERS) and not brokers:
        raise InputError(f"mode {mode.value} needs --brokers", field="brokers")
    state = PlanState(
        snapshot,
        remove=tuple(brokers) if mode is Mode.REMOVE_BROKERS else (),
        new=tuple(brokers) if mode is Mode.ADD_BROKERS else (),
    )
    goals = goals_for(mode, state, band, capacity_threshold, topic_spread)
    if mode is Mode.LEADERS and leaders_by_bytes:
        goals = [LeaderDistributionGoal(band, by_bytes=True)]
    bound = 0
    if mode is not Mode.LEADERS:
        for g in goals:
            if isinstance(
                g,
                (
                    CapacityGoal,
                    OfflineReplicasGoal,
                    ReplicaDistributionGoal,
                    ResourceDistributionGoal,
                    TopicReplicaDistributionGoal,
                ),
            ):
                bound = max(bound, g.lower_bound(state))
    ctx = Context(state)
    for g in goals:
        g.optimize(state, ctx)
        ctx.done.append(g)
    status = tuple((g.name, bool(g.satisfied(state))) for g in goals)
    moves, nbytes = state.moved_replicas()
    reassign, after_snapshot, changes = _materialize(snapshot, state)
    leader_goal = next((g for g in goals if isinstance(g, LeaderDistributionGoal)), None)
    after = state.ratios(np.nonzero(state.eligible)[0])
    return PlanResult(
        mode,
        tuple(reassign),
        moves,
        nbytes,
        bound,
        changes,
        leader_goal.optimal_changes if leader_goal else None,
        state.before,
        after,
        status,
        tuple(ctx.violations),
        after_snapshot,
    )


def check_brokers_for_mode(mode: Mode | str, brokers: Sequence[int]) -> None:
    """Only add-brokers and remove-brokers have brokers to add or remove; elsewhere they would be ignored."""
    mode = Mode(mode) if not isinstance(mode, Mode) else mode
    if brokers and mode not in (Mode.ADD_BROKERS, Mode.REMOVE_BROKERS):
        raise InputError(
            f"brokers are added or removed in modes add-brokers and remove-brokers only; mode "
            f"{mode.value} has no use for them (got {','.join(map(str, brokers))})",
            field="brokers",
        )


def check_band(band: float) -> None:
    """max/mean is never below 1, so a band under 1 (or NaN, or infinite) asks for nothing meaningful."""
    if not (math.isfinite(band) and band >= 1.0):
        raise InputError(f"a max/mean ratio: a finite number >= 1, got {band!r}", field="band")


def check_capacity_threshold(threshold: float) -> None:
    """A share of a broker's capacity, as Cruise Control's capacity thresholds: in (0, 1]."""
    if not (math.isfinite(threshold) and 0.0 < threshold <= 1.0):
        raise InputError(
            f"a share of broker capacity: a number in (0, 1], got {threshold!r}",
            field="capacity_threshold",
        )


def with_new_brokers(
    snapshot: ClusterSnapshot, brokers: Sequence[int], broker_racks: Mapping[int, str]
) -> ClusterSnapshot:
    """The snapshot plus the added brokers it does not list yet (describe text lists no empty broker).

    In a cluster with racks a broker of unknown rack would make rack awareness unverifiable, so an
    added broker the snapshot does not know needs its rack given.
    """
    by_id = {b.id: b for b in snapshot.brokers}
    for b, rack in sorted(broker_racks.items()):
        if b not in brokers:
            raise InputError(
                f"broker {b} has a rack given but is not among the added brokers",
                field="broker_racks",
            )
        if b in by_id and by_id[b].rack != rack:
            raise InputError(
                f"broker {b} is in rack {by_id[b].rack!r} in the snapshot, not {rack!r}",
                field="broker_racks",
            )
    racked = any(b.rack is not None for b in snapshot.brokers)
    extra = []
    for b in brokers:
        if b in by_id:
            continue
        new_rack = broker_racks.get(b)
        if racked and new_rack is None:
            raise InputError(
                f"broker {b} is not in the snapshot and the cluster has racks: give its rack "
                f"({b}:RACK with --broker-racks)",
                field="brokers",
            )
        if not racked and new_rack is not None:
            raise InputError(
                f"broker {b}: the cluster's brokers have no racks", field="broker_racks"
            )
        extra.append(Broker(b, new_rack))
    return (
        ClusterSnapshot(snapshot.brokers + tuple(extra), snapshot.partitions) if extra else snapshot
    )


def _materialize(snapshot: ClusterSnapshot, state: PlanState):
    """Reassignment entries (planned leader first, other replicas in slot order) and the resulting snapshot."""
    ids = state.broker_ids.tolist()
    out: list[Reassignment] = []
    parts: list[PartitionReplicas] = []
    changes = 0
    rep, rep0, lslot = state.rep, state.rep0, state.lslot
    touched = set(
        np.nonzero((rep != rep0).any(axis=1) | (lslot != 0) | (lslot != state.leader0))[0].tolist()
    )
    for i, p in enumerate(snapshot.partitions):
        if i not in touched:
            new_leader = p.replicas[0] if (p.leader is None and state.can_lead(i, 0)) else p.leader
            if new_leader != p.leader:
                changes += 1
                parts.append(
                    PartitionReplicas(p.topic, p.partition, p.replicas, new_leader, p.isr, p.load)
                )
            else:
                parts.append(p)
            continue
        row = rep[i, : state.rf[i]].tolist()
        ls = int(lslot[i])
        order = [row[ls]] + [b for j, b in enumerate(row) if j != ls]
        reps = tuple(ids[b] for b in order)
        lead = reps[0]
        if reps != p.replicas:
            out.append(Reassignment(p.topic, p.partition, reps))
        if lead != p.leader:
            changes += 1
        kept = set(p.isr) & set(reps)
        isr = tuple(r for r in reps if r in kept or r not in p.replicas)
        parts.append(PartitionReplicas(p.topic, p.partition, reps, lead, isr, p.load))
    return out, ClusterSnapshot(snapshot.brokers, tuple(parts)), changes
