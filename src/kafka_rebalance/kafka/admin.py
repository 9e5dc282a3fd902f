"""Read a live cluster and apply reassignments through kafka-python's KafkaAdminClient.

What kafka-python 2.2.15 has and what we add:

* `describe_cluster`, `describe_topics`: used as is (both are Metadata requests).
* `describe_log_dirs`: the client asks one (least loaded) broker only, so we send
  its `DescribeLogDirsRequest[0]` to every broker ourselves.
* `perform_leader_election`: raises on the first partition error; we send its
  `ElectLeadersRequest` to the controller ourselves to get every partition's result.
* `alter_partition_reassignments` / `list_partition_reassignments`: the client
  ships the protocol classes (v0) but no methods; we send them to the controller.
* `incremental_alter_configs`: absent from the client; we define the v0 request
  with kafka-python's protocol types (below) and send it, broker resources to
  that broker as Kafka's Java admin does. When a broker does not advertise it we
  fall back to `AlterConfigs` (describe, edit, replace the whole set).

All sends go through the client's connection handling (`_send_request_to_node`,
`_wait_for_futures`), so security settings from `--command-config` apply.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..errors import InputError, RuntimeFailure
from ..model import Broker, ClusterSnapshot, LogDir, PartitionLoad, PartitionReplicas
from .client_config import client_kwargs, load_client_config
from .properties import parse_properties

BROKER, TOPIC = 4, 2
_log = logging.getLogger(__name__)
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


# --command-config lives in kafka/client_config.py (names kept here for callers of the old module).
read_properties = parse_properties
admin_kwargs = client_kwargs
load_command_config = load_client_config


# ---------------------------------------------------------------------------
# IncrementalAlterConfigs v0 with kafka-python's protocol types (the client has none).


def _incremental_alter_configs_classes():
    from kafka.protocol.api import Request, Response
    from kafka.protocol.types import Array, Boolean, Int8, Int16, Int32, Schema, String

    class IncrementalAlterConfigsResponse_v0(Response):
        API_KEY = 44
        API_VERSION = 0
        SCHEMA = Schema(
            ("throttle_time_ms", Int32),
            (
                "responses",
                Array(
                    ("error_code", Int16),
                    ("error_message", String("utf-8")),
                    ("resource_type", Int8),
                    ("resource_name", String("utf-8")),
                ),
            ),
        )

    class IncrementalAlterConfigsRequest_v0(Request):
        API_KEY = 44
        API_VERSION = 0
        RESPONSE_TYPE = IncrementalAlterConfigsResponse_v0
        SCHEMA = Schema(
            (
                "resources",
                Array(
                    ("resource_type", Int8),
                    ("resource_name", String("utf-8")),
                    (
                        "configs",
                        Array(
                            ("name", String("utf-8")),
                            ("config_operation", Int8),
                            ("value", String("utf-8")),
                        ),
                    ),
                ),
            ),
            ("validate_only", Boolean),
        )

    return [IncrementalAlterConfigsRequest_v0]


def _alter_replica_log_dirs_classes():
    """AlterReplicaLogDirs v1 (api key 34; v0 and v1 share the schema)."""
    from kafka.protocol.api import Request, Response
    from kafka.protocol.types import Array, Int16, Int32, Schema, String

    class AlterReplicaLogDirsResponse_v1(Response):
        API_KEY = 34
        API_VERSION = 1
        SCHEMA = Schema(
            ("throttle_time_ms", Int32),
            (
                "results",
                Array(
                    ("topic_name", String("utf-8")),
                    ("partitions", Array(("partition_index", Int32), ("error_code", Int16))),
                ),
            ),
        )

    class AlterReplicaLogDirsRequest_v1(Request):
        API_KEY = 34
        API_VERSION = 1
        RESPONSE_TYPE = AlterReplicaLogDirsResponse_v1
        SCHEMA = Schema(
            (
                "dirs",
                Array(
                    ("path", String("utf-8")),
                    ("topics", Array(("name", String("utf-8")), ("partitions", Array(Int32)))),
                ),
            ),
        )

    return AlterReplicaLogDirsRequest_v1


class AdminError(RuntimeError):
    """A broker refused an admin operation; carries Kafka's error name."""


