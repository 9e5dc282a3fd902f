"""Properties of the sticky assignors on random groups (hypothesis).

- every partition goes to at most one member, and only to a subscriber;
- every partition of a subscribed topic is assigned exactly once, except, for
  cooperative-sticky, partitions held back because they move between owners;
- equal subscriptions give a balanced assignment (max - min <= 1);
- stickiness (without racks, which may pull partitions toward their rack):
  with the same members nothing moves; when a member leaves an
  equal-subscription group every remaining member keeps what it had;
- cooperative safety: no partition goes straight from one owner to another;
- the bulk steps (general builder's assignment, isBalanced, constrained round
  robin) equal Kafka's one-partition loops;
- the user data codecs write Kafka's bytes, and StickyAssignor's member data
  is exactly what decoding those bytes gives.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance.assign.javacompat import string_key
from kafka_rebalance.assign.rounds import next_round_spec
from kafka_rebalance.assign.sticky import (
    GENERAL_REFERENCE,
    CooperativeStickyAssignor,
    StickyAssignor,
)
from kafka_rebalance.assign.sticky_common import (
    KafkaAssignorFailure,
    RackInfo,
    build_context,
    resolve_owned,
)
from kafka_rebalance.assign.sticky_constrained import ConstrainedAssignmentBuilder
from kafka_rebalance.assign.userdata import (
    StickyUserData,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
    grouped_partitions,
)
from kafka_rebalance.model import GroupSpec, MemberSubscription, TopicMetadata, TopicPartition

# the plain-Python builder (sticky_general.py may be compiled by mypyc; a compiled class cannot
# be subclassed here)
GeneralAssignmentBuilder = GENERAL_REFERENCE.GeneralAssignmentBuilder

ASSIGNORS = [StickyAssignor(), CooperativeStickyAssignor()]
RACKS = ("a", "b", "c")


@st.composite
def groups(draw, uniform: bool | None = None, racks: bool | None = None) -> GroupSpec:
    n_topics = draw(st.integers(1, 4))
    topics = {}
    with_racks = draw(st.booleans()) if racks is None else racks
    for i in range(n_topics):
        n = draw(st.integers(0, 12))
        racks: tuple[frozenset[str], ...] = ()
        if with_racks:
            racks = tuple(
                frozenset(draw(st.sets(st.sampled_from(RACKS), max_size=2))) for _ in range(n)
            )
        topics[f"t{i}"] = TopicMetadata(f"t{i}", n, racks)
    names = list(topics) + ["ghost"]  # "ghost" is subscribed to but absent from metadata
    ids = draw(
        st.lists(
            st.text("abcxyz0123-", min_size=1, max_size=6), min_size=1, max_size=7, unique=True
        )
    )
    same = draw(st.booleans()) if uniform is None else uniform
    common = draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    members = []
    for mid in ids:
        subs = common if same else draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        rack = draw(st.sampled_from((None,) + RACKS)) if with_racks else None
        members.append(MemberSubscription(mid, tuple(subs), rack=rack))
    return GroupSpec(topics, tuple(members))


def _subscribers(spec: GroupSpec) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for m in spec.members:
        for t in m.topics:
            out.setdefault(t, set()).add(m.member_id)
    return out


def _owner_map(spec: GroupSpec) -> dict[TopicPartition, set[str]]:
    owners: dict[TopicPartition, set[str]] = {}
    for m in spec.members:
        for tp in m.owned:
            owners.setdefault(tp, set()).add(m.member_id)
    return owners


def _check_basic(spec: GroupSpec, result, cooperative: bool, strict: bool = True) -> None:
    subs = _subscribers(spec)
    seen: dict[TopicPartition, str] = {}
    for mid, tps in result.items():
        for tp in tps:
            assert tp not in seen, f"{tp} assigned twice"
            seen[tp] = mid
            if strict:
                assert mid in subs.get(tp.topic, set()), f"{tp} given to non-subscriber {mid}"
            assert 0 <= tp.partition < spec.topics[tp.topic].partitions
    owners = _owner_map(spec)
    for t, _who in subs.items():
        meta = spec.topics.get(t)
        if meta is None:
            continue
        for p in range(meta.partitions):
            tp = TopicPartition(t, p)
            if tp not in seen:
                # only cooperative may hold a partition back, and only one somebody owned
                assert cooperative and tp in owners, f"{tp} left unassigned"
    if cooperative and strict:
        for tp, mid in seen.items():
            others = owners.get(tp, set()) - {mid}
            assert not others, f"{tp} went straight from {others} to {mid}"


@given(groups(), st.integers(1, 3))
@settings(max_examples=60, deadline=None)
def test_valid_over_rounds(spec: GroupSpec, rounds: int) -> None:
    for assignor in ASSIGNORS:
        current = spec
        for _ in range(rounds):
            result = assignor.assign(current)
            _check_basic(current, result, assignor.name == "cooperative-sticky")
            current = next_round_spec(current, result)


@given(groups(uniform=True))
@settings(max_examples=60, deadline=None)
def test_balanced_for_equal_subscriptions(spec: GroupSpec) -> None:
    # racks never trade balance away (KIP-881: balance first)
    for assignor in ASSIGNORS:
        result = assignor.assign(spec)
        sizes = [len(v) for v in result.values()]
        assert max(sizes) - min(sizes) <= 1


@given(groups(racks=False), st.data())
@settings(max_examples=60, deadline=None)
def test_sticky_when_nothing_changes(spec: GroupSpec, data) -> None:
    for assignor in ASSIGNORS:
        first = assignor.assign(spec)
        nxt = next_round_spec(spec, first)
        if assignor.name == "cooperative-sticky":
            # the follow-up rebalance hands over what round one held back
            second = assignor.assign(nxt)
            nxt = next_round_spec(nxt, second)
            first = second
        again = assignor.assign(nxt)
        sizes = [len(v) for v in first.values()]
        if max(sizes) - min(sizes) <= 1:
            for mid, tps in first.items():
                assert set(again[mid]) == set(tps), (
                    f"{assignor.name}: {mid} changed with nothing changed"
                )


@given(groups(uniform=True, racks=False), st.data())
@settings(max_examples=60, deadline=None)
def test_members_keep_partitions_when_one_leaves(spec: GroupSpec, data) -> None:
    if len(spec.members) < 2:
        return
    gone = data.draw(st.integers(0, len(spec.members) - 1))
    for assignor in ASSIGNORS:
        first = assignor.assign(spec)
        nxt = next_round_spec(spec, first)
        if assignor.name == "cooperative-sticky":
            first = assignor.assign(nxt)
            nxt = next_round_spec(nxt, first)
        left = replace(nxt, members=tuple(m for i, m in enumerate(nxt.members) if i != gone))
        after = assignor.assign(left)
        for m in left.members:
            assert set(first[m.member_id]) <= set(after[m.member_id]), (
                f"{assignor.name}: {m.member_id} lost partitions"
            )


@given(groups(), st.data())
@settings(max_examples=60, deadline=None)
def test_conflicting_claims_are_resolved(spec: GroupSpec, data) -> None:
    """Random (possibly doubly claimed) owned partitions and generations still give a valid assignment."""
    all_tps = [
        TopicPartition(t, p) for t, meta in spec.topics.items() for p in range(meta.partitions)
    ]
    members = []
    for m in spec.members:
        owned = (
            data.draw(st.lists(st.sampled_from(all_tps), unique=True, max_size=6))
            if all_tps
            else []
        )
        gen = data.draw(st.integers(-1, 3))
        members.append(replace(m, owned=tuple(owned), generation=gen))
    spec = replace(spec, members=tuple(members))
    for assignor in ASSIGNORS:
        try:
            result = assignor.assign(spec)
        except KafkaAssignorFailure:
            # Kafka's general builder dereferences a missing member (NullPointerException)
            # when an older-generation claimant cannot take part in the reassignment
            assert len({m.generation for m in spec.members}) > 1
            continue
        # Kafka gives a partition back to its older-generation claimant without checking
        # that claimant's subscription, and may hand it over directly: only the
        # at-most-once and nothing-lost properties hold here
        _check_basic(spec, result, assignor.name == "cooperative-sticky", strict=False)


class _SequentialGeneral(GeneralAssignmentBuilder):
    """The general builder without the bulk `_assign_run`: one partition at a time, as Kafka loops."""

    def _assign_run(self, members, run) -> None:
        for tp in run:
            self._maybe_assign_partition(tp, None)


def _with_uneven_owned(spec: GroupSpec, data) -> GroupSpec:
    """Members own drawn-size runs of the partitions (generation 1), the rest unowned."""
    all_tps = [
        TopicPartition(t, p) for t, meta in spec.topics.items() for p in range(meta.partitions)
    ]
    members, pool = [], list(all_tps)
    for m in spec.members:
        k = data.draw(st.integers(0, len(pool)))
        members.append(replace(m, owned=tuple(pool[:k]), generation=1))
        pool = pool[k:]
    return replace(spec, members=tuple(members))


@given(groups(uniform=False), st.data())
@settings(max_examples=80, deadline=None)
def test_bulk_run_assignment_matches_one_by_one(spec: GroupSpec, data) -> None:
    spec = _with_uneven_owned(spec, data)  # random prior sizes so the water-filling starts uneven
    md = {m.member_id: CooperativeStickyAssignor.member_data(m) for m in spec.members}
    results = []
    for cls in (GeneralAssignmentBuilder, _SequentialGeneral):
        ctx = build_context(spec, md)
        res = resolve_owned(ctx)
        results.append(cls(ctx, res, RackInfo(ctx)).build())
    assert results[0] == results[1]


# ----------------------------------------------------------------------------- user data codecs


def test_sticky_user_data_bytes() -> None:
    data = encode_sticky_user_data([("t1", 0), ("t0", 2), ("t1", 3)], 5)
    # ARRAY(2) of {STRING topic, ARRAY(INT32)}; "t0" (hash 3644, bin 12) iterates before "t1" (bin 13)
    want = (
        b"\x00\x00\x00\x02"
        + b"\x00\x02t0"
        + b"\x00\x00\x00\x01"
        + b"\x00\x00\x00\x02"
        + b"\x00\x02t1"
        + b"\x00\x00\x00\x02"
        + b"\x00\x00\x00\x00"
        + b"\x00\x00\x00\x03"
        + b"\x00\x00\x00\x05"
    )
    assert data == want
    assert decode_sticky_user_data(data) == StickyUserData((("t0", 2), ("t1", 0), ("t1", 3)), 5)
    v0 = encode_sticky_user_data([("t1", 0)], None)
    assert v0 == b"\x00\x00\x00\x01\x00\x02t1\x00\x00\x00\x01\x00\x00\x00\x00"
    assert decode_sticky_user_data(v0) == StickyUserData((("t1", 0),), None)
    assert decode_sticky_user_data(b"\x01") == StickyUserData((), -1)  # unparseable: ignored
    assert decode_sticky_user_data(None) == StickyUserData((), None)


def test_cooperative_user_data_bytes() -> None:
    assert encode_cooperative_user_data(7) == b"\x00\x00\x00\x07"
    assert encode_cooperative_user_data(-1) == b"\xff\xff\xff\xff"
    assert decode_cooperative_user_data(b"\x00\x00\x00\x07") == 7
    assert decode_cooperative_user_data(b"\x00") == -1
    assert decode_cooperative_user_data(None) is None


@given(
    st.lists(
        st.tuples(st.sampled_from(["t0", "t1", "topic-x", "é", "\U0001f600t"]), st.integers(0, 99)),
        unique=True,
        max_size=40,
    ),
    st.one_of(st.none(), st.integers(0, 1000)),
)
@settings(max_examples=100, deadline=None)
def test_sticky_member_data_is_the_decoded_user_data(owned, gen) -> None:
    decoded = decode_sticky_user_data(encode_sticky_user_data(owned, gen))
    assert list(decoded.partitions) == grouped_partitions(owned)
    assert decoded.generation == gen
    m = MemberSubscription(
        "m", ("t0",), tuple(TopicPartition(t, p) for t, p in owned), -1 if gen is None else gen
    )
    md = StickyAssignor.member_data(m)
    assert list(md.partitions) == list(decoded.partitions) and md.generation == gen


def _is_balanced_as_kafka_loops(b: GeneralAssignmentBuilder) -> bool:
    """isBalanced() exactly as Kafka writes it: every member short of its maximum, every
    partition of its topics it does not hold, compared with that partition's owner."""
    cur = b.current
    sizes = [len(cur[c]) for c in b.sorted_members]
    if min(sizes) >= max(sizes) - 1:
        return True
    owner = {tp: c for c, parts in cur.items() for tp in parts}
    ppt = b.ctx.partitions_per_topic
    for c in b.sorted_members:
        count = len(cur[c])
        if count == b._max_assignment_size(c):
            continue
        for t in b.consumer_topics[c]:
            for p in range(ppt[t]):
                o = owner.get((t, p))
                if (t, p) not in cur[c] and o is not None and count + 1 < len(cur[o]):
                    return False
    return True


