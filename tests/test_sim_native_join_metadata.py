"""The JoinGroup metadata the native members send, field by field, against the reference members'.

`NativeClient._protocols` keeps the owned partitions' tuples (indices and TopicPartitions) from the
last JoinGroup and reuses them while the member owns the same indices, and keeps the last
cooperative-sticky user data by generation (docs/sim-native.md, natcoop3). A cache that returned a
stale value would send the wrong `owned`, `owned_idx` or `user_data`: the coordinator's equality
ignores `owned_idx`, and a stale `owned` could still give the same event rows in a short run, so
here every JoinGroupRequest both worlds send is recorded and compared whole (each Subscription's
fields, `owned_idx` included). The runs must reach what would make a cache stale: a member whose
owned partitions change between two JoinGroups (a KIP-429 revocation, an added partition), the
user data changing (sticky's memory, cooperative-sticky's generation), and a generation reset (a
poll timeout's lost partitions); and the cache's hits (owned kept). Without the
builds the tests skip (fail under KAFKA_REBALANCE_REQUIRE_COMPILED=1).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sim_fingerprint_set as fps  # noqa: E402
from compiled_legs import no_compiled_leg, require_build  # noqa: E402
from kafka_rebalance.sim.scenario import parse_simulation_scenario  # noqa: E402

SCENARIOS = dict(fps.scenarios())


def _harsh(assignors: list[str], seed: int) -> dict:
    """Late joiners, long down times and a short max.poll.interval: cooperative revocations with
    follow-up rejoins, and poll timeouts that reset a member's generation."""
    return {
        "name": f"harsh-{'-'.join(assignors)}",
        "seed": seed,
        "duration_ms": 120_000,
        "group": {
            "id": "g",
            "assignors": assignors,
            "heartbeat_interval_ms": 500,
            "session_timeout_ms": 6000,
            "max_poll_interval_ms": 2000,
            "auto_commit_interval_ms": 1000,
            "max_poll_records": 50,
        },
        "topics": [{"name": "t", "partitions": 17, "produce_rate": 600}],
        "members": {
            "list": [
                {"name": f"m{i}", "start_ms": (0, 0, 500, 4000, 15_000, 30_000)[i]}
                for i in range(6)
            ],
            "processing_ms_per_record": 2.5,
        },
        "network": {"latency_ms": 7, "jitter_ms": 5},
        "simulation": {"poll_idle_ms": 1000, "poll_timeout_ms": 100, "processing_jitter": 0.5},
        "events": [
            {"at_ms": 20_000, "kind": "rolling_restart", "down_ms": 9000, "every_ms": 7000},
        ],
    }


CASES = {
    "rolling-cooperative-sticky-40": SCENARIOS["rolling-cooperative-sticky-40"],
    "rolling-sticky": SCENARIOS["rolling-sticky"],
    "harsh-cooperative-sticky": _harsh(["cooperative-sticky"], 3),
    "harsh-sticky": _harsh(["sticky", "range"], 5),
}


def _join_row(member, req) -> tuple:
    subs = tuple(
        (name, s.topics, s.owned, s.owned_idx, s.generation, s.rack, s.user_data)
        for name, s in req.protocols
    )
    return (member.name, req.member_id, req.group_instance_id, subs)


def _recording(base):
    class Recording(base):
        def send(self, member, kind, req):
            if kind == "join":
                self.joins.append(_join_row(member, req))
            return super().send(member, kind, req)

    return Recording


def _runs(doc):
    from kafka_rebalance.sim import classic_native
    from kafka_rebalance.sim.world import Simulation

    world = require_build("native_world")
    member = require_build("native_world_member")
    coordinator = require_build("native_coordinator")
    sc = parse_simulation_scenario(doc)
    assert classic_native.native_support(sc) is None  # claimed: the native core runs it
    ref = _recording(Simulation)(sc, None)
    ref.joins = []
    nat = _recording(world.NativeWorld)(
        sc, None, member.NativeMember, coordinator.NativeCoordinator
    )
    nat.joins = []
    assert nat.run() == ref.run()
    return nat.joins, ref.joins


def _reached(joins: list[tuple]) -> set[str]:
    """What the run's JoinGroups reach that a stale cache would get wrong (and the cache's hits)."""
    seen: set[str] = set()
    last: dict[str, tuple] = {}
    for name, _mid, _inst, subs in joins:
        protocol, _, owned, _, generation, _, user_data = subs[0]
        prev = last.get(name)
        if prev is not None:
            p_owned, p_generation, p_user_data = prev
            if owned and p_owned:
                seen.add("owned kept" if owned == p_owned else "owned changed")
            if generation < 0 <= p_generation:
                seen.add("generation reset")
            if user_data and p_user_data and user_data != p_user_data:
                seen.add(f"{protocol} user data changed")
        last[name] = (owned, generation, user_data)
    return seen


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_join_metadata_is_the_references(name):
    nat, ref = _runs(CASES[name])
    assert len(nat) == len(ref) > 0
    for i, (n, r) in enumerate(zip(nat, ref)):
        assert n == r, f"JoinGroup {i}"


def test_the_runs_reach_what_would_make_a_cache_stale():
    """The cases above must keep reaching each of these (else a stale cache could pass them)."""
    seen: set[str] = set()
    for doc in CASES.values():
        seen |= _reached(_runs(doc)[1])
    assert seen >= {
        "owned kept",
        "owned changed",
        "generation reset",
        "sticky user data changed",
        "cooperative-sticky user data changed",
    }, seen


