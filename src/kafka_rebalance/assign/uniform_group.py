"""The group as KIP-848's `UniformAssignor` sees it, in arrays, for both of its builders.

The server side knows topics by id. Here a topic's id is
`UUID.nameUUIDFromBytes(name as UTF-8)` (the parity vectors' convention):
its order (`Uuid.compareTo`, signed longs) breaks ties between topics and
its `hashCode` places it in Java hash tables. A member's current assignment
is its `owned` partitions; topics absent from metadata are not among a
member's subscribed topic ids (the coordinator resolves names through the
metadata image), and members are iterated in the order of the group's
`HashMap<String, member>`, emulated with `javacompat.JavaHashMap`.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass
from functools import lru_cache
from operator import attrgetter

import numpy as np

from ..model import GroupSpec, TopicPartition
from .javacompat import JavaHashMap, JavaHashSet, string_hash
from .tpcache import partition_objects

_TOPIC = attrgetter("topic")
_PARTITION = attrgetter("partition")
_MEMBER_ID = attrgetter("member_id")
_TOPICS = attrgetter("topics")
_OWNED = attrgetter("owned")


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def _signed64(b: bytes) -> int:
    v = int.from_bytes(b, "big")
    return v - (1 << 64) if v & (1 << 63) else v


@lru_cache(maxsize=65536)
def topic_id(name: str) -> tuple[int, int]:
    """`UUID.nameUUIDFromBytes(name.getBytes(UTF_8))` as Kafka `Uuid(msb, lsb)` (signed longs).

    Tuples of the two signed longs compare like `Uuid.compareTo`.
    """
    md5 = bytearray(hashlib.md5(name.encode("utf-8")).digest())
    md5[6] = (md5[6] & 0x0F) | 0x30  # version 3
    md5[8] = (md5[8] & 0x3F) | 0x80  # IETF variant
    return _signed64(bytes(md5[:8])), _signed64(bytes(md5[8:]))


def topic_id_string(name: str) -> str:
    """The id in `java.util.UUID.toString()` form (for people and logs)."""
    msb, lsb = topic_id(name)
    h = f"{msb & ((1 << 64) - 1):016x}{lsb & ((1 << 64) - 1):016x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@lru_cache(maxsize=65536)
def topic_id_hash(name: str) -> int:
    """Kafka `Uuid.hashCode()` of the topic's id: fold of msb ^ lsb to 32 bits."""
    msb, lsb = topic_id(name)
    x = (msb ^ lsb) & ((1 << 64) - 1)
    return _int32((x >> 32) ^ x)


@dataclass(slots=True)
class UniformGroup:
    """The assignor's view of the group (Kafka's GroupSpec + SubscribedTopicDescriber), as arrays.

    Topics are the subscribed topics present in metadata, numbered 0..T-1;
    partition p of topic j has the flat index `base[j] + p`. Members are
    numbered in HashMap iteration order (groupSpec.memberIds()).
    """

    member_ids: list[str]
    subscriptions: list[list[str]]  # per member: subscribed topics in metadata, distinct, as given
    subscribed_names: list[
        tuple[str, ...]
    ]  # per member: subscribed topic names as given (may be absent)
    owned: list[tuple[TopicPartition, ...]]  # per member: current assignment, in order given
    topics: list[str]
    topic_index: dict[str, int]
    counts: np.ndarray  # partitions per topic
    base: np.ndarray  # flat index of each topic's partition 0
    subscribed: np.ndarray  # bool [member, topic]

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def flat_topic(self, flat: np.ndarray) -> np.ndarray:
        """Topic index of each flat partition index."""
        return np.searchsorted(self.base, flat, side="right") - 1

    def topic_partitions(self, flat: np.ndarray) -> list[TopicPartition]:
        """TopicPartition objects for flat indices, in that order."""
        if len(flat) == 0:
            return []
        return partition_objects(self.topics, self.counts.tolist())[flat].tolist()


@dataclass(slots=True)
class OwnedArrays:
    """Every member's current assignment flattened: one row per owned entry, members in order."""

    member: np.ndarray  # member index of the entry
    topic: np.ndarray  # topic index, -1 when the topic is not a subscribed topic in metadata
    partition: np.ndarray
    flat: np.ndarray  # flat partition index, -1 when the entry is not a partition of a known topic
    first: np.ndarray  # bool: first occurrence of (member, flat) among valid entries
    objects: list[
        TopicPartition
    ]  # the entries' TopicPartition objects (reused for kept partitions)


