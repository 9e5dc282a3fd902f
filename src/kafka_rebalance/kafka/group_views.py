"""The rows of `kafka-consumer-groups.sh --describe` (offsets, members, state) and Kafka's text for them.

Pure: built from a described group, its committed offsets and the log-end offsets. Row order
follows ConsumerGroupCommand at the broker's commit (1eb7644349cb): groups in TreeMap order;
offsets rows member by member (members with partitions, most partitions first), each
member's partitions sorted by number and then in the iteration order of the HashMap the
tool collects log-end offsets into; then the committed partitions nobody is assigned. Our
Java HashMap/HashSet emulation (assign/javacompat) reproduces that order.

`kafka_text_*` print exactly what the tool prints (printf widths, `-` for a missing value);
the KIP-848 columns (member epoch, target assignment, group and assignment epochs) are ours,
added to the table and JSON views only (Kafka 4.0's KIP-1099 adds the same under
--verbose; the 2024-10 tool here has none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from ..assign.javacompat import JavaHashMap, JavaHashSet
from ..assign.javacompat_hash import string_key
from ..model import TopicPartition
from .groups import Group, Member

MISSING = "-"


@dataclass(frozen=True, slots=True)
class OffsetRow:
    """PartitionAssignmentState: one row of the default (--offsets) view."""

    group: str
    topic: str | None
    partition: int | None
    current_offset: int | None
    log_end_offset: int | None
    lag: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class MemberRow:
    """MemberAssignmentState plus the KIP-848 member epoch and target assignment."""

    group: str
    consumer_id: str
    group_instance_id: str
    host: str
    client_id: str
    partitions: int
    assignment: tuple[TopicPartition, ...]
    member_epoch: int | None = None
    target_assignment: tuple[TopicPartition, ...] | None = None

    def to_json(self) -> dict:
        return {
            "group": self.group,
            "consumer_id": self.consumer_id,
            "group_instance_id": self.group_instance_id or None,
            "host": self.host,
            "client_id": self.client_id,
            "partitions": self.partitions,
            "assignment": [[tp.topic, tp.partition] for tp in self.assignment],
            "member_epoch": self.member_epoch,
            "target_assignment": None
            if self.target_assignment is None
            else [[tp.topic, tp.partition] for tp in self.target_assignment],
        }


def group_order(group_ids: Sequence[str]) -> list[str]:
    """TreeMap<String, ...> order: Java's String.compareTo (UTF-16 code units)."""
    return sorted(dict.fromkeys(group_ids), key=string_key)


def _java_partition_order(tps: Sequence[TopicPartition]) -> list[TopicPartition]:
    """describePartitions' order: sorted by partition (stable), then through a HashMap."""
    by_partition = sorted(tps, key=lambda tp: tp.partition)
    m = JavaHashMap()
    for tp in by_partition:
        m.put((tp.topic, tp.partition), tp)
    return list(m.values())


def _assignment_set_order(tps: Sequence[TopicPartition]) -> list[TopicPartition]:
    """MemberAssignment keeps its partitions in a HashSet (new HashSet<>(list))."""
    s = JavaHashSet.copy_of([(tp.topic, tp.partition) for tp in tps])
    return [TopicPartition(t, p) for t, p in s.to_list()]


def offset_rows(
    group: Group,
    committed: Mapping[TopicPartition, int],
    log_end: Mapping[TopicPartition, int | None],
) -> list[OffsetRow]:
    """collectGroupsOffsets + describePartitions for one group."""

    def row(tp: TopicPartition, member: Member | None) -> OffsetRow:
        off = committed.get(tp)
        end = log_end.get(tp)
        lag = end - off if off is not None and off != -1 and end is not None else None
        if member is None:
            return OffsetRow(
                group.group_id, tp.topic, tp.partition, off, end, lag, None, None, None
            )
        return OffsetRow(
            group.group_id,
            tp.topic,
            tp.partition,
            off,
            end,
            lag,
            member.member_id,
            member.host,
            member.client_id,
        )

    rows: list[OffsetRow] = []
    assigned: set[TopicPartition] = set()
    with_parts = [m for m in group.members if m.assignment]
    for m in sorted(with_parts, key=lambda m: -len(m.assignment)):
        tps = _assignment_set_order(m.assignment)
        assigned.update(tps)
        rows.extend(row(tp, m) for tp in _java_partition_order(tps))
    unassigned_map = JavaHashMap()
    for tp in committed:
        if tp not in assigned:
            unassigned_map.put((tp.topic, tp.partition), tp)
    unassigned = list(unassigned_map.values())
    rows.extend(row(tp, None) for tp in _java_partition_order(unassigned))
    return rows


def member_rows(group: Group) -> list[MemberRow]:
    return [
        MemberRow(
            group.group_id,
            m.member_id,
            m.group_instance_id or "",
            m.host,
            m.client_id,
            len(m.assignment),
            m.assignment,
            m.member_epoch,
            m.target_assignment,
        )
        for m in group.members
    ]


