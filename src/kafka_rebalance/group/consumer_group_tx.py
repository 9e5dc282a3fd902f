"""The copy-on-write transaction behind every KIP-848 group update, and member fencing.

Kept apart from the heartbeat state machine (consumer_group) because the record replay
(consumer_group_records) applies records through the same indexing and ownership checks.
"""

from __future__ import annotations

from typing import Any

from ..model_fields import mypyc_attr
from .consumer_group_model import (
    ConsumerGroup,
    ConsumerGroupMember,
    ConsumerGroupState,
    Effect,
    GroupEpochBumped,
    MemberRemoved,
    count_unreconciled,
    replace,
)
from .consumer_group_target import subscription_metadata

__all__ = ["IllegalStateError"]


@mypyc_attr(native_class=False)  # (a compiled build's native classes cannot subclass it)
class IllegalStateError(RuntimeError):
    """An update would break an invariant (e.g. a partition owned by two members)."""


# ---------------------------------------------------------------------------
# Group updates (copy on write).


class _Tx:
    """Accumulates changes to a frozen ConsumerGroup, copying each map at most once.

    With `in_place` the caller gives the group up: its maps are updated where they are, so a
    heartbeat costs what it changes (as Kafka's timeline maps), not a copy of the whole group
    per update. Only the group returned by `build` is valid afterwards; a transaction that is
    abandoned (a rejected request) must not have changed a map: callers switch to copying for
    the one path that changes maps before it may still reject (a static member's rejoin)."""

    __slots__ = (
        "g",
        "members",
        "partition_owners",
        "static_members",
        "session_deadlines",
        "target_assignment",
        "changes",
        "_copied",
        "unreconciled",
        "_recount",
        "_old_state",
    )

    def __init__(self, group: ConsumerGroup, in_place: bool = False) -> None:
        self.g = group
        self.members = group.members
        self.partition_owners = group.partition_owners
        self.static_members = group.static_members
        self.session_deadlines = group.session_deadlines
        self.target_assignment = group.target_assignment
        self.changes: dict[str, Any] = {}  # ConsumerGroup fields to replace, by name
        self.unreconciled = (
            group.unreconciled
            if group.unreconciled is not None
            else count_unreconciled(group.members.values(), group.assignment_epoch)
        )
        self._recount = False
        if in_place:
            # every map counts as already copied: writes go to the group's own maps
            self._copied: set[str] = set(_MAPS)
            self._old_state: ConsumerGroupState | None = group.state
        else:
            self._copied = set()
            self._old_state = None

    def _unreconciled(self, m: ConsumerGroupMember | None) -> int:
        return 0 if m is None or m.is_reconciled_to(self.get("assignment_epoch")) else 1

    def _own(self, name: str) -> dict:
        if name not in self._copied:
            setattr(self, name, dict(getattr(self, name)))
            self._copied.add(name)
        return getattr(self, name)

    def _unindex(self, m: ConsumerGroupMember, owned: frozenset | None = None) -> None:
        if owned is None:
            owned = m.owned
        if not owned:
            return
        owners = self._own("partition_owners")
        mid = m.member_id
        for tp in owned:
            if owners.get(tp) == mid:
                del owners[tp]

    def _check_index(self, m: ConsumerGroupMember, owned: frozenset) -> None:
        """Refuse, before any map changes, a member owning a partition another member holds."""
        owners, mid = self.partition_owners, m.member_id
        for tp in owned:
            holder = owners.get(tp)
            if holder is not None and holder != mid:
                raise IllegalStateError(
                    f"Cannot set the epoch of {tp} to {m.member_epoch} for {mid} "
                    f"because the partition is still owned by {holder} at epoch "
                    f"{self.members[holder].member_epoch}."
                )

    def _index(self, m: ConsumerGroupMember, owned: frozenset) -> None:
        if not owned:
            return
        owners = self._own("partition_owners")
        mid = m.member_id
        for tp in owned:
            owners[tp] = mid

    def put_member(self, m: ConsumerGroupMember) -> None:
        old = self.members.get(m.member_id)
        if old is None:
            owned = m.owned
            self._check_index(m, owned)
            self._index(m, owned)
        elif (
            old.assigned is not m.assigned
            or old.pending_revocation is not m.pending_revocation
            or old.member_epoch != m.member_epoch
        ):
            owned, old_owned = m.owned, old.owned
            # the same partitions (at a new epoch: every member, once per epoch) are indexed to
            # this member already; their epoch is read through the member (partition_epochs)
            if owned != old_owned:
                self._check_index(m, owned)
                self._unindex(old, old_owned)
                self._index(m, owned)
        ae = self.get("assignment_epoch")
        was = 0 if old is None or old.is_reconciled_to(ae) else 1
        self.unreconciled += (0 if m.is_reconciled_to(ae) else 1) - was
        self._own("members")[m.member_id] = m
        if m.instance_id is not None and self.static_members.get(m.instance_id) != m.member_id:
            self._own("static_members")[m.instance_id] = m.member_id

    def remove_member(self, member_id: str) -> ConsumerGroupMember:
        old = self._own("members").pop(member_id)
        self.unreconciled -= self._unreconciled(old)
        self._unindex(old)
        if old.instance_id is not None and self.static_members.get(old.instance_id) == member_id:
            del self._own("static_members")[old.instance_id]
        if member_id in self.target_assignment:
            del self._own("target_assignment")[member_id]
        if member_id in self.session_deadlines:
            del self._own("session_deadlines")[member_id]
        if self._old_state is not None:  # in place: the given-up group's cache of answers too
            self.g.answers.pop(member_id, None)  # type: ignore[attr-defined]
        return old

    def set_session_deadline(self, member_id: str, deadline_ms: int) -> None:
        self._own("session_deadlines")[member_id] = deadline_ms

    def set(self, **changes: object) -> None:
        if "assignment_epoch" in changes:
            self._recount = True  # every member's reconciled status is relative to it
        self.changes.update(changes)

    def advance_assignment_epoch(self, epoch: int) -> None:
        """A target assignment at a new epoch: every member is behind it (a member's epoch never
        passes the assignment epoch), so every member counts as unreconciled, without a recount."""
        self.changes["assignment_epoch"] = epoch
        self.unreconciled = len(self.members)

    def get(self, name: str):
        changes = self.changes
        return changes[name] if name in changes else getattr(self.g, name)

    def build(self, now_ms: int) -> ConsumerGroup:
        g = self.g
        unreconciled = (
            count_unreconciled(self.members.values(), self.get("assignment_epoch"))
            if self._recount
            else self.unreconciled
        )
        changes = self.changes
        if self._old_state is not None:
            # in place: the maps are the group's own; only the scalar fields may need a new value
            if (
                not changes
                and unreconciled == g.unreconciled
                and self.target_assignment is g.target_assignment
            ):
                return g
            old_state = self._old_state
        else:
            old_state = g.state
            # a copy starts with no cached answers: the given value keeps its own (review 4 F5)
            changes = {**changes, "answers": {}}
        new = replace(
            g,
            members=self.members,
            partition_owners=self.partition_owners,
            static_members=self.static_members,
            session_deadlines=self.session_deadlines,
            target_assignment=self.target_assignment,
            unreconciled=unreconciled,
            **changes,
        )
        if new.state is not old_state:
            new = replace(new, state_timestamp_ms=now_ms)
        return new


_MAPS = ("members", "partition_owners", "static_members", "session_deadlines", "target_assignment")


def _fence(tx: _Tx, member_id: str, reason: str, effects: list[Effect]) -> None:
    """consumerGroupFenceMember: remove the member, refresh subscription metadata, bump the epoch."""
    tx.remove_member(member_id)
    tx.set(subscription_metadata=subscription_metadata(tx.members.values(), tx.g.topics))
    epoch = tx.get("group_epoch") + 1
    tx.set(group_epoch=epoch)
    effects.append(MemberRemoved(member_id, reason))
    effects.append(GroupEpochBumped(epoch, f"member {member_id} removed ({reason})"))
