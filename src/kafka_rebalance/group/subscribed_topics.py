"""The topics a classic group subscribes to, read from its members' ConsumerProtocolSubscription
metadata (ClassicGroup.computeSubscribedTopics); offset expiry and the classic coordinator use it."""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

from .records import GroupMetadataValue

CONSUMER_PROTOCOL_TYPE = "consumer"


def consumer_protocol_topics(buf: bytes | bytearray | memoryview) -> list[str]:
    """The topics of a ConsumerProtocolSubscription, read as version 0 whatever its header says.

    ClassicGroup.computeSubscribedTopics reads the version header, then parses version 0 (topics,
    user data), the prefix of every version; bytes left over are ignored. Raises ValueError where
    Kafka's parse throws (buffer underflow, a null topic array or topic name); invalid UTF-8 is
    replaced, as Java's `new String(bytes, UTF_8)` does.
    """
    buf = bytes(buf)
    size = len(buf)
    if size < 6:
        raise ValueError("subscription too short")
    (n,) = struct.unpack_from(">i", buf, 2)
    pos, out = 6, []
    if n < 0 or n > size - pos:
        raise ValueError("bad topic count")
    for _ in range(n):
        if pos + 2 > size:
            raise ValueError("truncated subscription")
        (ln,) = struct.unpack_from(">h", buf, pos)
        pos += 2
        if ln < 0 or pos + ln > size:
            raise ValueError("truncated subscription")
        out.append(buf[pos : pos + ln].decode("utf-8", errors="replace"))
        pos += ln
    if pos + 4 > size:  # userData: nullable bytes
        raise ValueError("truncated subscription")
    (ud,) = struct.unpack_from(">i", buf, pos)
    if ud > size - pos - 4:
        raise ValueError("truncated subscription user data")
    return out


def metadata_topics(meta: object) -> list[str]:
    """Topics of one member's protocol metadata: ConsumerProtocolSubscription bytes, or an already
    decoded subscription (anything with `.topics`, as the simulator passes); ValueError otherwise."""
    if isinstance(meta, (bytes, bytearray, memoryview)):
        return consumer_protocol_topics(meta)
    topics = getattr(meta, "topics", None)
    if topics is None:
        raise ValueError(f"not a consumer protocol subscription: {type(meta).__name__}")
    return list(topics)


def topics_of_subscriptions(metadata: Iterable[Any]) -> frozenset[str] | None:
    """The union of the subscriptions' topics (ClassicGroup.computeSubscribedTopics), or None when
    one is not a valid ConsumerProtocolSubscription: Kafka logs the SchemaException and knows none."""
    topics: set[str] = set()
    try:
        for meta in metadata:
            topics.update(metadata_topics(meta))
    except ValueError:
        return None
    return frozenset(topics)


def subscribed_topics(value: GroupMetadataValue) -> frozenset[str] | None:
    """ClassicGroup.computeSubscribedTopics: None unless the protocol type is "consumer" and every
    member's subscription parses; the empty set for a group without members."""
    if value.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    if not value.members:
        return frozenset()
    if value.protocol is None:
        return None
    return topics_of_subscriptions(m.subscription for m in value.members)
