"""The assignors' bulk shortcuts give exactly what their general code gives (order included).

Each shortcut is checked against the path it replaces on random groups:
the fresh sticky deal against the constrained builder, the plain-loop range
and round robin (small groups) against the numpy ones.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.assign import range as range_mod
from kafka_rebalance.assign import roundrobin as rr_mod
from kafka_rebalance.assign.sticky import (
    CooperativeStickyAssignor,
    StickyAssignor,
    _to_assignment,
    fresh_deal,
    run_sticky,
)
from kafka_rebalance.assign.sticky_common import build_context
from kafka_rebalance.model import GroupSpec, MemberSubscription, TopicMetadata


def _as_lists(assignment: dict) -> dict:
    return {m: [(tp.topic, tp.partition) for tp in tps] for m, tps in assignment.items()}


@st.composite
def groups(draw, equal: bool) -> GroupSpec:
    n_topics = draw(st.integers(1, 6))
    topics = {f"t{j}": TopicMetadata(f"t{j}", draw(st.integers(0, 12))) for j in range(n_topics)}
    names = list(topics) + ["missing"]
    ids = draw(
        st.lists(st.text("abcXYZ09-", min_size=1, max_size=4), min_size=1, max_size=9, unique=True)
    )
    shared = tuple(draw(st.lists(st.sampled_from(names), min_size=1, max_size=4, unique=True)))
    members = []
    for mid in ids:
        subs = (
            shared
            if equal
            else tuple(draw(st.lists(st.sampled_from(names), min_size=0, max_size=5, unique=True)))
        )
        members.append(MemberSubscription(mid, subs))
    return GroupSpec(topics, tuple(members))


@settings(max_examples=150, deadline=None)
@given(groups(equal=True))
def test_fresh_deal_equals_the_constrained_builder(spec: GroupSpec) -> None:
    for assignor in (StickyAssignor(), CooperativeStickyAssignor()):
        ctx = build_context(spec, {m.member_id: assignor.member_data(m) for m in spec.members})
        dealt = fresh_deal(spec, ctx)
        if dealt is None:
            continue
        result, _, _ = run_sticky(ctx)
        reference = _to_assignment(spec, result)
        assert _as_lists(dealt) == _as_lists(reference)
        assert list(dealt) == list(reference)


@settings(max_examples=150, deadline=None)
@given(groups(equal=False), st.booleans())
def test_small_loops_equal_the_numpy_paths(spec: GroupSpec, with_empty: bool) -> None:
    small_range, small_rr = range_mod._SMALL, rr_mod._SMALL
    try:
        range_mod._SMALL = rr_mod._SMALL = -1  # force the numpy paths
        big_r = range_mod.ranges_in_member_info_order(spec, with_empty)
        big_rr = rr_mod.RoundRobinAssignor().assign(spec)
        range_mod._SMALL = rr_mod._SMALL = 1 << 30  # force the plain loops
        small_r = range_mod.ranges_in_member_info_order(spec, with_empty)
        small_rr2 = rr_mod.RoundRobinAssignor().assign(spec)
    finally:
        range_mod._SMALL, rr_mod._SMALL = small_range, small_rr
    assert _as_lists(small_r) == _as_lists(big_r) and list(small_r) == list(big_r)
    assert _as_lists(small_rr2) == _as_lists(big_rr) and list(small_rr2) == list(big_rr)
