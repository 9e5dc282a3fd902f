"""A simulated Kafka consumer: confluent-kafka's `Consumer` interface over `sim.kafka_cluster.SimCluster`.

`SimCluster` (sim/kafka_cluster.py) holds the topic logs, the classic group coordinators and the
`__consumer_offsets` log.

`SimConsumer` is the subset of `confluent_kafka.Consumer` the parallel
consumer uses: subscribe with on_assign/on_revoke/on_lost, consume/poll,
commit(offsets=..., asynchronous=False), committed, pause/resume,
assignment, close. Like librdkafka it serves the group protocol and the
rebalance callbacks from inside `consume()`; eager assignors revoke everything
before rejoining, `cooperative-sticky` revokes only what moves (and rejoins).
The leader runs the assignor from `assign.registry` on the members'
ConsumerProtocol subscriptions, as the Java and librdkafka clients do.

Time is virtual: every `consume()` advances the cluster clock by `tick_ms`
(and `SimCluster.advance(ms)` moves it explicitly); coordinator timers
(session expiry, join/sync deadlines) fire on that clock, so a run does not
depend on wall-clock speed. `SimConsumer.crash()` drops a consumer without
commit, LeaveGroup or callbacks; its member stays in the group until its
session times out, as after a process crash.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from ..assign.protocol import Assignment as WireAssignment
from ..assign.protocol import Subscription as WireSubscription
from ..assign.protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from ..assign.registry import get_assignor
from ..assign.userdata import (
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)
from ..group.classic_messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    SyncGroupRequest,
    SyncGroupResponse,
)
from ..group.errors import Errors
from ..model import DEFAULT_GENERATION, GroupSpec, MemberSubscription, TopicMetadata
from ..model import TopicPartition as MTP
from .kafka_cluster import SimCluster, SimRecord

OFFSET_INVALID = -1001  # librdkafka's RD_KAFKA_OFFSET_INVALID
COOPERATIVE = frozenset({"cooperative-sticky"})


class SimMessage:
    """confluent_kafka.Message's accessors for one fetched record."""

    __slots__ = ("_t", "_p", "_r")

    def __init__(self, topic: str, partition: int, record: SimRecord) -> None:
        self._t, self._p, self._r = topic, partition, record

    def topic(self) -> str:
        return self._t

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._r.offset

    def key(self) -> bytes | None:
        return self._r.key

    def value(self) -> bytes | None:
        return self._r.value

    def error(self) -> None:
        return None

    def headers(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"SimMessage({self._t}-{self._p}@{self._r.offset})"


class _Phase:
    UNJOINED = "unjoined"
    JOINING = "joining"
    SYNCING = "syncing"
    STABLE = "stable"


_LOST = (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION, Errors.FENCED_INSTANCE_ID)


class SimConsumer:
    """confluent_kafka.Consumer's interface (the part the parallel consumer uses) on a SimCluster."""

    def __init__(
        self,
        cluster: SimCluster,
        group_id: str,
        *,
        assignor: str = "range",
        session_timeout_ms: int = 45_000,
        heartbeat_interval_ms: int = 3_000,
        max_poll_interval_ms: int = 300_000,
        client_id: str | None = None,
    ) -> None:
        self.cluster = cluster
        self.group_id = group_id
        self.assignor = assignor
        self.cooperative = assignor in COOPERATIVE
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.max_poll_interval_ms = max_poll_interval_ms
        self.client_id = client_id or cluster.new_client_id()
        cluster.live_clients.add(self.client_id)
        self.member_id = ""
        self.generation = -1
        self.phase = _Phase.UNJOINED
        self.topics: list[str] = []
        self.callbacks: dict[str, Callable | None] = {}
        self.assigned: list[tuple[str, int]] = []
        self.position: dict[tuple[str, int], int] = {}
        self.paused: set[tuple[str, int]] = set()
        self.last_heartbeat_ms = 0
        self.crashed = False
        self.closed = False
        self.rebalances = 0  # completed SyncGroups
        # StickyAssignor's state in this consumer (onAssignment): its last assignment and generation,
        # sent back as user data, because an eager member has revoked everything before it joins
        self.sticky_memory: tuple[list[tuple[str, int]], int] | None = None
        # CooperativeStickyAssignor's state: the generation of its last onAssignment, sent as its user data
        self.coop_generation = DEFAULT_GENERATION

    # ------------------------------------------------------------------ confluent_kafka.Consumer
    def subscribe(
        self,
        topics: Sequence[str],
        on_assign: Callable | None = None,
        on_revoke: Callable | None = None,
        on_lost: Callable | None = None,
    ) -> None:
        self._check()
        self.topics = list(topics)
        self.callbacks = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost}
        self.phase = _Phase.UNJOINED

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[SimMessage]:
        self._check()
        self.cluster.advance(self.cluster.tick_ms)
        self._step()
        return self._fetch(num_messages)

    def poll(self, timeout: float = -1) -> SimMessage | None:
        got = self.consume(1, timeout)
        return got[0] if got else None

    def commit(
        self,
        message: Any = None,
        offsets: Sequence[TopicPartition] | None = None,
        asynchronous: bool = True,
    ) -> list[TopicPartition]:
        """Always synchronous (the parallel consumer asks for that); raises KafkaException like librdkafka."""
        self._check()
        if offsets is None:
            raise NotImplementedError("SimConsumer.commit needs explicit offsets")
        errors = self.cluster.commit(
            self.group_id,
            self.member_id,
            self.generation,
            [(tp.topic, tp.partition, tp.offset, tp.metadata) for tp in offsets],
        )
        if errors:
            t, p, err = errors[0]
            raise KafkaException(KafkaError(err.value, f"OffsetCommit {t}-{p}: {err.name}"))
        return list(offsets)

    def committed(
        self, partitions: Sequence[TopicPartition], timeout: float = -1
    ) -> list[TopicPartition]:
        self._check()
        got = self.cluster.fetch_committed(
            self.group_id, [(tp.topic, tp.partition) for tp in partitions]
        )
        out = []
        for tp in partitions:
            offset, metadata = got.get((tp.topic, tp.partition), (-1, ""))
            if offset < 0:
                out.append(TopicPartition(tp.topic, tp.partition, OFFSET_INVALID))
            else:
                out.append(TopicPartition(tp.topic, tp.partition, offset, metadata))
        return out

    def pause(self, partitions: Sequence[TopicPartition]) -> None:
        self.paused.update((tp.topic, tp.partition) for tp in partitions)

    def resume(self, partitions: Sequence[TopicPartition]) -> None:
        self.paused.difference_update((tp.topic, tp.partition) for tp in partitions)

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t, p in self.assigned]

    def close(self) -> None:
        """Revoke (rebalance callback), then LeaveGroup, as librdkafka's close does."""
        if self.closed or self.crashed:
            return
        if self.assigned:
            self._revoke(list(self.assigned))
        if self.member_id:
            self.cluster.send(
                self.group_id,
                LeaveGroupRequest(
                    self.client_id, ((self.member_id, None),), "the consumer is being closed"
                ),
            )
            self.cluster.take_responses(self.client_id)
        self.closed = True
        self.cluster.live_clients.discard(self.client_id)

    # ------------------------------------------------------------------ test controls
    def crash(self) -> None:
        """The process dies: no commit, no callbacks, no LeaveGroup; the session expires later."""
        self.crashed = True
        self.cluster.live_clients.discard(self.client_id)
        self.cluster.take_responses(self.client_id)

    def _check(self) -> None:
        if self.crashed:
            raise RuntimeError(f"{self.client_id} crashed")
        if self.closed:
            raise RuntimeError(f"{self.client_id} is closed")

    # ------------------------------------------------------------------ the group protocol
    def _step(self) -> None:
        if not self.topics:
            return
        for resp in self.cluster.take_responses(self.client_id):
            if isinstance(resp, JoinGroupResponse) and self.phase == _Phase.JOINING:
                self._on_join(resp)
            elif isinstance(resp, SyncGroupResponse) and self.phase == _Phase.SYNCING:
                self._on_sync(resp)
        if self.phase == _Phase.UNJOINED:
            self._join()
        elif (
            self.phase == _Phase.STABLE
            and self.cluster.now_ms - self.last_heartbeat_ms >= self.heartbeat_interval_ms
        ):
            self._heartbeat()

    def _subscription(self) -> bytes:
        owned = tuple(MTP(t, p) for t, p in self.assigned) if self.cooperative else ()
        user_data = None
        if self.assignor == "sticky" and self.sticky_memory is not None:
            user_data = encode_sticky_user_data(*self.sticky_memory)
        elif self.assignor == "cooperative-sticky":
            user_data = encode_cooperative_user_data(self.coop_generation)
        return encode_subscription(
            WireSubscription(tuple(sorted(self.topics)), user_data, owned, self.generation, None)
        )

    def _join(self) -> None:
        self.phase = _Phase.JOINING
        self.cluster.send(
            self.group_id,
            JoinGroupRequest(
                self.client_id,
                self.member_id,
                ((self.assignor, self._subscription()),),
                self.session_timeout_ms,
                self.max_poll_interval_ms,
            ),
        )

    def _on_join(self, resp: JoinGroupResponse) -> None:
        if resp.error is Errors.MEMBER_ID_REQUIRED:
            self.member_id = resp.member_id
            self._join()
            return
        if resp.error is not Errors.NONE:
            if resp.error in _LOST:
                self._lose()
            self.phase = _Phase.UNJOINED
            return
        self.member_id = resp.member_id
        self.generation = resp.generation_id
        assignments = None
        if resp.leader == self.member_id:
            assignments = self._assign(resp)
        self.phase = _Phase.SYNCING
        self.cluster.send(
            self.group_id,
            SyncGroupRequest(
                self.client_id,
                self.member_id,
                self.generation,
                protocol_name=resp.protocol_name,
                assignments=assignments,
            ),
        )

    def _assign(self, resp: JoinGroupResponse) -> dict[str, bytes]:
        """The leader's job: run the assignor on every member's ConsumerProtocol subscription."""
        members = []
        wanted: set[str] = set()
        sticky = (resp.protocol_name or self.assignor) == "sticky"
        for m in resp.members:
            sub = decode_subscription(m.metadata)
            wanted.update(sub.topics)
            owned = tuple(sub.owned_partitions)
            generation = sub.generation_id
            if sticky:  # StickyAssignor.memberData reads both from its user data only
                ud = decode_sticky_user_data(sub.user_data)
                owned = tuple(MTP(t, p) for t, p in ud.partitions)
                generation = DEFAULT_GENERATION if ud.generation is None else ud.generation
            members.append(
                MemberSubscription(
                    m.member_id,
                    tuple(sub.topics),
                    owned,
                    generation,
                    sub.rack_id,
                    m.group_instance_id,
                )
            )
        topics = {
            t: TopicMetadata(t, self.cluster.topics[t])
            for t in sorted(wanted)
            if t in self.cluster.topics
        }
        result = get_assignor(resp.protocol_name or self.assignor).assign(
            GroupSpec(topics, tuple(members))
        )
        return {
            m.member_id: encode_assignment(WireAssignment(tuple(result.get(m.member_id, ()))))
            for m in members
        }

    def _on_sync(self, resp: SyncGroupResponse) -> None:
        if resp.error is not Errors.NONE:
            if resp.error in _LOST:
                self._lose()
            self.phase = _Phase.UNJOINED
            return
        new = (
            [(tp.topic, tp.partition) for tp in decode_assignment(resp.assignment).partitions]
            if resp.assignment
            else []
        )
        self.rebalances += 1
        if self.assignor == "sticky":
            self.sticky_memory = (list(new), self.generation)
        elif self.assignor == "cooperative-sticky":
            self.coop_generation = self.generation
        self.phase = _Phase.STABLE
        self.last_heartbeat_ms = self.cluster.now_ms
        if self.cooperative:
            revoked = [tp for tp in self.assigned if tp not in new]
            added = [tp for tp in new if tp not in self.assigned]
            if revoked:
                self._revoke(revoked)
            self._add(added)
            if revoked:  # KIP-429: rejoin so the revoked partitions can go to their new owner
                self.phase = _Phase.UNJOINED
        else:
            self._add(new)

    def _heartbeat(self) -> None:
        self.last_heartbeat_ms = self.cluster.now_ms
        self.cluster.send(
            self.group_id, HeartbeatRequest(self.client_id, self.member_id, self.generation)
        )
        for resp in self.cluster.take_responses(self.client_id):
            err = getattr(resp, "error", Errors.NONE)
            if err is Errors.REBALANCE_IN_PROGRESS:
                if not self.cooperative and self.assigned:
                    self._revoke(list(self.assigned))  # eager: give everything up before rejoining
                self._join()
            elif err in _LOST:
                self._lose()
                self._join()

    def _lose(self) -> None:
        """The member was fenced: its partitions are lost (not revoked), and it rejoins from scratch."""
        if self.assigned:
            tps = list(self.assigned)
            cb = self.callbacks.get("lost") or self.callbacks.get("revoke")
            if cb is not None:
                cb(self, [TopicPartition(t, p) for t, p in tps])
            self._drop(tps)
        self.member_id = ""
        self.generation = -1

    def _revoke(self, tps: list[tuple[str, int]]) -> None:
        cb = self.callbacks.get("revoke")
        if cb is not None:
            cb(self, [TopicPartition(t, p) for t, p in tps])
        self._drop(tps)

    def _drop(self, tps: list[tuple[str, int]]) -> None:
        for tp in tps:
            if tp in self.assigned:
                self.assigned.remove(tp)
            self.position.pop(tp, None)
            self.paused.discard(tp)

    def _add(self, tps: list[tuple[str, int]]) -> None:
        cb = self.callbacks.get("assign")
        if cb is not None:
            cb(self, [TopicPartition(t, p) for t, p in tps])
        got = self.cluster.fetch_committed(self.group_id, tps) if tps else {}
        for tp in tps:
            if tp not in self.assigned:
                self.assigned.append(tp)
            offset = got.get(tp, (-1, ""))[0]
            self.position[tp] = offset if offset >= 0 else 0  # auto.offset.reset=earliest

    # ------------------------------------------------------------------ fetching
    def _fetch(self, limit: int) -> list[SimMessage]:
        out: list[SimMessage] = []
        with self.cluster.lock:
            live = [tp for tp in self.assigned if tp not in self.paused]
            progress = True
            while (
                len(out) < limit and progress
            ):  # round-robin over partitions, in order within each
                progress = False
                for tp in live:
                    log = self.cluster.logs[tp]
                    pos = self.position.get(tp, 0)
                    if pos < len(log) and len(out) < limit:
                        out.append(SimMessage(tp[0], tp[1], log[pos]))
                        self.position[tp] = pos + 1
                        progress = True
        return out
