"""Goals by Cruise Control's names, and the default list (its `default.goals`, in its priority order).

`--goals` takes any ordered subset of GOAL_NAMES; the order is the priority: a goal optimized later
never makes an earlier one worse. OfflineReplicasGoal (replicas off dead or removed brokers) always runs
first: Cruise Control does the same inside every goal.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import InputError
from .capacity import (
    CpuCapacityGoal,
    DiskCapacityGoal,
    NetworkInboundCapacityGoal,
    NetworkOutboundCapacityGoal,
    PotentialNwOutGoal,
    ReplicaCapacityGoal,
)
from .goal import Goal
from .leader_distribution import LeaderDistributionGoal
from .options import PlanOptions
from .preferred_leader import PreferredLeaderElectionGoal
from .rack_goals import RackAwareDistributionGoal, RackAwareGoal
from .replica_distribution import ReplicaDistributionGoal
from .resource_distribution import ResourceDistributionGoal
from .topic_distribution import TopicReplicaDistributionGoal

GOAL_NAMES = (
    "RackAwareGoal",
    "RackAwareDistributionGoal",
    "ReplicaCapacityGoal",
    "DiskCapacityGoal",
    "NetworkInboundCapacityGoal",
    "NetworkOutboundCapacityGoal",
    "CpuCapacityGoal",
    "ReplicaDistributionGoal",
    "PotentialNwOutGoal",
    "DiskUsageDistributionGoal",
    "NetworkInboundUsageDistributionGoal",
    "NetworkOutboundUsageDistributionGoal",
    "CpuUsageDistributionGoal",
    "TopicReplicaDistributionGoal",
    "LeaderReplicaDistributionGoal",
    "LeaderBytesInDistributionGoal",
    "PreferredLeaderElectionGoal",
)

# Cruise Control's `default.goals`: the goals above in the same priority order, less the two it
# leaves to be asked for (RackAwareDistributionGoal is the alternative to RackAwareGoal, and a
# preferred leader election is its own operation).
_NOT_DEFAULT = frozenset({"RackAwareDistributionGoal", "PreferredLeaderElectionGoal"})
DEFAULT_GOALS = tuple(name for name in GOAL_NAMES if name not in _NOT_DEFAULT)

HARD_GOALS = frozenset(
    {
        "RackAwareGoal",
        "RackAwareDistributionGoal",
        "ReplicaCapacityGoal",
        "DiskCapacityGoal",
        "NetworkInboundCapacityGoal",
        "NetworkOutboundCapacityGoal",
        "CpuCapacityGoal",
    }
)


def parse_goals(text: str | Sequence[str]) -> tuple[str, ...]:
    """A comma-separated (or listed) goal names, case-insensitive, short `Goal`-less names accepted."""
    items = [x.strip() for x in text.split(",")] if isinstance(text, str) else list(text)
    items = [x for x in items if x]
    by_lower = {n.lower(): n for n in GOAL_NAMES}
    by_lower.update({n.lower()[: -len("goal")]: n for n in GOAL_NAMES})
    out: list[str] = []
    for x in items:
        name = by_lower.get(x.rsplit(".", 1)[-1].lower())
        if name is None:
            raise InputError(f"unknown goal {x!r} (known: {', '.join(GOAL_NAMES)})", field="goals")
        if name in out:
            raise InputError(f"goal {name} listed twice", field="goals")
        out.append(name)
    if not out:
        raise InputError("an empty goal list", field="goals")
    return tuple(out)


def build_goals(
    names: Sequence[str], band: float, options: PlanOptions, topic_spread: bool = True
) -> list[Goal]:
    t = options.threshold
    make = {
        "RackAwareGoal": lambda: RackAwareGoal(),
        "RackAwareDistributionGoal": lambda: RackAwareDistributionGoal(),
        "ReplicaCapacityGoal": lambda: ReplicaCapacityGoal(options.max_replicas_per_broker),
        "DiskCapacityGoal": lambda: DiskCapacityGoal(t("size_bytes")),
        "NetworkInboundCapacityGoal": lambda: NetworkInboundCapacityGoal(t("bytes_in")),
        "NetworkOutboundCapacityGoal": lambda: NetworkOutboundCapacityGoal(t("nw_out")),
        "CpuCapacityGoal": lambda: CpuCapacityGoal(t("cpu")),
        "ReplicaDistributionGoal": lambda: ReplicaDistributionGoal(band=band),
        "PotentialNwOutGoal": lambda: PotentialNwOutGoal(t("nw_out")),
        "DiskUsageDistributionGoal": lambda: ResourceDistributionGoal("size_bytes", band),
        "NetworkInboundUsageDistributionGoal": lambda: ResourceDistributionGoal("bytes_in", band),
        "NetworkOutboundUsageDistributionGoal": lambda: ResourceDistributionGoal("nw_out", band),
        "CpuUsageDistributionGoal": lambda: ResourceDistributionGoal("cpu", band),
        "TopicReplicaDistributionGoal": lambda: TopicReplicaDistributionGoal(),
        "LeaderReplicaDistributionGoal": lambda: LeaderDistributionGoal(band),
        "LeaderBytesInDistributionGoal": lambda: ResourceDistributionGoal("leader_bytes_in", band),
        "PreferredLeaderElectionGoal": lambda: PreferredLeaderElectionGoal(),
    }
    return [make[n]() for n in names if topic_spread or n != "TopicReplicaDistributionGoal"]
