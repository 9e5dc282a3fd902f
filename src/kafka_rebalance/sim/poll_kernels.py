"""The per-partition loops of a simulated consumer's poll(), as typed functions mypyc compiles.

Every poll of every member walks its owned partitions three or four times: what arrived since the
last fetch (`fetch`), when the next record lands (`next_arrival`), what is not committed yet
(`uncommitted`, `changed_positions`), and every finished batch updates the processed intervals
(`finish`). At 1,000 members these loops are a large share of a rolling restart, and they are plain
integer arithmetic on lists, which mypyc turns into C. `setup.py` compiles this module; without a
compiler it runs as it is, with the same results (the arithmetic is Python's arbitrary-precision
integer arithmetic either way).

The log-end offset of partition p at time t is base[p] + (num[p] * (t - base_t[p])) // den[p]
(`partitions.PartitionTable`).
"""

from __future__ import annotations

from typing import Any

NEVER = 1 << 62


def fetch(
    order: list[int],
    positions: dict[int, int],
    base: list[int],
    base_t: list[int],
    num: list[int],
    den: list[int],
    now: int,
    room: int,
    batch: list[tuple[int, int, int]],
) -> tuple[int, int]:
    """Take what arrived by `now` on each partition in `order` (up to `room` records in all) into
    `batch` as (partition, from, to) and advance `positions`. Returns the room left and when the
    newest record taken reached the broker."""
    last = 0
    for p in order:
        pos = positions.get(p)
        if pos is None:
            continue
        b = base[p]
        bt = base_t[p]
        nu = num[p]
        d = den[p]
        n = b + (nu * (now - bt)) // d - pos
        if n <= 0:
            continue
        if n >= room:  # the budget runs out on this partition
            end = pos + room
            batch.append((p, pos, end))
            positions[p] = end
            room = 0
            t = bt + (-(-(end - b) * d // nu) if nu > 0 else 0)
            if t > last:
                last = t
            break
        end = pos + n
        batch.append((p, pos, end))
        positions[p] = end
        room -= n
        t = bt + (-(-(end - b) * d // nu) if nu > 0 else 0)
        if t > last:
            last = t
    return room, last


def next_arrival(
    owned: list[int],
    positions: dict[int, int],
    base: list[int],
    base_t: list[int],
    num: list[int],
    den: list[int],
) -> int:
    """When the next record lands on one of `owned` (NEVER when nothing is produced to them)."""
    best = NEVER
    for p in owned:
        nu = num[p]
        pos = positions.get(p)
        if nu <= 0 or pos is None:
            continue
        need = (pos + 1 - base[p]) * den[p]
        t = base_t[p] + (-(-need // nu) if need > 0 else 0)
        if t < best:
            best = t
    return best


def uncommitted(owned: list[int], sent: dict[int, int], positions: dict[int, int]) -> bool:
    """Has any of `owned` a position not yet sent in a commit?"""
    for p in owned:
        if sent.get(p) != positions.get(p):
            return True
    return False


def changed_positions(
    owned: list[int], positions: dict[int, int], sent: dict[int, int]
) -> dict[int, int]:
    """The positions of `owned` that differ from the last ones sent, in `owned` order."""
    out: dict[int, int] = {}
    for p in owned:
        pos = positions.get(p)
        if pos is not None and sent.get(p) != pos:
            out[p] = pos
    return out


def finish(batch: list[tuple[int, int, int]], processed: list[Any]) -> int:
    """Record every (partition, from, to) of `batch` as processed (`processed[p]` is the partition's
    `ProcessedOffsets`); returns how many of those offsets had been processed before."""
    dup = 0
    for p, a, b in batch:
        po = processed[p]
        ends: list[int] = po.ends
        if ends and ends[-1] == a:  # the common case: continuing where processing stopped
            ends[-1] = b
        else:
            dup += po.add(a, b)
    return dup


def store_commits(
    offsets: dict[int, int],
    now: int,
    stored: dict[int, tuple[int, int]],
    committed: list[int],
) -> None:
    """The offsets store's records of one OffsetCommit, and the partition table's committed column."""
    for p, off in offsets.items():
        stored[p] = (off, now)
        committed[p] = off
