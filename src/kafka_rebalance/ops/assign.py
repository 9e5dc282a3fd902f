"""Kafka's assignment for a group, round after round (docs/formats.md section 1).

Round k+1 is fed from round k as the parity vectors define (`assign.rounds.run_rounds`):
members own what they were given, at the next generation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .. import limits
from ..assign.base import AssignorFailure
from ..assign.registry import NAMES, SERVER_SIDE, get_assignor
from ..assign.rounds import run_rounds
from ..assign.stats import RoundStats, round_stats
from ..errors import InputError
from ..model import Assignment, GroupScenario, GroupSpec, parse_group_scenario

STRATEGIES = NAMES


@dataclass(frozen=True)
class AssignRound:
    """One rebalance: its input (members with what they owned) and what each member gets."""

    spec: GroupSpec
    assignment: Assignment
    stats: RoundStats

    def to_json(self) -> dict[str, Any]:
        result = self.assignment
        out = {
            m.member_id: [[tp.topic, tp.partition] for tp in result.get(m.member_id, ())]
            for m in self.spec.members
        }
        # members the assignor returned that the spec does not list (never expected) stay visible
        for member, tps in result.items():
            out.setdefault(member, [[tp.topic, tp.partition] for tp in tps])
        return {"assignment": out, "stats": self.stats.to_json()}


@dataclass(frozen=True)
class AssignResult:
    strategy: str
    rounds: tuple[AssignRound, ...]

    def to_json(self) -> dict[str, Any]:
        return {"strategy": self.strategy, "rounds": [r.to_json() for r in self.rounds]}


def check(strategy: str, rounds: int | None) -> None:
    """The strategy is one of STRATEGIES and rounds (when given) is at least 1."""
    get_assignor(strategy)
    if rounds is not None and rounds < 1:
        raise InputError(f"must be >= 1, got {rounds}", field="rounds")
    if rounds is not None:
        limits.check("rounds", rounds, field="rounds")


def assign_partitions(
    group: GroupScenario | GroupSpec | Mapping[str, Any],
    strategy: str,
    rounds: int | None = None,
    *,
    source: str | None = None,
) -> AssignResult:
    """Run `strategy` on the group (a scenario dict as in a group file, or the parsed dataclasses).

    `rounds` defaults to the scenario's own (1 for a bare GroupSpec). `source` names the file the
    group came from in errors.
    """
    check(strategy, rounds)
    assignor = get_assignor(strategy)
    if isinstance(group, GroupSpec):
        scenario = GroupScenario(group)
    elif isinstance(group, GroupScenario):
        scenario = group
    else:
        try:
            scenario = parse_group_scenario(group)
        except InputError as exc:
            raise exc.in_file(source) if source else exc from None
    n = rounds if rounds is not None else scenario.rounds
    if strategy in SERVER_SIDE:
        _no_shared_ownership(scenario.spec, source)
    _check_memory(scenario.spec, n, source)
    try:
        results = run_rounds(assignor, scenario.spec, n)
    except AssignorFailure as exc:
        raise InputError(
            f"Kafka's {strategy} assignor fails on this input: {exc}", source=source
        ) from None
    return AssignResult(
        strategy,
        tuple(AssignRound(spec, result, round_stats(spec, result)) for spec, result in results),
    )


def _check_memory(spec: GroupSpec, rounds: int, source: str | None) -> None:
    """Refuse a group whose assignment would not fit in the memory available (before any work)."""
    partitions = sum(t.partitions for t in spec.topics.values())
    subscriptions = sum(len(m.topics) for m in spec.members)
    estimate = limits.assign_memory(len(spec.members), partitions, subscriptions, rounds)
    try:
        limits.check_memory(estimate, f"assigning {partitions:,} partitions over {rounds:,} rounds")
    except InputError as exc:
        raise exc.in_file(source) if source else exc from None


def _no_shared_ownership(spec: GroupSpec, source: str | None) -> None:
    """A server-side target assignment never has one partition owned by two members (KIP-848)."""
    owner: dict = {}
    for i, m in enumerate(spec.members):
        for j, tp in enumerate(m.owned):
            if tp in owner and owner[tp] != m.member_id:
                raise InputError(
                    f"{tp} is also owned by {owner[tp]!r}; a server-side assignor's current "
                    "assignment never holds a partition twice",
                    source=source,
                    field=f"members[{i}].owned[{j}]",
                )
            owner[tp] = m.member_id
