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

import asyncio
import inspect
import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..parallel.budget import OFFSET_METADATA_MAX_BYTES, BudgetVerdict
from ..parallel.offset_map import OffsetMapError, decode_offset_map
from ..parallel.ordering import TP, Ordering, Scheduler, WorkItem
from ..parallel.state import CommitPoint, PartitionState

log = logging.getLogger(__name__)

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


class _Run:
    """One record being processed; `token` tells a current outcome from an abandoned one."""

    __slots__ = ("item", "token", "future")

    def __init__(self, item: WorkItem) -> None:
        self.item = item
        self.token = object()
        self.future: Future | None = None


class ParallelConsumer:
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
        self._executor: ThreadPoolExecutor | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._subscribed = False
        self._closed = False

    # ------------------------------------------------------------------ lifecycle
    def _ensure_workers(self) -> None:
        if self.is_async:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._loop_thread = threading.Thread(
                    target=self._loop.run_forever, name="parallel-consumer-asyncio", daemon=True
                )
                self._loop_thread.start()
        elif self._executor is None:
            self._executor = ThreadPoolExecutor(
                max_workers=self.options.max_concurrency, thread_name_prefix="parallel-consumer"
            )

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

    def _shutdown_workers(self, wait: bool) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=wait, cancel_futures=True)
            self._executor = None
        if self._loop is not None:
            loop = self._loop
            loop.call_soon_threadsafe(loop.stop)
            if self._loop_thread is not None:
                self._loop_thread.join(timeout=5)
            if not loop.is_running():
                loop.close()
            self._loop = None

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

    # ------------------------------------------------------------------ running records (lock held)
    def _bound(self, tp: TP) -> int | None:
        state = self._states.get(tp)
        return None if state is None else state.start_bound()

    def _take(self, limit: int) -> list[_Run]:
        if self._closing:
            return []
        free = min(limit, self.options.max_concurrency - len(self._running))
        if free <= 0 or not self._scheduler.buffered:
            return []
        runs = []
        for item in self._scheduler.take(free, time.monotonic(), self._bound):
            run = _Run(item)
            self._running[(item.tp, item.offset)] = run
            runs.append(run)
        return runs

    def _dispatch(self) -> int:
        runs = self._take(self.options.max_concurrency)
        for run in runs:
            if self.is_async:
                assert self._loop is not None
                run.future = asyncio.run_coroutine_threadsafe(self._task(run), self._loop)
            else:
                assert self._executor is not None
                run.future = self._executor.submit(self._work, run)
        return len(runs)

    def _finished(
        self, run: _Run, exc: BaseException | None, take_next: bool = True
    ) -> _Run | None:
        """Report one outcome; return the next record for this worker to run, if any."""
        with self._cond:
            to_dead_letter = self._outcome(run, exc)
        if to_dead_letter:
            # outside the lock: a dead-letter callback may be slow (a produce, a database write)
            try:
                self.options.dead_letter(run.item.payload, exc)  # type: ignore[misc]
                dlq_error = None
            except Exception as e:  # the record must not be lost: it is retried
                dlq_error = e
            with self._cond:
                self._dead_lettered(run, exc, dlq_error)  # type: ignore[arg-type]
        with self._cond:
            nxt = self._take(1) if take_next else []
            if self._watchers or not nxt:
                self._cond.notify_all()  # someone waits for outcomes, or this worker goes idle
            if nxt:
                nxt[0].future = run.future
                return nxt[0]
            return None

    def _work(self, run: _Run | None) -> None:
        fn = self.fn
        while run is not None:
            try:
                result = fn(run.item.payload)
                exc = (
                    None
                    if result is None or not inspect.isawaitable(result)
                    else _not_awaited(result)
                )
            except BaseException as e:  # the user's error is an outcome
                exc = e
            run = self._finished(run, exc)

    async def _task(self, run: _Run | None) -> None:
        fn = self.fn
        while run is not None:
            try:
                await fn(run.item.payload)
                exc = None
            except asyncio.CancelledError as e:
                self._finished(run, e, take_next=False)
                raise
            except BaseException as e:
                exc = e
            run = self._finished(run, exc)

    def _current(self, run: _Run) -> bool:
        current = self._running.get((run.item.tp, run.item.offset))
        return current is not None and current.token is run.token

    def _outcome(self, run: _Run, exc: BaseException | None) -> bool:
        """Apply one outcome; True when the record goes to the dead-letter callback (still counted running)."""
        item = run.item
        key = (item.tp, item.offset)
        if not self._current(run):
            return False  # abandoned on revoke/lost
        state = self._states.get(item.tp)
        finishing = item.tp in self._finishing
        if exc is None:
            del self._running[key]
            self.stats.processed += 1
            self._done(item, state, finishing)
            return False
        self.stats.failures += 1
        if (
            isinstance(exc, (CancelledError, asyncio.CancelledError))
            or finishing
            or item.tp not in self._states
        ):
            del self._running[key]
            return False  # partition going away: the record stays incomplete for its next owner
        attempts = self._attempts.get(key, 0) + 1
        self._attempts[key] = attempts
        if self.options.max_attempts is not None and attempts >= self.options.max_attempts:
            if self.options.dead_letter is not None:
                return True
            log.error(
                "giving up on %s-%d@%d after %d attempts: %r",
                item.topic,
                item.partition,
                item.offset,
                attempts,
                exc,
            )
            del self._running[key]
            self.stats.given_up += 1
            self._done(item, state, finishing)
            return False
        del self._running[key]
        self._retry(item, attempts, exc)
        return False

    def _retry(self, item: WorkItem, attempts: int, exc: BaseException) -> None:
        delay = self.options.retry_delay
        seconds = float(delay(attempts, exc) if callable(delay) else delay)
        self.stats.retries += 1
        self._scheduler.retry(item, time.monotonic() + max(0.0, seconds))

    def _dead_lettered(self, run: _Run, exc: BaseException, dlq_error: Exception | None) -> None:
        item = run.item
        if not self._current(run):
            return  # its partition was lost meanwhile
        del self._running[(item.tp, item.offset)]
        finishing = item.tp in self._finishing
        if dlq_error is None:
            self.stats.dead_lettered += 1
            self._done(item, self._states.get(item.tp), finishing)
            return
        log.error(
            "dead-letter callback failed for %s-%d@%d: %r",
            item.topic,
            item.partition,
            item.offset,
            dlq_error,
        )
        if not finishing and item.tp in self._states:
            self._retry(item, self._attempts.get((item.tp, item.offset), 0), exc)

    def _done(self, item: WorkItem, state: PartitionState | None, finishing: bool) -> None:
        self._attempts.pop((item.tp, item.offset), None)
        if not finishing:
            self._scheduler.complete(item)
        if state is not None:
            state.complete(item.offset)

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


def _is_async_callable(fn: Any) -> bool:
    """`async def` functions, and objects whose `__call__` is one (iscoroutinefunction misses those)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        fn.__call__ if callable(fn) else None
    )


def _not_awaited(result: Any) -> TypeError:
    """A sync-looking function returned an awaitable (a lambda around a coroutine): nothing ran.

    It is a failure, retried or dead-lettered, never counted done; the
    coroutine is closed (no "never awaited" warning), a future cancelled.
    """
    if inspect.iscoroutine(result):
        result.close()
    elif asyncio.isfuture(result):
        result.cancel()
    return TypeError(
        f"the user function returned an awaitable ({type(result).__name__}) but is not an "
        f"`async def` function, so it was not awaited; pass an `async def` function or an object "
        f"whose `__call__` is `async def`"
    )


def _kafka_error() -> Any:
    try:
        from confluent_kafka import KafkaError

        return KafkaError
    except ImportError:  # pragma: no cover
        return None
