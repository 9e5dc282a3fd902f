"""How the parallel consumer runs records: workers (a thread pool, or tasks on a private asyncio
loop) take runnable records from the scheduler, run the user's function, and report each outcome
(done, retry later, dead letter, give up). Every method here is called with `_cond` held unless
it says otherwise; `ParallelConsumer` (kafka/parallel.py) owns the Kafka side.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from typing import Any

from ..parallel.ordering import TP, Scheduler, WorkItem
from ..parallel.state import PartitionState
from .parallel_options import ParallelConsumerOptions, ParallelStats

log = logging.getLogger("kafka_rebalance.kafka.parallel")


class _Run:
    """One record being processed; `token` tells a current outcome from an abandoned one."""

    __slots__ = ("item", "token", "future")

    def __init__(self, item: WorkItem) -> None:
        self.item = item
        self.token = object()
        self.future: Future | None = None


class RecordRunner:
    """The worker half of ParallelConsumer: its state is set up by ParallelConsumer.__init__."""

    options: ParallelConsumerOptions
    fn: Callable[[Any], Any]
    is_async: bool
    stats: ParallelStats
    _cond: threading.Condition
    _scheduler: Scheduler
    _states: dict[TP, PartitionState | None]
    _running: dict[tuple[TP, int], _Run]
    _attempts: dict[tuple[TP, int], int]
    _finishing: set[TP]
    _watchers: int
    _closing: bool
    _executor: ThreadPoolExecutor | None
    _loop: asyncio.AbstractEventLoop | None
    _loop_thread: threading.Thread | None

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
        dead_letter = self.options.dead_letter
        if to_dead_letter and exc is not None and dead_letter is not None:
            # outside the lock: a dead-letter callback may be slow (a produce, a database write)
            dlq_error: Exception | None = None
            try:
                dead_letter(run.item.payload, exc)
            except Exception as e:  # the record must not be lost: it is retried
                dlq_error = e
            with self._cond:
                self._dead_lettered(run, exc, dlq_error)
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
            exc: BaseException | None
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
