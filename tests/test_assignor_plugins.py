"""kafka-python plug-ins: metadata <-> GroupSpec conversion, and a live group on real Kafka."""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.kafka import assignor_plugins as ap
from kafka_rebalance.model import DEFAULT_GENERATION, TopicPartition

kp_protocol = pytest.importorskip("kafka.coordinator.protocol")
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyAssignorUserDataV1  # noqa: E402


class FakeCluster:
    """The one ClusterMetadata method the plug-ins use."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def partitions_for_topic(self, topic: str):
        n = self.counts.get(topic)
        return None if n is None else set(range(n))


class FakeGeneration:
    def __init__(self, generation_id: int) -> None:
        self.generation_id = generation_id


class FakeCoordinator:
    def __init__(self) -> None:
        self._generation = FakeGeneration(-1)
        self.rejoins = 0

    def request_rejoin(self) -> None:
        self.rejoins += 1


def decode_metadata(raw: bytes):
    return kp_protocol.ConsumerProtocol.METADATA.decode(raw)


def decode_assignment(raw: bytes):
    return kp_protocol.ConsumerProtocol.ASSIGNMENT.decode(raw)


# ---------------------------------------------------------------------------
# user data


tps = st.lists(
    st.tuples(st.sampled_from(["a", "bb", "topic-ü"]), st.integers(0, 1000)), max_size=30
)


@settings(max_examples=60, deadline=None)
@given(tps, st.integers(-1, 2**31 - 1))
def test_sticky_user_data_is_kafkas_v1_bytes(pairs, generation):
    owned = [TopicPartition(t, p) for t, p in pairs]
    ours = ap.encode_sticky_user_data(owned, generation)
    # kafka-python's own StickyAssignorUserDataV1 reads it, and re-encodes the same bytes
    theirs = StickyAssignorUserDataV1.decode(ours)
    assert theirs.generation == generation
    assert sorted((t, p) for t, ps in theirs.previous_assignment for p in ps) == sorted(pairs)
    struct = StickyAssignorUserDataV1(theirs.previous_assignment, generation)
    reference = struct.encode()
    assert ours == reference
    back, gen = ap.decode_sticky_user_data(ours)
    assert gen == generation
    assert sorted(back) == sorted(owned)


def test_user_data_v0_and_garbage():
    v0 = ap.encode_sticky_user_data([TopicPartition("t", 3)], 7)[:-4]  # V0: no generation field
    assert ap.decode_sticky_user_data(v0) == ((TopicPartition("t", 3),), DEFAULT_GENERATION)
    assert ap.decode_sticky_user_data(b"") == ((), DEFAULT_GENERATION)
    assert ap.decode_sticky_user_data(None) == ((), DEFAULT_GENERATION)
    assert ap.decode_sticky_user_data(b"\x00\x00\x00\x05\x00") == ((), DEFAULT_GENERATION)


# ---------------------------------------------------------------------------
# conversion


def test_metadata_is_decodable_by_kafka_python_and_carries_owned():
    plug = ap.StickyAssignor()
    plug.on_assignment(
        decode_assignment(ap.assignment_bytes([TopicPartition("t", 1), TopicPartition("u", 0)]))
    )
    plug.on_generation_assignment(4)
    md = decode_metadata(plug.metadata({"u", "t"}))
    assert md.version == 0
    assert sorted(md.subscription) == ["t", "u"]
    owned, gen = ap.decode_sticky_user_data(md.user_data)
    assert set(owned) == {TopicPartition("t", 1), TopicPartition("u", 0)}
    assert gen == 4
    # range/roundrobin send no user data
    assert not decode_metadata(ap.RangeAssignor().metadata({"t"})).user_data


def test_group_spec_keeps_member_order_and_skips_unknown_topics():
    members = {}
    for mid, owned, gen in (
        ("m-z", [TopicPartition("t", 0)], 3),
        ("m-a", [], -1),
        ("m-k", [TopicPartition("t", 2)], 2),
    ):
        raw = ap.subscription_bytes(["t", "gone"], ap.encode_sticky_user_data(owned, gen))
        members[mid] = decode_metadata(raw)
    spec = ap.group_spec_from_kafka_python(FakeCluster({"t": 4}), members, sticky_user_data=True)
    assert [m.member_id for m in spec.members] == ["m-z", "m-a", "m-k"]
    assert set(spec.topics) == {"t"} and spec.topics["t"].partitions == 4
    assert (
        spec.member("m-z").owned == (TopicPartition("t", 0),) and spec.member("m-z").generation == 3
    )
    assert spec.member("m-a").owned == () and spec.member("m-a").generation == -1
    assert set(spec.member("m-k").topics) == {"t", "gone"}
    plain = ap.group_spec_from_kafka_python(FakeCluster({"t": 4}), members, sticky_user_data=False)
    assert all(m.owned == () and m.generation == DEFAULT_GENERATION for m in plain.members)


@pytest.mark.parametrize("name", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_assign_returns_our_assignors_output_as_kafka_python_bytes(name):
    from kafka_rebalance.assign.registry import get_assignor

    plug = ap.plugin(name)
    members = {
        f"c{i}": decode_metadata(ap.plugin(name).metadata({"t", "u"} if i % 2 else {"t"}))
        for i in range(5)
    }
    cluster = FakeCluster({"t": 7, "u": 3})
    out = plug.assign(cluster, members)
    assert list(out) == list(members)
    call = plug.calls[-1]
    expected = get_assignor(name).assign(call.spec)
    assert call.result == {m: list(v) for m, v in expected.items()}
    every = []
    for mid, raw in out.items():
        got = ap.partitions_of(decode_assignment(raw))
        assert got == list(expected.get(mid, []))
        every += got
    assert sorted(every) == sorted(
        [TopicPartition("t", p) for p in range(7)] + [TopicPartition("u", p) for p in range(3)]
    )


def test_cooperative_rejoins_only_when_partitions_are_taken_away():
    plug = ap.CooperativeStickyAssignor()
    coord = FakeCoordinator()
    plug.bind(coord)
    coord._generation = FakeGeneration(1)
    plug.on_assignment(
        decode_assignment(ap.assignment_bytes([TopicPartition("t", 0), TopicPartition("t", 1)]))
    )
    assert coord.rejoins == 0 and plug.generation == 1
    coord._generation = FakeGeneration(2)
    plug.on_assignment(decode_assignment(ap.assignment_bytes([TopicPartition("t", 0)])))
    assert coord.rejoins == 1 and plug.generation == 2
    coord._generation = FakeGeneration(3)
    plug.on_assignment(
        decode_assignment(ap.assignment_bytes([TopicPartition("t", 0), TopicPartition("t", 5)]))
    )
    assert coord.rejoins == 1
    owned, gen = ap.decode_sticky_user_data(decode_metadata(plug.metadata({"t"})).user_data)
    assert set(owned) == {TopicPartition("t", 0), TopicPartition("t", 5)} and gen == 3


def test_bind_resolves_the_coordinator_late_and_reads_aiokafka_style_generation():
    class AioLikeCoordinator:  # aiokafka's GroupCoordinator keeps `generation` as an int
        generation = 5
        rejoins = 0

        def request_rejoin(self):
            self.rejoins += 1

    class Consumer:
        _coordinator = None  # aiokafka creates it in start()

    consumer = Consumer()
    plug = ap.CooperativeStickyAssignor().bind(consumer)
    consumer._coordinator = AioLikeCoordinator()
    plug.on_assignment(
        decode_assignment(ap.assignment_bytes([TopicPartition("t", 0), TopicPartition("t", 1)]))
    )
    assert plug.generation == 5
    consumer._coordinator.generation = 6
    plug.on_assignment(decode_assignment(ap.assignment_bytes([TopicPartition("t", 1)])))
    assert plug.generation == 6 and consumer._coordinator.rejoins == 1


def run_in_process_group(
    plugins: dict[str, ap.KafkaPythonAssignor], cluster, topics, generation: int
):
    """One eager rebalance as kafka-python runs it: first member leads, everyone gets its bytes."""
    members = {mid: decode_metadata(p.metadata(topics)) for mid, p in plugins.items()}
    leader = next(iter(plugins.values()))
    out = leader.assign(cluster, members)
    for mid, p in plugins.items():
        p.on_assignment(decode_assignment(out[mid]))
        p.on_generation_assignment(generation)
    return {mid: set(p.owned) for mid, p in plugins.items()}


def test_in_process_sticky_group_member_leaving_moves_only_its_partitions():
    cluster = FakeCluster({"t": 12})
    plugins = {f"member-{i}": ap.StickyAssignor() for i in range(3)}
    first = run_in_process_group(plugins, cluster, {"t"}, 1)
    assert sorted(len(v) for v in first.values()) == [4, 4, 4]
    leaver = "member-1"
    del plugins[leaver]
    second = run_in_process_group(plugins, cluster, {"t"}, 2)
    for mid, now in second.items():
        assert first[mid] <= now
        assert now - first[mid] <= first[leaver]
    assert set().union(*second.values()) == {TopicPartition("t", p) for p in range(12)}


# ---------------------------------------------------------------------------
# live group on the real Kafka cluster


class GroupMember(threading.Thread):
    """One kafka-python consumer polling in its own thread (joins need concurrent polls)."""

    def __init__(
        self, bootstrap: str, group: str, topic: str, plug: ap.KafkaPythonAssignor
    ) -> None:
        super().__init__(daemon=True)
        from kafka import KafkaConsumer

        self.plug = plug
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            client_id=f"plug-{uuid.uuid4().hex[:6]}",
            partition_assignment_strategy=[plug],
            enable_auto_commit=False,
            session_timeout_ms=10000,
            heartbeat_interval_ms=500,
            max_poll_interval_ms=60000,
            request_timeout_ms=30000,
            api_version_auto_timeout_ms=10000,
        )
        plug.bind(self.consumer)
        self.consumer.subscribe([topic])
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self.consumer.poll(timeout_ms=100)
        except BaseException as exc:  # surfaced by the test
            self.error = exc
        finally:
            self.consumer.close(autocommit=False)

    @property
    def member_id(self) -> str:
        return self.consumer._coordinator._generation.member_id

    def snapshot(self) -> tuple[str, int, frozenset[TopicPartition]]:
        gen = self.consumer._coordinator._generation
        assigned = frozenset(
            TopicPartition(tp.topic, tp.partition) for tp in self.consumer.assignment()
        )
        return gen.member_id, gen.generation_id, assigned


def stable_view(members: list[GroupMember], leaders: list[ap.KafkaPythonAssignor], total: int):
    """The latest leader call and the members' assignments, once they agree with it; else None."""
    calls = [c for p in leaders for c in p.calls]
    if not calls:
        return None
    snaps = [m.snapshot() for m in members]
    if len({g for _, g, _ in snaps}) != 1 or any(
        m.consumer._coordinator.rejoin_needed for m in members
    ):
        return None
    ids = {mid for mid, _, _ in snaps}
    for call in reversed(calls):
        if {m.member_id for m in call.spec.members} == ids:
            break
    else:
        return None
    if any(set(call.result.get(mid, [])) != set(parts) for mid, _, parts in snaps):
        return None
    if sum(len(p) for _, _, p in snaps) != total:
        return None
    return call, {mid: parts for mid, _, parts in snaps}


