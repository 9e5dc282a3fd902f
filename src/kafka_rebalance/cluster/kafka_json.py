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


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _tp(entry: Any, where: str, allowed: set[str]) -> TopicPartition:
    if not isinstance(entry, Mapping):
        raise InputError(f"expected an object, got {entry!r}", field=where)
    for k in entry:
        if k not in allowed:
            raise InputError(
                f"unknown field (allowed: {', '.join(sorted(allowed))})", field=f"{where}.{k}"
            )
    if "topic" not in entry:
        raise InputError("missing", field=f"{where}.topic")
    if "partition" not in entry:
        raise InputError("missing", field=f"{where}.partition")
    topic, part = entry["topic"], entry["partition"]
    if not isinstance(topic, str) or not topic:
        raise InputError(f"expected a topic name, got {topic!r}", field=f"{where}.topic")
    if not _is_int(part) or part < 0:
        raise InputError(
            f"expected a partition number >= 0, got {part!r}", field=f"{where}.partition"
        )
    return TopicPartition(topic, part)


def _version(doc: Mapping, name: str) -> None:
    if "version" in doc and doc["version"] != 1:
        raise InputError(
            f"unsupported {name} version {doc['version']!r} (expected 1)", field="version"
        )


# -- leader election ---------------------------------------------------------


def parse_election_json(doc: Any) -> list[TopicPartition]:
    """Partitions of a leader election file; duplicates are an error, as in LeaderElectionCommand."""
    if not isinstance(doc, Mapping) or "partitions" not in doc:
        raise InputError(
            'expected {"partitions": [{"topic": ..., "partition": ...}]}', field="partitions"
        )
    if not isinstance(doc["partitions"], list):
        raise InputError(f"expected a list, got {doc['partitions']!r}", field="partitions")
    out: list[TopicPartition] = []
    seen: set[TopicPartition] = set()
    for i, e in enumerate(doc["partitions"]):
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
    if "partitions" not in doc:
        raise InputError("missing", field="partitions")
    if not isinstance(doc["partitions"], list):
        raise InputError(f"expected a list, got {doc['partitions']!r}", field="partitions")
    out: list[Reassignment] = []
    seen: set[TopicPartition] = set()
    for i, e in enumerate(doc["partitions"]):
        where = f"partitions[{i}]"
        tp = _tp(e, where, {"topic", "partition", "replicas", "log_dirs"})
        if tp in seen:
            raise InputError(f"duplicate partition {tp}", field=where)
        seen.add(tp)
        if "replicas" not in e:
            raise InputError("missing", field=f"{where}.replicas")
        reps = e["replicas"]
        if not isinstance(reps, list) or not reps or not all(_is_int(r) and r >= 0 for r in reps):
            raise InputError(
                f"expected a non-empty list of broker ids, got {reps!r}", field=f"{where}.replicas"
            )
        if len(set(reps)) != len(reps):
            raise InputError(f"duplicate broker id in {reps!r}", field=f"{where}.replicas")
        dirs = None
        if "log_dirs" in e:
            d = e["log_dirs"]
            if not isinstance(d, list) or not all(isinstance(x, str) for x in d):
                raise InputError(
                    f"expected a list of log dirs, got {d!r}", field=f"{where}.log_dirs"
                )
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
    if "topics" not in doc or not isinstance(doc["topics"], list):
        raise InputError('expected a list of {"topic": name}', field="topics")
    out: list[str] = []
    for i, e in enumerate(doc["topics"]):
        where = f"topics[{i}]"
        if not isinstance(e, Mapping) or not isinstance(e.get("topic"), str) or not e["topic"]:
            raise InputError(f'expected {{"topic": name}}, got {e!r}', field=where)
        if e["topic"] in out:
            raise InputError(f"duplicate topic {e['topic']!r}", field=where)
        out.append(e["topic"])
    return out


def topics_to_move_json(topics: Sequence[str]) -> dict:
    return {"version": 1, "topics": [{"topic": t} for t in topics]}
