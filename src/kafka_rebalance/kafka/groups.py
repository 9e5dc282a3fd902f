"""A live consumer group, read and changed through the Admin API, as `kafka-consumer-groups.sh` sees it.

The bulk goes through confluent-kafka's AdminClient (ListGroups, DescribeGroups /
ConsumerGroupDescribe, OffsetFetch, ListOffsets, OffsetCommit), so `--command-config`
security settings apply. Two things the client does not expose are read with raw requests
on the project's wire codec, sent to the group's coordinator over plain TCP:

* for KIP-848 `consumer` groups, ConsumerGroupDescribe v0 gives the state exactly as Kafka
  names it (librdkafka has no `Assigning`/`Reconciling` and reports them as Unknown), the
  group epoch, the target assignment epoch, each member's epoch and target assignment;
* for classic groups, DescribeGroups v5 gives each member's raw subscription (its topics,
  owned partitions, generation, rack), which the what-if assignment feeds to our assignors.

With a non-PLAINTEXT `security.protocol` the raw requests are skipped: epochs then read as
unknown and the what-if takes topics from the live assignment.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model import TopicPartition
from .admin import admin_kwargs
from .properties import load_properties

# ConsumerGroupState.toString in Kafka's clients.
_STATE_NAMES = {
    "UNKNOWN": "Unknown",
    "PREPARING_REBALANCING": "PreparingRebalance",
    "COMPLETING_REBALANCING": "CompletingRebalance",
    "STABLE": "Stable",
    "DEAD": "Dead",
    "EMPTY": "Empty",
}
_TYPE_NAMES = {"UNKNOWN": "Unknown", "CONSUMER": "Consumer", "CLASSIC": "Classic"}
GROUP_ID_NOT_FOUND = 69
# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
_RETRIABLE = {14, 15, 16}


class GroupRuntimeError(RuntimeError):
    """The cluster could not be reached or refused a request (exit 1)."""


@dataclass(frozen=True, slots=True)
class Node:
    id: int
    host: str
    port: int

    def label(self) -> str:
        """`host:port  (id)`, as Kafka's --state view prints the coordinator."""
        return f"{self.host}:{self.port}  ({self.id})"


@dataclass(frozen=True, slots=True)
class Member:
    """One member as the Admin API describes it; epochs and target only for `consumer` groups."""

    member_id: str
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]
    group_instance_id: str | None = None
    member_epoch: int | None = None
    target_assignment: tuple[TopicPartition, ...] | None = None
    subscribed_topics: tuple[str, ...] | None = None
    rack: str | None = None
    owned: tuple[TopicPartition, ...] = ()  # classic: owned partitions in its subscription
    generation: int = -1  # classic: generation in its subscription


@dataclass(frozen=True, slots=True)
class Group:
    """A described group; `state` and `type` spelled as Kafka's tool prints them."""

    group_id: str
    type: str
    state: str
    assignor: str
    coordinator: Node | None
    members: tuple[Member, ...] = ()
    group_epoch: int | None = None
    assignment_epoch: int | None = None
    protocol_type: str | None = None

    @property
    def active(self) -> bool:
        """What Kafka's reset-offsets checks: only an Empty or Dead group may be reset."""
        return self.state not in ("Empty", "Dead")


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    type: str
    state: str