def state_json(group: Group) -> dict:
    c = group.coordinator
    return {
        "group": group.group_id,
        "type": group.type,
        "coordinator": None if c is None else {"id": c.id, "host": c.host, "port": c.port},
        "assignment_strategy": group.assignor,
        "state": group.state,
        "members": len(group.members),
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
    }


# -- what the tool says before (or instead of) a group's table -------------------------------


def group_notice(group: Group, rows: int) -> tuple[str | None, str | None, bool]:
    """shouldPrintMemberState: (stdout error, stderr notice, print the table?)."""
    if group.state == "Dead":
        return f"Consumer group '{group.group_id}' does not exist.", None, False
    notice = None
    if group.state == "Empty":
        notice = f"Consumer group '{group.group_id}' has no active members."
    elif group.state in ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"):
        notice = f"Warning: Consumer group '{group.group_id}' is rebalancing."
    return None, notice, rows > 0


# -- Kafka's exact text ---------------------------------------------------------------------------


def _pad(value: str, width: int) -> str:
    """printf `%-Ns`."""
    return value.ljust(width)


def _s(v: object) -> str:
    return MISSING if v is None else str(v)


def kafka_text_offsets(rows: Sequence[OffsetRow]) -> str:
    """printOffsets for one group: a leading newline before the header and before each row."""
    wg = max([15] + [len(r.group) for r in rows])
    wt = max([15] + [len(_s(r.topic)) for r in rows])
    wc = max([15] + [len(_s(r.consumer_id)) for r in rows])
    wh = max([15] + [len(_s(r.host)) for r in rows])

    def line(cells: Sequence[str]) -> str:
        g, t, p, co, leo, lag, cid, host, client = cells
        return (
            "\n"
            + " ".join(
                [
                    _pad(g, wg),
                    _pad(t, wt),
                    _pad(p, 10),
                    _pad(co, 15),
                    _pad(leo, 15),
                    _pad(lag, 15),
                    _pad(cid, wc),
                    _pad(host, wh),
                ]
            )
            + " "
            + client
        )

    out = line(
        [
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        ]
    )
    for r in rows:
        out += line(
            [
                r.group,
                _s(r.topic),
                _s(r.partition),
                _s(r.current_offset),
                _s(r.log_end_offset),
                _s(r.lag),
                _s(r.consumer_id),
                _s(r.host),
                _s(r.client_id),
            ]
        )
    return out + "\n"


def kafka_assignment_text(tps: Sequence[TopicPartition]) -> str:
    """The tool's ASSIGNMENT cell at this commit: per topic `(p,p)` (strings sorted), sorted, `, `."""
    if not tps:
        return MISSING
    grouped: dict[str, list[str]] = {}
    for tp in tps:
        grouped.setdefault(tp.topic, []).append(str(tp.partition))
    parts = ["(" + ",".join(sorted(ps, key=string_key)) + ")" for ps in grouped.values()]
    return ", ".join(sorted(parts, key=string_key))


def kafka_text_members(rows: Sequence[MemberRow], verbose: bool) -> str:
    """printMembers for one group."""
    wg, wc, wi, wh, wcl = 15, 15, 17, 15, 15
    with_instance = False
    for r in rows:
        wg, wc = max(wg, len(r.group)), max(wc, len(r.consumer_id))
        wi, wh = max(wi, len(r.group_instance_id)), max(wh, len(r.host))
        wcl = max(wcl, len(r.client_id))
        with_instance = with_instance or bool(r.group_instance_id)

    def cells(g, c, i, h, cl, n) -> str:
        parts = [_pad(g, wg), _pad(c, wc)]
        if with_instance:
            parts.append(_pad(i, wi))
        parts += [_pad(h, wh), _pad(cl, wcl), _pad(n, 15)]
        return " ".join(parts) + " "

    out = "\n" + cells(
        "GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"
    )
    if verbose:
        out += "ASSIGNMENT"
    out += "\n"
    for r in rows:
        out += cells(
            r.group, r.consumer_id, r.group_instance_id, r.host, r.client_id, str(r.partitions)
        )
        if verbose:
            out += kafka_assignment_text(r.assignment)
        out += "\n"
    return out