def member_iteration_order(spec: GroupSpec) -> list[str]:
    """Member ids as a `HashMap<String, ...>` filled in `spec.members` order iterates them."""
    return list(hashmap_order(tuple(map(_MEMBER_ID, spec.members))))


@lru_cache(maxsize=16)
def hashmap_order(ids: tuple[str, ...]) -> tuple[str, ...]:
    """Keys of a `HashMap<String, ...>` filled with `ids` in order, as it iterates them.

    Cached: a group's members rarely change between rebalances."""
    fast = _plain_hashmap_order(list(ids))
    if fast is not None:
        return tuple(fast)
    m = JavaHashMap()
    for mid in ids:
        m.put(mid, True)
    return tuple(m.keys())


_ID_HASHES: dict[str, int] = {}
MAX_ID_HASHES = 1_000_000


def member_id_hashes(ids: tuple[str, ...]) -> list[int]:
    """`String.hashCode()` of each id (unsigned 32-bit), remembered per id as a Java String caches
    its own hash: a group's members mostly stay from one epoch to the next. Bounded: past
    MAX_ID_HASHES ids it starts over."""
    known = _ID_HASHES
    missing = [mid for mid in ids if mid not in known]
    fresh: dict[str, int] = {}
    if missing:
        if len(missing) < 64:  # a few new members (an epoch of a rolling restart): no numpy
            fresh = {mid: string_hash(mid) & 0xFFFFFFFF for mid in missing}
        else:
            fresh = dict(zip(missing, _string_hashes(missing).tolist()))
        if len(known) + len(fresh) > MAX_ID_HASHES:
            known.clear()
        known.update(fresh)
    try:
        return list(map(known.__getitem__, ids))
    except KeyError:  # another thread started the cache over meanwhile: this call's own hashes
        return [_id_hash(mid, known, fresh) for mid in ids]


def _id_hash(mid: str, known: dict[str, int], fresh: dict[str, int]) -> int:
    h = known.get(mid)
    if h is None:
        h = fresh.get(mid)
    return (string_hash(mid) & 0xFFFFFFFF) if h is None else h


def _string_hashes(keys: list[str]) -> np.ndarray:
    """`String.hashCode()` of each key as unsigned 32-bit values; ASCII keys of one length at a time in numpy."""
    n = len(keys)
    out = np.zeros(n, dtype=np.int64)
    by_length: dict[int, list[int]] = {}
    for i, k in enumerate(keys):
        if k.isascii():
            by_length.setdefault(len(k), []).append(i)
        else:
            out[i] = string_hash(k) & 0xFFFFFFFF
    for length, idx in by_length.items():
        if length == 0:
            continue
        codes = np.frombuffer("".join(keys[i] for i in idx).encode("ascii"), dtype=np.uint8)
        codes = codes.reshape(len(idx), length).astype(np.uint32)
        powers = np.array(
            [pow(31, length - 1 - j, 1 << 32) for j in range(length)], dtype=np.uint32
        )
        # uint32 products and sums wrap mod 2**32, like Java int arithmetic
        out[np.array(idx)] = (codes * powers).sum(axis=1, dtype=np.uint32).astype(np.int64)
    return out


def _plain_hashmap_order(keys: list[str]) -> list[str] | None:
    """Iteration order of `new HashMap<>()` after `put`s of distinct keys, or None if a bin treeified.

    Without tree bins the order is bucket by bucket (spread hash & (capacity - 1)),
    insertion order within a bucket (resizes split bins keeping order). A bin
    treeifies only on reaching 9 nodes; if that may have happened at any
    capacity the table went through, the caller falls back to JavaHashMap.
    """
    n = len(keys)
    if n == 0:
        return []
    h = _string_hashes(keys)
    spread = h ^ (h >> 16)
    cap = 16
    while True:
        threshold = int(cap * 0.75)
        present = min(
            n, threshold + 1
        )  # the put that crosses the threshold happens at this capacity
        if np.bincount(spread[:present] & (cap - 1)).max() > 8:
            return None
        if n <= threshold:
            break
        cap <<= 1
    order = np.lexsort((np.arange(n), spread & (cap - 1)))
    return [keys[i] for i in order.tolist()]


