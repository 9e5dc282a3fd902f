"""Pure core of the parallel consumer: scheduling by ordering mode, per-partition offset
tracking, the completed-offsets map carried in commit metadata, and its size budget.

No I/O, no clock (time is a parameter), no threads; `kafka/parallel.py` drives it.
"""

from .budget import OFFSET_METADATA_MAX_BYTES, BudgetVerdict, judge
from .offset_map import decode_offset_map, encode_offset_map
from .ordering import Ordering, Scheduler, WorkItem, shard_key
from .state import CommitPoint, PartitionState

__all__ = [
    "OFFSET_METADATA_MAX_BYTES",
    "BudgetVerdict",
    "judge",
    "encode_offset_map",
    "decode_offset_map",
    "Ordering",
    "Scheduler",
    "WorkItem",
    "shard_key",
    "CommitPoint",
    "PartitionState",
]