def kafka_text_state(group: Group) -> str:
    """printStates for one group."""
    c = group.coordinator
    coordinator = c.label() if c is not None else ":-1  (-1)"
    wc = max(25, len(coordinator))

    def line(g: str, co: str, a: str, s: str, n: str) -> str:
        return "\n" + " ".join([_pad(g, wc), _pad(co, 25), _pad(a, 20), _pad(s, 15), n])

    return (
        line("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
        + line(group.group_id, coordinator, group.assignor, group.state, str(len(group.members)))
        + "\n"
    )


def kafka_text_list(listings: Sequence, include_type: bool, include_state: bool) -> str:
    """listGroups: bare ids, or printGroupInfo's padded table with --type/--state."""
    if not include_type and not include_state:
        return "".join(f"{g.group_id}\n" for g in listings)
    wg = max([15] + [len(g.group_id) for g in listings]) + 10
    header, fmt_rows = ["GROUP"], [[g.group_id] for g in listings]
    widths = [wg]
    if include_type:
        header.append("TYPE")
        widths.append(20)
        for r, g in zip(fmt_rows, listings):
            r.append(g.type)
    if include_state:
        header.append("STATE")
        widths.append(20)
        for r, g in zip(fmt_rows, listings):
            r.append(g.state)

    def line(cells: Sequence[str]) -> str:
        return " ".join(_pad(c, w) for c, w in zip(cells, widths)) + "\n"

    return line(header) + "".join(line(r) for r in fmt_rows)


def kafka_text_delete(results: Mapping[str, str | None]) -> tuple[str, bool]:
    """deleteGroups' text (HashMap order of the group ids) and whether every deletion succeeded."""
    from ..assign.javacompat import JavaHashMap

    def order(ids):
        m = JavaHashMap()
        for g in ids:
            m.put(g, True)
        return list(m.keys())

    ok = order([g for g, e in results.items() if e is None])
    failed = order([g for g, e in results.items() if e is not None])
    if not failed:
        return f"Deletion of requested consumer groups ('{', '.join(ok)}') was successful.\n", True
    out = "\nError: Deletion of some consumer groups failed:\n"
    out += "".join(
        f"* Group '{g}' could not be deleted due to: {java_exception(results[g] or '')}\n"
        for g in failed
    )
    if ok:
        joined = "'".join(ok)
        out += f"\nThese consumer groups were deleted successfully: '{joined}', '\n"
    return out, False


# Errors.java: the exception class and message the Java admin raises for an error code.
_JAVA_ERRORS = {
    "UNKNOWN_TOPIC_OR_PARTITION": (
        "UnknownTopicOrPartitionException",
        "This server does not host this topic-partition.",
    ),
    "INVALID_GROUP_ID": ("InvalidGroupIdException", "The configured groupId is invalid."),
    "TOPIC_AUTHORIZATION_FAILED": ("TopicAuthorizationException", "Topic authorization failed."),
    "GROUP_AUTHORIZATION_FAILED": ("GroupAuthorizationException", "Group authorization failed."),
    "NON_EMPTY_GROUP": ("GroupNotEmptyException", "The group is not empty."),
    "GROUP_ID_NOT_FOUND": ("GroupIdNotFoundException", "The group id does not exist."),
    "GROUP_SUBSCRIBED_TO_TOPIC": (
        "GroupSubscribedToTopicException",
        "Deleting offsets of a topic is forbidden while the consumer group is actively "
        "subscribed to it.",
    ),
}


def java_exception(error: str, wrapped: bool = True) -> str:
    """The Java exception's toString for an error name (inside ExecutionException's when `wrapped`)."""
    cls, message = _JAVA_ERRORS.get(error, ("KafkaException", error))
    inner = f"org.apache.kafka.common.errors.{cls}: {message}"
    return f"java.util.concurrent.ExecutionException: {inner}" if wrapped else inner


_TOP_ERRORS = {
    "INVALID_GROUP_ID": "'{g}' is not valid.",
    "GROUP_ID_NOT_FOUND": "'{g}' does not exist.",
    "GROUP_AUTHORIZATION_FAILED": "Access to '{g}' is not authorized.",
    "NON_EMPTY_GROUP": "Deleting offsets of a consumer group '{g}' is forbidden if the group is not empty.",
}


def kafka_text_delete_offsets(
    group: str, topics: Sequence[str], top: str, partitions: Mapping[TopicPartition, str | None]
) -> str:
    """deleteOffsets' text: the outcome line, then TOPIC/PARTITION/STATUS sorted as the tool sorts."""
    if top == "NONE":
        out = f"Request succeed for deleting offsets with topic {', '.join(topics)} group {group}\n"
    elif top in _TOP_ERRORS:
        out = "\nError: " + _TOP_ERRORS[top].format(g=group) + "\n"
    elif top in (
        "GROUP_SUBSCRIBED_TO_TOPIC",
        "TOPIC_AUTHORIZATION_FAILED",
        "UNKNOWN_TOPIC_OR_PARTITION",
    ):
        out = "\nError: Encounter some partition level error, see the follow-up details:\n"
    else:
        out = f"\nError: Encounter some unknown error: {top}\n"

    def line(t: str, p: str, st: str) -> str:
        return f"\n{t.ljust(30)} {p.ljust(15)} {st.ljust(15)}"

    out += line("TOPIC", "PARTITION", "STATUS")
    for tp, err in sorted(
        partitions.items(), key=lambda kv: string_key(kv[0].topic + str(kv[0].partition))
    ):
        part = str(tp.partition) if tp.partition >= 0 else "Not Provided"
        status = "Successful" if err is None else f"Error: :{java_exception(err, wrapped=False)}"
        out += line(tp.topic, part, status)
    return out + "\n"