def test_the_builders_are_their_classes():
    """native_member_messages' builders give what the classes' constructors give: the same type
    and fields (Subscription's owned_idx too, which its equality ignores), values passed on as
    the same objects; the cooperative user data is the encoding of each generation, kept or not."""
    from kafka_rebalance.assign.userdata import encode_cooperative_user_data
    from kafka_rebalance.group.classic_messages import (
        HeartbeatRequest,
        JoinGroupRequest,
        SyncGroupRequest,
    )
    from kafka_rebalance.model import TopicPartition
    from kafka_rebalance.sim.subscription import Subscription

    mm = require_build("native_member_messages")
    owned = (TopicPartition("t", 3), TopicPartition("u", 0))
    for rack, user_data, owned_idx in [(None, None, None), ("r1", b"\x00\x01", (3, 9))]:
        got = mm.subscription_c(("t", "u"), owned, 7, rack, user_data, owned_idx)
        want = Subscription(("t", "u"), owned, 7, rack, user_data, owned_idx=owned_idx)
        assert type(got) is Subscription
        assert [getattr(got, f) for f in mm.SUBSCRIPTION_FIELDS] == [
            getattr(want, f) for f in mm.SUBSCRIPTION_FIELDS
        ]
        assert got.owned is owned and got.owned_idx is owned_idx
    hb = mm.heartbeat_request_c("c", "m-1", 4, None)
    assert type(hb) is HeartbeatRequest and hb == HeartbeatRequest("c", "m-1", 4, None)
    protocols = (("range", got),)
    join = mm.join_request_c("c", "", protocols, 10_000, 300_000, "i")
    assert type(join) is JoinGroupRequest
    assert join == JoinGroupRequest("c", "", protocols, 10_000, 300_000, "i")
    assert join.protocols is protocols
    sync = mm.sync_request_c("c", "m-1", 4, None, "consumer", "range", {"m-1": [1]})
    assert type(sync) is SyncGroupRequest
    assert sync == SyncGroupRequest("c", "m-1", 4, None, "consumer", "range", {"m-1": [1]})
    for generation in (1, 1, 2, -1, 2, 2_147_483_647):
        assert mm.cooperative_user_data(generation) == encode_cooperative_user_data(generation)


def test_the_leaders_reads_and_member_subscriptions_are_the_references():
    """The leader's side of native_member_messages: a TopicPartition's fields read and a
    MemberSubscription built through the compiled bases' descriptors (taken on this build), equal
    to getattr and to world_core.member_subscription (type, each field the same object; lists
    become tuples as __post_init__ makes them); another type is read by getattr."""
    from kafka_rebalance.model import MemberSubscription, TopicPartition
    from kafka_rebalance.sim.world_core import member_subscription

    mm = require_build("native_member_messages")
    for tp in (TopicPartition("t", 3), TopicPartition("orders", 2**40), TopicPartition("", -1)):
        assert mm.tp_topic(tp) is tp.topic and mm.tp_partition(tp) is tp.partition

    class Other:
        topic, partition = "x", 5

    assert (mm.tp_topic(Other()), mm.tp_partition(Other())) == ("x", 5)
    owned = (TopicPartition("t", 1),)
    for args in [
        ("m-1", ("t",), owned, 3, None, None),
        ("m-2", ["t", "u"], list(owned), -1, "r1", "i-2"),
        ("m-3", ("t",), (), 0, None, "i-3"),
    ]:
        got, want = mm.member_subscription_c(*args), member_subscription(*args)
        assert type(got) is type(want) is MemberSubscription
        assert got == want == MemberSubscription(*args)
        for f in mm.MEMBER_SUBSCRIPTION_FIELDS:
            g, w = getattr(got, f), getattr(want, f)
            assert g is w if f not in ("topics", "owned") else (type(g) is tuple and g == w)
    if not (mm.TOPIC_PARTITION_FAST and mm.MEMBER_SUBSCRIPTION_FAST):
        # exact either way (the reference's getattr and builder ran above); the fast reads need
        # model_fields' fresh mypyc build, whose getset descriptors they call
        no_compiled_leg("model_fields is not a fresh mypyc build: the leader's fast reads are off")


_CHANGED_SUBSCRIPTION = """
import dataclasses, sys
import kafka_rebalance.sim.subscription as sm

@dataclasses.dataclass(frozen=True)  # the same fields, without slots
class Subscription:
    topics: object
    owned: object
    generation: object
    rack: object
    user_data: object
    owned_idx: object

sm.Subscription = Subscription
from kafka_rebalance import native
from kafka_rebalance.sim import classic_native
from kafka_rebalance.sim.scenario import parse_simulation_scenario
import sim_fingerprint_set as fps

print(native.cython_build("kafka_rebalance.sim", "native_member_messages"))
print(classic_native.native_support(parse_simulation_scenario(dict(fps.scenarios())[sys.argv[1]])))
"""


def test_a_subscription_of_another_shape_makes_the_module_refuse_to_load():
    """Review 12 F2: a Subscription that is not the slots dataclass the builders write makes
    native_member_messages refuse to load (ImportError), so the claim names the build and the
    reference runs; it used to raise KeyError out of `native_support`."""
    require_build("native_member_messages")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), *sys.path]))
    done = subprocess.run(
        [sys.executable, "-c", _CHANGED_SUBSCRIPTION, "rolling-cooperative-sticky-40"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    build, claim = done.stdout.splitlines()
    assert build == "None"
    assert claim.startswith("native build missing or stale") and "native_member_messages" in claim
