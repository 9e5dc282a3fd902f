"""StickyAssignor user data lists topics in Java's HashMap order, resize checks included.

Expected orders printed by OpenJDK 17: `new HashMap<>()` filled with
`computeIfAbsent(topic, ...)` once per partition, then `keySet()`.
"""

from kafka_rebalance.assign.userdata import group_partitions_by_topic

TOPICS = [f"topic-{j}" for j in range(25)]

JAVA_ONE_CALL_PER_TOPIC = (
    "topic-6,topic-7,topic-8,topic-9,topic-0,topic-1,topic-20,topic-2,topic-21,topic-10,topic-3,"
    "topic-22,topic-11,topic-4,topic-23,topic-12,topic-5,topic-24,topic-13,topic-14,topic-15,"
    "topic-16,topic-17,topic-18,topic-19"
)
# one more call for a topic already present: computeIfAbsent's resize check doubles the table
JAVA_TRAILING_CALL = (
    "topic-6,topic-7,topic-8,topic-9,topic-0,topic-1,topic-2,topic-10,topic-3,topic-11,topic-4,"
    "topic-12,topic-5,topic-24,topic-20,topic-21,topic-22,topic-23,topic-13,topic-14,topic-15,"
    "topic-16,topic-17,topic-18,topic-19"
)


def _order(topics: list[str]) -> str:
    return ",".join(t for t, _ in group_partitions_by_topic([(t, 0) for t in topics]))


def test_order_without_trailing_call():
    assert _order(TOPICS) == JAVA_ONE_CALL_PER_TOPIC


def test_a_trailing_call_resizes_as_java_does():
    assert _order(TOPICS + ["topic-0"]) == JAVA_TRAILING_CALL
    grouped = dict(group_partitions_by_topic([(t, 0) for t in TOPICS + ["topic-0"]]))
    assert grouped["topic-0"] == [0, 0]
