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
  new target assignment (type 7 records, tombstones removing a member);
- partitions moved/assigned/unassigned: between the two targets' owners.

`start_source` is "group_epoch" and `protocol` "consumer" (the classic
episodes beside them come from rebalances.py).
"""

from __future__ import annotations

from typing import Any


def consumer_episodes(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Episodes (rebalances.EPISODE_COLUMNS) from consumer_group rows in log order, every group."""
    by_group: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_group.setdefault(r["group"], []).append(r)
    out: list[dict[str, Any]] = []
    for group in sorted(by_group):
        out += _group_episodes(group, by_group[group])
    return out


def _group_episodes(group: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    target: dict[str, frozenset] = {}  # member -> its partitions in the current target
    epochs: dict[str, int] = {}  # member -> member epoch (type 8)
    group_epoch = None
    prev_target: dict[str, frozenset] = {}
    open_ep: dict[str, Any] | None = None
    out = []
    for r in rows:
        t = r["key_version"]
        if t == 3:
            if r["tombstone"]:  # group deleted
                target, epochs, group_epoch, prev_target, open_ep = {}, {}, None, {}, None
                continue
            epoch = r["epoch"]
            if group_epoch is not None and epoch == group_epoch:
                continue
            open_ep = {
                "group": group,
                "generation_from": group_epoch,
                "generation_to": epoch,
                "start_ms": r["ts_ms"],
                "end_ms": None,
                "duration_ms": None,
                "start_source": "group_epoch",
                "protocol": "consumer",
                "leader": None,
            }
            prev_target = dict(target)
            group_epoch = epoch
            out.append(open_ep)
        elif t == 7:
            if r["tombstone"]:
                target.pop(r["member_id"], None)
            else:
                target[r["member_id"]] = frozenset(
                    (p["topic"], p["partition"]) for p in r["partitions"] or ()
                )
        elif t == 8:
            if r["tombstone"]:
                epochs.pop(r["member_id"], None)
            else:
                epochs[r["member_id"]] = r["epoch"]
        if open_ep is not None:
            _describe(open_ep, prev_target, target)
            if (
                t == 8
                and open_ep["end_ms"] is None
                and target
                and all(epochs.get(m) == open_ep["generation_to"] for m in target)
            ):
                open_ep["end_ms"] = r["ts_ms"]
                open_ep["duration_ms"] = r["ts_ms"] - open_ep["start_ms"]
    return out


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
