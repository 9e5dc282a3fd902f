"""Read a cluster snapshot: the JSON of docs/formats.md section 3 or the text of `kafka-topics --describe`.

Both readers validate everything and raise InputError naming the field
(`partitions[3].replicas`) or the line, so a hand-written snapshot fails with a
message that says where to look. `snapshot_to_json` writes the same JSON back.

The describe text lists no brokers, so whether a broker is up is not in it: a
broker out of every ISR may be lagging, not dead. Such snapshots are an
`InferredLivenessSnapshot`, and the JSON marks each broker whose `alive` was
inferred with the optional `"alive_inferred": true`, so nobody downstream
mistakes the guess for an observation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .. import fields as F
from .. import limits
from ..errors import InputError
from ..model import Broker, ClusterSnapshot, LogDir, PartitionLoad, PartitionReplicas

_BROKER_KEYS = {"id", "rack", "alive", "alive_inferred", "capacity", "log_dirs"}


@dataclass(frozen=True, slots=True)
class InferredLivenessSnapshot(ClusterSnapshot):
    """A snapshot in which the `alive` of some brokers was inferred, not read from the cluster."""

    alive_inferred: frozenset[int] = frozenset()


def alive_inferred(snapshot: ClusterSnapshot) -> frozenset[int]:
    """Brokers whose liveness the snapshot's source did not state (empty for a live cluster or plain JSON)."""
    return getattr(snapshot, "alive_inferred", frozenset())


_CAPACITY_KEYS = {"disk_bytes", "nw_in_bytes", "nw_out_bytes", "cpu"}
_PARTITION_KEYS = {"topic", "partition", "replicas", "leader", "isr", "load", "log_dirs"}
_LOAD_KEYS = {"bytes_in", "bytes_out", "messages_in", "size_bytes", "cpu"}


def _check_keys(obj: Mapping, allowed: set[str], where: str) -> None:
    for key in obj:
        if key not in allowed:
            raise InputError(
                f"unknown field (allowed: {', '.join(sorted(allowed))})", field=f"{where}.{key}"
            )


def _obj(v: Any, where: str) -> Mapping:
    return F.mapping(v, where)


def _int_list(v: Any, where: str) -> list[int]:
    return F.int_list(v, where, F.broker_id, what="broker ids")


# Bytes, rates and CPU: Kafka's sizes are int64; beyond it a sum over partitions overflows numpy.
MAX_QUANTITY = float(F.INT64_MAX)


def _numbers(doc: Any, where: str, keys: set[str]) -> dict[str, float]:
    obj = _obj(doc, where)
    _check_keys(obj, keys, where)
    out = {}
    for k, v in obj.items():
        if v is None:
            continue
        out[k] = F.number(v, f"{where}.{k}", lo=0, hi=MAX_QUANTITY, what="a number >= 0")
    return out


def _log_dirs(doc: Any, where: str) -> tuple[LogDir, ...]:
    """A broker's log dirs: [{"path": "/data/1", "capacity_bytes": 1e12}, ...] (capacity optional)."""
    if doc is None:
        return ()
    if not isinstance(doc, list):
        raise InputError(f"expected a list of log dirs, got {F.show(doc)}", field=where)
    out = []
    seen = set()
    for i, d in enumerate(doc):
        o = _obj(d, f"{where}[{i}]")
        _check_keys(o, {"path", "capacity_bytes"}, f"{where}[{i}]")
        path = F.get(o, "path", f"{where}[{i}]", F.string, what="a directory path")
        if path in seen:
            raise InputError(f"log dir {path!r} listed twice", field=f"{where}[{i}].path")
        seen.add(path)
        cap = _numbers(
            {"capacity_bytes": o.get("capacity_bytes")}, f"{where}[{i}]", {"capacity_bytes"}
        )
        out.append(LogDir(path, cap.get("capacity_bytes")))
    return tuple(out)


