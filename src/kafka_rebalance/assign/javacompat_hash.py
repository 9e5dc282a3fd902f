"""Java's scalar semantics behind the Kafka assignors' output: hashes, order, table sizes.

`String.hashCode()`, Kafka `TopicPartition.hashCode()`, `String.compareTo`
(UTF-16 code units), `HashMap.hash`/`tableSizeFor` and the presizing rules
of `new HashMap<>(m)` / `new HashSet<>(c)` (which changed in JDK 19: pick
one with `set_jdk`), plus the key order inside a tree bin. The hash tables
built on them are in `javacompat`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..fields import INT32_MAX

MAXIMUM_CAPACITY = 1 << 30
DEFAULT_INITIAL_CAPACITY = 16
INT_MAX = INT32_MAX  # Integer.MAX_VALUE

_JDK = {"feature": 17}


def set_jdk(feature: int) -> None:
    """Select the JDK whose HashMap/HashSet presizing rules apply (changed in JDK 19)."""
    _JDK["feature"] = feature


def jdk_feature() -> int:
    return _JDK["feature"]


# ---------------------------------------------------------------------------
# Scalars


def _to_int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - 0x100000000 if x & 0x80000000 else x


_STR_HASH_CACHE: dict[str, int] = {}


def string_hash(s: str) -> int:
    """`String.hashCode()`: s[0]*31^(n-1) + ... over UTF-16 code units, as a signed int."""
    h = _STR_HASH_CACHE.get(s)
    if h is not None:
        return h
    acc = 0
    if s.isascii() or max(s) < "\U00010000":
        for ch in s:
            acc = (acc * 31 + ord(ch)) & 0xFFFFFFFF
    else:
        data = s.encode("utf-16-be", "surrogatepass")
        for i in range(0, len(data), 2):
            acc = (acc * 31 + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    h = acc - 0x100000000 if acc & 0x80000000 else acc
    if len(_STR_HASH_CACHE) < 1_000_000:
        _STR_HASH_CACHE[s] = h
    return h


def string_key(s: str) -> str:
    """Sort key that orders strings like `String.compareTo` (UTF-16 code units).

    Code-point order equals UTF-16 order unless supplementary characters are
    present; those are rewritten as their surrogate pair.
    """
    if s.isascii() or max(s) < "\U00010000":
        return s
    out = []
    for ch in s:
        c = ord(ch)
        if c >= 0x10000:
            c -= 0x10000
            out.append(chr(0xD800 + (c >> 10)))
            out.append(chr(0xDC00 + (c & 0x3FF)))
        else:
            out.append(ch)
    return "".join(out)


def java_compare(a: Any, b: Any) -> int:
    """Sign of `a.compareTo(b)` for two strings (UTF-16 order) or two ints."""
    if isinstance(a, str):
        ka, kb = string_key(a), string_key(b)
    else:
        ka, kb = a, b
    return (ka > kb) - (ka < kb)


def tp_hash(topic: str, partition: int) -> int:
    """Kafka `TopicPartition.hashCode()`: 31 * (31 + partition) + topic.hashCode()."""
    return _to_int32(31 * (31 + partition) + string_hash(topic))


def java_hash(obj: Any) -> int:
    """hashCode of a str, int (`Integer`), Kafka TopicPartition or (topic, partition) tuple."""
    if isinstance(obj, str):
        return string_hash(obj)
    if isinstance(obj, int):
        return _to_int32(obj)
    if isinstance(obj, tuple):
        return tp_hash(obj[0], obj[1])
    topic = getattr(obj, "topic", None)
    if topic is not None:
        return tp_hash(topic, obj.partition)
    raise TypeError(f"no Java hashCode emulation for {type(obj).__name__}")


def spread(h: int) -> int:
    """`HashMap.hash(key)`: h ^ (h >>> 16), kept signed (trees compare it signed)."""
    u = h & 0xFFFFFFFF
    u ^= u >> 16
    return u - 0x100000000 if u & 0x80000000 else u


def table_size_for(cap: int) -> int:
    """`HashMap.tableSizeFor`: the power of two >= cap (1 for cap <= 1)."""
    if cap <= 1:
        return 1
    n = 1 << (cap - 1).bit_length()
    return MAXIMUM_CAPACITY if n >= MAXIMUM_CAPACITY else n


def _f32_div(n: int, d: float) -> float:
    return float(np.float32(n) / np.float32(d))


def presize_for_copy(s: int) -> int:
    """Initial threshold `putMapEntries` sets for an empty map receiving s mappings."""
    if _JDK["feature"] >= 19:
        t = math.ceil(s / 0.75)
    else:
        ft = float(np.float32(_f32_div(s, 0.75)) + np.float32(1.0))
        t = int(ft)
    return min(t, MAXIMUM_CAPACITY)


def hashset_copy_capacity(n: int) -> int:
    """initialCapacity `new HashSet<>(collection)` passes to its HashMap."""
    if _JDK["feature"] >= 19:
        return math.ceil(max(n, 12) / 0.75)
    return max(int(_f32_div(n, 0.75)) + 1, 16)


def new_hash_map_capacity(n: int) -> int:
    """`HashMap.calculateHashMapCapacity(n)` used by `HashMap.newHashMap(n)` (JDK 19+)."""
    return math.ceil(n / 0.75)


# ---------------------------------------------------------------------------
# Key order inside tree bins


def _comparable(a: Any, b: Any) -> int:
    """compareComparables, or 0 when the keys are not mutually Comparable (String/Integer)."""
    if isinstance(a, str) and isinstance(b, str):
        return java_compare(a, b)
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool):
        return (a > b) - (a < b)
    return 0


def _tie_break(a: Any, b: Any) -> int:
    na, nb = _class_name(a), _class_name(b)
    d = (na > nb) - (na < nb)
    return d if d != 0 else -1


def _class_name(o: Any) -> str:
    if isinstance(o, str):
        return "java.lang.String"
    if isinstance(o, int):
        return "java.lang.Integer"
    return "org.apache.kafka.common.TopicPartition"


def tree_compare(a: Any, b: Any) -> int:
    """Direction in a tree bin for keys with equal hashes: compareComparables, then tieBreakOrder."""
    d = _comparable(a, b)
    return d if d != 0 else _tie_break(a, b)
