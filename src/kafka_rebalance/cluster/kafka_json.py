"""The JSON files of Kafka's own tools, read and written exactly.

- `kafka-leader-election.sh --path-to-json-file`: {"partitions": [{"topic", "partition"}]}
- `kafka-reassign-partitions.sh --reassignment-json-file`:
  {"version": 1, "partitions": [{"topic", "partition", "replicas", "log_dirs"?}]}
- `kafka-reassign-partitions.sh --topics-to-move-json-file`: {"version": 1, "topics": [{"topic"}]}
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import fields as F
from .. import limits
from ..errors import InputError
from ..model import TopicPartition

ANY_LOG_DIR = "any"


@dataclass(frozen=True, slots=True)
class Reassignment:
    """One partition's target replica list (replicas[0] becomes the preferred leader)."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...] | None = None

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


def _tp(entry: Any, where: str, allowed: set[str]) -> TopicPartition:
    F.mapping(entry, where)
    F.check_keys(entry, allowed, where)
    topic = F.get(entry, "topic", where, F.string, what="a topic name")
    part = F.get(entry, "partition", where, F.partition)
    return TopicPartition(topic, part)


def _version(doc: Mapping, name: str) -> None:
    if "version" in doc and (not F.is_int(doc["version"]) or doc["version"] != 1):
        raise InputError(
            f"unsupported {name} version {F.show(doc['version'])} (expected 1)", field="version"
        )


def _entries(doc: Mapping) -> list:
    """The `partitions` list, within the partitions limit."""
    entries = F.get(doc, "partitions", "", F.array)
    limits.check("partitions", len(entries), field="partitions")
    return entries


# -- leader election ---------------------------------------------------------


def parse_election_json(doc: Any) -> list[TopicPartition]:
    """Partitions of a leader election file; duplicates are an error, as in LeaderElectionCommand."""
    if not isinstance(doc, Mapping) or "partitions" not in doc:
        raise InputError(
            'expected {"partitions": [{"topic": ..., "partition": ...}]}', field="partitions"
        )
    out: list[TopicPartition] = []
    seen: set[TopicPartition] = set()
    for i, e in enumerate(_entries(doc)):
        tp = _tp(e, f"partitions[{i}]", {"topic", "partition"})
        if tp in seen:
            raise InputError(f"duplicate partition {tp}", field=f"partitions[{i}]")
        seen.add(tp)
        out.append(tp)
    return out


def election_json(partitions: Iterable[TopicPartition]) -> dict:
    return {"partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in partitions]}


# -- reassignment --------------------------------------------------------------


def parse_reassignment_json(doc: Any) -> list[Reassignment]:
    if not isinstance(doc, Mapping):
        raise InputError('expected {"version": 1, "partitions": [...]}')
    _version(doc, "reassignment")
    out: list[Reassignment] = []
    seen: set[TopicPartition] = set()
    replicas_total = 0
    for i, e in enumerate(_entries(doc)):
        where = f"partitions[{i}]"
        tp = _tp(e, where, {"topic", "partition", "replicas", "log_dirs"})
        if tp in seen:
            raise InputError(f"duplicate partition {tp}", field=where)
        seen.add(tp)
        reps = F.get(
            e, "replicas", where, F.int_list, item=F.broker_id, what="broker ids", empty=False
        )
        replicas_total += len(reps)
        limits.check("replicas", replicas_total, field=f"{where}.replicas")
        dirs = None
        if "log_dirs" in e:
            d = F.get(e, "log_dirs", where, F.strings, what="log dirs")
            if len(d) != len(reps):
                raise InputError(
                    f"expected {len(reps)} log dirs (one per replica), got {len(d)}",
                    field=f"{where}.log_dirs",
                )
            dirs = tuple(d)
        out.append(Reassignment(tp.topic, tp.partition, tuple(reps), dirs))
    return out


def reassignment_json(entries: Iterable[Reassignment]) -> dict:
    parts = []
    for r in entries:
        d: dict[str, Any] = {
            "topic": r.topic,
            "partition": r.partition,
            "replicas": list(r.replicas),
        }
        d["log_dirs"] = (
            list(r.log_dirs) if r.log_dirs is not None else [ANY_LOG_DIR] * len(r.replicas)
        )
        parts.append(d)
    return {"version": 1, "partitions": parts}


# -- topics to move ------------------------------------------------------------


def parse_topics_to_move_json(doc: Any) -> list[str]:
    if not isinstance(doc, Mapping):
        raise InputError('expected {"version": 1, "topics": [{"topic": ...}]}')
    _version(doc, "topics-to-move")
    topics = F.get(doc, "topics", "", F.array, what='a list of {"topic": name}')
    limits.check("topics", len(topics), field="topics")
    out: list[str] = []
    seen: set[str] = set()
    for i, e in enumerate(topics):
        where = f"topics[{i}]"
        F.mapping(e, where)
        topic = F.get(e, "topic", where, F.string, what="a topic name")
        if topic in seen:
            raise InputError(f"duplicate topic {F.show(topic)}", field=where)
        seen.add(topic)
        out.append(topic)
    return out


def topics_to_move_json(topics: Sequence[str]) -> dict:
    return {"version": 1, "topics": [{"topic": t} for t in topics]}
