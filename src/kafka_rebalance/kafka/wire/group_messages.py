"""Group APIs the admin clients do not give us in full: ConsumerGroupDescribe and DescribeGroups v5.

Transcribed from Kafka's `common/message/ConsumerGroupDescribe{Request,Response}.json` (v0, the
KIP-848 describe: member epochs, target assignments, group and assignment epochs) and
`DescribeGroups{Request,Response}.json` (v5: the classic members' raw subscription metadata,
which the what-if assignment decodes). confluent-kafka's describe has neither the epochs nor
the raw metadata.
"""

from __future__ import annotations

from ...fields import INT32_MIN
from .codec import F, Message, S, Versions

DESCRIBE_GROUPS, CONSUMER_GROUP_DESCRIBE = 15, 69


def _msg(name: str, key: int, valid: str, flexible: str, *fields) -> Message:
    return Message(name, key, Versions.parse(valid), Versions.parse(flexible), tuple(fields))


DESCRIBE_GROUPS_REQUEST = _msg(
    "DescribeGroupsRequest",
    DESCRIBE_GROUPS,
    "0-5",
    "5+",
    F("groups", "[]string"),
    F("include_authorized_operations", "bool", "3+"),
)
DESCRIBE_GROUPS_RESPONSE = _msg(
    "DescribeGroupsResponse",
    DESCRIBE_GROUPS,
    "0-5",
    "5+",
    F("throttle_time_ms", "int32", "1+"),
    F(
        "groups",
        [
            F("error_code", "int16"),
            F("group_id", "string"),
            F("group_state", "string"),
            F("protocol_type", "string"),
            F("protocol_data", "string"),
            F(
                "members",
                [
                    F("member_id", "string"),
                    F("group_instance_id", "string", "4+", nullable="4+"),
                    F("client_id", "string"),
                    F("client_host", "string"),
                    F("member_metadata", "bytes"),
                    F("member_assignment", "bytes"),
                ],
            ),
            F("authorized_operations", "int32", "3+", default=INT32_MIN),
        ],
    ),
)

_TOPIC_PARTITIONS = (
    F("topic_id", "uuid"),
    F("topic_name", "string"),
    F("partitions", "[]int32"),
)

CONSUMER_GROUP_DESCRIBE_REQUEST = _msg(
    "ConsumerGroupDescribeRequest",
    CONSUMER_GROUP_DESCRIBE,
    "0",
    "0+",
    F("group_ids", "[]string"),
    F("include_authorized_operations", "bool"),
)
CONSUMER_GROUP_DESCRIBE_RESPONSE = _msg(
    "ConsumerGroupDescribeResponse",
    CONSUMER_GROUP_DESCRIBE,
    "0",
    "0+",
    F("throttle_time_ms", "int32"),
    F(
        "groups",
        [
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
            F("group_id", "string"),
            F("group_state", "string"),
            F("group_epoch", "int32"),
            F("assignment_epoch", "int32"),
            F("assignor_name", "string"),
            F(
                "members",
                [
                    F("member_id", "string"),
                    F("instance_id", "string", nullable="0+"),
                    F("rack_id", "string", nullable="0+"),
                    F("member_epoch", "int32"),
                    F("client_id", "string"),
                    F("client_host", "string"),
                    F("subscribed_topic_names", "[]string"),
                    F("subscribed_topic_regex", "string", nullable="0+"),
                    S("assignment", [F("topic_partitions", _TOPIC_PARTITIONS)]),
                    S("target_assignment", [F("topic_partitions", _TOPIC_PARTITIONS)]),
                ],
            ),
            F("authorized_operations", "int32", default=INT32_MIN),
        ],
    ),
)


def encode_group_request(request: Message, version: int, correlation_id: int, body: dict) -> bytes:
    """A framed request (header v2 in flexible versions, else v1) for one of the messages above."""
    from .messages import REQUEST_HEADER
    from .protocol import frame

    head = REQUEST_HEADER.encode(
        2 if request.is_flexible(version) else 1,
        {
            "request_api_key": request.api_key,
            "request_api_version": version,
            "correlation_id": correlation_id,
            "client_id": "kafka-rebalance",
        },
    )
    return frame(head + request.encode(version, body))


def decode_group_response(response: Message, version: int, payload: bytes) -> tuple[int, dict]:
    """(correlation id, body) of a response frame's payload."""
    from .codec import Reader
    from .messages import RESPONSE_HEADER

    r = Reader(payload)
    head = RESPONSE_HEADER.decode(1 if response.is_flexible(version) else 0, r)
    return head["correlation_id"], response.decode(version, r)


OFFSET_DELETE = 47

OFFSET_DELETE_REQUEST = _msg(
    "OffsetDeleteRequest",
    OFFSET_DELETE,
    "0",
    "none",
    F("group_id", "string"),
    F("topics", [F("name", "string"), F("partitions", [F("partition_index", "int32")])]),
)
OFFSET_DELETE_RESPONSE = _msg(
    "OffsetDeleteResponse",
    OFFSET_DELETE,
    "0",
    "none",
    F("error_code", "int16"),
    F("throttle_time_ms", "int32"),
    F(
        "topics",
        [
            F("name", "string"),
            F("partitions", [F("partition_index", "int32"), F("error_code", "int16")]),
        ],
    ),
)
