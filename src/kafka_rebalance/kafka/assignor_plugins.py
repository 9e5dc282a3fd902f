"""Our Kafka-exact assignors as `partition_assignment_strategy` plug-ins for kafka-python.

kafka-python (2.2.x) asks a strategy object for four things: a `name`, a
`metadata(topics)` to put into JoinGroup, an `assign(cluster, members)` run by
the group leader, and an `on_assignment(assignment)` run by every member after
SyncGroup. Here the leader turns the decoded member metadata into a
`GroupSpec` (members in the order kafka-python hands them, which is the order
of the JoinGroup response, the order Kafka's leader inserts them into its
HashMap), runs our assignor from `kafka_rebalance.assign.registry`, and turns
the result back into consumer-protocol assignments.

kafka-python's leader decodes every member's metadata with the version-0
Subscription schema, so the v1+ `owned_partitions`/`generation_id` fields
never reach a Python leader. Stickiness therefore travels in the user data,
exactly as Kafka's eager `StickyAssignor` carries it: StickyAssignor V1 user
data (previous assignment + generation). The cooperative plug-in uses the same
user data for the same reason (so it interoperates with Python members only,
not with Java `cooperative-sticky` members, whose user data is a bare
generation).

kafka-python's coordinator is eager: it revokes everything before joining.
Kafka's cooperative-sticky output still holds back, in round one, partitions
that change owner; the member that lost them must rejoin so round two hands
them over. The plug-in does that when bound to its consumer (`bind`), which
also gives it the exact group generation.

aiokafka vendors the same interface (bytes metadata and assignments accepted,
`request_rejoin()`, `generation` on its coordinator), so the plug-ins are
written to fit it too; aiokafka is not installed here, so that path is untested.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..model import (
    DEFAULT_GENERATION,
    Assignment,
    GroupSpec,
    MemberSubscription,
    TopicMetadata,
    TopicPartition,
)

log = logging.getLogger(__name__)

SUBSCRIPTION_VERSION = 0  # what kafka-python's leader can decode
ASSIGNMENT_VERSION = 0


# ---------------------------------------------------------------------------
# StickyAssignor V1 user data: [previous_assignment: [topic: string, partitions: [int32]]], generation: int32


def encode_sticky_user_data(owned: Iterable[TopicPartition], generation: int) -> bytes:
    """Kafka's StickyAssignor V1 user data, byte for byte (topics in Kafka's HashMap order)."""
    from ..assign.userdata import encode_sticky_user_data as encode

    return encode([(tp.topic, tp.partition) for tp in owned], generation)


def decode_sticky_user_data(data: bytes | None) -> tuple[tuple[TopicPartition, ...], int]:
    """(owned, generation) from V1 user data; V0 (no generation) gives DEFAULT_GENERATION.

    Undecodable or empty user data means "owns nothing", as Kafka's
    StickyAssignor treats it.
    """
    from ..assign.userdata import decode_sticky_user_data as decode

    decoded = decode(data)
    generation = DEFAULT_GENERATION if decoded.generation is None else decoded.generation
    return tuple(TopicPartition(t, p) for t, p in decoded.partitions), generation


# ---------------------------------------------------------------------------
# kafka-python metadata <-> GroupSpec


def _partition_count(cluster: Any, topic: str) -> int | None:
    parts = cluster.partitions_for_topic(topic)
    if not parts:
        return None
    return max(parts) + 1


def group_spec_from_kafka_python(
    cluster: Any, members: Mapping[str, Any], *, sticky_user_data: bool
) -> GroupSpec:
    """Build our assignor input from kafka-python's `assign(cluster, members)` arguments.

    `members` maps member id -> decoded ConsumerProtocolMemberMetadata, in
    JoinGroup response order (a dict keeps it). Topics the cluster has no
    metadata for are left out of `topics` (Kafka skips them too) but stay in
    the member's subscription.
    """
    subs: list[MemberSubscription] = []
    all_topics: list[str] = []
    seen: set[str] = set()
    for member_id, md in members.items():
        topics = tuple(md.subscription or ())
        for t in topics:
            if t not in seen:
                seen.add(t)
                all_topics.append(t)
        owned: tuple[TopicPartition, ...] = ()
        generation = DEFAULT_GENERATION
        if sticky_user_data:
            owned, generation = decode_sticky_user_data(md.user_data)
        subs.append(MemberSubscription(member_id, topics, owned, generation))
    topic_meta: dict[str, TopicMetadata] = {}
    for t in sorted(all_topics):
        n = _partition_count(cluster, t)
        if n is None:
            log.warning("no partition metadata for topic %s; skipping it in the assignment", t)
            continue
        topic_meta[t] = TopicMetadata(t, n)
    return GroupSpec(topic_meta, tuple(subs))


def assignment_bytes(partitions: Sequence[TopicPartition], user_data: bytes | None = None) -> bytes:
    """A consumer-protocol Assignment (version 0) as the SyncGroup request carries it."""
    from ..assign.protocol import Assignment as WireAssignment
    from ..assign.protocol import encode_assignment

    return encode_assignment(
        WireAssignment(tuple(partitions), user_data), version=ASSIGNMENT_VERSION
    )


def subscription_bytes(topics: Iterable[str], user_data: bytes | None) -> bytes:
    """A consumer-protocol Subscription (version 0) as the JoinGroup request carries it."""
    from ..assign.protocol import Subscription, encode_subscription

    return encode_subscription(
        Subscription(tuple(sorted(topics)), user_data), version=SUBSCRIPTION_VERSION
    )


def partitions_of(assignment: Any) -> list[TopicPartition]:
    """Our TopicPartitions from kafka-python's decoded ConsumerProtocolMemberAssignment."""
    return [
        TopicPartition(topic, p) for topic, parts in (assignment.assignment or ()) for p in parts
    ]