def wait_stable(members, plugs, total, timeout_s=60.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for m in members:
            if m.error is not None:
                raise m.error
        view = stable_view(members, plugs, total)
        if view is not None:
            time.sleep(1.0)  # must still hold a moment later (no rebalance in flight)
            again = stable_view(members, plugs, total)
            if again is not None and again[1] == view[1]:
                return again
        time.sleep(0.2)
    raise AssertionError(
        f"group did not settle within {timeout_s}s: {[m.snapshot() for m in members]}"
    )


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20000)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()


@pytest.mark.timeout(240)
@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_live_group_on_real_kafka(real_kafka, strategy):
    from kafka_rebalance.assign.registry import get_assignor

    topic = f"plug-{strategy}-{uuid.uuid4().hex[:6]}"
    create_topic(real_kafka.bootstrap, topic, 12)
    group = f"g-{topic}"
    plugs = [ap.plugin(strategy) for _ in range(3)]
    members: list[GroupMember] = []
    try:
        # cooperative-sticky: two members first, then a third joins (a two-round hand-over);
        # sticky: all three at once
        first = plugs[:2] if strategy == "cooperative-sticky" else plugs
        for plug in first:
            members.append(GroupMember(real_kafka.bootstrap, group, topic, plug))
            members[-1].start()
        if len(first) < len(plugs):
            wait_stable(members, plugs, 12)
            members.append(GroupMember(real_kafka.bootstrap, group, topic, plugs[2]))
            members[-1].start()
        call, before = wait_stable(members, plugs, 12)
        # the leader ran our assignor, and its result is exactly our assignor's output for that input
        assert call.result == {
            m: list(v) for m, v in get_assignor(strategy).assign(call.spec).items()
        }
        assert sorted(len(p) for p in before.values()) == [4, 4, 4]
        all_tps = {TopicPartition(topic, p) for p in range(12)}
        assert set().union(*before.values()) == all_tps
        if strategy == "cooperative-sticky":
            # round one held partitions back; the members that lost them rejoined for round two
            assert sum(p.rejoins_requested for p in plugs) >= 1
        if strategy == "cooperative-sticky":
            # owned partitions reached the leader through the user data
            assert any(m.owned for m in call.spec.members)

        leaver = members[1]
        leaver_id = leaver.member_id
        leaver.stop.set()
        leaver.join(timeout=30)
        assert not leaver.is_alive()
        survivors = [members[0], members[2]]
        call2, after = wait_stable(survivors, plugs, 12)
        assert call2.result == {
            m: list(v) for m, v in get_assignor(strategy).assign(call2.spec).items()
        }
        for mid, parts in after.items():
            assert before[mid] <= parts, "a surviving member lost a partition"
            assert parts - before[mid] <= before[leaver_id], (
                "a partition moved that the leaver did not own"
            )
        assert set().union(*after.values()) == all_tps
        for m in call2.spec.members:
            assert set(m.owned) == before[m.member_id]
    finally:
        for m in members:
            m.stop.set()
        for m in members:
            m.join(timeout=30)
