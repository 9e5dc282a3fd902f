"""Back-to-back rebalances: round k+1 is fed from round k, as the parity vectors define."""

from __future__ import annotations

from dataclasses import replace

from ..model import Assignment, AssignmentView, GroupSpec
from .base import Assignor


def next_round_spec(spec: GroupSpec, result: AssignmentView) -> GroupSpec:
    """Every member owns exactly what it was given; generations become max(0, max) + 1."""
    gen = max(0, max((m.generation for m in spec.members), default=0)) + 1
    members = tuple(
        replace(m, owned=tuple(result.get(m.member_id, ())), generation=gen) for m in spec.members
    )
    return GroupSpec(spec.topics, members)


def as_lists(result: AssignmentView) -> Assignment:
    """`result` with every value a list: the uniform assignor shares an unchanged member's owned
    tuple (assign/uniform.py), the public results (AssignResult) promise lists."""
    if type(result) is dict and all(type(v) is list for v in result.values()):
        return result
    return {m: v if type(v) is list else list(v) for m, v in result.items()}


def run_rounds(
    assignor: Assignor, spec: GroupSpec, rounds: int
) -> list[tuple[GroupSpec, Assignment]]:
    """Run `rounds` rebalances; returns each round's input spec and output."""
    out: list[tuple[GroupSpec, Assignment]] = []
    current = spec
    for _ in range(rounds):
        result = as_lists(assignor.assign(current))
        out.append((current, result))
        current = next_round_spec(current, result)
    return out