def parse_snapshot(doc: Any) -> ClusterSnapshot:
    """Validate a decoded snapshot JSON document into a ClusterSnapshot."""
    if not isinstance(doc, Mapping):
        raise InputError("the snapshot must be a JSON object with 'brokers' and 'partitions'")
    for key in doc:
        if key not in ("brokers", "partitions"):
            raise InputError("unknown field (allowed: brokers, partitions)", field=str(key))
    if "brokers" not in doc:
        raise InputError("missing", field="brokers")
    if "partitions" not in doc:
        raise InputError("missing", field="partitions")
    if not isinstance(doc["brokers"], list):
        raise InputError(f"expected a list, got {F.show(doc['brokers'])}", field="brokers")
    if not isinstance(doc["partitions"], list):
        raise InputError(f"expected a list, got {F.show(doc['partitions'])}", field="partitions")
    limits.check("brokers", len(doc["brokers"]), field="brokers")
    limits.check("partitions", len(doc["partitions"]), field="partitions")
    replicas_total = 0
    brokers: list[Broker] = []
    ids: set[int] = set()
    guessed: set[int] = set()
    for i, b in enumerate(doc["brokers"]):
        where = f"brokers[{i}]"
        b = _obj(b, where)
        _check_keys(b, _BROKER_KEYS, where)
        if "id" not in b:
            raise InputError("missing", field=f"{where}.id")
        bid = F.broker_id(b["id"], f"{where}.id")
        if bid in ids:
            raise InputError(f"duplicate broker id {bid}", field=f"{where}.id")
        ids.add(bid)
        rack = F.get(b, "rack", where, F.optional_string, None, what="a rack name")
        alive = F.get(b, "alive", where, F.boolean, True)
        inferred = F.get(b, "alive_inferred", where, F.boolean, False)
        if inferred:
            guessed.add(bid)
        cap = (
            _numbers(b["capacity"], f"{where}.capacity", _CAPACITY_KEYS)
            if b.get("capacity") is not None
            else {}
        )
        brokers.append(
            Broker(
                bid,
                rack,
                alive,
                cap.get("disk_bytes"),
                cap.get("nw_in_bytes"),
                cap.get("nw_out_bytes"),
                cap.get("cpu"),
                _log_dirs(b.get("log_dirs"), f"{where}.log_dirs"),
            )
        )
    partitions: list[PartitionReplicas] = []
    seen: set[tuple[str, int]] = set()
    for i, p in enumerate(doc["partitions"]):
        where = f"partitions[{i}]"
        p = _obj(p, where)
        _check_keys(p, _PARTITION_KEYS, where)
        for key in ("topic", "partition", "replicas"):
            if key not in p:
                raise InputError("missing", field=f"{where}.{key}")
        topic = F.string(p["topic"], f"{where}.topic", what="a topic name")
        num = F.partition(p["partition"], f"{where}.partition")
        if (topic, num) in seen:
            raise InputError(f"duplicate partition {topic}-{num}", field=where)
        seen.add((topic, num))
        replicas = _int_list(p["replicas"], f"{where}.replicas")
        if not replicas:
            raise InputError("a partition needs at least one replica", field=f"{where}.replicas")
        replicas_total += len(replicas)
        limits.check("replicas", replicas_total, field=f"{where}.replicas")
        for r in replicas:
            if r not in ids:
                raise InputError(f"broker {r} is not in 'brokers'", field=f"{where}.replicas")
        leader = p.get(
            "leader", replicas[0]
        )  # absent: a healthy partition led by its preferred replica
        if leader is not None:
            leader = F.integer(
                leader, f"{where}.leader", lo=-1, hi=F.INT32_MAX, what="a broker id, -1 or null"
            )
            if leader == -1:
                leader = None
            elif leader not in replicas:
                raise InputError(
                    f"leader {leader} is not one of the replicas {replicas}",
                    field=f"{where}.leader",
                )
        isr = _int_list(p["isr"], f"{where}.isr") if "isr" in p else list(replicas)
        for r in isr:
            if r not in replicas:
                raise InputError(
                    f"ISR member {r} is not one of the replicas {replicas}", field=f"{where}.isr"
                )
        load = None
        if p.get("load") is not None:
            ld = _numbers(p["load"], f"{where}.load", _LOAD_KEYS)
            load = PartitionLoad(**ld)
        dirs = None
        if p.get("log_dirs") is not None:
            d = p["log_dirs"]
            if (
                not isinstance(d, list)
                or len(d) != len(replicas)
                or not all(x is None or (isinstance(x, str) and x) for x in d)
            ):
                raise InputError(
                    f"expected one log dir (or null) per replica ({len(replicas)}), got {F.show(d)}",
                    field=f"{where}.log_dirs",
                )
            dirs = tuple(d)
        partitions.append(
            PartitionReplicas(topic, num, tuple(replicas), leader, tuple(isr), load, dirs)
        )
    if guessed:
        return InferredLivenessSnapshot(tuple(brokers), tuple(partitions), frozenset(guessed))
    return ClusterSnapshot(tuple(brokers), tuple(partitions))


