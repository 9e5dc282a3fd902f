"""Which `__consumer_offsets` partition (and so which broker) coordinates a group.

Kafka: `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`, where
`Utils.abs(Integer.MIN_VALUE)` is 0 (where Math.abs would stay negative).
"""

from __future__ import annotations

from ..fields import INT32_MIN

OFFSETS_TOPIC_NUM_PARTITIONS = 50


def _java_string_hash(s: str) -> int:
    """Java's `String.hashCode` over UTF-16 code units, as a signed 32-bit int."""
    try:
        from ..assign.javacompat import string_hash  # the shared Java-compat helper
    except ImportError:
        h = 0
        for unit in _utf16_units(s):
            h = (31 * h + unit) & 0xFFFFFFFF
        return h - (1 << 32) if h & 0x80000000 else h
    return string_hash(s)


def _utf16_units(s: str):
    data = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        yield (data[i] << 8) | data[i + 1]


def kafka_utils_abs(n: int) -> int:
    """Kafka's `Utils.abs`: |n|, except Integer.MIN_VALUE maps to 0."""
    return 0 if n == INT32_MIN else abs(n)


def partition_for(
    group_id: str, offsets_topic_num_partitions: int = OFFSETS_TOPIC_NUM_PARTITIONS
) -> int:
    """The `__consumer_offsets` partition whose leader is the group's coordinator."""
    if offsets_topic_num_partitions <= 0:
        raise ValueError("offsets.topic.num.partitions must be > 0")
    return kafka_utils_abs(_java_string_hash(group_id)) % offsets_topic_num_partitions