@dataclass(frozen=True, slots=True)
class AssignCall:
    """One leader-side run: what the assignor saw and what it returned."""

    spec: GroupSpec
    result: Assignment


# ---------------------------------------------------------------------------
# the plug-ins


class KafkaPythonAssignor:
    """Base plug-in: one of our assignors behind kafka-python's AbstractPartitionAssignor interface.

    Instances (not classes) go into `partition_assignment_strategy`; each
    consumer needs its own instance, because `on_assignment` keeps that
    member's owned partitions for its next `metadata()`.
    """

    name = ""
    version = SUBSCRIPTION_VERSION
    strategy = ""  # our registry name
    sticky_user_data = False
    cooperative = False
    MAX_RECORDED_CALLS = 32

    def __init__(self) -> None:
        self._owned: tuple[TopicPartition, ...] = ()
        self._generation = DEFAULT_GENERATION
        self._coordinator_ref: weakref.ReferenceType | None = None
        self._lock = threading.Lock()
        self.calls: deque[AssignCall] = deque(maxlen=self.MAX_RECORDED_CALLS)
        self.assignments_received: list[tuple[int, tuple[TopicPartition, ...]]] = []
        self.rejoins_requested = 0

    # -- wiring -----------------------------------------------------------
    def bind(self, consumer: Any) -> KafkaPythonAssignor:
        """Attach to the consumer using this instance (gives the generation and the rejoin).

        A kafka-python `KafkaConsumer`, or its coordinator. The coordinator is
        looked up at use time, so a consumer whose coordinator appears later
        (aiokafka's, created in `start()`) can be bound before it starts.
        """
        self._coordinator_ref = weakref.ref(consumer)
        return self

    def _coordinator(self) -> Any | None:
        owner = self._coordinator_ref() if self._coordinator_ref is not None else None
        if owner is None:
            return None
        coordinator = getattr(owner, "_coordinator", owner)
        return coordinator if hasattr(coordinator, "request_rejoin") else None

    @staticmethod
    def _generation_of(coordinator: Any) -> int | None:
        gen = getattr(
            coordinator, "_generation", None
        )  # kafka-python: Generation(generation_id, ...)
        gen = (
            getattr(gen, "generation_id", None)
            if gen is not None
            else getattr(coordinator, "generation", None)
        )
        return (
            gen if isinstance(gen, int) and gen >= 0 else None
        )  # aiokafka: coordinator.generation

    @property
    def owned(self) -> tuple[TopicPartition, ...]:
        return self._owned

    @property
    def generation(self) -> int:
        return self._generation

    # -- kafka-python interface ------------------------------------------
    def metadata(self, topics: Iterable[str]) -> bytes:
        user_data = (
            encode_sticky_user_data(self._owned, self._generation)
            if self.sticky_user_data
            else None
        )
        return subscription_bytes(topics, user_data)

    def assign(self, cluster: Any, members: Mapping[str, Any]) -> dict[str, bytes]:
        from ..assign.registry import get_assignor

        spec = group_spec_from_kafka_python(
            cluster, members, sticky_user_data=self.sticky_user_data
        )
        result = get_assignor(self.strategy).assign(spec)
        with self._lock:
            self.calls.append(AssignCall(spec, {m: list(ps) for m, ps in result.items()}))
        log.info(
            "%s assignment for %d members over %d topics",
            self.name,
            len(spec.members),
            len(spec.topics),
        )
        return {m.member_id: assignment_bytes(result.get(m.member_id, ())) for m in spec.members}

    def on_assignment(self, assignment: Any) -> None:
        new = tuple(partitions_of(assignment))
        previous = set(self._owned)
        coordinator = self._coordinator()
        gen = self._generation_of(coordinator) if coordinator is not None else None
        if gen is not None:
            self._generation = gen
        self._owned = new
        with self._lock:
            self.assignments_received.append((self._generation, new))
        if self.cooperative and previous - set(new):
            # Round one took partitions away from us: rejoin so round two hands them to their new owner.
            if coordinator is not None:
                self.rejoins_requested += 1
                coordinator.request_rejoin()
            else:
                log.warning(
                    "%s: partitions revoked but the plug-in is not bound to its consumer; "
                    "held-back partitions wait for the next rebalance (call bind(consumer))",
                    self.name,
                )

    def on_generation_assignment(self, generation: int) -> None:
        """kafka-python calls this (for a strategy named 'sticky') after on_assignment."""
        self._generation = generation
        with self._lock:
            if self.assignments_received:
                self.assignments_received[-1] = (generation, self.assignments_received[-1][1])