def snapshot_to_json(snapshot: ClusterSnapshot) -> dict:
    """The snapshot as docs/formats.md section 3 JSON (only fields that carry information)."""
    brokers = []
    guessed = alive_inferred(snapshot)
    for b in snapshot.brokers:
        d: dict[str, Any] = {"id": b.id}
        if b.rack is not None:
            d["rack"] = b.rack
        d["alive"] = b.alive
        if b.id in guessed:
            d["alive_inferred"] = True
        cap = {
            k: v
            for k, v in (
                ("disk_bytes", b.disk_bytes),
                ("nw_in_bytes", b.nw_in_bytes),
                ("nw_out_bytes", b.nw_out_bytes),
                ("cpu", b.cpu),
            )
            if v is not None
        }
        if cap:
            d["capacity"] = cap
        if b.log_dirs:
            d["log_dirs"] = [
                {
                    "path": x.path,
                    **({"capacity_bytes": x.capacity_bytes} if x.capacity_bytes else {}),
                }
                for x in b.log_dirs
            ]
        brokers.append(d)
    parts = []
    for p in snapshot.partitions:
        d = {
            "topic": p.topic,
            "partition": p.partition,
            "replicas": list(p.replicas),
            "leader": p.leader,
            "isr": list(p.isr),
        }
        if p.load is not None:
            d["load"] = {
                "bytes_in": p.load.bytes_in,
                "bytes_out": p.load.bytes_out,
                "messages_in": p.load.messages_in,
                "size_bytes": p.load.size_bytes,
            }
            if p.load.cpu:
                d["load"]["cpu"] = p.load.cpu
        if p.log_dirs is not None:
            d["log_dirs"] = list(p.log_dirs)
        parts.append(d)
    return {"brokers": brokers, "partitions": parts}


# ---------------------------------------------------------------------------
# `kafka-topics.sh --describe` text

_KEYS = (
    "TopicId",
    "Topic",
    "PartitionCount",
    "ReplicationFactor",
    "Configs",
    "Partition",
    "Leader",
    "Replicas",
    "Isr",
    "Elr",
    "LastKnownElr",
    "Offline",
    "Adding Replicas",
    "Removing Replicas",
    "MarkedForDeletion",
)
_KEY_RE = re.compile(r"(?:^|(?<=\s))(" + "|".join(re.escape(k) for k in _KEYS) + r"):")


def _fields(line: str) -> dict[str, str]:
    marks = list(_KEY_RE.finditer(line))
    out = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(line)
        out[m.group(1)] = line[m.end() : end].strip()
    return out


def _ids(text: str, lineno: int, key: str) -> list[int]:
    text = text.strip()
    if not text:
        return []
    out = [
        _text_int(x, lineno, key, "comma-separated broker ids", text)
        for x in text.split(",")
        if x.strip()
    ]
    if len(set(out)) != len(out):
        raise InputError(f"duplicate broker id in {F.show(text)}", field=f"line {lineno}: {key}")
    return out


def _text_int(x: str, lineno: int, key: str, what: str, whole: str | None = None) -> int:
    """An int32 >= 0 of the describe text (a broker id or partition number)."""
    x = x.strip()
    if not x.isdigit() or not x.isascii():
        raise InputError(
            f"expected {what}, got {F.show(whole if whole is not None else x)}",
            field=f"line {lineno}: {key}",
        )
    if len(x) > 10 or int(x) > F.INT32_MAX:
        raise InputError(
            f"must be <= {F.INT32_MAX}, got {F.show(x)}", field=f"line {lineno}: {key}"
        )
    return int(x)


