"""Request and response schemas for the admin APIs the toolkit speaks.

Transcribed field by field from Kafka's `common/message/*.json` (names in
snake_case). Only the APIs a reassignment needs are here; `SUPPORTED` is what
the simulated broker advertises in ApiVersions, chosen so kafka-python 2.2.15
picks versions defined below (it sends ApiVersions v4 first, Metadata up to
v7 but admin calls cap it at v5/v6, DescribeConfigs up to v2, AlterConfigs up
to v1, DescribeLogDirs v0, ElectLeaders labelled v1, and the flexible v0 of
Alter/ListPartitionReassignments).
"""

from __future__ import annotations

from ...fields import INT32_MIN
from .codec import F, Message, Versions

API_VERSIONS, METADATA, DESCRIBE_CONFIGS, ALTER_CONFIGS = 18, 3, 32, 33
DESCRIBE_LOG_DIRS, ELECT_LEADERS, INCREMENTAL_ALTER_CONFIGS = 35, 43, 44
ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS, DESCRIBE_CLUSTER = 45, 46, 60


def _msg(name: str, key: int, valid: str, flexible: str, *fields) -> Message:
    return Message(name, key, Versions.parse(valid), Versions.parse(flexible), tuple(fields))


# --- Headers (RequestHeader.json 0-2, ResponseHeader.json 0-1) --------------------------------

REQUEST_HEADER = _msg(
    "RequestHeader",
    -1,
    "0-2",
    "2+",
    F("request_api_key", "int16"),
    F("request_api_version", "int16"),
    F("correlation_id", "int32"),
    F("client_id", "string", "1+", nullable="1+", flexible=False),
)
RESPONSE_HEADER = _msg("ResponseHeader", -1, "0-1", "1+", F("correlation_id", "int32"))

# --- ApiVersions --------------------------------------------------------------------------------

_FEATURE = (
    F("name", "string", "3+"),
    F("min_version", "int16", "3+"),
    F("max_version", "int16", "3+"),
)
_FINALIZED = (
    F("name", "string", "3+"),
    F("max_version_level", "int16", "3+"),
    F("min_version_level", "int16", "3+"),
)
API_VERSIONS_REQUEST = _msg(
    "ApiVersionsRequest",
    API_VERSIONS,
    "0-4",
    "3+",
    F("client_software_name", "string", "3+"),
    F("client_software_version", "string", "3+"),
)
API_VERSIONS_RESPONSE = _msg(
    "ApiVersionsResponse",
    API_VERSIONS,
    "0-4",
    "3+",
    F("error_code", "int16"),
    F("api_keys", [F("api_key", "int16"), F("min_version", "int16"), F("max_version", "int16")]),
    F("throttle_time_ms", "int32", "1+"),
    F("supported_features", _FEATURE, "3+", tag=0),
    F("finalized_features_epoch", "int64", "3+", tag=1, default=-1),
    F("finalized_features", _FINALIZED, "3+", tag=2),
    F("zk_migration_ready", "bool", "3+", tag=3),
)

# --- Metadata (0-12 in Kafka; 0-8 here) ----------------------------------------------------------

METADATA_REQUEST = _msg(
    "MetadataRequest",
    METADATA,
    "0-8",
    "9+",
    F("topics", [F("name", "string")], nullable="1+"),
    F("allow_auto_topic_creation", "bool", "4+", default=True),
    F("include_cluster_authorized_operations", "bool", "8-10"),
    F("include_topic_authorized_operations", "bool", "8+"),
)
METADATA_RESPONSE = _msg(
    "MetadataResponse",
    METADATA,
    "0-8",
    "9+",
    F("throttle_time_ms", "int32", "3+"),
    F(
        "brokers",
        [
            F("node_id", "int32"),
            F("host", "string"),
            F("port", "int32"),
            F("rack", "string", "1+", nullable="1+"),
        ],
    ),
    F("cluster_id", "string", "2+", nullable="2+"),
    F("controller_id", "int32", "1+", default=-1),
    F(
        "topics",
        [
            F("error_code", "int16"),
            F("name", "string"),
            F("is_internal", "bool", "1+"),
            F(
                "partitions",
                [
                    F("error_code", "int16"),
                    F("partition_index", "int32"),
                    F("leader_id", "int32"),
                    F("leader_epoch", "int32", "7+", default=-1),
                    F("replica_nodes", "[]int32"),
                    F("isr_nodes", "[]int32"),
                    F("offline_replicas", "[]int32", "5+"),
                ],
            ),
            F("topic_authorized_operations", "int32", "8+", default=INT32_MIN),
        ],
    ),
    F("cluster_authorized_operations", "int32", "8-10", default=INT32_MIN),
)

# --- DescribeCluster ----------------------------------------------------------------------------

