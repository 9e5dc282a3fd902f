"""The parallel consumer's options and counters (kafka/parallel.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..parallel.budget import OFFSET_METADATA_MAX_BYTES
from ..parallel.ordering import TP, Ordering

RetryDelay = float | Callable[[int, BaseException], float]


class OffsetMapDroppedWarning(RuntimeWarning):
    """A partition's completed-offsets map outgrew offset.metadata.max.bytes and was not committed."""


class InFlightOnRevoke(str, Enum):
    WAIT = "wait"  # let running records of revoked partitions finish, then commit
    CANCEL = "cancel"  # cancel them (asyncio tasks) or stop waiting for them (threads), then commit


@dataclass
class ParallelConsumerOptions:
    ordering: Ordering | str = Ordering.KEY
    max_concurrency: int = 16
    max_buffered_records: int = 10_000
    commit_interval_s: float = 1.0
    retry_delay: RetryDelay = 1.0  # seconds, or f(attempt, error) -> seconds
    max_attempts: int | None = None  # None: retry forever
    dead_letter: Callable[[Any, BaseException], None] | None = None
    in_flight_on_revoke: InFlightOnRevoke | str = InFlightOnRevoke.WAIT
    revoke_timeout_s: float = 30.0
    max_metadata_bytes: int = OFFSET_METADATA_MAX_BYTES
    poll_timeout_s: float = 0.05
    fetch_batch: int = 500
    committed_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        self.ordering = Ordering(self.ordering)
        self.in_flight_on_revoke = InFlightOnRevoke(self.in_flight_on_revoke)
        if self.max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        if self.max_buffered_records < 1:
            raise ValueError("max_buffered_records must be >= 1")
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1 or None")


@dataclass
class ParallelStats:
    processed: int = 0  # records whose user function succeeded
    skipped_completed: int = 0  # records skipped because the commit metadata said they were done
    failures: int = 0  # user function raised
    retries: int = 0
    dead_lettered: int = 0
    given_up: int = 0  # out of attempts without a dead-letter callback
    commits: int = 0
    maps_dropped: int = 0
    abandoned: int = 0  # running records of revoked/lost partitions not waited for
    paused_for_backpressure: int = 0
    rewinds: int = 0  # a partition's records came again from an earlier offset (seek, offset reset)
    max_buffered_seen: int = 0
    revocations: list[list[TP]] = field(default_factory=list)
    assignments: list[list[TP]] = field(default_factory=list)
