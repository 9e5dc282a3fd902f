"""The one small interface every assignor sits behind."""

from __future__ import annotations

from typing import Protocol

from ..model import Assignment, GroupSpec


class Assignor(Protocol):
    """A partition assignor: Kafka's `name()` and `assign(groupSpec, topics)`.

    `spec.members` is in the order the group leader inserted members into its
    HashMap; assignors whose Kafka output depends on HashMap iteration order
    must emulate it from that order.
    """

    name: str

    def assign(self, spec: GroupSpec) -> Assignment: ...


class AssignorFailure(RuntimeError):
    """Kafka's own assignor fails on this input (it throws); ours fails alike, with the reason."""
