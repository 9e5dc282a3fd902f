"""A simulated "cooperative-sticky" subscription carries Kafka's user data: the 4-byte generation.

ConsumerCoordinator.metadata() puts every assignor's subscriptionUserData() into its JoinGroup
subscription. CooperativeStickyAssignor's is its `generation` field as an INT32 (big-endian):
DEFAULT_GENERATION (-1) in a new consumer instance, then the generation of the group metadata its
last onAssignment() was given (onJoinComplete, when it was the selected protocol). It is not reset
when the member's own generation is (resetStateAndRejoin leaves the assignor alone). The group
metadata the simulator writes to `__consumer_offsets` holds these bytes as Kafka's would.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

from kafka_rebalance.assign.protocol import Subscription as WireSubscription
from kafka_rebalance.assign.protocol import decode_subscription, encode_subscription
from kafka_rebalance.assign.userdata import encode_cooperative_user_data
from kafka_rebalance.sim.api import simulate_scenario
from kafka_rebalance.sim.offsets_store import SimOffsetsStore
from kafka_rebalance.sim.scenario import parse_simulation_scenario

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sim_fingerprint_set import rolling  # noqa: E402


def _i32(v: int) -> bytes:
    return struct.pack(">i", v)


def _kafka_subscription_v3(
    topic: str, generation_ud: int, owned: list[int], generation: int
) -> bytes:
    """ConsumerProtocolSubscription v3 laid out by hand (one topic, no rack): version, topics,
    user data (CooperativeStickyAssignor V0: one INT32), owned partitions grouped by topic and
    sorted, generation, rack (null)."""
    name = struct.pack(">h", len(topic)) + topic.encode()
    owned_bytes = (
        _i32(1) + name + _i32(len(owned)) + b"".join(_i32(p) for p in sorted(owned))
        if owned
        else _i32(0)
    )
    return (
        struct.pack(">h", 3)
        + _i32(1)
        + name
        + _i32(4)
        + _i32(generation_ud)
        + owned_bytes
        + _i32(generation)
        + struct.pack(">h", -1)
    )


def test_the_offsets_log_holds_kafkas_cooperative_sticky_subscription_bytes(monkeypatch) -> None:
    sc = parse_simulation_scenario(rolling(6, ["cooperative-sticky"]))
    writes: list[tuple[int, object]] = []
    worlds: list = []
    original = SimOffsetsStore.write_group

    def write_group(self, snapshot, now_ms):
        original(self, snapshot, now_ms)
        w = worlds[0]
        writes.append((w.events_emitted, self.records(w.parts.tps)[0]))

    monkeypatch.setattr(SimOffsetsStore, "write_group", write_group)
    res = simulate_scenario(sc, collect_events=True, on_world=worlds.append)
    assert len(writes) > 10

    checked = fresh = rejoined = lagging = 0
    for emitted, record in writes:
        # CooperativeStickyAssignor.generation of each consumer instance at the time of the write: the
        # generation of its last completed join since it (re)started, else -1
        last: dict[str, int] = {}
        for e in res.events[:emitted]:
            if e["kind"] == "start":
                last[e["member"]] = -1
            elif e["kind"] == "assigned":
                last[e["member"]] = e["generation"]
        value = record.value
        assert value.protocol == "cooperative-sticky"
        for m in value.members:
            name = m.member_id.split("#")[0]
            sent = decode_subscription(m.subscription)
            expected_ud = last.get(name, -1)
            assert sent.user_data == encode_cooperative_user_data(expected_ud) == _i32(expected_ud)
            owned = [tp.partition for tp in sent.owned_partitions]
            assert m.subscription == _kafka_subscription_v3(
                "t", expected_ud, owned, sent.generation_id
            )
            assert m.subscription == encode_subscription(
                WireSubscription(
                    ("t",),
                    encode_cooperative_user_data(expected_ud),
                    tuple(sent.owned_partitions),
                    sent.generation_id,
                    None,
                )
            )
            checked += 1
            if expected_ud == -1:
                fresh += 1
            else:
                rejoined += 1
                # the protocol's generation field is the member's current one: the same, or later when
                # the member joined a generation whose SyncGroup it never completed
                assert sent.generation_id >= expected_ud
                lagging += sent.generation_id > expected_ud
    assert checked > 6 * 10 and fresh > 0 and rejoined > fresh
    assert lagging > 0  # some members' user data trails the generation field (see above)


def test_the_wire_clients_cooperative_subscription_carries_its_generation() -> None:
    """sim/kafka_client.SimConsumer: -1 before its first assignment, then the generation it was
    assigned in (and nothing for range)."""
    from kafka_rebalance.group.classic_member import ClassicGroupConfig
    from kafka_rebalance.sim.kafka_client import SimConsumer
    from kafka_rebalance.sim.kafka_cluster import SimCluster

    c = SimCluster({"t": 6}, group_config=ClassicGroupConfig(initial_rebalance_delay_ms=0))
    consumers = []
    for _ in range(2):
        s = SimConsumer(c, "g", assignor="cooperative-sticky", heartbeat_interval_ms=1_000)
        s.subscribe(["t"])
        consumers.append(s)
    assert decode_subscription(consumers[0]._subscription()).user_data == _i32(-1)
    for _ in range(200):
        for s in consumers:
            s.consume(10)
    assert sum(len(s.assignment()) for s in consumers) == 6
    for s in consumers:
        assert s.generation > 0
        sent = decode_subscription(s._subscription())
        assert sent.user_data == encode_cooperative_user_data(s.generation) == _i32(s.generation)
    r = SimConsumer(c, "g2", assignor="range")
    r.subscribe(["t"])
    assert decode_subscription(r._subscription()).user_data is None
