"""The whole parallel consumer (`kafka/parallel.py`) under the simulated cluster
(`sim/kafka_client.py`, `sim/kafka_cluster.py`).

The simulated consumer runs the real classic group protocol (`group/classic_group.py`: join, sync,
heartbeats, session expiry on a virtual clock, the assignor from `assign.registry`) and stores every
commit through `group/offsets.py` as `__consumer_offsets` records in Kafka's byte format, reading
them back only from those bytes: commit metadata persists exactly as a Kafka broker keeps it (the
real broker in test_parallel_live.py does too).

"Processed" below means the user function returned; a record's function may run again after a
failure, a crash or a dropped map, and the tests say exactly when that is allowed.
"""

from __future__ import annotations

import asyncio
import threading
import time
import warnings
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.group.classic_group import ClassicGroupConfig
from kafka_rebalance.group.errors import Errors
from kafka_rebalance.group.offset_messages import OffsetsConfig
from kafka_rebalance.kafka.parallel import OffsetMapDroppedWarning, ParallelConsumer
from kafka_rebalance.parallel import decode_offset_map
from kafka_rebalance.sim.kafka_client import SimConsumer
from kafka_rebalance.sim.kafka_cluster import SimCluster

pytestmark = pytest.mark.timeout(60)

GROUP = "g"
SESSION_MS = 6_000
TURNS = 20_000  # bound on control-loop turns per phase
WALL_S = 20.0  # and on wall-clock time (never reached in a passing run)


def cluster(topics: dict[str, int], **kw) -> SimCluster:
    return SimCluster(topics, group_config=ClassicGroupConfig(initial_rebalance_delay_ms=0), **kw)


def consumer(c: SimCluster, assignor: str = "range") -> SimConsumer:
    return SimConsumer(
        c,
        GROUP,
        assignor=assignor,
        session_timeout_ms=SESSION_MS,
        heartbeat_interval_ms=1_000,
        max_poll_interval_ms=30_000,
    )


def parallel(sim: SimConsumer, fn, **opts) -> ParallelConsumer:
    base = dict(
        ordering="key",
        max_concurrency=8,
        commit_interval_s=0.0,
        poll_timeout_s=0.001,
        retry_delay=0.0,
    )
    base.update(opts)
    return ParallelConsumer(sim, ["t"], fn, **base)


def drive(pcs: list[ParallelConsumer], until, what: str) -> None:
    """Run the consumers' control loops in turn, one turn each, until `until()`; bounded."""
    deadline = time.monotonic() + WALL_S
    for _ in range(TURNS):
        if until():
            return
        for pc in pcs:
            first = [True]
            pc.run(until=lambda: not first.pop() if first else True)  # exactly one run_once
        if time.monotonic() > deadline:
            break
    raise AssertionError(f"timed out waiting for: {what}")


def produce(c: SimCluster, partitions: int, n: int) -> None:
    for p in range(partitions):
        for i in range(n):
            c.produce("t", p, f"k{p}-{i}".encode(), f"v{i}".encode())