def current_assignment(owned: tuple[TopicPartition, ...]) -> list[tuple[str, list[int]]]:
    """A member's current assignment `Map<Uuid, Set<Integer>>` in Java iteration order.

    Built as `map.computeIfAbsent(topicId, k -> new HashSet<>()).add(p)` in
    the owned order (so a new topic goes to the head of its bin), the parity
    vectors' construction.
    """
    m = JavaHashMap(hasher=topic_id_hash)
    for tp in owned:
        m.compute_if_absent(tp.topic, _new_set).add(tp.partition)
    return [(t, s.to_list()) for t, s in m.items()]


def _new_set(_key: object) -> JavaHashSet:
    return JavaHashSet()


def group_view(spec: GroupSpec) -> UniformGroup:
    by_id = dict(zip(map(_MEMBER_ID, spec.members), spec.members))
    ids = member_iteration_order(spec)
    members = list(map(by_id.__getitem__, ids))
    topics_of = list(map(_TOPICS, members))
    # members with equal subscriptions (usually most of them) are handled once per
    # subscription; members sharing one tuple object are grouped without hashing it
    obj_ids = list(map(id, topics_of))
    by_object = dict(zip(obj_ids, topics_of))
    group_of: dict[tuple[str, ...], int] = {}
    group_of_object = {o: group_of.setdefault(t, len(group_of)) for o, t in by_object.items()}
    member_group = list(map(group_of_object.__getitem__, obj_ids))
    group_subs = [[t for t in dict.fromkeys(topics) if t in spec.topics] for topics in group_of]
    subs = list(map(group_subs.__getitem__, member_group))
    topic_names = list(dict.fromkeys(t for lst in group_subs for t in lst))
    topic_index = {t: j for j, t in enumerate(topic_names)}
    counts = np.array([spec.topics[t].partitions for t in topic_names], dtype=np.int64)
    base = np.zeros(len(topic_names), dtype=np.int64)
    if len(topic_names) > 1:
        base[1:] = np.cumsum(counts)[:-1]
    subscribed = np.zeros((len(members), len(topic_names)), dtype=bool)
    if len(group_subs) == 1:
        if group_subs[0]:
            cols = np.array([topic_index[t] for t in group_subs[0]], dtype=np.int64)
            subscribed[:, cols] = True
    else:
        # one (member, topic) cell per subscription, filled in one numpy call
        group_cols = [[topic_index[t] for t in lst] for lst in group_subs]
        member_cols = list(map(group_cols.__getitem__, member_group))
        lens = np.fromiter(map(len, member_cols), dtype=np.int64, count=len(members))
        cells = int(lens.sum())
        rows = np.repeat(np.arange(len(members), dtype=np.int64), lens)
        cols = np.fromiter(itertools.chain.from_iterable(member_cols), np.int64, count=cells)
        subscribed[rows, cols] = True
    return UniformGroup(
        member_ids=ids,
        subscriptions=subs,
        subscribed_names=topics_of,
        owned=list(map(_OWNED, members)),
        topics=topic_names,
        topic_index=topic_index,
        counts=counts,
        base=base,
        subscribed=subscribed,
    )


def flatten_owned(group: UniformGroup) -> OwnedArrays:
    """All owned entries as arrays; entries of unknown topics or out-of-range partitions get flat -1."""
    objects = list(itertools.chain.from_iterable(group.owned))
    lens = list(map(len, group.owned)) if objects else [0] * len(group.owned)
    n = len(objects)
    member = np.repeat(np.arange(len(lens), dtype=np.int64), lens)
    topic = np.fromiter(
        map(group.topic_index.get, map(_TOPIC, objects), itertools.repeat(-1, n)),
        dtype=np.int64,
        count=n,
    )
    partition = np.fromiter(map(_PARTITION, objects), dtype=np.int64, count=n)
    ok = topic >= 0
    ok[ok] = (partition[ok] >= 0) & (partition[ok] < group.counts[topic[ok]])
    flat = np.full(n, -1, dtype=np.int64)
    flat[ok] = group.base[topic[ok]] + partition[ok]
    first = np.zeros(n, dtype=bool)
    if n:
        key = member * (group.total + 1) + flat
        idx = np.flatnonzero(ok)
        _, first_pos = np.unique(key[idx], return_index=True)
        first[idx[first_pos]] = True
    return OwnedArrays(member, topic, partition, flat, first, objects)
