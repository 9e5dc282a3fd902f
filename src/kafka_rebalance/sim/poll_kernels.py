"""The per-partition loops of a simulated consumer's poll(), as typed functions mypyc compiles.

Every poll of every member walks its owned partitions three or four times: what arrived since the
last fetch (`fetch`), when the next record lands (`next_arrival`), what is not committed yet
(`uncommitted`, `changed_positions`), and every finished batch updates the processed intervals
(`finish`). At 1,000 members these loops are a large share of a rolling restart, and they are plain
integer arithmetic on lists, which mypyc turns into C. `setup.py` compiles this module; without a
compiler it runs as it is, with the same results (the arithmetic is Python's arbitrary-precision
integer arithmetic either way).

Values that are only passed along (partition numbers used as keys, offsets copied from one place to
another) are typed `Any` on purpose: mypyc then hands the same Python int on, where an `int` would
be unboxed and boxed again (a new object for every value above 256).

The log-end offset of partition p at time t is base[p] + (num[p] * (t - base_t[p])) // den[p]
(`partitions.PartitionTable`). When a record lands is a ceiling division by num[p] > 0, written
`(a + num - 1) // num`, equal to `-(-a // num)` for every integer a: mypyc's inline `*` and `//`
take only non-negative small ints, and the negated form sent each of them down the slow path.
"""

from __future__ import annotations

from typing import Any

NEVER = 1 << 62


def fetch(
    owned: list[Any],
    start: int,
    positions: dict[Any, Any],
    base: list[int],
    base_t: list[int],
    num: list[int],
    den: list[int],
    now: int,
    room: int,
    batch: list[tuple[Any, Any, Any]],
) -> tuple[int, int]:
    """Take what arrived by `now` on each partition of `owned`, in order from index `start` round
    to `start - 1` (up to `room` records in all), into `batch` as (partition, from, to) and advance
    `positions`. Returns the room left and when the newest record taken reached the broker."""
    last = 0
    k = len(owned)
    for j in range(k):
        i = start + j
        if i >= k:
            i -= k
        key = owned[i]
        got = positions.get(key)
        if got is None:
            continue
        p: int = key
        pos: int = got
        b = base[p]
        bt = base_t[p]
        nu = num[p]
        d = den[p]
        n = b + (nu * (now - bt)) // d - pos
        if n <= 0:
            continue
        if n >= room:  # the budget runs out on this partition
            end = pos + room
            boxed: Any = end
            batch.append((key, got, boxed))
            positions[key] = boxed
            room = 0
            t = bt + (((end - b) * d + nu - 1) // nu if nu > 0 else 0)
            if t > last:
                last = t
            break
        end = pos + n
        boxed = end
        batch.append((key, got, boxed))
        positions[key] = boxed
        room -= n
        t = bt + (((end - b) * d + nu - 1) // nu if nu > 0 else 0)
        if t > last:
            last = t
    return room, last


def next_arrival(
    owned: list[Any],
    positions: dict[Any, Any],
    base: list[int],
    base_t: list[int],
    num: list[int],
    den: list[int],
) -> int:
    """When the next record lands on one of `owned` (NEVER when nothing is produced to them)."""
    best = NEVER
    for key in owned:
        p: int = key
        nu = num[p]
        got = positions.get(key)
        if nu <= 0 or got is None:
            continue
        pos: int = got
        need = (pos + 1 - base[p]) * den[p]
        t = base_t[p] + ((need + nu - 1) // nu if need > 0 else 0)
        if t < best:
            best = t
    return best


def uncommitted(owned: list[Any], sent: dict[Any, Any], positions: dict[Any, Any]) -> bool:
    """Has any of `owned` a position not yet sent in a commit?"""
    for key in owned:
        if sent.get(key) != positions.get(key):
            return True
    return False


def changed_positions(
    owned: list[Any], positions: dict[Any, Any], sent: dict[Any, Any]
) -> dict[Any, Any]:
    """The positions of `owned` that differ from the last ones sent, in `owned` order."""
    out: dict[Any, Any] = {}
    for key in owned:
        pos = positions.get(key)
        if pos is not None and sent.get(key) != pos:
            out[key] = pos
    return out


def finish(batch: list[tuple[Any, Any, Any]], processed: list[Any]) -> int:
    """Record every (partition, from, to) of `batch` as processed (`processed[p]` is the partition's
    `ProcessedOffsets`); returns how many of those offsets had been processed before."""
    dup = 0
    for key, a, b in batch:
        p: int = key
        po = processed[p]
        ends: list[Any] = po.ends
        if ends and ends[-1] == a:  # the common case: continuing where processing stopped
            ends[-1] = b
        else:
            dup += po.add(a, b)
    return dup


def store_commits(
    offsets: dict[Any, Any],
    now: Any,
    stored: dict[Any, Any],
    committed: list[Any],
) -> None:
    """The offsets store's records of one OffsetCommit, and the partition table's committed column."""
    for key, off in offsets.items():
        stored[key] = (off, now)
        p: int = key
        committed[p] = off


def assignment_indices(
    result: Any, by_topic: dict[Any, list[Any]], owned_by: dict[Any, Any], coop: bool
) -> dict[Any, list[Any]]:
    """The leader's assignment (member id -> TopicPartitions, in the assignor's order) as partition
    indices, unknown partitions dropped (`world_core.WorldCore.leader_assign`). The topic's partition
    list is looked up once per run of equal topics (hashing a TopicPartition is slow). `coop`: a
    partition another member still claims in `owned_by` (index -> member id) is withheld, as
    ConsumerCoordinator's cooperative adjustment does (KIP-429)."""
    out: dict[Any, list[Any]] = {}
    for mid, tps in result.items():
        idx: list[Any] = []
        topic: Any = None
        ps: list[Any] = []
        n = 0
        for tp in tps:
            t = tp.topic
            if t != topic:
                topic = t
                ps = by_topic.get(t, [])
                n = len(ps)
            q: int = tp.partition
            if q < n:
                p = ps[q]
                if not coop or owned_by.get(p, mid) == mid:
                    idx.append(p)
        out[mid] = idx
    return out
