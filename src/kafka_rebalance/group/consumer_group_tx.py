"""The copy-on-write transaction behind every KIP-848 group update, and member fencing.

Kept apart from the heartbeat state machine (consumer_group) because the record replay
(consumer_group_records) applies records through the same indexing and ownership checks.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .consumer_group_model import (
    ConsumerGroup,
    ConsumerGroupMember,
    Effect,
    GroupEpochBumped,
    MemberRemoved,
    count_unreconciled,
)
from .consumer_group_target import subscription_metadata

__all__ = ["IllegalStateError"]


class IllegalStateError(RuntimeError):
    """An update would break an invariant (e.g. a partition owned by two members)."""


# ---------------------------------------------------------------------------
# Group updates (copy on write).


class _Tx:
    """Accumulates changes to a frozen ConsumerGroup, copying each map at most once."""

    def __init__(self, group: ConsumerGroup) -> None:
        self.g = group
        self.members = group.members
        self.partition_epochs = group.partition_epochs
        self.partition_owners = group.partition_owners
        self.static_members = group.static_members
        self.target_assignment = group.target_assignment
        self.changes: dict[str, Any] = {}  # ConsumerGroup fields to replace, by name
        self._copied: set[str] = set()
        self.unreconciled = (
            group.unreconciled
            if group.unreconciled is not None
            else count_unreconciled(group.members.values(), group.assignment_epoch)
        )
        self._recount = False

    def _unreconciled(self, m: ConsumerGroupMember | None) -> int:
        return 0 if m is None or m.is_reconciled_to(self.get("assignment_epoch")) else 1

    def _own(self, name: str) -> dict:
        if name not in self._copied:
            setattr(self, name, dict(getattr(self, name)))
            self._copied.add(name)
        return getattr(self, name)

    def _unindex(self, m: ConsumerGroupMember) -> None:
        if not m.owned:
            return
        epochs, owners = self._own("partition_epochs"), self._own("partition_owners")
        for tp in m.owned:
            if owners.get(tp) == m.member_id:
                del epochs[tp]
                del owners[tp]

    def _index(self, m: ConsumerGroupMember) -> None:
        if not m.owned:
            return
        epochs, owners = self._own("partition_epochs"), self._own("partition_owners")
        for tp in m.owned:
            holder = owners.get(tp)
            if holder is not None and holder != m.member_id:
                raise IllegalStateError(
                    f"Cannot set the epoch of {tp} to {m.member_epoch} for {m.member_id} "
                    f"because the partition is still owned by {holder} at epoch {epochs[tp]}."
                )
            epochs[tp] = m.member_epoch
            owners[tp] = m.member_id

    def put_member(self, m: ConsumerGroupMember) -> None:
        old = self.members.get(m.member_id)
        self.unreconciled += self._unreconciled(m) - self._unreconciled(old)
        if old is not None and (old.owned != m.owned or old.member_epoch != m.member_epoch):
            self._unindex(old)
            self._index(m)
        elif old is None:
            self._index(m)
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
        return old

    def set(self, **changes: object) -> None:
        if "assignment_epoch" in changes:
            self._recount = True  # every member's reconciled status is relative to it
        self.changes.update(changes)

    def get(self, name: str):
        return self.changes.get(name, getattr(self.g, name))

    def build(self, now_ms: int) -> ConsumerGroup:
        unreconciled = (
            count_unreconciled(self.members.values(), self.get("assignment_epoch"))
            if self._recount
            else self.unreconciled
        )
        new = dataclasses.replace(
            self.g,
            members=self.members,
            partition_epochs=self.partition_epochs,
            partition_owners=self.partition_owners,
            static_members=self.static_members,
            target_assignment=self.target_assignment,
            unreconciled=unreconciled,
            **self.changes,
        )
        if new.state is not self.g.state:
            new = dataclasses.replace(new, state_timestamp_ms=now_ms)
        return new


def _fence(tx: _Tx, member_id: str, reason: str, effects: list[Effect]) -> None:
    """consumerGroupFenceMember: remove the member, refresh subscription metadata, bump the epoch."""
    tx.remove_member(member_id)
    tx.set(subscription_metadata=subscription_metadata(tx.members.values(), tx.g.topics))
    epoch = tx.get("group_epoch") + 1
    tx.set(group_epoch=epoch)
    effects.append(MemberRemoved(member_id, reason))
    effects.append(GroupEpochBumped(epoch, f"member {member_id} removed ({reason})"))
