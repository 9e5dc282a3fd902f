"""Java's HashMap iteration order without building the map, for the uniform assignor (mypyc).

Kafka's uniform builder walks a member's current assignment (`Map<Uuid, Set<Integer>>`) and the
group's members (`HashMap<String, ...>`) in hash iteration order; which partitions a member over
quota keeps, and the order members are dealt in, follow from it. Without tree bins that order is a
sort by (bin at the final capacity, place in the bin), computed here from the keys' hashes alone.
`javacompat.JavaHashMap` and `uniform_group.current_assignment` emulate the maps node by node and
stay the reference (tests/test_assign_uniform_order.py compares both, on both builds).

Compiled with kernels.py on the same switch (`kernels.is_compiled()`); no project imports but
model_fields (the model's compiled storage, read directly); no I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka_rebalance.model_fields import PartitionFields


def java_bin_order(spreads: list[int], head: bool, trailing: bool = False) -> list[int] | None:
    """Positions 0..n-1 of n distinct keys (their `HashMap.hash` values) in the iteration order of
    a fresh `new HashMap<>()` filled in that order: `put` (head=False: a new key at its bin's tail,
    resize after the insert) or `computeIfAbsent` (head=True: at the head, resize before).

    Without tree bins the order is (bin at the final capacity, place in the bin), and resizes keep
    a bin's relative order. The capacity follows Java's: doubled when the size passes 0.75 of it,
    and when a bin reaches the treeify threshold in a table under 64 slots (treeifyBin resizes
    instead). computeIfAbsent checks the size at the start of every call, also for a key already
    present: `trailing` says a call came after the last new key (it may double the table once
    more). None when a bin would become a tree (the caller then emulates the map:
    javacompat.JavaHashMap). Its C twin for head=False: uniform_native_plan.java_put_order."""
    n = len(spreads)
    if n == 0:
        return []
    cap = 16
    thr = 12
    bins = [0] * cap
    # existing nodes in the bin that make the insert call treeifyBin
    limit = 7 if head else 8
    for i in range(n):
        if head and i > thr:  # computeIfAbsent resizes before inserting
            cap <<= 1
            thr <<= 1
            bins = _bin_counts(spreads, i, cap)
        b = spreads[i] & (cap - 1)
        existing = bins[b]
        bins[b] = existing + 1
        if existing >= limit:
            if cap >= 64:
                return None  # a real tree bin
            cap <<= 1
            thr <<= 1
            bins = _bin_counts(spreads, i + 1, cap)
        if not head and i + 1 > thr:  # put resizes after inserting
            cap <<= 1
            thr <<= 1
            bins = _bin_counts(spreads, i + 1, cap)
    if head and trailing and n > thr:
        cap <<= 1  # a computeIfAbsent after the last new key resizes first (thr + 1 keys held)
    keyed: list[int] = []
    mask = cap - 1
    for i in range(n):
        keyed.append((spreads[i] & mask) * n + (n - 1 - i if head else i))
    keyed.sort()
    out: list[int] = []
    for k in keyed:
        r = k % n
        out.append(n - 1 - r if head else r)
    return out


def _bin_counts(spreads: list[int], present: int, cap: int) -> list[int]:
    """Keys per bin of a `cap`-slot table holding the first `present` keys."""
    bins = [0] * cap
    for i in range(present):
        bins[spreads[i] & (cap - 1)] += 1
    return bins


def _spread(h: int) -> int:
    """`HashMap.hash` of a key whose hashCode is h, as an unsigned 32-bit value (bins use low bits)."""
    u = h & 0xFFFFFFFF
    return u ^ (u >> 16)


def owned_over_quota(
    entries: Any,
    quota: int,
    index: dict[str, int],
    counts: list[int],
    objects: list[Any],
    topic_hash: Callable[[str], int],
    make: Callable[[str, int], Any],
) -> tuple[list[Any], list[Any], int] | None:
    """The uniform builder's maybeRevokePartitions for one member over quota: its current
    assignment as a `Map<Uuid, Set<Integer>>` built with computeIfAbsent(topic).add(p) in the
    owned order, walked in Java iteration order (topics by their id's hash, partitions by
    Integer hash); topics not subscribed (not in `index`) are dropped whole, the others kept up
    to `quota` and the rest revoked. -> (kept, revoked, quota left), the same as
    uniform_group.current_assignment's walk; None when a hash bin could treeify or a partition
    is not a non-negative int32 (the caller then emulates the maps)."""
    slot: dict[str, int] = {}
    calls = 0
    last_new = -1
    names: list[str] = []
    parts: list[list[int]] = []
    seen: list[set[int]] = []
    for tp in entries:
        if isinstance(tp, PartitionFields):
            tv = tp.topic
            pv = tp.partition
        else:
            tv = tp.topic
            pv = tp.partition
        if not isinstance(tv, str) or not isinstance(pv, int):
            return None
        t: str = tv
        p: int = pv
        if p < 0 or p > 0x7FFFFFFF:
            return None
        s = slot.get(t, -1)
        if s < 0:
            s = len(names)
            last_new = calls
            slot[t] = s
            names.append(t)
            parts.append([p])
            seen.append({p})
        elif p not in seen[s]:
            seen[s].add(p)
            parts[s].append(p)
        calls += 1
    topic_spreads: list[int] = []
    for t in names:
        topic_spreads.append(_spread(topic_hash(t)))
    topic_order = java_bin_order(topic_spreads, True, calls - 1 > last_new)
    if topic_order is None:
        return None
    kept: list[Any] = []
    revoked: list[Any] = []
    for s in topic_order:
        t = names[s]
        j = index.get(t, -1)
        if j < 0:
            continue  # the whole topic is revoked, not re-queued
        ps = parts[s]
        part_spreads: list[int] = []
        for p in ps:
            part_spreads.append(p ^ (p >> 16))
        part_order = java_bin_order(part_spreads, False)
        if part_order is None:
            return None
        objs = objects[j]
        c = counts[j]
        for k in part_order:
            p = ps[k]
            tp_obj = objs[p] if p < c else make(t, p)
            if quota > 0:
                quota -= 1
                kept.append(tp_obj)
            else:
                revoked.append(tp_obj)
    return kept, revoked, quota


def hashmap_positions(hashes: list[int]) -> list[int] | None:
    """Positions of n distinct keys (their hashCodes) in a `new HashMap<>()` filled with `put` in
    that order, as it iterates them; None when a bin could treeify (the caller emulates)."""
    spreads: list[int] = []
    for h in hashes:
        spreads.append(_spread(h))
    return java_bin_order(spreads, False)
