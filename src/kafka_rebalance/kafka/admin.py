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
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..errors import InputError
from ..model import Broker, ClusterSnapshot, PartitionLoad, PartitionReplicas

BROKER, TOPIC = 4, 2
_log = logging.getLogger(__name__)
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


# ---------------------------------------------------------------------------
# --command-config: Java properties to kafka-python keyword arguments.


def read_properties(text: str) -> dict[str, str]:
    """Parse a Java .properties file: `key=value` or `key: value`, `#`/`!` comments, `\\` continuations."""
    props: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        m = re.match(r"^((?:\\.|[^=:\s])+)\s*[=:\s]\s*(.*)$", logical)
        if m:
            props[m.group(1).replace("\\", "")] = m.group(2).strip()
        elif logical:
            props[logical] = ""
        logical = ""
    return props


_DIRECT = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "client.id": "client_id",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
    "ssl.key.password": "ssl_password",
    "ssl.keystore.password": "ssl_password",
}

# Numeric admin client properties (AdminClientConfig): Kafka's type, lower bound, kafka-python keyword (None:
# checked as Kafka checks it, then not used: kafka-python has no such setting).
_NUMERIC: dict[str, tuple[str, int | None, str | None]] = {
    "request.timeout.ms": ("INT", 0, "request_timeout_ms"),
    "default.api.timeout.ms": ("INT", 0, None),
    "metadata.max.age.ms": ("LONG", 0, "metadata_max_age_ms"),
    "send.buffer.bytes": ("INT", -1, "send_buffer_bytes"),
    "receive.buffer.bytes": ("INT", -1, "receive_buffer_bytes"),
    "reconnect.backoff.ms": ("LONG", 0, "reconnect_backoff_ms"),
    "reconnect.backoff.max.ms": ("LONG", 0, "reconnect_backoff_max_ms"),
    "retry.backoff.ms": ("LONG", 0, "retry_backoff_ms"),
    "retry.backoff.max.ms": ("LONG", 0, None),
    "socket.connection.setup.timeout.ms": ("LONG", None, None),
    "socket.connection.setup.timeout.max.ms": ("LONG", None, None),
    "connections.max.idle.ms": ("LONG", None, "connections_max_idle_ms"),
    "retries": ("INT", 0, None),
    "metrics.sample.window.ms": ("LONG", 0, "metrics_sample_window_ms"),
    "metrics.num.samples": ("INT", 1, "metrics_num_samples"),
}
_BITS = {"INT": 31, "LONG": 63}
# SaslConfigs.DEFAULT_SASL_MECHANISM: what a Java client uses when sasl.mechanism is not set.
DEFAULT_SASL_MECHANISM = "GSSAPI"
_SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")


def _number(key: str, value: str, source: str) -> int:
    """ConfigDef.parseType for INT/LONG, with Kafka's ConfigException wording."""
    kind, least, _ = _NUMERIC[key]
    text = value.strip()
    if (
        not re.fullmatch(r"[+-]?[0-9]+", text)
        or not -(2 ** _BITS[kind]) <= int(text) < 2 ** _BITS[kind]
    ):
        raise InputError(
            f"Invalid value {value} for configuration {key}: Not a number of type {kind}",
            source=source,
            field=key,
        )
    n = int(text)
    if least is not None and n < least:
        raise InputError(
            f"Invalid value {value} for configuration {key}: Value must be at least {least}",
            source=source,
            field=key,
        )
    return n


def _check_sasl(kw: dict, props: Mapping[str, str], source: str) -> None:
    """Fill in Kafka's default mechanism and refuse what kafka-python would fail on with a traceback."""
    from kafka.sasl import SASL_MECHANISMS

    if kw.get("security_protocol") not in _SASL_PROTOCOLS:
        return
    mechanism = kw.setdefault("sasl_mechanism", DEFAULT_SASL_MECHANISM)
    field = "sasl.mechanism"
    given = "sasl.mechanism" in props
    said = (
        f"sasl.mechanism={mechanism}"
        if given
        else f"no sasl.mechanism (Kafka's default is {mechanism})"
    )
    if mechanism not in SASL_MECHANISMS or mechanism == "AWS_MSK_IAM":
        raise InputError(
            f"unknown SASL mechanism {mechanism!r} (kafka-python supports GSSAPI, PLAIN, "
            "SCRAM-SHA-256, SCRAM-SHA-512)",
            source=source,
            field=field,
        )
    if mechanism == "GSSAPI":
        import platform

        try:
            if platform.system() != "Windows":
                import gssapi  # noqa: F401
        except ImportError:
            raise InputError(
                f"{said} with security.protocol={kw['security_protocol']}: Kerberos needs the Python "
                "package 'gssapi', which is not installed; install it (pip install gssapi) or set "
                "sasl.mechanism to PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
                source=source,
                field=field,
            ) from None
    elif mechanism == "OAUTHBEARER":
        raise InputError(
            "OAUTHBEARER needs a token provider object, which a properties file cannot give to "
            "kafka-python: use PLAIN or SCRAM",
            source=source,
            field=field,
        )
    elif "sasl_plain_username" not in kw or "sasl_plain_password" not in kw:
        raise InputError(
            f"{said} needs a username and a password: sasl.jaas.config=... "
            'required username="..." password="...";',
            source=source,
            field="sasl.jaas.config",
        )