@given(groups(uniform=False, racks=False), st.data())
@settings(max_examples=80, deadline=None)
def test_is_balanced_matches_kafkas_loop(spec: GroupSpec, data) -> None:
    md = {m.member_id: CooperativeStickyAssignor.member_data(m) for m in spec.members}
    ctx = build_context(spec, md)
    b = GeneralAssignmentBuilder(ctx, resolve_owned(ctx), RackInfo(ctx))
    assigned = b._assign_owned_partitions()
    unassigned = b._unassigned_partitions(assigned)
    for c in b.current:
        b.sorted_members.add(c)
    b._maybe_assign(unassigned, None, False)
    movable = [tp for tp, c in b.owner.items() if len(b.topic_consumers[tp[0]]) >= 2]
    for _ in range(data.draw(st.integers(0, 25))):
        assert b._is_balanced() == _is_balanced_as_kafka_loops(b)
        if not movable:
            break
        tp = data.draw(st.sampled_from(movable))
        new = data.draw(st.sampled_from(sorted(set(b.topic_consumers[tp[0]]))))
        b._process_movement(tp, new)  # moves the partition (to its owner again, if drawn)
    assert b._is_balanced() == _is_balanced_as_kafka_loops(b)


@given(groups(uniform=True), st.data())
@settings(max_examples=80, deadline=None)
def test_bulk_round_robin_matches_kafkas_loop(spec: GroupSpec, data) -> None:
    spec = _with_uneven_owned(spec, data)
    md = {m.member_id: CooperativeStickyAssignor.member_data(m) for m in spec.members}
    ctx = build_context(spec, md)
    res = resolve_owned(ctx)
    if not res.all_equal:
        return
    states = []
    for step in ("bulk", "stepwise"):
        b = ConstrainedAssignmentBuilder(ctx, res, RackInfo(ctx), {})
        b._assign_owned_partitions()
        unassigned = b._unassigned_partitions()
        b.under.sort(key=string_key)
        b.exact.sort(key=string_key)
        unassigned = b._assign_rack_aware_round_robin(unassigned)
        try:
            (b._assign_round_robin if step == "bulk" else b._assign_round_robin_stepwise)(
                unassigned
            )
        except RuntimeError as e:
            states.append(("error", str(e)))
            continue
        states.append((b.assignment, b.under, b.exact, b.current_over, b.transferring))
    assert states[0] == states[1]
