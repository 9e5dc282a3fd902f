"""Java semantics the Kafka assignors depend on, emulated exactly in Python.

Kafka's assignors iterate `java.util.HashMap`/`HashSet`, sort with
`String.compareTo` and hash `TopicPartition`; their output depends on all
three, so an exact port needs them bit for bit.

API (small on purpose):

- `string_hash(s)`        -> `String.hashCode()` (signed 32-bit, over UTF-16 units)
- `string_key(s)`         -> sort key ordering like `String.compareTo`
- `java_compare(a, b)`    -> sign of `a.compareTo(b)` for two str or two int
- `tp_hash(topic, p)`     -> Kafka `TopicPartition.hashCode()`
- `java_hash(obj)`        -> hashCode of str / int / TopicPartition / (topic, partition)
- `spread(h)`             -> `HashMap.hash`: `h ^ (h >>> 16)` (signed 32-bit)
- `table_size_for(c)`     -> `HashMap.tableSizeFor`
- `JavaHashMap(initial_capacity=None, hasher=java_hash)`
      put, put_if_absent, compute_if_absent, merge_insert, get, remove(key, movable=True),
      `in`, len, keys()/values()/items() in Java iteration order, clear(), put_all(m),
      JavaHashMap.copy_of(m) (`new HashMap<>(m)`), capacity
- `JavaHashSet(initial_capacity=None, hasher=java_hash)`
      add, remove, discard, `in`, len, iteration in Java order, add_all,
      JavaHashSet.copy_of(iterable, size) (`new HashSet<>(collection)`)
- `insertion_order(keys, head=False)` -> iteration order of a fresh HashMap filled with
      put (head=False) or computeIfAbsent (head=True), in bulk when no bin can treeify
- `set_jdk(feature)`      -> choose JDK sizing rules (17: `s/0.75f + 1`; 19+: `ceil(s/0.75)`)

The map keeps a Python dict for values and, per key, its spread hash and a
sequence number giving its position inside a plain bin (appends get rising
positive numbers, head insertions by compute/merge get falling negative ones;
resize splits and removals keep relative order, so sorting a bin by sequence
gives Java's linked order). Bins that Java turns into red-black trees are
emulated node for node (treeify, putTreeVal, removeTreeNode, split,
untreeify, moveRootToFront; see `javacompat_tree`), since their linked order
changes with the tree.

The scalars (hashes, compareTo, sizing rules, JDK choice) live in
`javacompat_hash` and are re-exported here, so this module stays the one
import for callers.

Not emulated: `tieBreakOrder` between two non-Comparable keys with the same
spread hash uses `System.identityHashCode`, which is not deterministic in Java
either; here the new key goes left ("<=").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from .javacompat_hash import (
    DEFAULT_INITIAL_CAPACITY,
    INT_MAX,
    MAXIMUM_CAPACITY,
    hashset_copy_capacity,
    java_compare,
    java_hash,
    jdk_feature,
    new_hash_map_capacity,
    presize_for_copy,
    set_jdk,
    spread,
    string_hash,
    string_key,
    table_size_for,
    tp_hash,
    tree_compare,
)
from .javacompat_tree import TreeBin

__all__ = [
    "JavaHashMap",
    "JavaHashSet",
    "hashset_copy_capacity",
    "insertion_order",
    "java_compare",
    "java_hash",
    "jdk_feature",
    "new_hash_map_capacity",
    "presize_for_copy",
    "set_jdk",
    "spread",
    "string_hash",
    "string_key",
    "table_size_for",
    "tp_hash",
]

TREEIFY_THRESHOLD = 8
UNTREEIFY_THRESHOLD = 6
MIN_TREEIFY_CAPACITY = 64


# ---------------------------------------------------------------------------
# HashMap


class JavaHashMap:
    """`java.util.HashMap` with Java's iteration order (see module docstring)."""

    __slots__ = (
        "_hasher",
        "_vals",
        "_meta",
        "_cap",
        "_thr",
        "_counts",
        "_trees",
        "_order",
        "_tick",
    )

    def __init__(
        self, initial_capacity: int | None = None, hasher: Callable[[Any], int] = java_hash
    ) -> None:
        self._hasher = hasher
        self._vals: dict[Any, Any] = {}
        self._meta: dict[Any, list] = {}  # key -> [spread hash, sequence in bin]
        self._cap = 0
        if initial_capacity is None:
            self._thr = 0
        else:
            if initial_capacity < 0:
                raise ValueError(f"Illegal initial capacity: {initial_capacity}")
            self._thr = table_size_for(min(initial_capacity, MAXIMUM_CAPACITY))
        self._counts: list[int] = []
        self._trees: dict[int, TreeBin] = {}
        self._order: list | None = None
        self._tick = 0

    # -- construction helpers -------------------------------------------------

    @classmethod
    def copy_of(
        cls,
        m: JavaHashMap | Iterable[tuple[Any, Any]],
        size: int | None = None,
        hasher: Callable[[Any], int] = java_hash,
    ) -> JavaHashMap:
        """`new HashMap<>(m)`: presized for m, filled in m's iteration order."""
        out = cls(hasher=hasher if not isinstance(m, JavaHashMap) else m._hasher)
        out.put_all(m, size)
        return out

    def put_all(self, m: JavaHashMap | Iterable[tuple[Any, Any]], size: int | None = None) -> None:
        """`putAll` / putMapEntries: presize (or pre-grow), then put in m's order."""
        items = list(m.items()) if isinstance(m, (JavaHashMap, dict)) else list(m)
        s = len(items) if size is None else size
        if s > 0:
            if self._cap == 0:
                t = presize_for_copy(s)
                if t > self._thr:
                    self._thr = table_size_for(t)
            else:
                while s > self._thr and self._cap < MAXIMUM_CAPACITY:
                    self._resize()
        for k, v in items:
            self.put(k, v)

    @property
    def capacity(self) -> int:
        return self._cap

    # -- reads ----------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._vals)

    def __contains__(self, key: Any) -> bool:
        return key in self._vals

    def get(self, key: Any, default: Any = None) -> Any:
        return self._vals.get(key, default)

    def __getitem__(self, key: Any) -> Any:
        return self._vals[key]

    def keys(self) -> list:
        """Keys in Java iteration order."""
        if self._order is None:
            self._order = self._compute_order()
        return self._order

    def __iter__(self) -> Iterator:
        return iter(self.keys())

    def values(self) -> list:
        vals = self._vals
        return [vals[k] for k in self.keys()]

    def items(self) -> list:
        vals = self._vals
        return [(k, vals[k]) for k in self.keys()]

    def _compute_order(self) -> list:
        meta = self._meta
        if not meta:
            return []
        mask = self._cap - 1
        if self._trees:
            pos: dict[Any, int] = {}
            for tree in self._trees.values():
                for i, node in enumerate(tree.order):
                    pos[node.key] = i
            return sorted(
                meta, key=lambda k: ((meta[k][0] & mask), pos[k] if k in pos else meta[k][1])
            )
        n = len(meta)
        if n < 2048:
            return sorted(meta, key=lambda k: ((meta[k][0] & mask), meta[k][1]))
        keys = list(meta)
        arr = np.fromiter((v[0] for v in meta.values()), dtype=np.int64, count=n) & mask
        seq = np.fromiter((v[1] for v in meta.values()), dtype=np.int64, count=n)
        idx = np.lexsort((seq, arr))
        return [keys[i] for i in idx.tolist()]

    # -- writes ---------------------------------------------------------------

    def _next_tick(self) -> int:
        self._tick += 1
        return self._tick

    def put(self, key: Any, value: Any) -> Any:
        """`put` (putVal): new keys go to the tail of their bin; resize after insert."""
        vals = self._vals
        if key in vals:
            old = vals[key]
            vals[key] = value
            return old
        self._insert(key, value, head=False)
        if len(vals) > self._thr:
            self._resize()
        return None

    def put_if_absent(self, key: Any, value: Any) -> Any:
        vals = self._vals
        if key in vals and vals[key] is not None:
            return vals[key]
        return self.put(key, value)

    def compute_if_absent(self, key: Any, fn: Callable[[Any], Any]) -> Any:
        """`computeIfAbsent`: resize before, new key at the head of its bin."""
        vals = self._vals
        if len(vals) > self._thr or self._cap == 0:
            self._resize()
        if key in vals and vals[key] is not None:
            return vals[key]
        v = fn(key)
        if v is None:
            return None
        if key in vals:
            vals[key] = v
            return v
        self._insert(key, v, head=True)
        return v

    def merge_insert(self, key: Any, value: Any, fn: Callable[[Any, Any], Any]) -> Any:
        """`merge(key, value, fn)` (never removing): head insertion like computeIfAbsent."""
        vals = self._vals
        if len(vals) > self._thr or self._cap == 0:
            self._resize()
        if key in vals:
            old = vals[key]
            v = value if old is None else fn(old, value)
            vals[key] = v
            return v
        self._insert(key, value, head=True)
        return value

    def _insert(self, key: Any, value: Any, head: bool) -> None:
        if self._cap == 0:
            self._resize()
        self._order = None
        h = spread(self._hasher(key))
        i = h & (self._cap - 1)
        self._vals[key] = value
        self._tick += 1
        self._meta[key] = [h, -self._tick if head else self._tick]
        existing = self._counts[i]
        self._counts[i] = existing + 1
        tree = self._trees.get(i)
        if tree is not None:
            tree.put(key, h)
        elif existing >= (TREEIFY_THRESHOLD - 1 if head else TREEIFY_THRESHOLD):
            self._treeify_bin(i)

    def remove(self, key: Any, movable: bool = True) -> Any:
        """`remove(key)`; movable=False is `Iterator.remove` (no untreeify, no root move)."""
        vals = self._vals
        if key not in vals:
            return None
        self._order = None
        old = vals.pop(key)
        h = self._meta.pop(key)[0]
        i = h & (self._cap - 1)
        self._counts[i] -= 1
        tree = self._trees.get(i)
        if tree is not None:
            if tree.remove(key, movable):
                del self._trees[i]
                self._relink_plain([n.key for n in tree.order])
        return old

    def __delitem__(self, key: Any) -> None:
        if key not in self._vals:
            raise KeyError(key)
        self.remove(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self.put(key, value)

    def clear(self) -> None:
        """`clear()` keeps the table size."""
        self._vals.clear()
        self._meta.clear()
        self._trees.clear()
        self._counts = [0] * self._cap
        self._order = None

    def _relink_plain(self, keys_in_order: list) -> None:
        """Make a bin plain again with the given linked order."""
        meta = self._meta
        for k in keys_in_order:
            self._tick += 1
            meta[k][1] = self._tick

    def _bin_keys(self, i: int) -> list:
        mask = self._cap - 1
        meta = self._meta
        ks = [k for k, m in meta.items() if (m[0] & mask) == i]
        ks.sort(key=lambda k: meta[k][1])
        return ks

    def _treeify_bin(self, i: int) -> None:
        if self._cap < MIN_TREEIFY_CAPACITY:
            self._resize()
            return
        keys = self._bin_keys(i)
        meta = self._meta
        self._trees[i] = TreeBin([(k, meta[k][0]) for k in keys], tree_compare)

    def _resize(self) -> None:
        old_cap, old_thr = self._cap, self._thr
        new_thr = 0
        if old_cap > 0:
            if old_cap >= MAXIMUM_CAPACITY:
                self._thr = INT_MAX
                return
            new_cap = old_cap << 1
            if new_cap < MAXIMUM_CAPACITY and old_cap >= DEFAULT_INITIAL_CAPACITY:
                new_thr = old_thr << 1
        elif old_thr > 0:
            new_cap = old_thr
        else:
            new_cap = DEFAULT_INITIAL_CAPACITY
            new_thr = int(0.75 * DEFAULT_INITIAL_CAPACITY)
        if new_thr == 0:
            ft = new_cap * 0.75
            new_thr = int(ft) if new_cap < MAXIMUM_CAPACITY and ft < MAXIMUM_CAPACITY else INT_MAX
        self._thr = new_thr
        self._cap = new_cap
        self._order = None
        mask = new_cap - 1
        counts = [0] * new_cap
        for m in self._meta.values():
            counts[m[0] & mask] += 1
        self._counts = counts
        if not self._trees:
            return
        old_trees = self._trees
        self._trees = {}
        meta = self._meta
        for j, tree in sorted(old_trees.items()):
            lo = [n for n in tree.order if (n.h & old_cap) == 0]
            hi = [n for n in tree.order if (n.h & old_cap) != 0]
            for nodes, index, other in ((lo, j, hi), (hi, j + old_cap, lo)):
                if not nodes:
                    continue
                if len(nodes) <= UNTREEIFY_THRESHOLD:
                    self._relink_plain([n.key for n in nodes])
                elif other:
                    self._trees[index] = TreeBin(
                        [(n.key, meta[n.key][0]) for n in nodes], tree_compare
                    )
                else:
                    self._trees[index] = tree


def insertion_order(
    keys: list, head: bool = False, hasher: Callable[[Any], int] = java_hash
) -> list:
    """Iteration order of a fresh `new HashMap<>()` after inserting the distinct `keys` in order.

    head=False is `put` (new keys at a bin's tail, resize after inserting);
    head=True is `computeIfAbsent`/`merge` (bin head, resize before). When no
    bin can reach the treeify threshold at any table size the map passes
    through, the order is (bin at the final size, insertion position within
    the bin) and is computed in bulk; otherwise the map is emulated.
    """
    n = len(keys)
    if n < 64:
        return _emulated_order(keys, head, hasher)
    h = _spread_hashes(keys, hasher)
    cap = _bulk_capacity(h, head)
    if cap is None:
        return _emulated_order(keys, head, hasher)
    return [keys[i] for i in _bulk_order(h, cap, head).tolist()]


def insertion_order_twice(keys: list) -> tuple[list, list]:
    """`insertion_order(keys)` and `insertion_order` of that order (`put`, Java's hashCode): a
    HashMap filled in another HashMap's iteration order, as the sticky builders fill
    consumerToOwnedPartitions from the leader's map.

    The hashes are computed once. When the bulk path holds for both fillings (no bin can treeify
    in either), the second order is the first: the first lists the keys by (bin, insertion
    position), so inserting them in that order puts each bin's keys in the same relative order
    at the same final size. Otherwise each order is computed as insertion_order does."""
    n = len(keys)
    if n < 64:
        first = _emulated_order(keys, False, java_hash)
        return first, _emulated_order(first, False, java_hash)
    h = _spread_hashes(keys, java_hash)
    cap = _bulk_capacity(h, False)
    if cap is None:
        first = _emulated_order(keys, False, java_hash)
        return first, insertion_order(first)
    order = _bulk_order(h, cap, False)
    first = [keys[i] for i in order.tolist()]
    if _bulk_capacity(h[order], False) != cap:
        return first, insertion_order(first)
    return first, list(first)


def _spread_hashes(keys: list, hasher: Callable[[Any], int]) -> np.ndarray:
    """`HashMap.hash(key)` of every key (signed), as int64: str keys with Java's hashCode in
    one vectorised spread, others one by one."""
    n = len(keys)
    if hasher is java_hash and all(type(k) is str for k in keys):
        u = np.fromiter(map(string_hash, keys), dtype=np.int64, count=n) & 0xFFFFFFFF
        u ^= u >> 16
        u[u >= 0x80000000] -= 0x100000000
        return u
    return np.fromiter((spread(hasher(k)) for k in keys), dtype=np.int64, count=n)


def _bulk_capacity(h: np.ndarray, head: bool) -> int | None:
    """The final table size when no bin can reach the treeify threshold at any size the map
    passes through while the keys with hashes `h` go in in order; None when one might."""
    n = len(h)
    limit = n - 1 if head else n  # size that must fit under the final threshold
    cap = DEFAULT_INITIAL_CAPACITY
    while limit > int(cap * 0.75):
        cap <<= 1
    max_in_bin = TREEIFY_THRESHOLD - 1 if head else TREEIFY_THRESHOLD
    c = DEFAULT_INITIAL_CAPACITY
    while c <= cap:
        # while the table has c slots it holds at most the first 0.75c + 1 keys
        present = h[: min(n, int(c * 0.75) + 1)]
        if int(np.bincount(present & (c - 1), minlength=c).max()) > max_in_bin:
            return None
        c <<= 1
    return cap


def _bulk_order(h: np.ndarray, cap: int, head: bool) -> np.ndarray:
    """Key positions in iteration order: by bin at size `cap`, then insertion position (a bin's
    head first with `head`)."""
    seq = np.arange(len(h), dtype=np.int64)
    if head:
        seq = -seq
    return np.lexsort((seq, h & (cap - 1)))


def _emulated_order(keys: list, head: bool, hasher: Callable[[Any], int]) -> list:
    m = JavaHashMap(hasher=hasher)
    if head:
        for k in keys:
            m.compute_if_absent(k, _true)
    else:
        for k in keys:
            m.put(k, True)
    return list(m.keys())


def _true(_k: Any) -> bool:
    return True


# ---------------------------------------------------------------------------
# HashSet


_PRESENT = True


class JavaHashSet:
    """`java.util.HashSet`: a JavaHashMap whose keys are the elements."""

    __slots__ = ("_map",)

    def __init__(
        self, initial_capacity: int | None = None, hasher: Callable[[Any], int] = java_hash
    ) -> None:
        self._map = JavaHashMap(initial_capacity, hasher)

    @classmethod
    def copy_of(
        cls, items: Iterable[Any], size: int | None = None, hasher: Callable[[Any], int] = java_hash
    ) -> JavaHashSet:
        """`new HashSet<>(collection)`: presized from the collection's size, added in its order."""
        seq = list(items)
        n = len(seq) if size is None else size
        out = cls(hashset_copy_capacity(n), hasher)
        for e in seq:
            out.add(e)
        return out

    def add(self, e: Any) -> bool:
        if e in self._map:
            return False
        self._map.put(e, _PRESENT)
        return True

    def add_all(self, items: Iterable[Any]) -> bool:
        changed = False
        for e in items:
            changed |= self.add(e)
        return changed

    def remove(self, e: Any, movable: bool = True) -> bool:
        if e not in self._map:
            return False
        self._map.remove(e, movable)
        return True

    discard = remove

    def __contains__(self, e: Any) -> bool:
        return e in self._map

    def __len__(self) -> int:
        return len(self._map)

    def __iter__(self) -> Iterator:
        return iter(self._map.keys())

    def to_list(self) -> list:
        return list(self._map.keys())

    def clear(self) -> None:
        self._map.clear()

    @property
    def capacity(self) -> int:
        return self._map.capacity