def _error_name(code: int) -> str:
    import kafka.errors as Errors

    return Errors.for_code(code).__name__ if code else "NONE"


@dataclass(frozen=True, slots=True)
class OngoingReassignment:
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


PREFERRED, UNCLEAN = 0, 1  # ElectionType
ELECTION_NOT_NEEDED = 84
REPLICA_NOT_AVAILABLE = 9


def error_text(code: int, message: str | None = None) -> str:
    """Kafka's exception for an error code, as a Java client prints it (`org.apache...: message`)."""
    from .errors import exception_text

    return exception_text(code, message)


class KafkaAdmin:
    """The admin calls `cluster execute` needs, over one KafkaAdminClient."""

    def __init__(self, bootstrap: str, command_config: str | None = None, **overrides) -> None:
        from kafka import KafkaAdminClient
        from kafka.errors import KafkaError

        kwargs = {
            "bootstrap_servers": bootstrap.split(","),
            "client_id": "kafka-rebalance",
            "request_timeout_ms": 30000,
        }
        kwargs.update(load_command_config(command_config))
        kwargs.update(overrides)
        try:
            self.client = KafkaAdminClient(**kwargs)
        except KafkaError as exc:
            if kwargs.get("security_protocol", "PLAINTEXT") != "PLAINTEXT":
                # kafka-python reports a failed SASL login or TLS handshake as a version problem:
                # the credentials or certificates of the command config are the likely cause
                raise InputError(
                    f"cannot connect to {bootstrap}: {exc} (with security.protocol="
                    f"{kwargs['security_protocol']}: the broker may have refused the credentials "
                    f"or the certificates of {command_config})",
                    field="--bootstrap-server",
                ) from None
            # the address may be right and the cluster down: a runtime failure (exit 1)
            raise RuntimeFailure(f"cannot connect to {bootstrap}: {exc}") from None

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> KafkaAdmin:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- plumbing -----------------------------------------------------------------------------

    def _send(self, node_id: int, request):
        """Send to one broker; a broker that is down or unreachable becomes an AdminError naming it."""
        from kafka.errors import KafkaError

        try:
            future = self.client._send_request_to_node(node_id, request)
            self.client._wait_for_futures([future])
        except KafkaError as exc:
            raise AdminError(
                f"{type(request).__name__.split('_v')[0]} to broker {node_id} failed: "
                f"{type(exc).__name__}"
            ) from exc
        return future.value

    def _controller(self) -> int:
        return self.client._controller_id

    def _supports(self, api_key: int) -> bool:
        versions = self.client._client.get_api_versions() or {}
        return api_key in versions

    # -- reading ------------------------------------------------------------------------------

    def live_brokers(self) -> set[int]:
        """Ids of the brokers the cluster metadata lists (Kafka lists only the live ones)."""
        return {b["node_id"] for b in self.client.describe_cluster()["brokers"]}

    def snapshot(self) -> ClusterSnapshot:
        from kafka.protocol.admin import DescribeLogDirsRequest

        cluster = self.client.describe_cluster()
        topics = self.client.describe_topics()
        live = {b["node_id"]: b.get("rack") for b in cluster["brokers"]}
        sizes: dict[tuple[str, int], dict[int, int]] = {}
        # the log dir of each replica, and every log dir of each broker (empty ones too)
        replica_dir: dict[tuple[str, int], dict[int, str]] = {}
        broker_dirs: dict[int, list[str]] = {}
        if not self._supports(35):
            _log.warning("the brokers do not support DescribeLogDirs: partition sizes are unknown")
        for node in sorted(live) if self._supports(35) else ():
            try:
                resp = self._send(node, DescribeLogDirsRequest[0]())
            except AdminError as exc:
                _log.warning(
                    "DescribeLogDirs on broker %s failed (%s): its replica sizes are unknown",
                    node,
                    exc,
                )
                continue
            for err, log_dir, dir_topics in resp.log_dirs:
                if err:
                    continue
                broker_dirs.setdefault(node, []).append(log_dir)
                for name, parts in dir_topics:
                    for index, size, _lag, is_future in parts:
                        if not is_future:
                            sizes.setdefault((name, index), {})[node] = size
                            replica_dir.setdefault((name, index), {})[node] = log_dir
        referenced: set[int] = set()
        partitions = []
        for t in sorted(topics, key=lambda t: t["topic"]):
            if t["error_code"]:
                continue
            for p in sorted(t["partitions"], key=lambda p: p["partition"]):
                key = (t["topic"], p["partition"])
                referenced.update(p["replicas"])
                leader = p["leader"] if p["leader"] is not None and p["leader"] >= 0 else None
                by_broker = sizes.get(key)
                load = None
                if by_broker:
                    size = (
                        by_broker.get(leader, max(by_broker.values()))
                        if leader is not None
                        else max(by_broker.values())
                    )
                    load = PartitionLoad(size_bytes=float(size))
                on = replica_dir.get(key)
                dirs = tuple(on.get(r) for r in p["replicas"]) if on else None
                partitions.append(
                    PartitionReplicas(
                        key[0], key[1], tuple(p["replicas"]), leader, tuple(p["isr"]), load, dirs
                    )
                )
        brokers = [
            Broker(
                i, live[i], True, log_dirs=tuple(LogDir(d) for d in sorted(broker_dirs.get(i, ())))
            )
            for i in sorted(live)
        ]
        brokers += [Broker(i, None, False) for i in sorted(referenced - set(live))]
        return ClusterSnapshot(tuple(sorted(brokers, key=lambda b: b.id)), tuple(partitions))

    def _metadata_partitions(self, topics: Iterable[str] | None):
        """(topic, partition entry) of every partition Metadata describes (cheap: no DescribeLogDirs)."""
        names = None if topics is None else sorted(set(topics))
        for t in self.client.describe_topics(names):
            if not t["error_code"]:
                for p in t["partitions"]:
                    yield t["topic"], p

    def replica_assignment(
        self, topics: Iterable[str] | None = None
    ) -> dict[tuple[str, int], tuple[int, ...]]:
        """Replica lists from Metadata only."""
        return {
            (t, p["partition"]): tuple(p["replicas"]) for t, p in self._metadata_partitions(topics)
        }

    def leaders(self, topics: Iterable[str] | None = None) -> dict[tuple[str, int], int]:
        """Leader of each partition from Metadata (-1: none)."""
        return {(t, p["partition"]): int(p["leader"]) for t, p in self._metadata_partitions(topics)}

    def describe_configs(self, resource_type: int, name: str) -> dict[str, tuple[str | None, bool]]:
        """name -> (value, is_default) of one resource."""
        from kafka.admin import ConfigResource, ConfigResourceType

        responses = self.client.describe_configs(
            [ConfigResource(ConfigResourceType(resource_type), name)]
        )
        out: dict[str, tuple[str | None, bool]] = {}
        for resp in responses:
            for res in resp.resources:
                err, msg, _rtype, _rname, entries = res[:5]
                if err:
                    raise AdminError(
                        f"DescribeConfigs {name}: {_error_name(err)} {msg or ''}".strip()
                    )
                for e in entries:
                    default = e[3] if resp.API_VERSION == 0 else e[3] == 5
                    out[e[0]] = (e[1], bool(default))
        return out

    def list_partition_reassignments(
        self, partitions: Iterable[tuple[str, int]] | None = None
    ) -> dict[tuple[str, int], OngoingReassignment]:
        """The reassignments the controller has in flight (of these partitions, or all)."""
        from kafka.protocol.admin import ListPartitionReassignmentsRequest

        topics: list | None = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for t, p in sorted(set(partitions)):
                by_topic.setdefault(t, []).append(p)
            if not by_topic:
                return {}
            topics = [(t, ps, {}) for t, ps in by_topic.items()]
        req = ListPartitionReassignmentsRequest[0](timeout_ms=30000, topics=topics, tags={})
        resp = self._send(self._controller(), req)
        if resp.error_code:
            raise AdminError(
                f"ListPartitionReassignments: {_error_name(resp.error_code)} {resp.error_message or ''}"
            )
        out = {}
        for name, parts, _tags in resp.topics:
            for index, replicas, adding, removing, _t in parts:
                if adding or removing:  # Kafka lists only moving ones; the wire fake lists all
                    out[(name, index)] = OngoingReassignment(
                        tuple(replicas), tuple(adding), tuple(removing)
                    )
        return out

    # -- writing ------------------------------------------------------------------------------

    def alter_partition_reassignments(
        self, targets: Mapping[tuple[str, int], Iterable[int] | None]
    ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """Start (or cancel, with None) reassignments; (error code, message) per partition."""
        from kafka.protocol.admin import AlterPartitionReassignmentsRequest

        by_topic: dict[str, list] = {}
        for (topic, part), reps in sorted(targets.items()):
            by_topic.setdefault(topic, []).append((part, None if reps is None else list(reps), {}))
        req = AlterPartitionReassignmentsRequest[0](
            timeout_ms=30000, topics=[(t, ps, {}) for t, ps in by_topic.items()], tags={}
        )
        resp = self._send(self._controller(), req)
        if resp.error_code:
            raise AdminError(
                f"AlterPartitionReassignments: {_error_name(resp.error_code)} {resp.error_message or ''}"
            )
        out = {}
        for name, parts, _tags in resp.responses:
            for index, code, msg, _t in parts:
                out[(name, index)] = (code, msg)
        return out

    def elect_preferred(
        self, partitions: Iterable[tuple[str, int]]
    ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """Preferred leader election; (error code, message) per partition (84 = not needed)."""
        parts = sorted(set(partitions))
        return self.elect_leaders(PREFERRED, parts) if parts else {}

    def elect_leaders(
        self, election_type: int, partitions: Iterable[tuple[str, int]] | None
    ) -> dict[tuple[str, int], tuple[int, str | None]]:
        """ElectLeaders (PREFERRED or UNCLEAN) for these partitions, or all (None) as the tool's
        --all-topic-partitions; (error code, message) per partition the controller reports."""
        from kafka.protocol.admin import ElectLeadersRequest

        topic_partitions = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for topic, part in sorted(set(partitions)):
                by_topic.setdefault(topic, []).append(part)
            topic_partitions = list(by_topic.items())
        req = ElectLeadersRequest[1](
            election_type=election_type, topic_partitions=topic_partitions, timeout=30000
        )
        resp = self._send(self._controller(), req)
        if getattr(resp, "error_code", 0):
            raise AdminError(f"ElectLeaders: {_error_name(resp.error_code)}")
        out = {}
        for topic, results in resp.replication_election_results:
            for pid, code, msg in results:
                out[(topic, pid)] = (code, msg)
        return out

    def alter_replica_log_dirs(
        self, moves: Mapping[tuple[str, int, int], str]
    ) -> dict[tuple[str, int, int], int]:
        """Move replicas (topic, partition, broker) to a log dir; error code per replica
        (REPLICA_NOT_AVAILABLE = 9 while the replica is not on the broker yet)."""
        request_cls = _alter_replica_log_dirs_classes()
        by_broker: dict[int, dict[str, dict[str, list[int]]]] = {}
        for (topic, part, broker), path in sorted(moves.items()):
            by_broker.setdefault(broker, {}).setdefault(path, {}).setdefault(topic, []).append(part)
        out: dict[tuple[str, int, int], int] = {}
        for broker, dirs in sorted(by_broker.items()):
            req = request_cls(
                dirs=[(path, list(topics.items())) for path, topics in sorted(dirs.items())]
            )
            resp = self._send(broker, req)
            for topic, parts in resp.results:
                for index, code in parts:
                    out[(topic, index, broker)] = code
        return out

    def describe_replica_log_dirs(
        self, replicas: Iterable[tuple[str, int, int]]
    ) -> dict[tuple[str, int, int], tuple[str | None, str | None]]:
        """(current log dir, future log dir) of each replica that its broker has."""
        from kafka.protocol.admin import DescribeLogDirsRequest

        wanted: dict[int, set[tuple[str, int]]] = {}
        for topic, part, broker in replicas:
            wanted.setdefault(broker, set()).add((topic, part))
        out: dict[tuple[str, int, int], tuple[str | None, str | None]] = {}
        for broker, parts in sorted(wanted.items()):
            # all topics: kafka-python's v0 request types `partitions` as one INT32, not an array
            resp = self._send(broker, DescribeLogDirsRequest[0](topics=None))
            for err, path, dir_topics in resp.log_dirs:
                if err:
                    continue
                for name, rows in dir_topics:
                    for index, _size, _lag, is_future in rows:
                        if (name, index) not in parts:
                            continue
                        cur, fut = out.get((name, index, broker), (None, None))
                        out[(name, index, broker)] = (cur, path) if is_future else (path, fut)
        return out

    def alter_configs(self, resources: Iterable[tuple[int, str, list]]) -> None:
        """Many IncrementalAlterConfigs at once: broker resources to their broker, topics in one
        request to the controller (as Kafka's admin client groups them)."""
        topics: list[tuple[int, str, list]] = []
        for rtype, name, ops in resources:
            if rtype == BROKER or not self._supports(44):
                self.incremental_alter_configs(rtype, name, ops)
            elif ops:
                topics.append((rtype, name, [(n, op, v) for n, op, v in ops]))
        for i in range(0, len(topics), 500):
            (request_cls,) = _incremental_alter_configs_classes()
            resp = self._send(
                self._controller(), request_cls(resources=topics[i : i + 500], validate_only=False)
            )
            for err, msg, _rtype, rname in resp.responses:
                if err:
                    raise AdminError(
                        f"IncrementalAlterConfigs {rname}: {_error_name(err)} {msg or ''}".strip()
                    )

    def incremental_alter_configs(
        self, resource_type: int, name: str, ops: Iterable[tuple[str, int, str | None]]
    ) -> None:
        """SET/DELETE/APPEND/SUBTRACT config entries of one broker or topic."""
        ops = list(ops)
        if not ops:
            return
        if not self._supports(44):
            self._alter_configs_fallback(resource_type, name, ops)
            return
        (request_cls,) = _incremental_alter_configs_classes()
        req = request_cls(
            resources=[(resource_type, name, [(n, op, v) for n, op, v in ops])], validate_only=False
        )
        node = int(name) if resource_type == BROKER else self._controller()
        resp = self._send(node, req)
        for err, msg, _rtype, rname in resp.responses:
            if err:
                raise AdminError(
                    f"IncrementalAlterConfigs {rname}: {_error_name(err)} {msg or ''}".strip()
                )

    def _alter_configs_fallback(
        self, resource_type: int, name: str, ops: list[tuple[str, int, str | None]]
    ) -> None:
        from kafka.protocol.admin import AlterConfigsRequest

        current = {
            k: v
            for k, (v, default) in self.describe_configs(resource_type, name).items()
            if not default and v is not None
        }
        for cname, op, value in ops:
            if op == SET:
                current[cname] = value or ""
            elif op == DELETE:
                current.pop(cname, None)
            else:
                items = [x for x in current.get(cname, "").split(",") if x]
                new = [x for x in (value or "").split(",") if x]
                if op == APPEND:
                    items = items + [x for x in new if x not in items]
                else:
                    items = [x for x in items if x not in new]
                current[cname] = ",".join(items)
        req = AlterConfigsRequest[0](
            resources=[(resource_type, name, sorted(current.items()))], validate_only=False
        )
        node = int(name) if resource_type == BROKER else self._controller()
        resp = self._send(node, req)
        for err, msg, _rtype, rname in resp.resources:
            if err:
                raise AdminError(f"AlterConfigs {rname}: {_error_name(err)} {msg or ''}".strip())


def snapshot_from_bootstrap(bootstrap: str, command_config: str | None = None) -> ClusterSnapshot:
    """The cluster behind `--bootstrap-server` as a ClusterSnapshot (sizes from DescribeLogDirs)."""
    with KafkaAdmin(bootstrap, command_config) as admin:
        return admin.snapshot()
