"""A parallel consumer on confluent-kafka's `Consumer`: concurrency beyond partitions.

One control thread owns the Kafka consumer (fetches, rebalance callbacks,
commits); up to `max_concurrency` records run at once on a thread pool (sync
user function) or as asyncio tasks on a private event loop (async function).
The pure core in `kafka_rebalance.parallel` decides what may run (ordering by
key, partition or none), tracks each partition's lowest incomplete offset and
encodes the completed offsets above it into the commit metadata, so that a
restart neither loses nor repeats completed work.

Give it a consumer created with `enable.auto.commit=false`. Backpressure
bounds the records this class buffers (`max_buffered_records`); librdkafka's
own prefetch queue is bounded separately by `queued.max.messages.kbytes`.

    consumer = confluent_kafka.Consumer({"bootstrap.servers": ..., "group.id": "g",
                                         "enable.auto.commit": False})
    pc = ParallelConsumer(consumer, ["orders"], handle, ordering="key", max_concurrency=16,
                          retry_delay=lambda attempt, exc: min(30, 2 ** attempt), max_attempts=5,
                          dead_letter=send_to_dlq)
    try:
        pc.run()              # until pc.stop() from another thread (or run(until=..., timeout_s=...))
    finally:
        pc.close()            # waits for running records, commits
        consumer.close()

Ordering `key` shards by (topic, partition, key): Kafka orders nothing across
partitions, and a shard that never spans partitions can be revoked alone.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..parallel.budget import BudgetVerdict
from ..parallel.offset_map import OffsetMapError, decode_offset_map
from ..parallel.ordering import TP, Scheduler, WorkItem
from ..parallel.state import CommitPoint, PartitionState
from .parallel_options import (
    InFlightOnRevoke,
    OffsetMapDroppedWarning,
    ParallelConsumerOptions,
    ParallelStats,
    RetryDelay,
)
from .parallel_runner import RecordRunner, _is_async_callable, _not_awaited, _Run

__all__ = [
    "InFlightOnRevoke",
    "OffsetMapDroppedWarning",
    "ParallelConsumer",
    "ParallelConsumerOptions",
    "ParallelStats",
    "RetryDelay",
    "_is_async_callable",
    "_not_awaited",
]

log = logging.getLogger(__name__)


class _TP:
    """confluent_kafka.TopicPartition, imported lazily (tests may pass a fake consumer)."""

    cls: Any = None

    @classmethod
    def make(
        cls, topic: str, partition: int, offset: int = -1001, metadata: str | None = None
    ) -> Any:
        if cls.cls is None:
            from confluent_kafka import TopicPartition

            cls.cls = TopicPartition
        if metadata is None:
            return cls.cls(topic, partition, offset)
        return cls.cls(topic, partition, offset, metadata)


class ParallelConsumer(RecordRunner):
    """Runs `fn(message)` for every record, concurrently, in the order the options ask for.

    Threads: the caller's thread runs `run()` and owns the Kafka consumer;
    workers (pool threads, or tasks on a private asyncio loop) run records and,
    when one finishes, report it and continue with the next runnable record
    themselves, so a serial key or partition costs no thread hand-off per
    record. Shared state is guarded by one lock (`_cond`).
    """

    def __init__(
        self,
        consumer: Any,
        topics: Sequence[str],
        fn: Callable[[Any], Any],
        options: ParallelConsumerOptions | None = None,
        **overrides: Any,
    ) -> None:
        if options is None:
            options = ParallelConsumerOptions(**overrides)
        elif overrides:
            raise TypeError("pass either options or keyword overrides, not both")
        self.options = options
        self.consumer = consumer
        self.topics = list(topics)
        self.fn = fn
        self.is_async = _is_async_callable(fn)
        self.stats = ParallelStats()
        self._cond = threading.Condition(threading.RLock())
        self._scheduler = Scheduler(options.ordering)
        self._states: dict[
            TP, PartitionState | None
        ] = {}  # None: assigned, no commit yet (starts at first record)
        self._running: dict[tuple[TP, int], _Run] = {}
        self._attempts: dict[tuple[TP, int], int] = {}
        self._finishing: set[TP] = set()  # revoked, waiting for their running records
        self._paused: set[TP] = set()
        self._dropped_warned: set[TP] = set()
        self._watchers = 0  # threads waiting on outcomes (revocation, close)
        self._stop = threading.Event()
        self._closing = False
        self._last_commit = time.monotonic()
        self._executor = None
        self._loop = None
        self._loop_thread = None
        self._subscribed = False
        self._closed = False

    # ------------------------------------------------------------------ lifecycle
    def subscribe(self) -> None:
        if not self._subscribed:
            self.consumer.subscribe(
                self.topics,
                on_assign=self._on_assign,
                on_revoke=self._on_revoke,
                on_lost=self._on_lost,
            )
            self._subscribed = True

    def stop(self) -> None:
        """Ask `run` to return (thread-safe)."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()

    def run(self, until: Callable[[], bool] | None = None, timeout_s: float | None = None) -> None:
        """The control loop; returns after `stop()`, when `until()` is true, or after `timeout_s`."""
        self.subscribe()
        self._ensure_workers()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not self._stop.is_set():
            if until is not None and until():
                return
            if deadline is not None and time.monotonic() >= deadline:
                return
            self.run_once()

    def close(
        self,
        commit: bool = True,
        drain: bool = False,
        timeout_s: float = 30.0,
        close_consumer: bool = False,
    ) -> None:
        """Stop processing: wait for running records (and with `drain`, every buffered one), commit, shut down.

        `commit=False` leaves the last periodic commit in place (what a crash leaves).
        """
        if self._closed:
            return
        deadline = time.monotonic() + timeout_s
        if drain:
            while self._scheduler.buffered and time.monotonic() < deadline:
                self.run_once(fetch=False)
        with self._cond:
            self._closing = True
            self._watchers += 1
            try:
                while self._running and time.monotonic() < deadline:
                    self._cond.wait(min(0.05, max(0.0, deadline - time.monotonic())))
            finally:
                self._watchers -= 1
        if commit:
            self.commit()
        self._shutdown_workers(wait=not self._running)
        self._closed = True
        if close_consumer:
            self.consumer.close()

    def __enter__(self) -> ParallelConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ one turn
    def run_once(self, fetch: bool = True) -> None:
        """One turn of the control loop: dispatch, periodic commit, fetch, or wait."""
        opts = self.options
        with self._cond:
            dispatched = self._dispatch()
        if time.monotonic() - self._last_commit >= opts.commit_interval_s:
            self.commit()
        got = 0
        if fetch:
            with self._cond:
                room = opts.max_buffered_records - self._scheduler.buffered
                idle = not self._running and not dispatched
            self._backpressure()
            msgs = self.consumer.consume(
                num_messages=max(1, min(opts.fetch_batch, room)),
                timeout=opts.poll_timeout_s if idle else 0,
            )
            if msgs:
                with self._cond:
                    for msg in msgs:
                        got += self._receive(msg)
                    self.stats.max_buffered_seen = max(
                        self.stats.max_buffered_seen, self._scheduler.buffered
                    )
                    if got:
                        dispatched += self._dispatch()
        if not got and not dispatched:
            with self._cond:
                if not self._running and not self._scheduler.buffered and fetch:
                    return  # idle: consume() already waited
                wait = opts.poll_timeout_s
                nxt = self._scheduler.next_retry_at()
                if nxt is not None:
                    wait = max(0.0, min(wait, nxt - time.monotonic()))
                if wait > 0 and not self._stop.is_set():
                    self._cond.wait(wait)

    def _backpressure(self) -> None:
        """Pause the partitions that must not fetch now, resume the others.

        All of them when the buffer is full. Otherwise only a partition holding
        its fair share of the buffer (max_buffered_records / assigned
        partitions) or one whose records may not start (its map is past 3/4 of
        the budget): a partition blocked by a stuck record keeps fetching
        otherwise, fills the shared buffer and stalls every other partition.
        Only the control thread changes `_paused`; the consumer is called
        outside the lock.
        """
        with self._cond:
            assigned = [tp for tp in self._states if tp not in self._finishing]
            if self._scheduler.buffered >= self.options.max_buffered_records:
                want = set(assigned)
            else:
                share = max(1, self.options.max_buffered_records // max(1, len(assigned)))
                want = {
                    tp
                    for tp in assigned
                    if self._scheduler.buffered_in(tp) >= share or self._bound(tp) is not None
                }
            pause = [tp for tp in assigned if tp in want and tp not in self._paused]
            resume = [tp for tp in self._paused if tp not in want and tp in self._states]
        if pause:
            self.consumer.pause([_TP.make(t, p) for t, p in pause])
            self.stats.paused_for_backpressure += 1
        if resume:
            self.consumer.resume([_TP.make(t, p) for t, p in resume])
        with self._cond:
            self._paused = (self._paused - set(resume)) | set(pause)

    def _receive(self, msg: Any) -> int:
        err = msg.error()
        if err is not None:
            if getattr(err, "code", lambda: None)() == getattr(
                _kafka_error(), "_PARTITION_EOF", object()
            ):
                return 0
            if getattr(err, "fatal", lambda: False)():
                raise RuntimeError(f"fatal consumer error: {err}")
            log.warning("consumer error: %s", err)
            return 0
        tp = (msg.topic(), msg.partition())
        if tp not in self._states or tp in self._finishing:
            return 0  # fetched before a revocation
        offset = msg.offset()
        state = self._states[tp]
        if state is None:
            state = self._states[tp] = PartitionState(
                offset, max_metadata_bytes=self.options.max_metadata_bytes
            )
        elif state.rewinds(offset):
            state = self._rewind(tp, state, offset)
        if not state.receive(offset):
            self.stats.skipped_completed += 1
            return 0
        self._scheduler.add(WorkItem(tp[0], tp[1], offset, msg.key(), msg))
        return 1

    def _settle_running(self, tps: set, wait: bool) -> None:
        """Wait (up to revoke_timeout_s, when asked) for the records running on `tps`, then abandon the rest.

        Called with the condition held. An abandoned asyncio task is cancelled; a
        running thread cannot be interrupted, so its outcome is ignored.
        """
        mine = lambda: [k for k in self._running if k[0] in tps]  # noqa: E731
        if wait:
            deadline = time.monotonic() + self.options.revoke_timeout_s
            self._watchers += 1
            try:
                while mine() and time.monotonic() < deadline:
                    self._cond.wait(min(0.05, max(0.0, deadline - time.monotonic())))
            finally:
                self._watchers -= 1
        for key in mine():
            run = self._running.pop(key)
            if self.is_async and run.future is not None:
                run.future.cancel()
            self.stats.abandoned += 1

    def _rewind(self, tp: TP, old: PartitionState, offset: int) -> PartitionState:
        """The consumer went back to `offset` (a seek, an offset reset): start `tp` again from there.

        The old state cannot tell those records from ones it completed, and
        would skip them all. Its buffered records are dropped (they come
        again), its running ones are waited for (up to revoke_timeout_s, so a
        key never runs twice at once), and a fresh state starts at `offset`:
        records from there on run again (at least once, nothing lost).
        """
        log.warning(
            "%s-%d: records restart at offset %d, which is not known done (commit point was %d): "
            "a seek or an offset reset; processing again from there",
            tp[0],
            tp[1],
            offset,
            old.lowest_incomplete(),
        )
        self.stats.rewinds += 1
        self._finishing.add(tp)
        try:
            self._scheduler.remove_partition(tp)
            self._settle_running({tp}, wait=True)
        finally:
            self._finishing.discard(tp)
        self._attempts = {k: v for k, v in self._attempts.items() if k[0] != tp}
        self._dropped_warned.discard(tp)
        state = self._states[tp] = PartitionState(
            offset, max_metadata_bytes=self.options.max_metadata_bytes
        )
        return state

    # ------------------------------------------------------------------ commits
    def _commit_points(self, tps: Iterable[TP]) -> list[tuple[TP, PartitionState, CommitPoint]]:
        out = []
        for tp in tps:
            state = self._states.get(tp)
            if state is None:
                continue
            point = state.commit_point()
            if point.verdict is BudgetVerdict.DROP:
                if (
                    tp not in self._dropped_warned
                ):  # once per episode, even when the offset has not moved
                    self._dropped_warned.add(tp)
                    self.stats.maps_dropped += 1
                    warnings.warn(
                        OffsetMapDroppedWarning(
                            f"{tp[0]}-{tp[1]}: the map of {point.completed_above} completed offsets above "
                            f"{point.offset} exceeds offset.metadata.max.bytes={state.max_metadata_bytes}; "
                            f"committing the offset alone, so those records run again after a restart"
                        ),
                        stacklevel=2,
                    )
            else:
                self._dropped_warned.discard(tp)
            if state.needs_commit():
                out.append((tp, state, point))
        return out

    def commit(self, tps: Iterable[TP] | None = None) -> int:
        """Commit each partition's lowest incomplete offset with its completed-offsets map (sync)."""
        self._last_commit = time.monotonic()
        with self._cond:
            points = self._commit_points(list(self._states) if tps is None else list(tps))
        if not points:
            return 0
        offsets = [_TP.make(tp[0], tp[1], p.offset, p.metadata) for tp, _, p in points]
        try:
            self.consumer.commit(offsets=offsets, asynchronous=False)
        except Exception as exc:  # KafkaException: try again at the next interval
            log.warning("commit failed: %s", exc)
            return 0
        with self._cond:
            for _, state, point in points:
                state.committed_now(point)
            self.stats.commits += 1
        return len(points)

    # ------------------------------------------------------------------ rebalances
    def _on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        tps = [(p.topic, p.partition) for p in partitions]
        committed = (
            consumer.committed(
                [_TP.make(t, p) for t, p in tps], timeout=self.options.committed_timeout_s
            )
            if tps
            else []
        )
        with self._cond:
            self.stats.assignments.append(tps)
            for c in committed:
                tp = (c.topic, c.partition)
                self._finishing.discard(tp)
                self._paused.discard(tp)
                if c.offset is None or c.offset < 0:
                    self._states[tp] = None
                    continue
                try:
                    restored = decode_offset_map(c.offset, getattr(c, "metadata", None))
                except OffsetMapError as exc:
                    log.warning(
                        "%s-%d: ignoring commit metadata that is not an offset map (%s)",
                        tp[0],
                        tp[1],
                        exc,
                    )
                    restored = frozenset()
                state = PartitionState(c.offset, restored, self.options.max_metadata_bytes)
                state.committed_now(state.commit_point())
                self._states[tp] = state

    def _on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        self._finish([(p.topic, p.partition) for p in partitions], commit=True)

    def _on_lost(self, consumer: Any, partitions: list[Any]) -> None:
        self._finish([(p.topic, p.partition) for p in partitions], commit=False)

    def _finish(self, tps: list[TP], commit: bool) -> None:
        """Stop taking records of `tps`, wait for or cancel their running work, commit (unless lost), forget them."""
        with self._cond:
            tps = [tp for tp in tps if tp in self._states]
            self.stats.revocations.append(tps)
            if not tps:
                return
            gone = set(tps)
            self._finishing.update(gone)
            for tp in tps:
                self._scheduler.remove_partition(tp)
            self._settle_running(
                gone, wait=commit and self.options.in_flight_on_revoke is InFlightOnRevoke.WAIT
            )
        if commit:
            self.commit(tps)
        with self._cond:
            for tp in tps:
                self._states.pop(tp, None)
                self._paused.discard(tp)
                self._finishing.discard(tp)
            self._attempts = {k: v for k, v in self._attempts.items() if k[0] not in gone}

    # ------------------------------------------------------------------ introspection
    @property
    def assigned(self) -> list[TP]:
        with self._cond:
            return list(self._states)

    def state_of(self, topic: str, partition: int) -> PartitionState | None:
        return self._states.get((topic, partition))

    @property
    def buffered(self) -> int:
        return self._scheduler.buffered

    @property
    def in_flight(self) -> int:
        return len(self._running)


def _kafka_error() -> Any:
    try:
        from confluent_kafka import KafkaError

        return KafkaError
    except ImportError:  # pragma: no cover
        return None
