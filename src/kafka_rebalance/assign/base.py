"""The one small interface every assignor sits behind."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from ..model import AssignmentView, GroupSpec


class Assignor(Protocol):
    """A partition assignor: Kafka's `name()` and `assign(groupSpec, topics)`.

    `spec.members` is in the order the group leader inserted members into its
    HashMap; assignors whose Kafka output depends on HashMap iteration order
    must emulate it from that order. The result is read-only: an assignor may share the
    input's own partition sequences (uniform gives an unchanged member its `owned` tuple).
    """

    name: str

    def assign(self, spec: GroupSpec) -> AssignmentView: ...


class AssignorFailure(RuntimeError):
    """Kafka's own assignor fails on this input (it throws); ours fails alike, with the reason."""


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic GC off for one assign() call, then back as it was (also on an exception).

    An assignment allocates many small acyclic objects (lists, tuples, dicts) that reference
    counting frees; the cyclic collector finds nothing among them, but the allocations trigger
    its collections, and with millions of objects alive in the process those cost more than the
    assignment itself. State is restored, not forced on: a caller that disabled the GC keeps it off.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def pause_gc() -> bool:
    """gc_paused's entry without the `with`: the collector off, and whether it was on (for
    resume_gc). Nothing is allocated before it is off, where a `with` allocates the context
    manager's bound __enter__ and __exit__ first: any allocation while the collector is on can
    start the collection that the objects of the previous call made due, inside this call."""
    enabled = gc.isenabled()
    gc.disable()
    return enabled


def resume_gc(enabled: bool) -> None:
    """The collector back on if pause_gc found it on."""
    if enabled:
        gc.enable()