@dataclass
class GroupAdmin:
    """The calls the `group` command needs, over one confluent-kafka AdminClient."""

    bootstrap: str
    command_config: str | None = None
    timeout_ms: int = 5000
    _client: Any = field(default=None, init=False, repr=False)
    _plaintext: bool = field(default=True, init=False, repr=False)

    def __post_init__(self) -> None:
        from confluent_kafka.admin import AdminClient

        conf = {"bootstrap.servers": self.bootstrap, "client.id": "kafka-rebalance"}
        conf.update(self._security_conf())
        self._client = AdminClient(conf)

    # -- configuration ------------------------------------------------------------------------

    def _security_conf(self) -> dict[str, str]:
        """Java client properties (--command-config) to librdkafka's names, checked as admin.py checks them."""
        if not self.command_config:
            return {}
        props = load_properties(self.command_config)  # as Java reads it: bytes as ISO-8859-1
        kw = admin_kwargs(props, source=self.command_config)
        out: dict[str, str] = {}
        names = {
            "security_protocol": "security.protocol",
            "sasl_mechanism": "sasl.mechanism",
            "sasl_plain_username": "sasl.username",
            "sasl_plain_password": "sasl.password",
            "ssl_cafile": "ssl.ca.location",
            "ssl_certfile": "ssl.certificate.location",
            "ssl_keyfile": "ssl.key.location",
            "ssl_password": "ssl.key.password",
            "client_id": "client.id",
        }
        for k, v in kw.items():
            if k in names:
                out[names[k]] = str(v)
            elif k == "ssl_check_hostname":
                out["ssl.endpoint.identification.algorithm"] = "https" if v else "none"
        self._plaintext = out.get("security.protocol", "PLAINTEXT") == "PLAINTEXT"
        return out

    def _wait(self, make: Callable[[], Any], what: str):
        """The result of the future `make()` returns, re-asking while the error is retriable.

        A coordinator that is moving or still loading `__consumer_offsets` answers
        NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS; Kafka's admin client retries those
        until its timeout, and so do we.
        """
        from confluent_kafka import KafkaException

        deadline = time.monotonic() + self.timeout_ms / 1000
        while True:
            try:
                return make().result(timeout=self.timeout_ms / 1000 + 5)
            except KafkaException as exc:
                err = exc.args[0]
                retriable = (
                    getattr(err, "code", lambda: None)() in _RETRIABLE
                    or getattr(err, "retriable", lambda: False)()
                )
                if retriable and time.monotonic() < deadline:
                    time.sleep(0.2)
                    continue
                raise GroupRuntimeError(f"{what} failed: {err}") from None
            except Exception as exc:  # concurrent.futures.TimeoutError and the like
                raise GroupRuntimeError(
                    f"{what} failed: {type(exc).__name__} (is {self.bootstrap} reachable?)"
                ) from None

    @property
    def _timeout_kw(self) -> dict:
        return {"request_timeout": self.timeout_ms / 1000}

    # -- reading groups -----------------------------------------------------------------------

    def list_groups(self) -> list[GroupListing]:
        """Every consumer group (classic and consumer), as ListGroups reports them."""
        result = self._wait(
            lambda: self._client.list_consumer_groups(**self._timeout_kw), "ListGroups"
        )
        out = []
        for g in result.valid:
            state = _STATE_NAMES.get(getattr(g.state, "name", "UNKNOWN"), "Unknown")
            out.append(
                GroupListing(
                    g.group_id,
                    _TYPE_NAMES.get(getattr(g.type, "name", "UNKNOWN"), "Unknown"),
                    state,
                )
            )
        # librdkafka does not know Assigning/Reconciling: ask the coordinator for those.
        unknown = [g.group_id for g in out if g.state == "Unknown" and g.type == "Consumer"]
        if unknown:
            described = self.describe(unknown)
            out = [
                GroupListing(g.group_id, g.type, described[g.group_id].state)
                if g.group_id in described
                else g
                for g in out
            ]
        return out

    def describe(self, group_ids: Sequence[str], raw_metadata: bool = False) -> dict[str, Group]:
        """Describe groups; KIP-848 groups get their epochs and target assignments."""
        if not group_ids:
            return {}
        out: dict[str, Group] = {}
        for gid in dict.fromkeys(group_ids):
            d = self._wait(  # _wait calls the lambda at once, in this iteration
                lambda: self._client.describe_consumer_groups([gid], **self._timeout_kw)[gid],
                f"describe group {gid!r}",
            )
            out[gid] = _group_from_confluent(d)
        if self._plaintext:
            for gid, g in list(out.items()):
                if g.coordinator is None:
                    continue
                if g.type == "Consumer":
                    out[gid] = self._consumer_group_describe(g)
                elif raw_metadata and g.type == "Classic" and g.members:
                    out[gid] = self._classic_subscriptions(g)
        return out

    def _call(self, node: Node, request, response, version: int, body: dict) -> dict:
        from .wire.codec import DecodeError
        from .wire.group_messages import decode_group_response, encode_group_request
        from .wire.protocol import frame_size

        try:
            with socket.create_connection(
                (node.host, node.port), timeout=self.timeout_ms / 1000
            ) as s:
                s.sendall(encode_group_request(request, version, 1, body))
                size = frame_size(_recv(s, 4))
                _cid, resp = decode_group_response(response, version, _recv(s, size))
        except (OSError, DecodeError) as exc:
            raise GroupRuntimeError(
                f"{request.name} to coordinator {node.host}:{node.port} failed: {exc}"
            ) from None
        return resp

    def _consumer_group_describe(self, g: Group) -> Group:
        from .wire.group_messages import (
            CONSUMER_GROUP_DESCRIBE_REQUEST,
            CONSUMER_GROUP_DESCRIBE_RESPONSE,
        )

        assert g.coordinator is not None
        deadline = time.monotonic() + self.timeout_ms / 1000
        while True:
            resp = self._call(
                g.coordinator,
                CONSUMER_GROUP_DESCRIBE_REQUEST,
                CONSUMER_GROUP_DESCRIBE_RESPONSE,
                0,
                {"group_ids": [g.group_id]},
            )
            codes = {d["error_code"] for d in resp["groups"]}
            if not codes & _RETRIABLE or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        for d in resp["groups"]:
            if d["group_id"] != g.group_id or d["error_code"] != 0:
                continue
            members = tuple(
                Member(
                    member_id=m["member_id"],
                    client_id=m["client_id"],
                    host=m["client_host"],
                    assignment=_tps(m["assignment"]),
                    group_instance_id=m["instance_id"],
                    member_epoch=m["member_epoch"],
                    target_assignment=_tps(m["target_assignment"]),
                    subscribed_topics=tuple(m["subscribed_topic_names"]),
                    rack=m["rack_id"],
                )
                for m in d["members"]
            )
            return Group(
                g.group_id,
                g.type,
                d["group_state"],
                d["assignor_name"],
                g.coordinator,
                members,
                d["group_epoch"],
                d["assignment_epoch"],
                g.protocol_type,
            )
        return g

    def _classic_subscriptions(self, g: Group) -> Group:
        from ..assign.protocol import SchemaException, decode_subscription
        from .wire.group_messages import DESCRIBE_GROUPS_REQUEST, DESCRIBE_GROUPS_RESPONSE

        assert g.coordinator is not None
        resp = self._call(
            g.coordinator,
            DESCRIBE_GROUPS_REQUEST,
            DESCRIBE_GROUPS_RESPONSE,
            5,
            {"groups": [g.group_id]},
        )
        subs = {}
        for d in resp["groups"]:
            if d["group_id"] != g.group_id or d["protocol_type"] != "consumer":
                continue
            for m in d["members"]:
                try:
                    subs[m["member_id"]] = decode_subscription(m["member_metadata"])
                except SchemaException:
                    continue
        members = []
        for m in g.members:
            s = subs.get(m.member_id)
            if s is None:
                members.append(m)
                continue
            members.append(
                Member(
                    m.member_id,
                    m.client_id,
                    m.host,
                    m.assignment,
                    m.group_instance_id,
                    subscribed_topics=s.topics,
                    rack=s.rack_id,
                    owned=s.owned_partitions,
                    generation=s.generation_id,
                )
            )
        return Group(
            g.group_id,
            g.type,
            g.state,
            g.assignor,
            g.coordinator,
            tuple(members),
            g.group_epoch,
            g.assignment_epoch,
            g.protocol_type,
        )

    # -- offsets ------------------------------------------------------------------------------

    def committed(self, group_id: str) -> dict[TopicPartition, int]:
        """The group's committed offsets (OffsetFetch for all partitions); none -> not in the map."""
        from confluent_kafka import ConsumerGroupTopicPartitions

        res = self._wait(
            lambda: self._client.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group_id)], **self._timeout_kw
            )[group_id],
            f"fetch committed offsets of {group_id!r}",
        )
        out = {}
        for tp in res.topic_partitions or ():
            if tp.error is None and tp.offset >= 0:
                out[TopicPartition(tp.topic, tp.partition)] = tp.offset
        return out

    def log_offsets(
        self, tps: Iterable[TopicPartition], spec: str | int
    ) -> dict[TopicPartition, int | None]:
        """ListOffsets for `spec` ("earliest", "latest" or a timestamp in ms); None where unknown.

        A timestamp past every record gives -1 from the broker (Kafka's UNKNOWN_OFFSET).
        """
        from confluent_kafka import IsolationLevel, KafkaException
        from confluent_kafka import TopicPartition as CTP
        from confluent_kafka.admin import OffsetSpec

        tps = list(dict.fromkeys(tps))
        if not tps:
            return {}
        if spec == "earliest":
            ospec = OffsetSpec.earliest()
        elif spec == "latest":
            ospec = OffsetSpec.latest()
        else:
            ospec = OffsetSpec.for_timestamp(int(spec))
        futures = self._client.list_offsets(
            {CTP(tp.topic, tp.partition): ospec for tp in tps},
            isolation_level=IsolationLevel.READ_UNCOMMITTED,
            **self._timeout_kw,
        )
        out: dict[TopicPartition, int | None] = {}
        for ctp, fut in futures.items():
            tp = TopicPartition(ctp.topic, ctp.partition)
            try:
                out[tp] = fut.result(timeout=self.timeout_ms / 1000 + 5).offset
            except KafkaException:
                out[tp] = None
        return {tp: out.get(tp) for tp in tps}

    def topic_partitions(self, topics: Sequence[str]) -> list[TopicPartition]:
        """Every partition of `topics` (DescribeTopics); an unknown topic is an error (exit 1)."""
        from confluent_kafka import TopicCollection

        if not topics:
            return []
        out: list[TopicPartition] = []
        for name in topics:
            d = self._wait(
                lambda: self._client.describe_topics(  # _wait calls it at once
                    TopicCollection([name]), **self._timeout_kw
                )[name],
                f"describe topic {name!r}",
            )
            out.extend(TopicPartition(name, p.id) for p in d.partitions)
        return out

    def alter_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
        """OffsetCommit outside the group (generation -1), as Admin.alterConsumerGroupOffsets."""
        from confluent_kafka import ConsumerGroupTopicPartitions
        from confluent_kafka import TopicPartition as CTP

        if not offsets:
            return
        req = ConsumerGroupTopicPartitions(
            group_id, [CTP(tp.topic, tp.partition, off) for tp, off in offsets.items()]
        )
        res = self._wait(
            lambda: self._client.alter_consumer_group_offsets([req], **self._timeout_kw)[group_id],
            f"commit offsets of {group_id!r}",
        )
        errors = [
            f"{tp.topic}-{tp.partition}: {tp.error}" for tp in res.topic_partitions if tp.error
        ]
        if errors:
            raise GroupRuntimeError(f"commit offsets of {group_id!r} failed: {'; '.join(errors)}")

    # -- deleting ------------------------------------------------------------------------------

    def delete_groups(self, group_ids: Sequence[str]) -> dict[str, str | None]:
        """DeleteGroups: each group's error name, or None when it was deleted."""
        from confluent_kafka import KafkaException

        out: dict[str, str | None] = {}
        futures = self._client.delete_consumer_groups(list(group_ids), **self._timeout_kw)
        for gid, fut in futures.items():
            try:
                fut.result(timeout=self.timeout_ms / 1000 + 5)
                out[gid] = None
            except KafkaException as exc:
                err = exc.args[0]
                out[gid] = err.name() if hasattr(err, "name") else str(err)
        return out

    def delete_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> tuple[str, dict[TopicPartition, str | None]]:
        """OffsetDelete to the coordinator: (top-level error name, each partition's error or None)."""
        from .wire.group_messages import OFFSET_DELETE_REQUEST, OFFSET_DELETE_RESPONSE

        g = self.describe([group_id])[group_id]
        if g.coordinator is None:
            raise GroupRuntimeError(f"no coordinator for group {group_id!r}")
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        resp = self._call(
            g.coordinator,
            OFFSET_DELETE_REQUEST,
            OFFSET_DELETE_RESPONSE,
            0,
            {
                "group_id": group_id,
                "topics": [
                    {"name": t, "partitions": [{"partition_index": p} for p in ps]}
                    for t, ps in by_topic.items()
                ],
            },
        )
        top = resp["error_code"]
        result: dict[TopicPartition, str | None] = {}
        for t in resp["topics"]:
            for p in t["partitions"]:
                code = p["error_code"] or top
                result[TopicPartition(t["name"], p["partition_index"])] = (
                    error_name(code) if code else None
                )
        for tp in partitions:
            result.setdefault(tp, error_name(top) if top else None)
        first = next((e for e in result.values() if e), None)
        return (error_name(top) if top else first or "NONE"), result

    def close(self) -> None:
        self._client = None

    def __enter__(self) -> GroupAdmin:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def error_name(code: int) -> str:
    """Kafka's Errors name for a protocol error code (GROUP_SUBSCRIBED_TO_TOPIC, ...)."""
    import kafka.errors as errors

    cls = errors.for_code(code)
    return getattr(cls, "message", None) or f"error code {code}"


