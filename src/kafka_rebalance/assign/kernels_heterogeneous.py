"""The heterogeneous uniform builder's loops in plain typed Python, compiled by mypyc with kernels.py.

`uniform_heterogeneous` follows uniform_heterogeneous.build_heterogeneous (the
reference, numpy arrays) step by step: keep current partitions of subscribed
topics, deal the free ones to the least loaded subscribers, then balance
topic by topic with Kafka's MemberAssignmentBalancer. No I/O, no project imports
but kernels.py's shared helper and TopicPartition's compiled storage (see kernels.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from kafka_rebalance import native
from kafka_rebalance.assign.kernels import sort_by_key
from kafka_rebalance.model_fields import MemberFields, PartitionFields


def is_compiled() -> bool:
    """True when this module is a fresh mypyc build (kafka_rebalance.native), and so is kernels.py,
    whose sort_by_key it calls."""
    return native.siblings_fresh(__file__, "kernels")


class Balancer:
    """Kafka's MemberAssignmentBalancer over `sizes`: a least loaded range growing right, a most
    loaded range growing left (uniform_heterogeneous._Balancer, the reference)."""

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.sm: list[int] = []
        self.least_end = 0
        self.least_count = -1
        self.next_least = 0
        self.most_start = 0
        self.most_end = 0
        self.most_count = 1
        self.next_most = -1

    def initialize(self, members: list[int]) -> None:
        sizes = self.sizes
        sm = sort_by_key(members, sizes)
        self.sm = sm
        self.least_end = 0
        self.least_count = sizes[sm[0]] - 1
        self.next_least = 0
        self.most_start = len(sm)
        self.most_end = len(sm)
        self.most_count = sizes[sm[-1]] + 1
        self.next_most = len(sm) - 1

    def next_least_loaded(self) -> int:
        sm = self.sm
        if self.next_least >= self.least_end:
            self.least_count += 1
            sizes = self.sizes
            count = self.least_count
            end = self.least_end
            n = len(sm)
            while end < n and sizes[sm[end]] == count:
                end += 1
            self.least_end = end
            self.next_least = 0
        member = sm[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        sm = self.sm
        if self.next_most < self.most_start:
            sizes = self.sizes
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_count = sizes[sm[self.most_start - 1]]
            else:
                self.most_count -= 1
            start = self.most_start
            count = self.most_count
            while start > 0 and sizes[sm[start - 1]] == count:
                start -= 1
            self.most_start = start
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = sm[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        sm = self.sm
        i = self.next_most + 1
        member = sm[i]
        sm[i] = sm[self.most_end - 1]
        sm[self.most_end - 1] = member
        self.most_end -= 1

    def is_balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


def _topic_order(
    js: list[int], counts: list[int], subscribers: list[list[int]], ids: list[Any]
) -> list[int]:
    """Topics by most partitions per subscriber, then fewer subscribers, then topic id."""
    keyed: list[tuple[float, int, Any, int]] = []
    for j in js:
        s = len(subscribers[j])
        keyed.append((-(counts[j] / s), s, ids[j], j))
    keyed.sort()
    return [k[3] for k in keyed]


class SubscriptionPlan:
    """What a group's subscriptions and partition counts decide, before any owned partition is
    read: the subscribed topics in metadata (first seen, iteration order), their counts and flat
    bases, each member's topics, each topic's subscribers, the member-topic matrix, and the topic
    order of assignRemainingPartitions and the balance pass. Built on every call, as Java's builder
    does: a coordinator recomputes a target only after something that changes it (a member joined,
    left or changed its subscription, a count changed), so a plan kept between calls would only
    ever be reused by a benchmark repeating one group (review 3 F1)."""

    def __init__(
        self,
        topics: list[str],
        counts: list[int],
        index: dict[str, int],
        member_cols: list[list[int]],
        base: list[int],
        total: int,
        subscribers: list[list[int]],
        subscribed: bytes,
        ranked_topics: list[int],
    ) -> None:
        self.topics = topics
        self.counts = counts
        self.index = index
        self.member_cols = member_cols
        self.base = base
        self.total = total
        self.subscribers = subscribers
        self.subscribed = subscribed
        self.ranked_topics = ranked_topics


def _subscription_plan(
    members: Any, order: Any, meta: Any, topic_id: Callable[[str], Any]
) -> SubscriptionPlan:
    """The group's plan, from the members' subscriptions in iteration order and the metadata."""
    n = len(members)
    subs: list[Any] = []
    for i in range(n):
        m = members[order[i]]
        sub: Any
        if isinstance(m, MemberFields):
            sub = m.topics
        else:
            sub = m.topics
        subs.append(sub)
    return _build_plan(subs, meta, topic_id)


def _plan_from(built: Any, topic_id: Callable[[str], Any]) -> SubscriptionPlan:
    """The plan from the fields _build_plan computes before the topic order, built elsewhere
    (uniform_native.heterogeneous_plan, its Cython twin)."""
    topics: list[str] = built[0]
    counts: list[int] = built[1]
    subscribers: list[list[int]] = built[6]
    tids = [topic_id(t) for t in topics]
    ranked = _topic_order(list(range(len(topics))), counts, subscribers, tids)
    return SubscriptionPlan(
        topics, counts, built[2], built[3], built[4], built[5], subscribers, built[7], ranked
    )


def _build_plan(subs: list[Any], meta: Any, topic_id: Callable[[str], Any]) -> SubscriptionPlan:
    n = len(subs)
    topics: list[str] = []
    counts: list[int] = []
    index: dict[str, int] = {}
    cols_of: dict[int, list[int]] = {}
    member_cols: list[list[int]] = []
    stamp: list[int] = []  # stamp[j]: the last subscription that named topic j
    for i in range(n):
        sub = subs[i]
        cols = cols_of.get(id(sub))
        if cols is None:
            cols = []
            for t in sub:
                name: str = t
                j = index.get(name, -1)
                if j < 0:
                    tm = meta.get(name)
                    if tm is None:
                        continue  # not in the metadata: nothing of it to assign
                    j = len(topics)
                    index[name] = j
                    topics.append(name)
                    counts.append(int(tm.partitions))
                    stamp.append(-1)
                if stamp[j] == i:
                    continue  # a topic named twice: keep its first place
                stamp[j] = i
                cols.append(j)
            cols_of[id(sub)] = cols
        member_cols.append(cols)
    n_topics = len(topics)
    base: list[int] = []
    total = 0
    for j in range(n_topics):
        base.append(total)
        total += counts[j]
    subscribers: list[list[int]] = [[] for _ in range(n_topics)]
    # subscribed[i * n_topics + j]: 1 when member i subscribes to topic j (bytes: one block, where
    # a list of n x topics bools cost a reference each to make and to free)
    cells = bytearray(n * n_topics)
    for i in range(n):
        row = i * n_topics
        for j in member_cols[i]:
            subscribers[j].append(i)
            cells[row + j] = 1
    subscribed = bytes(cells)
    # every topic (each has a subscriber) in _topic_order's order: the orders of the deal and of
    # the balance pass are its sublists (the key is a total order, so sorting a subset agrees)
    tids = [topic_id(t) for t in topics]
    ranked = _topic_order(list(range(n_topics)), counts, subscribers, tids)
    return SubscriptionPlan(
        topics, counts, index, member_cols, base, total, subscribers, subscribed, ranked
    )


def uniform_heterogeneous(
    members: Any,
    order: Any,
    meta: Any,
    topic_id: Callable[[str], Any],
    objects_of: Callable[[str, int], Any],
    built: Any = None,
    deal: Any = None,
    keep: Any = None,
) -> list[list[Any]]:
    """`UniformHeterogeneousAssignmentBuilder` over `members[order[i]]`, i = 0, 1, ...; the
    reference is uniform_heterogeneous.build_heterogeneous (same steps, numpy arrays). `built`:
    the plan's fields from uniform_native_plan.heterogeneous_plan (None: built here); `deal`:
    uniform_native_balance.deal_and_balance, the unshared path's deal and balance in C (None: here);
    `keep`: uniform_native.keep_unshared, _keep_unshared in C (None, or NotImplemented: here)."""
    n = len(members)
    if built is None:
        plan = _subscription_plan(members, order, meta, topic_id)
    else:
        plan = _plan_from(built, topic_id)
    n_topics = len(plan.topics)
    if n_topics == 0:
        return [[] for _ in range(n)]
    topics = plan.topics
    counts = plan.counts
    index = plan.index
    base = plan.base
    total = plan.total
    subscribed = plan.subscribed
    # maybeRevokePartitions: keep current partitions of still-subscribed topics; on a conflict
    # the later member owns it, the earlier one keeps it in its target too (leftovers)
    sizes: list[int] = [0] * n
    owners: list[int] = [-1] * total
    mine: list[list[Any]] = []
    unshared: Any = NotImplemented
    if keep is not None:
        unshared = keep(
            members, order, plan.index, plan.counts, plan.base, plan.subscribed, owners, sizes, mine
        )
    if unshared is NotImplemented:
        unshared = _keep_unshared(members, order, plan, owners, sizes, mine)
    if unshared:
        return _deal_and_balance_unshared(plan, owners, sizes, mine, objects_of, deal)
    sizes = [0] * n
    owners = [-1] * total
    seen: list[int] = [-1] * total
    kept_member: list[int] = []
    kept_flat: list[int] = []
    kept_obj: list[Any] = []
    for i in range(n):
        row = i * n_topics
        for tp in members[order[i]].owned:
            if isinstance(tp, PartitionFields):  # a TopicPartition: its fields read directly
                tv = tp.topic
                pv = tp.partition
            else:
                tv = tp.topic
                pv = tp.partition
            if not isinstance(tv, str):
                continue  # not a topic name: no subscribed topic equals it
            j = index.get(tv, -1)
            if j < 0:
                continue
            p = cast(int, pv)  # an int, as before (a compiled cast checks it)
            if p < 0 or p >= counts[j]:
                continue
            f = base[j] + p
            if seen[f] == i:
                continue
            seen[f] = i
            if not subscribed[row + j]:
                continue
            kept_member.append(i)
            kept_flat.append(f)
            kept_obj.append(tp)
            sizes[i] += 1
            owners[f] = i
    leftovers: dict[int, set[int]] = {}
    for e in range(len(kept_flat)):
        m = kept_member[e]
        f = kept_flat[e]
        if owners[f] != m:
            got = leftovers.get(m)
            if got is None:
                leftovers[m] = {f}
            else:
                got.add(f)
    _deal_and_balance(plan, owners, sizes, leftovers)
    # result: kept partitions (own objects, in the order given), then the new ones in flat order
    out: list[list[Any]] = [[] for _ in range(n)]
    known: list[bool] = [False] * total
    for e in range(len(kept_flat)):
        m = kept_member[e]
        f = kept_flat[e]
        if owners[f] == m:
            known[f] = True
            out[m].append(kept_obj[e])
        else:
            got = leftovers.get(m)
            if got is not None and f in got:
                out[m].append(kept_obj[e])
    for j in range(n_topics):
        b = base[j]
        objs: Any = None
        for f in range(b, b + counts[j]):
            m = owners[f]
            if m >= 0 and not known[f]:
                if objs is None:
                    objs = objects_of(topics[j], counts[j])
                out[m].append(objs[f - b])
    return out


def _deal_and_balance(
    plan: SubscriptionPlan, owners: list[int], sizes: list[int], leftovers: dict[int, set[int]]
) -> None:
    """assignRemainingPartitions, then the balance pass: `owners` and `sizes` updated in place."""
    counts = plan.counts
    base = plan.base
    subscribers = plan.subscribers
    # assignRemainingPartitions: each topic's free partitions to its least loaded subscribers
    with_free: list[int] = []
    for j in plan.ranked_topics:
        b = base[j]
        for f in range(b, b + counts[j]):
            if owners[f] < 0:
                with_free.append(j)
                break
    for j in with_free:
        ranked = sort_by_key(subscribers[j], sizes)
        at_start = [sizes[m] for m in ranked]  # the sizes the order was taken at
        level = at_start[0] - 1
        end = 0
        nxt = 0
        b = base[j]
        for f in range(b, b + counts[j]):
            if owners[f] >= 0:
                continue
            if nxt >= end:
                level += 1
                while end < len(ranked) and at_start[end] <= level:
                    end += 1
                nxt = 0
            m = ranked[nxt]
            owners[f] = m
            sizes[m] += 1
            nxt += 1
    # balance: per topic, most loaded to least loaded, until a full pass moves nothing
    ordered = [j for j in plan.ranked_topics if len(subscribers[j]) >= 2]
    if ordered:
        balancer = Balancer(sizes)
        last = -1
        done = False
        for _ in range(16):
            for k in range(len(ordered)):
                if k == last:
                    done = True
                    break
                moved = _balance_topic(
                    ordered[k], subscribers, sizes, owners, base, counts, leftovers, balancer
                )
                if moved > 0 or last == -1:
                    last = k
            if done:
                break


def _keep_unshared(
    members: Any,
    order: Any,
    plan: SubscriptionPlan,
    owners: list[int],
    sizes: list[int],
    mine: list[list[Any]],
) -> bool:
    """maybeRevokePartitions when no partition is kept by two members (the usual case): each
    member's kept entries (valid, subscribed, first occurrences, in the order given) go straight
    into its list `mine[i]`, and owners/sizes are filled. False at the first partition an
    earlier member kept too (the caller then starts over with the general scan and its
    leftovers). The same checks, in the same order, as the general scan."""
    index = plan.index
    counts = plan.counts
    base = plan.base
    subscribed = plan.subscribed
    n_topics = len(plan.topics)
    for i in range(len(members)):
        m = members[order[i]]
        owned: Any
        if isinstance(m, MemberFields):
            owned = m.owned
        else:
            owned = m.owned
        entries: tuple[Any, ...] = owned if isinstance(owned, tuple) else tuple(owned)
        kept: list[Any] = []
        mine.append(kept)
        if len(entries) == 0:
            continue
        row = i * n_topics
        last: object = None
        j = -1
        c_j = 0  # counts[j], base[j] and subscribed[row + j], read once per run of a topic
        b_j = 0
        ok_j = False
        held = 0
        for e in range(len(entries)):
            tp = entries[e]
            if isinstance(tp, PartitionFields):  # a TopicPartition: its fields read directly
                tv = tp.topic
                pv = tp.partition
            else:
                tv = tp.topic
                pv = tp.partition
            if tv is not last:
                last = tv
                j = index.get(tv, -1) if isinstance(tv, str) else -1
                if j >= 0:
                    c_j = counts[j]
                    b_j = base[j]
                    ok_j = subscribed[row + j] != 0
            if j < 0:
                continue
            p = cast(int, pv)  # an int, as before (a compiled cast checks it)
            if p < 0 or p >= c_j or not ok_j:
                continue
            f = b_j + p
            o = owners[f]
            if o == i:
                continue  # named twice by this member
            if o >= 0:
                return False  # an earlier member kept it too
            owners[f] = i
            kept.append(tp)
            held += 1
        sizes[i] = held
    return True


def _deal_and_balance_unshared(
    plan: SubscriptionPlan,
    owners: list[int],
    sizes: list[int],
    mine: list[list[Any]],
    objects_of: Callable[[str, int], Any],
    deal: Any = None,
) -> list[list[Any]]:
    """The rest of the builder after _keep_unshared: every member's list is its kept entries
    that it still owns (in the order given), then its new partitions in flat order, as the
    general path's result. No leftovers: nothing was kept twice."""
    keeper = owners[:]  # who kept each partition (-1: nobody)
    kept_sizes = sizes[:]
    if deal is None or not deal(
        plan.ranked_topics, plan.counts, plan.base, plan.subscribers, owners, sizes
    ):
        _deal_and_balance(plan, owners, sizes, {})
    topics = plan.topics
    counts = plan.counts
    base = plan.base
    out = mine
    lost: list[int] = []  # members that lost a kept partition in the balance pass
    for j in range(len(topics)):
        b = base[j]
        objs: Any = None
        for f in range(b, b + counts[j]):
            m = owners[f]
            k = keeper[f]
            if m == k:
                continue  # kept by its owner, or nobody's
            if k >= 0:
                lost.append(k)
            if m >= 0:
                if objs is None:
                    objs = objects_of(topics[j], counts[j])
                out[m].append(objs[f - b])
    for m in lost:
        nk = kept_sizes[m]
        if nk < 0:
            continue  # done
        kept_sizes[m] = -1
        lst = out[m]
        still: list[Any] = []
        for e in range(nk):
            tp = lst[e]
            if isinstance(tp, PartitionFields):
                tv = tp.topic
                pv = tp.partition
            else:
                tv = tp.topic
                pv = tp.partition
            j = plan.index[cast(str, tv)]
            if owners[base[j] + cast(int, pv)] == m:
                still.append(tp)
        out[m] = still + lst[nk:]
    return out


