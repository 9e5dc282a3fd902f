"""What the classic group's native twin (sim/native_group*.pyx) refuses rather than guess or wrap:
a protocol vote it does not port, `group.max.size`, deadlines past int64 (review 8 F3) and a time,
timeout or generation that is not an int (review 8 F4); each where `ClassicGroup`, the reference,
answers or refuses as stated."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_rebalance.group.classic_group import ClassicGroupConfig
from kafka_rebalance.group.classic_messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from kafka_rebalance.group.errors import Errors

# the derandomized draws hash their test's source: `_run_members` as it was named there
from sim_native_group_pair import Pair, Refused, native_group
from sim_native_group_pair import run_members as _run_members


def test_a_protocol_vote_with_different_votes_is_refused() -> None:
    """The reference's vote across members listing protocols in different orders (Java HashMap
    order) is not ported: the twin raises instead of guessing."""
    config = ClassicGroupConfig(initial_rebalance_delay_ms=0, require_known_member_id=False)
    pair = Pair(config)
    a = (("range", b""), ("roundrobin", b""))
    pair.call("join", JoinGroupRequest("a#1", "", a, 10_000, 20_000), 0)
    pair.call("join", JoinGroupRequest("b#1", "", a[::-1], 10_000, 20_000), 0)
    pair.ref.on_timer(("join",), ("initial", 0, 0), 0)
    with pytest.raises(NotImplementedError):
        pair.twin.on_timer(("join",), ("initial", 0, 0), 0)


def test_a_group_max_size_is_refused() -> None:
    with pytest.raises(NotImplementedError):
        native_group().NativeClassicGroup("g", ClassicGroupConfig(max_size=3))


def test_deadlines_past_int64_are_refused_never_wrapped() -> None:
    """Times near 2**63 and timeouts up to it: every answer the reference's, or a refusal
    (OverflowError) where one of its ints leaves int64 (review 8 F3: `now + timeout` wrapped to a
    negative deadline, a timer fired at once)."""
    native_group()
    seen: set = set()

    @settings(
        max_examples=150,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    @given(st.data())
    def run(data: st.DataObject) -> None:
        _run_members(data, seen, huge=True)

    run()
    assert ("refused", "leaves int64") in seen
    assert ("timer", "join") in seen and ("SyncGroupResponse", Errors.NONE) in seen


def test_the_reviews_wrapping_deadlines_are_refused() -> None:
    config = ClassicGroupConfig(initial_rebalance_delay_ms=0, require_known_member_id=False)
    pair = Pair(config)
    req = JoinGroupRequest("a#1", "", (("range", b""),), 10_000, 2**63 - 1)
    pair.call("join", req, 0)
    with pytest.raises(Refused):  # the reference's sync deadline: 2**63
        pair.call("on_timer", ("join",), ("initial", 0, 2**63 - 1), 1)
    pair = Pair(config)
    with pytest.raises(Refused):  # the reference's heartbeat deadline: 2**63 + 25_000
        pair.call("join", req._replace(rebalance_timeout_ms=30_000), 2**63 - 5_000)
    pair = Pair(config)
    pair.call("join", req._replace(rebalance_timeout_ms=30_000), 2**63 - 300_001)  # fits: exact


NOT_INTS = [5.5, 1.9, None, "5"]


def _not_ints() -> list:
    np = pytest.importorskip("numpy")
    return [*NOT_INTS, np.int64(5)]


def test_a_time_timeout_or_generation_that_is_not_an_int_is_refused() -> None:
    """The twin converted a float or a numpy int into int64 (1.9 -> 1) and answered where
    `ClassicGroup` raises TypeError (review 8 F4): now refused with the same TypeError, before
    any change."""
    config = ClassicGroupConfig(initial_rebalance_delay_ms=0, require_known_member_id=False)
    for value in _not_ints():
        pair = Pair(config)
        join = JoinGroupRequest("a#1", "", (("range", b""),), 10_000, 30_000)
        pair.call("join", join, 0)
        mid = list(pair.ref.members)[0]
        pair.call("on_timer", ("join",), ("initial", 0, 30_000), 0)
        snap = pair.twin.snapshot()
        gen = pair.ref.generation_id
        rejoin = join._replace(member_id=mid)
        same_as_reference = [  # ClassicGroup refuses these too (tests/test_classic_group_legs.py)
            ("join", (rejoin, value)),
            ("join", (rejoin._replace(session_timeout_ms=value), 1)),
            ("join", (rejoin._replace(rebalance_timeout_ms=value), 1)),
            ("sync", (SyncGroupRequest("a#1", mid, gen), value)),
            ("heartbeat", (HeartbeatRequest("a#1", mid, gen), value)),
            ("leave", (LeaveGroupRequest("a#1", ((mid, None),)), value)),
            ("on_timer", (("heartbeat", mid), None, value)),
            ("handle", (HeartbeatRequest("a#1", mid, gen), value)),
            ("mark_dead", (value,)),
        ]
        for method, args in same_as_reference:
            with pytest.raises(TypeError):
                getattr(pair.ref, method)(*args)
            with pytest.raises(TypeError) as raised:
                getattr(pair.twin, method)(*args)
            assert "int object expected; got" in str(raised.value), (method, value)
        # a generation or a timer's payload: the reference compares it (1.5 is no generation, 1.0
        # is 1); the twin refuses it rather than truncate it
        for method, args in [
            ("sync", (SyncGroupRequest("a#1", mid, value), 1)),
            ("heartbeat", (HeartbeatRequest("a#1", mid, value), 1)),
            ("validate_offset_commit", (mid, None, value)),
            ("on_timer", (("sync",), ("sync", value), 1)),
            ("on_timer", (("join",), ("initial", value, 0), 1)),
        ]:
            with pytest.raises(TypeError):
                getattr(pair.twin, method)(*args)
        assert pair.twin.snapshot() == snap == pair.ref.snapshot()
        with pytest.raises(TypeError):
            native_group().NativeClassicGroup("g", config, now_ms=value)