def _recv(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        buf += chunk
    return bytes(buf)


def _tps(assignment: dict | None) -> tuple[TopicPartition, ...]:
    if not assignment:
        return ()
    return tuple(
        TopicPartition(t["topic_name"], p)
        for t in assignment.get("topic_partitions", ())
        for p in t["partitions"]
    )


def _group_from_confluent(d) -> Group:
    coord = d.coordinator
    node = Node(coord.id, coord.host, coord.port) if coord is not None else None
    members = []
    for m in d.members or ():
        tps = tuple(
            TopicPartition(tp.topic, tp.partition)
            for tp in (m.assignment.topic_partitions if m.assignment else ())
        )
        target = None
        if getattr(m, "target_assignment", None) is not None:
            target = tuple(
                TopicPartition(tp.topic, tp.partition)
                for tp in m.target_assignment.topic_partitions
            )
        members.append(
            Member(
                m.member_id,
                m.client_id,
                m.host,
                tps,
                m.group_instance_id or None,
                target_assignment=target,
            )
        )
    gtype = _TYPE_NAMES.get(getattr(d.type, "name", "UNKNOWN"), "Unknown")
    state = _STATE_NAMES.get(getattr(d.state, "name", "UNKNOWN"), "Unknown")
    return Group(
        d.group_id,
        gtype,
        state,
        d.partition_assignor or "",
        node,
        tuple(members),
    )