def _balance_topic(
    j: int,
    subscribers: list[list[int]],
    sizes: list[int],
    owners: list[int],
    base: list[int],
    counts: list[int],
    leftovers: dict[int, set[int]],
    balancer: Balancer,
) -> int:
    subs = subscribers[j]
    lo = sizes[subs[0]]
    hi = lo
    for m in subs:
        s = sizes[m]
        if s < lo:
            lo = s
        if s > hi:
            hi = s
    if hi - lo <= 1:
        return 0
    balancer.initialize(subs)
    b = base[j]
    c = counts[j]
    # the topic's partitions grouped by owner (ascending), partition order within an owner
    by_owner: dict[int, list[int]] = {}
    for p in range(c):
        o = owners[b + p]
        lst = by_owner.get(o)
        if lst is None:
            by_owner[o] = [p]
        else:
            lst.append(p)
    moved = 0
    while not balancer.is_balanced():
        most = -1
        while True:
            most = balancer.next_most_loaded()
            if most == -1:
                break
            held = by_owner.get(most)
            if held is None or len(held) == 0:
                balancer.exclude_most_loaded()
                continue
            break
        if most == -1:
            break
        p = by_owner[most].pop()
        least = balancer.next_least_loaded()
        if balancer.is_balanced():
            break
        f = b + p
        old = owners[f]
        if old != -1:
            sizes[old] -= 1
            gone = leftovers.get(old)
            if gone is not None:
                gone.discard(f)
        owners[f] = least
        sizes[least] += 1
        moved += 1
    return moved