DESCRIBE_CLUSTER_REQUEST = _msg(
    "DescribeClusterRequest",
    DESCRIBE_CLUSTER,
    "0-1",
    "0+",
    F("include_cluster_authorized_operations", "bool"),
    F("endpoint_type", "int8", "1+", default=1),
)
DESCRIBE_CLUSTER_RESPONSE = _msg(
    "DescribeClusterResponse",
    DESCRIBE_CLUSTER,
    "0-1",
    "0+",
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+"),
    F("endpoint_type", "int8", "1+", default=1),
    F("cluster_id", "string"),
    F("controller_id", "int32", default=-1),
    F(
        "brokers",
        [
            F("broker_id", "int32"),
            F("host", "string"),
            F("port", "int32"),
            F("rack", "string", nullable="0+"),
        ],
    ),
    F("cluster_authorized_operations", "int32", default=INT32_MIN),
)

# --- DescribeConfigs (0-4) ----------------------------------------------------------------------

DESCRIBE_CONFIGS_REQUEST = _msg(
    "DescribeConfigsRequest",
    DESCRIBE_CONFIGS,
    "0-4",
    "4+",
    F(
        "resources",
        [
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("configuration_keys", "[]string", nullable="0+"),
        ],
    ),
    F("include_synonyms", "bool", "1+"),
    F("include_documentation", "bool", "3+"),
)
DESCRIBE_CONFIGS_RESPONSE = _msg(
    "DescribeConfigsResponse",
    DESCRIBE_CONFIGS,
    "0-4",
    "4+",
    F("throttle_time_ms", "int32"),
    F(
        "results",
        [
            F("error_code", "int16"),
            F("error_message", "string", nullable="0+"),
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F(
                "configs",
                [
                    F("name", "string"),
                    F("value", "string", nullable="0+"),
                    F("read_only", "bool"),
                    F("is_default", "bool", "0"),
                    F("config_source", "int8", "1+", default=-1),
                    F("is_sensitive", "bool"),
                    F(
                        "synonyms",
                        [
                            F("name", "string", "1+"),
                            F("value", "string", "1+", nullable="0+"),
                            F("source", "int8", "1+"),
                        ],
                        "1+",
                    ),
                    F("config_type", "int8", "3+"),
                    F("documentation", "string", "3+", nullable="0+"),
                ],
            ),
        ],
    ),
)

# --- AlterConfigs (0-2) and IncrementalAlterConfigs (0-1) -----------------------------------------

_ALTER_RESPONSES = (
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+"),
    F("resource_type", "int8"),
    F("resource_name", "string"),
)
ALTER_CONFIGS_REQUEST = _msg(
    "AlterConfigsRequest",
    ALTER_CONFIGS,
    "0-2",
    "2+",
    F(
        "resources",
        [
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F("configs", [F("name", "string"), F("value", "string", nullable="0+")]),
        ],
    ),
    F("validate_only", "bool"),
)
ALTER_CONFIGS_RESPONSE = _msg(
    "AlterConfigsResponse",
    ALTER_CONFIGS,
    "0-2",
    "2+",
    F("throttle_time_ms", "int32"),
    F("responses", _ALTER_RESPONSES),
)
INCREMENTAL_ALTER_CONFIGS_REQUEST = _msg(
    "IncrementalAlterConfigsRequest",
    INCREMENTAL_ALTER_CONFIGS,
    "0-1",
    "1+",
    F(
        "resources",
        [
            F("resource_type", "int8"),
            F("resource_name", "string"),
            F(
                "configs",
                [
                    F("name", "string"),
                    F("config_operation", "int8"),
                    F("value", "string", nullable="0+"),
                ],
            ),
        ],
    ),
    F("validate_only", "bool"),
)
INCREMENTAL_ALTER_CONFIGS_RESPONSE = _msg(
    "IncrementalAlterConfigsResponse",
    INCREMENTAL_ALTER_CONFIGS,
    "0-1",
    "1+",
    F("throttle_time_ms", "int32"),
    F("responses", _ALTER_RESPONSES),
)

# --- DescribeLogDirs (0-4) ----------------------------------------------------------------------

DESCRIBE_LOG_DIRS_REQUEST = _msg(
    "DescribeLogDirsRequest",
    DESCRIBE_LOG_DIRS,
    "0-4",
    "2+",
    F("topics", [F("topic", "string"), F("partitions", "[]int32")], nullable="0+"),
)
DESCRIBE_LOG_DIRS_RESPONSE = _msg(
    "DescribeLogDirsResponse",
    DESCRIBE_LOG_DIRS,
    "0-4",
    "2+",
    F("throttle_time_ms", "int32"),
    F("error_code", "int16", "3+"),
    F(
        "results",
        [
            F("error_code", "int16"),
            F("log_dir", "string"),
            F(
                "topics",
                [
                    F("name", "string"),
                    F(
                        "partitions",
                        [
                            F("partition_index", "int32"),
                            F("partition_size", "int64"),
                            F("offset_lag", "int64"),
                            F("is_future_key", "bool"),
                        ],
                    ),
                ],
            ),
            F("total_bytes", "int64", "4+", default=-1),
            F("usable_bytes", "int64", "4+", default=-1),
        ],
    ),
)

# --- ElectLeaders (0-2) -------------------------------------------------------------------------

