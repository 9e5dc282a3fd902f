"""Rebalance episodes of KIP-848 (consumer-protocol) groups from their `__consumer_offsets` records.

The group coordinator of the new protocol writes each step of a rebalance:
a ConsumerGroupMetadata record (type 3) when the group epoch is bumped (a
member joined or left, a subscription or the topics changed), the new target
assignment (types 7, then 6 with its epoch), and a CurrentMemberAssignment
(type 8) each time a member moves to a new member epoch while it reconciles.
So an episode is exact from the log alone:

- `start`: the type-3 record with the new group epoch;
- `end`: the first type-8 record after which every member of the new target
  assignment is at that epoch (null while one is not yet);
- members before/after, joined and left: the members of the previous and the
  new target assignment (type 7 records, tombstones removing a member); the
  records a join or a leave writes before the type-3 record of its epoch
  (`_is_membership_change`) belong to the new episode, not the one before;
- partitions moved/assigned/unassigned: between the two targets' owners.

`start_source` is "group_epoch" and `protocol` "consumer" (the classic
episodes beside them come from rebalances.py).
"""

from __future__ import annotations

from typing import Any


def consumer_episodes(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Episodes (rebalances.EPISODE_COLUMNS) from consumer_group rows in log order, every group.

    A group's records are in one `__consumer_offsets` partition: log order is its offset order.
    """
    by_group: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_group.setdefault(r["group"], []).append(r)
    out: list[dict[str, Any]] = []
    for group in sorted(by_group):
        out += _group_episodes(group, by_group[group])
    return out


def _is_membership_change(r: dict[str, Any]) -> bool:
    """A record the coordinator writes *before* the group epoch record of the same batch.

    Kafka writes a member's subscription (type 5) before bumping the group
    epoch for a join or a subscription change, and a leaving or fenced member's
    tombstones (types 8, 7, 5) plus the new partition metadata (type 4) before
    the group epoch record of its departure. Read one by one, they would be
    attributed to the episode before: a leave would empty the previous target.
    """
    t = r["key_version"]
    return t in (4, 5) or (t in (7, 8) and r["tombstone"])


def _group_episodes(group: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    state = _GroupState()
    out: list[dict[str, Any]] = []
    held: list[dict[str, Any]] = []  # membership changes waiting for the record after them
    for r in rows:
        if _is_membership_change(r):
            held.append(r)
            continue
        if r["key_version"] == 3 and not r["tombstone"]:
            state.open(group, r, out)  # the held changes caused this epoch: they are its own
        for h in held:
            state.apply(h)
        held = []
        state.apply(r)
    for h in held:
        state.apply(h)
    return out


class _GroupState:
    """One KIP-848 group replayed record by record, with the episode still open."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.target: dict[str, frozenset] = {}  # member -> its partitions in the current target
        self.epochs: dict[str, int] = {}  # member -> member epoch (type 8)
        self.group_epoch: int | None = None
        self.prev_target: dict[str, frozenset] = {}
        self.open_ep: dict[str, Any] | None = None

    def open(self, group: str, r: dict[str, Any], out: list[dict[str, Any]]) -> None:
        """A type-3 record: a new episode, unless it repeats the current group epoch."""
        epoch = r["epoch"]
        if self.group_epoch is not None and epoch == self.group_epoch:
            return
        self.open_ep = {
            "group": group,
            "generation_from": self.group_epoch,
            "generation_to": epoch,
            "start_ms": r["ts_ms"],
            "end_ms": None,
            "duration_ms": None,
            "start_source": "group_epoch",
            "protocol": "consumer",
            "leader": None,
        }
        self.prev_target = dict(self.target)
        self.group_epoch = epoch
        out.append(self.open_ep)

    def apply(self, r: dict[str, Any]) -> None:
        t = r["key_version"]
        if t == 3 and r["tombstone"]:  # group deleted
            self.reset()
            return
        if t == 7:
            if r["tombstone"]:
                self.target.pop(r["member_id"], None)
            else:
                self.target[r["member_id"]] = frozenset(
                    (p["topic"], p["partition"]) for p in r["partitions"] or ()
                )
        elif t == 8:
            if r["tombstone"]:
                self.epochs.pop(r["member_id"], None)
            else:
                self.epochs[r["member_id"]] = r["epoch"]
        ep = self.open_ep
        if ep is None:
            return
        _describe(ep, self.prev_target, self.target)
        if (
            t == 8
            and ep["end_ms"] is None
            and self.target
            and all(self.epochs.get(m) == ep["generation_to"] for m in self.target)
        ):
            ep["end_ms"] = r["ts_ms"]
            ep["duration_ms"] = r["ts_ms"] - ep["start_ms"]


def _describe(
    ep: dict[str, Any], before: dict[str, frozenset], after: dict[str, frozenset]
) -> None:
    owner_before = {tp: m for m, tps in before.items() for tp in tps}
    owner_after = {tp: m for m, tps in after.items() for tp in tps}
    ep["members_before"] = len(before)
    ep["members_after"] = len(after)
    ep["joined"] = sorted(set(after) - set(before))
    ep["left"] = sorted(set(before) - set(after))
    ep["partitions_moved"] = sum(
        1 for tp, m in owner_after.items() if tp in owner_before and owner_before[tp] != m
    )
    ep["partitions_assigned"] = len(owner_after)
    ep["partitions_unassigned"] = sum(1 for tp in owner_before if tp not in owner_after)