def parse_describe_text(text: str) -> InferredLivenessSnapshot:
    """Parse `kafka-topics --describe` output; brokers are the replica ids.

    The text does not list brokers, so liveness is inferred and marked as such. A broker is dead only when
    the text says so: listed under `Offline:` (older tools print it), or in the ISR (or ELR) of a partition
    with `Leader: none` (the controller would have elected a live one, so every one left there is down).
    Every other broker is taken as alive, one in no ISR included: a lagging follower is out of every ISR
    too, and calling it dead would make a plan move all its replicas away.
    """
    partitions: list[PartitionReplicas] = []
    all_ids: set[int] = set()
    offline: set[int] = set()
    leaderless: set[int] = set()
    seen: set[tuple[str, int]] = set()
    replicas_total = 0
    for lineno, line in enumerate(text.splitlines(), start=1):
        f = _fields(line)
        if "Partition" not in f:
            continue  # topic header, blank line, tool warnings
        if "Topic" not in f or not f["Topic"]:
            raise InputError("partition line without a topic", field=f"line {lineno}: Topic")
        topic = f["Topic"].split()[0]
        num = _text_int(f["Partition"], lineno, "Partition", "a partition number (integer >= 0)")
        if (topic, num) in seen:
            raise InputError(f"duplicate partition {topic}-{num}", field=f"line {lineno}")
        seen.add((topic, num))
        limits.check("partitions", len(seen), field=f"line {lineno}")
        if "Replicas" not in f:
            raise InputError("missing", field=f"line {lineno}: Replicas")
        replicas = _ids(f["Replicas"], lineno, "Replicas")
        if not replicas:
            raise InputError(
                "a partition needs at least one replica", field=f"line {lineno}: Replicas"
            )
        lead_text = f.get("Leader", "none").strip()
        if lead_text.lower() in ("none", "-1", ""):
            leader = None
        else:
            leader = _text_int(lead_text, lineno, "Leader", "a broker id or none")
            if leader not in replicas:
                raise InputError(
                    f"leader {leader} is not one of the replicas {replicas}",
                    field=f"line {lineno}: Leader",
                )
        isr = _ids(f.get("Isr", ""), lineno, "Isr")
        for r in isr:
            if r not in replicas:
                raise InputError(
                    f"ISR member {r} is not one of the replicas {replicas}",
                    field=f"line {lineno}: Isr",
                )
        off = _ids(f.get("Offline", ""), lineno, "Offline")
        offline.update(off)
        if leader is None:
            elr = f.get("Elr", "").strip()
            leaderless.update(isr)
            if elr and elr != "N/A":
                leaderless.update(r for r in _ids(elr, lineno, "Elr") if r in replicas)
        all_ids.update(replicas)
        replicas_total += len(replicas)
        limits.check("replicas", replicas_total, field=f"line {lineno}: Replicas")
        limits.check("brokers", len(all_ids), field=f"line {lineno}: Replicas")
        partitions.append(PartitionReplicas(topic, num, tuple(replicas), leader, tuple(isr)))
    if not partitions:
        raise InputError("no 'Topic: .. Partition: .. Replicas: ..' lines found")
    dead = offline | leaderless
    brokers = tuple(Broker(i, None, i not in dead) for i in sorted(all_ids))
    return InferredLivenessSnapshot(brokers, tuple(partitions), frozenset(all_ids - offline))


def parse_snapshot_text(text: str) -> ClusterSnapshot:
    """Either format: JSON when the text starts with '{', else the describe text."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        import json

        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
            ) from None
        return parse_snapshot(doc)
    return parse_describe_text(text)


def with_loads(
    snapshot: ClusterSnapshot, loads: Mapping[tuple[str, int], PartitionLoad]
) -> ClusterSnapshot:
    """The snapshot with each partition's load replaced by `loads` where it has one (the load model's)."""
    parts = tuple(
        replace(p, load=loads[(p.topic, p.partition)]) if (p.topic, p.partition) in loads else p
        for p in snapshot.partitions
    )
    return replace(
        snapshot, partitions=parts
    )  # keeps the snapshot's kind (inferred liveness stays marked)