class RangeAssignor(KafkaPythonAssignor):
    """Kafka's RangeAssignor (KIP-881 racks are unknown: kafka-python sends no rack)."""

    name = "range"
    strategy = "range"


class RoundRobinAssignor(KafkaPythonAssignor):
    """Kafka's RoundRobinAssignor."""

    name = "roundrobin"
    strategy = "roundrobin"


class StickyAssignor(KafkaPythonAssignor):
    """Kafka's StickyAssignor; wire-compatible with Java 'sticky' members (V1 user data)."""

    name = "sticky"
    strategy = "sticky"
    sticky_user_data = True


class CooperativeStickyAssignor(KafkaPythonAssignor):
    """Kafka's CooperativeStickyAssignor output, with its two-round hand-over (needs `bind`).

    Its protocol name is not Java's "cooperative-sticky": ownership travels in
    StickyAssignor user data (kafka-python's v0 subscription has no owned
    partitions field), which a Java cooperative-sticky leader would misread, so
    Kafka must never pick it for a group that mixes Java and Python members.
    """

    name = "py-cooperative-sticky"
    strategy = "cooperative-sticky"
    sticky_user_data = True
    cooperative = True


PLUGINS: dict[str, type[KafkaPythonAssignor]] = {
    cls.strategy: cls
    for cls in (RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor)
}


def plugin(name: str) -> KafkaPythonAssignor:
    """A fresh plug-in instance for one consumer."""
    try:
        return PLUGINS[name]()
    except KeyError:
        raise ValueError(
            f"no kafka-python plug-in named {name!r} (known: {', '.join(PLUGINS)})"
        ) from None
