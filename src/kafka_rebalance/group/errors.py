"""Kafka protocol error codes the group coordinator and its clients exchange.

Numeric codes are Kafka's (clients/.../common/protocol/Errors.java), so a
code written into a simulated response or a `__consumer_offsets`-adjacent
record means what it means on the wire.
"""

from __future__ import annotations

from enum import IntEnum


class Errors(IntEnum):
    """The subset of Kafka's `Errors` the group protocols and offset APIs return."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    UNKNOWN_TOPIC_OR_PARTITION = 3
    REQUEST_TIMED_OUT = 7
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    GROUP_AUTHORIZATION_FAILED = 30
    UNSUPPORTED_VERSION = 35
    INVALID_REQUEST = 42
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    UNSTABLE_OFFSET_COMMIT = 88
    UNKNOWN_TOPIC_ID = 100
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    INVALID_REGULAR_EXPRESSION = 128

    @property
    def code(self) -> int:
        return int(self.value)

    @classmethod
    def for_code(cls, code: int) -> Errors:
        """The error for a wire code; unknown codes map to UNKNOWN_SERVER_ERROR as Kafka's client does."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN_SERVER_ERROR


class GroupError(Exception):
    """A request answered with a Kafka error code (raised by pure helpers that validate requests)."""

    def __init__(self, error: Errors, message: str = "") -> None:
        self.error = error
        super().__init__(f"{error.name}: {message}" if message else error.name)