class Recorder:
    """Counts successful completions per (partition, offset), per consumer name, thread-safely."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.done: dict[str, Counter] = {}
        self.calls: dict[str, Counter] = {}

    def call(self, name: str, msg) -> None:
        with self.lock:
            self.calls.setdefault(name, Counter())[(msg.partition(), msg.offset())] += 1

    def ok(self, name: str, msg) -> None:
        with self.lock:
            self.done.setdefault(name, Counter())[(msg.partition(), msg.offset())] += 1

    def of(self, name: str) -> Counter:
        with self.lock:
            return Counter(self.done.get(name, Counter()))

    def total(self) -> Counter:
        with self.lock:
            out: Counter = Counter()
            for c in self.done.values():
                out.update(c)
            return out


# ---------------------------------------------------------------------------- the simulated client itself


def test_sim_commit_is_validated_and_metadata_survives_the_bytes():
    c = cluster({"t": 2})
    produce(c, 2, 3)
    a = consumer(c)
    a.subscribe(["t"])
    for _ in range(5):
        a.consume(10)
    assert sorted(tp.partition for tp in a.assignment()) == [0, 1]
    from confluent_kafka import KafkaException, TopicPartition

    a.commit(offsets=[TopicPartition("t", 0, 2, "KR-map")], asynchronous=False)
    assert c.committed_offsets(GROUP)[("t", 0)] == (2, "KR-map")
    got = a.committed([TopicPartition("t", 0), TopicPartition("t", 1)])
    assert (got[0].offset, got[0].metadata, got[1].offset) == (2, "KR-map", -1001)
    # offset.metadata.max.bytes is the broker's rule, not the client's
    with pytest.raises(KafkaException) as e:
        a.commit(offsets=[TopicPartition("t", 0, 3, "x" * 4097)], asynchronous=False)
    assert e.value.args[0].code() == Errors.OFFSET_METADATA_TOO_LARGE.value
    # a crashed member is fenced once its session expired: its generation no longer commits
    gen = a.generation
    a.crash()
    c.advance(SESSION_MS + 1)
    assert any("session timeout" in what for _, _, what in c.events)
    errs = c.commit(GROUP, a.member_id, gen, [("t", 0, 3, "")])
    assert errs and errs[0][2] in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION)
    assert c.committed_offsets(GROUP)[("t", 0)] == (2, "KR-map")


# ---------------------------------------------------------------------------- 1. crash with one stuck record


@pytest.mark.parametrize("flavour", ["threads", "asyncio"])
def test_crash_and_restart_with_one_stuck_record(flavour):
    n, stuck = 40, (0, 7)
    c = cluster({"t": 2})
    produce(c, 2, n)
    rec = Recorder()
    gate = threading.Event()

    def sync_a(msg):
        rec.call("a", msg)
        if (msg.partition(), msg.offset()) == stuck:
            gate.wait()  # never completes before the crash
            return  # (released only at teardown; A is dead by then)
        rec.ok("a", msg)

    def sync_b(msg):
        rec.call("b", msg)
        rec.ok("b", msg)

    async def async_a(msg):  # the same as coroutines: records run as tasks on the private loop
        rec.call("a", msg)
        if (msg.partition(), msg.offset()) == stuck:
            while not gate.is_set():
                await asyncio.sleep(0.002)
            return
        rec.ok("a", msg)

    async def async_b(msg):
        sync_b(msg)

    fn_a, fn_b = (sync_a, sync_b) if flavour == "threads" else (async_a, async_b)

    sim_a = consumer(c)
    pc_a = parallel(sim_a, fn_a)
    expected_map = frozenset(range(stuck[1] + 1, n))
    try:

        def a_settled() -> bool:
            got = c.committed_offsets(GROUP)
            return (
                len(rec.of("a")) == 2 * n - 1
                and got.get(("t", 1)) == (n, "")
                and ("t", 0) in got
                and got[("t", 0)][0] == stuck[1]
                and decode_offset_map(stuck[1], got[("t", 0)][1]) == expected_map
            )

        drive([pc_a], a_settled, "A processed everything but the stuck record and committed it")
        assert pc_a.in_flight == 1
        # what is stored is the parallel consumer's map, byte for byte through __consumer_offsets
        last = [e for e in c.commit_history(GROUP) if (e.topic, e.partition) == ("t", 0)][-1]
        assert (
            last.offset == stuck[1]
            and decode_offset_map(last.offset, last.metadata) == expected_map
        )
        done_by_a = rec.of("a")

        sim_a.crash()  # no close, no commit, no LeaveGroup
        commits_before = len(c.commit_history(GROUP))

        sim_b = consumer(c)
        pc_b = parallel(sim_b, fn_b)
        drive(
            [pc_b],
            lambda: c.committed_offsets(GROUP).get(("t", 0)) == (n, "") and len(pc_b.assigned) == 2,
            "B took over after A's session expired and finished the stuck record",
        )
        # the group only moved on once the crashed member's session expired
        assert any("session timeout" in what for _, _, what in c.events)
        assert len(c.commit_history(GROUP)) > commits_before
    finally:
        gate.set()
        pc_a.close(commit=False, timeout_s=5)  # reaps A's threads; touches no consumer

    done_b = rec.of("b")
    assert set(done_b) == {stuck}, "B ran exactly the record A never completed"
    assert pc_b.stats.skipped_completed == n - 1 - stuck[1]  # read from the commit metadata
    assert not set(done_by_a) & set(done_b), "nothing completed before the crash ran again"
    total = rec.of("a") + done_b
    everything = {(p, o) for p in range(2) for o in range(n)}
    assert set(total) == everything and all(v == 1 for v in total.values()), (
        "nothing lost, nothing twice"
    )
    assert c.committed_offsets(GROUP) == {("t", 0): (n, ""), ("t", 1): (n, "")}
    pc_b.close(close_consumer=True)


# ---------------------------------------------------------------------------- 2. a rebalance between two consumers


@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
def test_rebalance_commits_maps_and_the_new_owner_skips_completed(assignor):
    parts, n = 4, 20
    failing = {3, 11}  # per partition: fail until the rebalance is over
    c = cluster({"t": parts})
    produce(c, parts, n)
    rec = Recorder()
    healed = threading.Event()

    def make_fn(name):
        def fn(msg):
            rec.call(name, msg)
            if msg.offset() in failing and not healed.is_set():
                raise RuntimeError("not yet")
            rec.ok(name, msg)

        return fn

    sim_a, sim_b = consumer(c, assignor), consumer(c, assignor)
    # A commits only when it must (revocation, close): what B finds was written by the revocation
    pc_a = parallel(sim_a, make_fn("a"), retry_delay=0.001, commit_interval_s=3600.0)
    pc_b = parallel(sim_b, make_fn("b"), retry_delay=0.001)
    completed_above = frozenset(range(4, n)) - failing

    def a_settled() -> bool:
        if len(rec.of("a")) != parts * (n - len(failing)) or len(pc_a.assigned) != parts:
            return False
        points = [pc_a.state_of("t", p).commit_point() for p in range(parts)]
        return all(
            pt.offset == 3 and decode_offset_map(3, pt.metadata) == completed_above for pt in points
        )

    drive([pc_a], a_settled, "A alone: everything but the failing records done")
    assert c.committed_offsets(GROUP) == {}
    done_by_a_before = rec.of("a")

    def balanced() -> bool:
        return (
            len(pc_b.assigned) == parts // 2
            and len(pc_a.assigned) == parts // 2
            and sim_a.phase == sim_b.phase == "stable"
            and sim_a.generation == sim_b.generation
        )

    drive([pc_a, pc_b], balanced, "B joined and the group rebalanced")
    moved = {p for _, p in pc_b.assigned}
    revoked = {tp[1] for r in pc_a.stats.revocations for tp in r}
    assert moved <= revoked, "every partition B got was revoked from A first"
    assert revoked == (moved if assignor == "cooperative-sticky" else set(range(parts)))
    # on revocation A committed each revoked partition with its map; B read exactly that back
    for p in revoked:
        assert c.committed_offsets(GROUP)[("t", p)][0] == 3 or p not in moved
    commits = {e.partition: e for e in c.commit_history(GROUP)}
    for p in revoked:
        assert (
            commits[p].offset == 3 and decode_offset_map(3, commits[p].metadata) == completed_above
        )
    b_fetched = {tp_p: (o, m) for _, _, _, tp_p, o, m in c.fetch_log if tp_p in moved}
    assert {p: (o, decode_offset_map(o, m)) for p, (o, m) in b_fetched.items()} == {
        p: (3, completed_above) for p in moved
    }

    healed.set()
    everything = {(p, o) for p in range(parts) for o in range(n)}
    drive([pc_a, pc_b], lambda: set(rec.total()) == everything, "every record completed")
    pc_a.close(close_consumer=True)
    pc_b.close(close_consumer=True)
    assert c.committed_offsets(GROUP) == {("t", p): (n, "") for p in range(parts)}

    # B ran only what the maps could not prove complete: the failing records of its partitions
    done_b = rec.of("b")
    assert set(done_b) == {(p, o) for p in moved for o in failing}
    assert pc_b.stats.skipped_completed == len(moved) * len(completed_above)
    total = rec.total()
    assert all(v == 1 for v in total.values()), (
        f"processed twice: {[k for k, v in total.items() if v > 1]}"
    )
    assert not set(done_by_a_before) & set(done_b)


# ---------------------------------------------------------------------------- 3. a map over budget


def test_map_over_budget_is_dropped_and_restart_reruns_exactly_what_the_offset_cannot_prove():
    budget = 24  # offset.metadata.max.bytes, on the broker and in the consumer
    head, region = 100, 120  # offsets 0..99 complete; 100..219: even stuck, odd gated
    c = cluster({"t": 1}, offsets_config=OffsetsConfig(offset_metadata_max_bytes=budget))
    for i in range(head + region):
        c.produce("t", 0, f"k{i}".encode(), b"")
    rec = Recorder()
    stuck, first_odds, odd_gate = threading.Event(), threading.Event(), threading.Event()
    few = frozenset(range(head + 1, head + 10, 2))

    def fn_a(msg):
        o = msg.offset()
        rec.call("a", msg)
        if o >= head:
            if o % 2 == 0:
                stuck.wait()
                return
            (first_odds if o in few else odd_gate).wait()
        rec.ok("a", msg)

    def fn_b(msg):
        rec.call("b", msg)
        rec.ok("b", msg)

    sim_a = consumer(c)
    pc_a = parallel(sim_a, fn_a, max_concurrency=region + 8, max_metadata_bytes=budget)
    odds = frozenset(range(head + 1, head + region, 2))
    try:
        drive(
            [pc_a],
            lambda: (
                pc_a.in_flight == region and c.committed_offsets(GROUP).get(("t", 0)) == (head, "")
            ),
            "the head committed, the whole region running",
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            first_odds.set()  # a small map first: it fits, and is committed
            drive(
                [pc_a],
                lambda: (
                    lambda got: (
                        got is not None
                        and got[0] == head
                        and decode_offset_map(head, got[1]) == few
                    )
                )(c.committed_offsets(GROUP).get(("t", 0))),
                "a few odd records completed and their map committed",
            )
            assert not caught
            odd_gate.set()  # all the odd ones: the map outgrows the budget
            drive(
                [pc_a],
                lambda: (
                    len(rec.of("a")) == head + len(odds)
                    and pc_a.stats.maps_dropped >= 1
                    and c.committed_offsets(GROUP).get(("t", 0)) == (head, "")
                    and not pc_a.state_of("t", 0).needs_commit()
                ),
                "the odd records completed, the map outgrew the budget and was dropped",
            )
        dropped = [w for w in caught if issubclass(w.category, OffsetMapDroppedWarning)]
        assert len(dropped) == 1 and "offset.metadata.max.bytes=24" in str(dropped[0].message)
        # while it fit, the map was committed; the last commit carries the offset alone
        hist = [e for e in c.commit_history(GROUP) if e.offset == head]
        assert decode_offset_map(head, hist[-2].metadata) >= few and hist[-1].metadata == ""
        assert all(len(e.metadata) <= budget for e in c.commit_history(GROUP))
        sim_a.crash()

        sim_b = consumer(c)
        pc_b = parallel(sim_b, fn_b, max_metadata_bytes=budget)
        drive(
            [pc_b],
            lambda: c.committed_offsets(GROUP).get(("t", 0)) == (head + region, ""),
            "B re-ran the region and committed the end",
        )
    finally:
        stuck.set()
        pc_a.close(commit=False, timeout_s=5)

    done_a, done_b = rec.of("a"), rec.of("b")
    assert set(done_b) == {(0, o) for o in range(head, head + region)}, (
        "exactly the records above the committed offset ran again: nothing below it"
    )
    assert pc_b.stats.skipped_completed == 0
    assert {o for _, o in set(done_a) & set(done_b)} == odds, (
        "only completions the dropped map held ran twice"
    )
    assert all(v == 1 for v in done_b.values()) and all(v == 1 for v in done_a.values())
    pc_b.close(close_consumer=True)


# ---------------------------------------------------------------------------- 4. a fenced consumer loses, never commits


def test_stalled_consumer_is_fenced_and_its_lost_partitions_are_not_committed():
    parts, n = 4, 10
    c = cluster({"t": parts})
    produce(c, parts, n)
    rec = Recorder()

    def make_fn(name):
        def fn(msg):
            rec.call(name, msg)
            rec.ok(name, msg)

        return fn

    sim_a, sim_b = consumer(c), consumer(c)
    pc_a = parallel(
        sim_a, make_fn("a"), commit_interval_s=3600.0
    )  # A never got round to committing
    pc_b = parallel(sim_b, make_fn("b"))
    drive(
        [pc_a, pc_b],
        lambda: (
            len(pc_a.assigned) == len(pc_b.assigned) == 2
            and sim_a.generation == sim_b.generation
            and sim_a.phase == sim_b.phase == "stable"
        ),
        "A and B share the partitions",
    )
    a_parts = {p for _, p in pc_a.assigned}
    drive(
        [pc_a, pc_b],
        lambda: set(rec.total()) == {(p, o) for p in range(parts) for o in range(n)},
        "everything processed once",
    )
    assert not [r for r in c.commit_requests if r[2] == sim_a.member_id]
    fenced_member = sim_a.member_id

    # A's control loop stalls (a long GC, a stuck callback): B alone moves the clock on
    drive(
        [pc_b],
        lambda: len(pc_b.assigned) == parts and sim_b.phase == "stable",
        "A's session expired and B owns everything",
    )
    assert any(f"member {fenced_member} removed: session timeout" in w for _, _, w in c.events)
    # B restarted A's partitions from the last commit: none, so A's uncommitted work runs again
    drive(
        [pc_b],
        lambda: all(c.committed_offsets(GROUP).get(("t", p)) == (n, "") for p in range(parts)),
        "B processed and committed A's partitions",
    )
    seen = len(pc_a.stats.revocations)
    # A wakes up: its heartbeat is refused, its partitions are lost (not revoked), and it rejoins
    drive(
        [pc_a, pc_b],
        lambda: (
            len(pc_a.assigned) == len(pc_b.assigned) == 2
            and sim_a.member_id != fenced_member
            and sim_a.generation == sim_b.generation
            and sim_a.phase == sim_b.phase == "stable"
        ),
        "A rejoined under a new member id",
    )
    assert {tp[1] for tp in pc_a.stats.revocations[seen]} == a_parts, (
        "the lost callback named A's partitions"
    )
    assert not [r for r in c.commit_requests if r[2] == fenced_member], (
        "lost partitions are not committed"
    )
    assert all(r[7] is Errors.NONE for r in c.commit_requests)
    done_b = rec.of("b")
    assert {k for k, v in rec.total().items() if v > 1} == {
        (p, o) for p in a_parts for o in range(n)
    }
    assert all(v == 1 for v in done_b.values()) and all(v == 1 for v in rec.of("a").values())
    pc_a.close(close_consumer=True)
    pc_b.close(close_consumer=True)
    assert c.committed_offsets(GROUP) == {("t", p): (n, "") for p in range(parts)}


# ---------------------------------------------------------------------------- the simulated group, as a property


@settings(max_examples=25, deadline=None)
@given(
    assignor=st.sampled_from(["range", "roundrobin", "cooperative-sticky"]),
    ops=st.lists(
        st.tuples(st.sampled_from(["start", "crash", "close", "run"]), st.integers(1, 40)),
        min_size=1,
        max_size=12,
    ),
)
def test_sim_group_settles_to_a_partition_of_the_topic(assignor, ops):
    """After any mix of joins, crashes and clean closes, the live members settle on one generation
    whose assignments are disjoint and cover every partition; crashed members are gone."""
    parts = 5
    c = cluster({"t": parts})
    live: list[SimConsumer] = []

    def run(ticks: int) -> None:
        for _ in range(ticks):
            for s in list(live):
                s.consume(10)

    for op, k in ops:
        if op == "start" and len(live) < 4:
            s = consumer(c, assignor)
            s.subscribe(["t"])
            live.append(s)
        elif op in ("crash", "close") and live:
            s = live.pop(k % len(live))
            s.crash() if op == "crash" else s.close()
        else:
            run(k)
    if not live:
        return
    run(1)  # every live consumer has sent its first JoinGroup

    def settled() -> bool:
        group = c.coordinators[GROUP].group
        gens = {s.generation for s in live}
        return (
            all(s.phase == "stable" for s in live)
            and len(gens) == 1
            and group.state.value == "Stable"
            and group.generation_id in gens
            and set(group.members) == {s.member_id for s in live}
        )

    for _ in range((SESSION_MS // c.tick_ms) * 4):
        if settled():
            break
        run(1)
    assert settled(), c.events[-5:]
    owned = [tp for s in live for tp in s.assigned]
    assert sorted(owned) == [("t", p) for p in range(parts)]