ELECT_LEADERS_REQUEST = _msg(
    "ElectLeadersRequest",
    ELECT_LEADERS,
    "0-2",
    "2+",
    F("election_type", "int8", "1+"),
    F("topic_partitions", [F("topic", "string"), F("partitions", "[]int32")], nullable="0+"),
    F("timeout_ms", "int32", default=60000),
)
ELECT_LEADERS_RESPONSE = _msg(
    "ElectLeadersResponse",
    ELECT_LEADERS,
    "0-2",
    "2+",
    F("throttle_time_ms", "int32"),
    F("error_code", "int16", "1+"),
    F(
        "replica_election_results",
        [
            F("topic", "string"),
            F(
                "partition_result",
                [
                    F("partition_id", "int32"),
                    F("error_code", "int16"),
                    F("error_message", "string", nullable="0+"),
                ],
            ),
        ],
    ),
)

# --- Alter/ListPartitionReassignments (v0, flexible) ----------------------------------------------

ALTER_PARTITION_REASSIGNMENTS_REQUEST = _msg(
    "AlterPartitionReassignmentsRequest",
    ALTER_PARTITION_REASSIGNMENTS,
    "0",
    "0+",
    F("timeout_ms", "int32", default=60000),
    F(
        "topics",
        [
            F("name", "string"),
            F(
                "partitions",
                [F("partition_index", "int32"), F("replicas", "[]int32", nullable="0+")],
            ),
        ],
    ),
)
ALTER_PARTITION_REASSIGNMENTS_RESPONSE = _msg(
    "AlterPartitionReassignmentsResponse",
    ALTER_PARTITION_REASSIGNMENTS,
    "0",
    "0+",
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+"),
    F(
        "responses",
        [
            F("name", "string"),
            F(
                "partitions",
                [
                    F("partition_index", "int32"),
                    F("error_code", "int16"),
                    F("error_message", "string", nullable="0+"),
                ],
            ),
        ],
    ),
)
LIST_PARTITION_REASSIGNMENTS_REQUEST = _msg(
    "ListPartitionReassignmentsRequest",
    LIST_PARTITION_REASSIGNMENTS,
    "0",
    "0+",
    F("timeout_ms", "int32", default=60000),
    F("topics", [F("name", "string"), F("partition_indexes", "[]int32")], nullable="0+"),
)
LIST_PARTITION_REASSIGNMENTS_RESPONSE = _msg(
    "ListPartitionReassignmentsResponse",
    LIST_PARTITION_REASSIGNMENTS,
    "0",
    "0+",
    F("throttle_time_ms", "int32"),
    F("error_code", "int16"),
    F("error_message", "string", nullable="0+"),
    F(
        "topics",
        [
            F("name", "string"),
            F(
                "partitions",
                [
                    F("partition_index", "int32"),
                    F("replicas", "[]int32"),
                    F("adding_replicas", "[]int32"),
                    F("removing_replicas", "[]int32"),
                ],
            ),
        ],
    ),
)

REQUESTS: dict[int, Message] = {
    m.api_key: m
    for m in (
        API_VERSIONS_REQUEST,
        METADATA_REQUEST,
        DESCRIBE_CLUSTER_REQUEST,
        DESCRIBE_CONFIGS_REQUEST,
        ALTER_CONFIGS_REQUEST,
        INCREMENTAL_ALTER_CONFIGS_REQUEST,
        DESCRIBE_LOG_DIRS_REQUEST,
        ELECT_LEADERS_REQUEST,
        ALTER_PARTITION_REASSIGNMENTS_REQUEST,
        LIST_PARTITION_REASSIGNMENTS_REQUEST,
    )
}
RESPONSES: dict[int, Message] = {
    m.api_key: m
    for m in (
        API_VERSIONS_RESPONSE,
        METADATA_RESPONSE,
        DESCRIBE_CLUSTER_RESPONSE,
        DESCRIBE_CONFIGS_RESPONSE,
        ALTER_CONFIGS_RESPONSE,
        INCREMENTAL_ALTER_CONFIGS_RESPONSE,
        DESCRIBE_LOG_DIRS_RESPONSE,
        ELECT_LEADERS_RESPONSE,
        ALTER_PARTITION_REASSIGNMENTS_RESPONSE,
        LIST_PARTITION_REASSIGNMENTS_RESPONSE,
    )
}

# What the simulated broker advertises: (min, max) per api key. Metadata stops at 5 so the client's
# version inference lands on Kafka 1.0 and every admin call picks a version defined above.
SUPPORTED: dict[int, tuple[int, int]] = {
    API_VERSIONS: (0, 4),
    METADATA: (0, 5),
    DESCRIBE_CONFIGS: (0, 2),
    ALTER_CONFIGS: (0, 1),
    DESCRIBE_LOG_DIRS: (0, 1),
    ELECT_LEADERS: (0, 1),
    INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    LIST_PARTITION_REASSIGNMENTS: (0, 0),
    DESCRIBE_CLUSTER: (0, 1),
}