def admin_kwargs(props: Mapping[str, str], source: str = "--command-config") -> dict:
    """kafka-python keyword arguments for the Kafka client properties we understand."""
    kw: dict = {}
    for key, value in props.items():
        if key in _NUMERIC:
            n = _number(key, value, source)
            target = _NUMERIC[key][2]
            if target and not (
                key.endswith("buffer.bytes") and n == -1
            ):  # -1: the OS default, kafka-python's None
                kw[target] = n
        elif key in _DIRECT:
            kw[_DIRECT[key]] = (
                value.strip().upper() if key == "security.protocol" else value.strip()
            )
        elif key == "sasl.jaas.config":
            user = re.search(r'username\s*=\s*"([^"]*)"', value)
            pwd = re.search(r'password\s*=\s*"([^"]*)"', value)
            if user:
                kw["sasl_plain_username"] = user.group(1)
            if pwd:
                kw["sasl_plain_password"] = pwd.group(1)
        elif key == "ssl.truststore.location":
            if props.get("ssl.truststore.type", "JKS").upper() != "PEM":
                raise InputError(
                    "kafka-python reads PEM files only: set ssl.truststore.type=PEM "
                    "(convert the JKS truststore with keytool/openssl)",
                    source=source,
                    field=key,
                )
            kw["ssl_cafile"] = value
        elif key == "ssl.keystore.location":
            if props.get("ssl.keystore.type", "JKS").upper() != "PEM":
                raise InputError(
                    "kafka-python reads PEM files only: set ssl.keystore.type=PEM",
                    source=source,
                    field=key,
                )
            kw["ssl_certfile"] = value
            kw.setdefault("ssl_keyfile", value)
        elif key == "ssl.endpoint.identification.algorithm":
            kw["ssl_check_hostname"] = value.strip().lower() == "https"
    if "security_protocol" in kw and kw["security_protocol"] not in (
        "PLAINTEXT",
        "SSL",
        *_SASL_PROTOCOLS,
    ):
        raise InputError(
            f"unknown security.protocol {kw['security_protocol']!r}",
            source=source,
            field="security.protocol",
        )
    _check_sasl(kw, props, source)
    return kw


def load_command_config(path: str | None) -> dict:
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as fh:
            return admin_kwargs(read_properties(fh.read()), source=path)
    except FileNotFoundError:
        raise InputError("file not found", source=path) from None


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
            raise InputError(
                f"cannot connect to {bootstrap}: {exc}", field="--bootstrap-server"
            ) from None

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
            for err, _dir, dir_topics in resp.log_dirs:
                if err:
                    continue
                for name, parts in dir_topics:
                    for index, size, _lag, is_future in parts:
                        if not is_future:
                            sizes.setdefault((name, index), {})[node] = size
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
                partitions.append(
                    PartitionReplicas(
                        key[0], key[1], tuple(p["replicas"]), leader, tuple(p["isr"]), load
                    )
                )
        brokers = [Broker(i, live[i], True) for i in sorted(live)]
        brokers += [Broker(i, None, False) for i in sorted(referenced - set(live))]
        return ClusterSnapshot(tuple(sorted(brokers, key=lambda b: b.id)), tuple(partitions))

    def replica_assignment(
        self, topics: Iterable[str] | None = None
    ) -> dict[tuple[str, int], tuple[int, ...]]:
        """Replica lists from Metadata only (cheap: no DescribeLogDirs)."""
        names = None if topics is None else sorted(set(topics))
        out = {}
        for t in self.client.describe_topics(names):
            if t["error_code"]:
                continue
            for p in t["partitions"]:
                out[(t["topic"], p["partition"])] = tuple(p["replicas"])
        return out

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

    def list_partition_reassignments(self) -> dict[tuple[str, int], OngoingReassignment]:
        from kafka.protocol.admin import ListPartitionReassignmentsRequest

        req = ListPartitionReassignmentsRequest[0](timeout_ms=30000, topics=None, tags={})
        resp = self._send(self._controller(), req)
        if resp.error_code:
            raise AdminError(
                f"ListPartitionReassignments: {_error_name(resp.error_code)} {resp.error_message or ''}"
            )
        out = {}
        for name, parts, _tags in resp.topics:
            for index, replicas, adding, removing, _t in parts:
                if (
                    adding or removing
                ):  # some brokers (tansu) list every partition; Kafka lists only moving ones
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
        from kafka.protocol.admin import ElectLeadersRequest

        by_topic: dict[str, list[int]] = {}
        for topic, part in sorted(set(partitions)):
            by_topic.setdefault(topic, []).append(part)
        if not by_topic:
            return {}
        req = ElectLeadersRequest[1](
            election_type=0, topic_partitions=list(by_topic.items()), timeout=30000
        )
        resp = self._send(self._controller(), req)
        if getattr(resp, "error_code", 0):
            raise AdminError(f"ElectLeaders: {_error_name(resp.error_code)}")
        out = {}
        for topic, results in resp.replication_election_results:
            for pid, code, msg in results:
                out[(topic, pid)] = (code, msg)
        return out

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
