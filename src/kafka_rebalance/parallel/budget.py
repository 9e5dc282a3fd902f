"""The size budget of the completed-offsets map (`offset.metadata.max.bytes`, 4096 by default).

A broker rejects a commit whose metadata is longer than its
`offset.metadata.max.bytes` (OFFSET_METADATA_TOO_LARGE), so the map must fit.
Past 3/4 of the budget a partition stops taking new records, which lets the
map shrink as its lowest incomplete record completes; past the whole budget
the map is dropped (the offset is still committed, and completed records above
it will be processed again after a restart), with a warning.
"""

from __future__ import annotations

from enum import Enum

OFFSET_METADATA_MAX_BYTES = 4096


class BudgetVerdict(Enum):
    OK = "ok"  # commit the map, keep taking records
    PAUSE = "pause"  # over 3/4: commit the map, take no new records of this partition
    DROP = "drop"  # over the budget: commit without the map


def pause_threshold(max_bytes: int = OFFSET_METADATA_MAX_BYTES) -> int:
    """Longest map length that still takes new records (3/4 of the budget, rounded down)."""
    return (3 * max_bytes) // 4


def judge(metadata_len: int, max_bytes: int = OFFSET_METADATA_MAX_BYTES) -> BudgetVerdict:
    """Verdict for a map of `metadata_len` bytes (ASCII base64, so characters == bytes)."""
    if metadata_len > max_bytes:
        return BudgetVerdict.DROP
    if metadata_len > pause_threshold(max_bytes):
        return BudgetVerdict.PAUSE
    return BudgetVerdict.OK
