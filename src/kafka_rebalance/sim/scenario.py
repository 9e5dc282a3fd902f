"""Simulation scenario (docs/formats.md section 2): validated, frozen, with Kafka's defaults."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from .. import limits
from ..errors import InputError
from ..fields import INT32_MAX, INT64_MAX, INT64_MIN, show
from .partitions import log_end_overflow

PROTOCOLS = ("classic", "consumer")
DELIVERY = ("at-least-once", "at-most-once")
EVENT_KINDS = (
    "join",
    "leave",
    "crash",
    "restart",
    "rolling_restart",
    "pause",
    "add_partitions",
    "coordinator_failover",
)
CLIENT_ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
SERVER_ASSIGNORS = ("uniform", "range")


@dataclass(frozen=True, slots=True)
class GroupConfig:
    id: str = "group"
    assignors: tuple[str, ...] = ("range", "cooperative-sticky")
    server_assignor: str = "uniform"
    static_membership: bool = False
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 3000
    max_poll_interval_ms: int = 300000
    group_initial_rebalance_delay_ms: int = 3000
    enable_auto_commit: bool = True
    auto_commit_interval_ms: int = 5000
    max_poll_records: int = 500
    delivery: str = "at-least-once"
    # simulator extensions (not Kafka settings)
    group_max_size: int = INT32_MAX
    metadata_max_age_ms: int = 300000
    retry_backoff_ms: int = 100
    rebalance_timeout_ms: int | None = (
        None  # KIP-848 consumer protocol; default max_poll_interval_ms
    )


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int
    produce_rate: float = 0.0


@dataclass(frozen=True, slots=True)
class MemberSpec:
    name: str
    rack: str | None = None
    start_ms: int = 0


@dataclass(frozen=True, slots=True)
class SimEvent:
    at_ms: int
    kind: str
    member: str | None = None
    down_ms: int = 0
    every_ms: int = 0
    for_ms: int = 0
    topic: str | None = None
    count: int = 0


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    seed: int
    duration_ms: int
    protocol: str
    group: GroupConfig
    topics: tuple[TopicSpec, ...]
    members: tuple[MemberSpec, ...]
    processing_ms_per_record: float
    events: tuple[SimEvent, ...]
    network_latency_ms: int = 1
    poll_idle_ms: int = 1000  # how often a caught-up consumer's poll loop is modelled
    lag_sample_ms: int = 5000
    # the application's poll(Duration): a KIP-848 member idle in poll() runs a reconciliation's
    # callbacks when that wait ends (records arrive, or this timeout)
    poll_timeout_ms: int = 100
    # seeded randomness (see world.Simulation): each request or response takes network_latency_ms plus
    # up to network_jitter_ms more; each poll's batch is processed at processing_ms_per_record scaled by
    # a factor drawn from [1 - processing_jitter, 1 + processing_jitter]; heartbeat phases are drawn too
    network_jitter_ms: int = 4
    processing_jitter: float = 0.2
    # measured environments (bench/fidelity): when given, each message's one-way time is one of
    # these, drawn with the seed (instead of latency plus jitter); a started member sends its first
    # request one of member_startup_ms after its start; a close reaches the coordinator one of
    # member_close_ms after it is asked for
    network_latency_samples_ms: tuple[int, ...] = ()
    member_startup_ms: tuple[int, ...] = ()
    member_close_ms: tuple[int, ...] = ()
    # a write to __consumer_offsets (a commit, the group's assignment at SyncGroup) is answered once
    # replicated: one of these after it arrives (classic groups)
    log_append_ms: tuple[int, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def with_overrides(self, **group_fields: Any) -> Scenario:
        return replace(self, group=replace(self.group, **group_fields))


_TOP = {
    "name",
    "seed",
    "duration_ms",
    "protocol",
    "group",
    "topics",
    "members",
    "events",
    "network",
    "simulation",
    "description",
}
_GROUP = set(GroupConfig.__dataclass_fields__)
_MEMBERS = {"count", "list", "processing_ms_per_record", "rack"}
_EVENT = {"at_ms", "kind", "member", "down_ms", "every_ms", "for_ms", "topic", "count"}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


MIN_MS_PER_RECORD = 1e-6  # below this, records per poll overflow a float (sim/member.py)

# The smallest value the parser accepts for each numeric setting, by the model's field name (YAML's
# network.latency_ms is network_latency_ms): the parser reads these, and `range_refusal` checks a
# Scenario built through the Python API against them (the native core claims only what YAML can say,
# so a minimum added here is in that claim too). A field annotated float takes any finite number;
# the others take ints only. rebalance_timeout_ms may also be None (its default).
SCENARIO_MINIMUM: dict[str, int | float] = {
    "seed": INT64_MIN, "duration_ms": 1, "network_latency_ms": 0, "network_jitter_ms": 0,
    "poll_idle_ms": 1, "poll_timeout_ms": 1, "lag_sample_ms": 1, "processing_jitter": 0,
    "processing_ms_per_record": MIN_MS_PER_RECORD,
}  # fmt: skip
GROUP_MINIMUM: dict[str, int | float] = {
    "session_timeout_ms": 1, "heartbeat_interval_ms": 1, "max_poll_interval_ms": 1,
    "auto_commit_interval_ms": 1, "max_poll_records": 1, "group_max_size": 1,
    "metadata_max_age_ms": 1, "retry_backoff_ms": 1, "group_initial_rebalance_delay_ms": 0,
    "rebalance_timeout_ms": 1,
}  # fmt: skip
TOPIC_MINIMUM: dict[str, int | float] = {"partitions": 1, "produce_rate": 0}
MEMBER_MINIMUM: dict[str, int | float] = {"start_ms": 0}
EVENT_MINIMUM: dict[str, int | float] = {
    "at_ms": 0, "down_ms": 0, "every_ms": 0, "for_ms": 0, "count": 0
}  # fmt: skip
# an event kind's own minimum for one of its fields (a rolling restart every 0 ms never moves on)
EVENT_KIND_MINIMUM: dict[str, tuple[str, int]] = {
    "rolling_restart": ("every_ms", 1), "pause": ("for_ms", 1), "add_partitions": ("count", 1)
}  # fmt: skip


def range_refusal(sc: Scenario) -> str | None:
    """The first setting of a built Scenario the parser would refuse by the tables above (below its
    minimum, or not a number of its kind) or by the heartbeat rule; None when it would take them."""
    places: list[tuple[str, Any, dict[str, int | float]]] = [
        ("", sc, SCENARIO_MINIMUM),
        ("group.", sc.group, GROUP_MINIMUM),
    ]
    places += [(f"topics[{i}].", t, TOPIC_MINIMUM) for i, t in enumerate(sc.topics)]
    places += [(f"members[{i}].", m, MEMBER_MINIMUM) for i, m in enumerate(sc.members)]
    places += [(f"events[{i}].", e, EVENT_MINIMUM) for i, e in enumerate(sc.events)]
    for prefix, value, minimum in places:
        kinds = {f.name: f for f in fields(value)}
        for name, least in minimum.items():
            v = getattr(value, name)
            if v is None and kinds[name].default is None:
                continue
            number = kinds[name].type == "float"
            if not (_num(v) if number else _is_int(v)) or v < least:
                what = "a number" if number else "an int"
                return f"{prefix}{name} {v!r} outside the scenario's range ({what} >= {least})"
    for i, e in enumerate(sc.events):
        name, least = EVENT_KIND_MINIMUM.get(e.kind, ("", 0))
        if name and getattr(e, name) < least:
            v = getattr(e, name)
            return (
                f"events[{i}].{name} {v!r} outside the scenario's range (>= {least} for {e.kind})"
            )
    if not heartbeat_below_session(sc.group.heartbeat_interval_ms, sc.group.session_timeout_ms):
        return "group.heartbeat_interval_ms not below group.session_timeout_ms"
    return None


def heartbeat_below_session(heartbeat_interval_ms: int, session_timeout_ms: int) -> bool:
    """The parser's one rule across two group settings (read by `range_refusal` too)."""
    return heartbeat_interval_ms < session_timeout_ms


# Kafka's widths: timeouts, intervals and counts of its configs are int32; the simulator's own
# times are int64 milliseconds; a rate is records per second (its log end offsets stay in int64).
MAX_RATE = 1e9
_INT64_FIELDS = frozenset(
    {"seed", "metadata_max_age_ms", "retry_backoff_ms", "at_ms", "down_ms", "every_ms", "for_ms"}
)


def _get(
    obj: Mapping,
    key: str,
    where: str,
    check,
    expected: str,
    default: Any = ...,
    min_value=None,
    max_value=None,
):
    if key not in obj:
        if default is ...:
            raise InputError("missing", field=f"{where}{key}")
        return default
    v = obj[key]
    if not check(v):
        raise InputError(f"expected {expected}, got {show(v)}", field=f"{where}{key}")
    if max_value is None and _is_int(v):
        max_value = INT64_MAX if key in _INT64_FIELDS or key == "duration_ms" else INT32_MAX
    if min_value is not None and v < min_value:
        raise InputError(f"must be >= {min_value}, got {show(v)}", field=f"{where}{key}")
    if max_value is not None and v > max_value:
        cap = f"{int(max_value):,}" if float(max_value).is_integer() else str(max_value)
        raise InputError(f"must be <= {cap}, got {show(v)}", field=f"{where}{key}")
    return v


def _keys(obj: Mapping, allowed: set[str], where: str) -> None:
    for k in obj:
        if k not in allowed:
            raise InputError(
                f"unknown field (allowed: {', '.join(sorted(allowed))})", field=f"{where}{k}"
            )


def parse_simulation_scenario(doc: Any) -> Scenario:
    """Validate a decoded scenario; InputError names the offending field."""
    if not isinstance(doc, Mapping):
        raise InputError("the scenario must be a mapping (YAML or JSON object)")
    _keys(doc, _TOP, "")
    name = _get(doc, "name", "", lambda v: isinstance(v, str), "a string", "")
    _get(doc, "description", "", lambda v: isinstance(v, str), "a string", "")
    least = SCENARIO_MINIMUM
    seed = _get(doc, "seed", "", _is_int, "an integer", 0, min_value=least["seed"])
    duration = _get(doc, "duration_ms", "", _is_int, "an integer", min_value=least["duration_ms"])
    limits.check("duration_ms", duration, field="duration_ms")
    protocol = _get(
        doc, "protocol", "", lambda v: v in PROTOCOLS, " or ".join(PROTOCOLS), "classic"
    )
    g = _parse_group(doc.get("group", {}), protocol)
    topics = _parse_topics(doc.get("topics"))
    members, ms_per_record = _parse_members(doc.get("members"))
    events = _parse_events(doc.get("events", []) or [], {t.name for t in topics})
    _check_sizes(topics, members, events, duration)
    net = doc.get("network", {}) or {}
    if not isinstance(net, Mapping):
        raise InputError(f"expected a mapping, got {show(net)}", field="network")
    _keys(net, {"latency_ms", "jitter_ms", "latency_samples_ms"}, "network.")
    latency = _get(
        net,
        "latency_ms",
        "network.",
        _is_int,
        "an integer",
        1,
        min_value=least["network_latency_ms"],
    )
    jitter = _get(
        net, "jitter_ms", "network.", _is_int, "an integer", 4, min_value=least["network_jitter_ms"]
    )
    lat_samples = _samples(net, "latency_samples_ms", "network.")
    simdoc = doc.get("simulation", {}) or {}
    if not isinstance(simdoc, Mapping):
        raise InputError(f"expected a mapping, got {show(simdoc)}", field="simulation")
    _keys(
        simdoc,
        {
            "poll_idle_ms",
            "poll_timeout_ms",
            "lag_sample_ms",
            "processing_jitter",
            "member_startup_ms",
            "member_close_ms",
            "log_append_ms",
        },
        "simulation.",
    )
    startup = _samples(simdoc, "member_startup_ms", "simulation.")
    close = _samples(simdoc, "member_close_ms", "simulation.")
    append = _samples(simdoc, "log_append_ms", "simulation.")
    s = "simulation."
    poll_idle = _get(
        simdoc, "poll_idle_ms", s, _is_int, "an integer", 1000, min_value=least["poll_idle_ms"]
    )
    poll_timeout = _get(
        simdoc, "poll_timeout_ms", s, _is_int, "an integer", 100, min_value=least["poll_timeout_ms"]
    )
    lag_sample = _get(
        simdoc, "lag_sample_ms", s, _is_int, "an integer", 5000, min_value=least["lag_sample_ms"]
    )
    pjit = _get(
        simdoc, "processing_jitter", s, _num, "a number", 0.2, min_value=least["processing_jitter"]
    )
    if pjit >= 1:
        raise InputError(f"must be < 1, got {show(pjit)}", field="simulation.processing_jitter")
    names = {m.name for m in members}
    for i, e in enumerate(events):
        if e.kind in ("leave", "crash", "restart", "pause") and e.member is None:
            raise InputError("missing", field=f"events[{i}].member")
        if e.kind == "join" and e.member is None:
            raise InputError("missing", field=f"events[{i}].member")
        if (
            e.kind in ("leave", "crash", "restart", "pause")
            and e.member not in names
            and not any(x.kind == "join" and x.member == e.member for x in events)
        ):
            raise InputError(f"unknown member {e.member!r}", field=f"events[{i}].member")
    return Scenario(
        name,
        seed,
        duration,
        protocol,
        g,
        topics,
        members,
        float(ms_per_record),
        events,
        latency,
        poll_idle,
        lag_sample,
        poll_timeout_ms=poll_timeout,
        network_jitter_ms=jitter,
        processing_jitter=float(pjit),
        network_latency_samples_ms=lat_samples,
        member_startup_ms=startup,
        member_close_ms=close,
        log_append_ms=append,
    )


MAX_SAMPLES = 10_000
MAX_SAMPLE_MS = 3_600_000


def _samples(obj: Mapping, key: str, where: str) -> tuple[int, ...]:
    """A measured distribution: a non-empty list of milliseconds (one drawn at random, seeded), or one
    number for a constant."""
    if key not in obj:
        return ()
    v = obj[key]
    vals = [v] if _is_int(v) else v
    if (
        not isinstance(vals, list)
        or not vals
        or len(vals) > MAX_SAMPLES
        or not all(_is_int(x) and 0 <= x <= MAX_SAMPLE_MS for x in vals)
    ):
        raise InputError(
            f"expected an integer or a list of 1 to {MAX_SAMPLES:,} integers from 0 to "
            f"{MAX_SAMPLE_MS:,}, got {show(v)}",
            field=f"{where}{key}",
        )
    return tuple(vals)


def _check_sizes(
    topics: tuple[TopicSpec, ...],
    members: tuple[MemberSpec, ...],
    events: tuple[SimEvent, ...],
    duration: int,
) -> None:
    """The limits on partitions in total (added ones included) and on log end offsets."""
    total = 0
    for i, t in enumerate(topics):
        total += t.partitions
        limits.check("partitions", total, field=f"topics[{i}].partitions")
        if t.produce_rate * (duration / 1000.0) > INT64_MAX:
            raise InputError(
                f"{t.produce_rate:,.0f} records/s over {duration:,} ms overflows a log end offset",
                field=f"topics[{i}].produce_rate",
            )
        grown = [
            e.count
            for e in sorted(events, key=lambda e: e.at_ms)
            if e.kind == "add_partitions" and e.topic == t.name
        ]
        wraps = log_end_overflow(t.produce_rate, t.partitions, grown, duration)
        if wraps is not None:
            raise InputError(
                f"{t.produce_rate:,} records/s on {wraps:,} partitions over {duration:,} ms: a log"
                " end offset's arithmetic (records per ms times the time) leaves 64 bits",
                field=f"topics[{i}].produce_rate",
            )
    for i, e in enumerate(events):
        if e.kind == "add_partitions":
            total += e.count
            limits.check("partitions", total, field=f"events[{i}].count")


def _parse_group(gd: Any, protocol: str) -> GroupConfig:
    if not isinstance(gd, Mapping):
        raise InputError(f"expected a mapping, got {show(gd)}", field="group")
    _keys(gd, _GROUP, "group.")
    d = GroupConfig()
    w = "group."
    assignors = _get(
        gd,
        "assignors",
        w,
        lambda v: isinstance(v, list) and v and all(isinstance(a, str) for a in v),
        "a non-empty list of assignor names",
        list(d.assignors),
    )
    for i, a in enumerate(assignors):
        if a not in CLIENT_ASSIGNORS:
            raise InputError(
                f"unknown assignor {a!r} (known: {', '.join(CLIENT_ASSIGNORS)})",
                field=f"group.assignors[{i}]",
            )
        if a in assignors[:i]:  # ConsumerPartitionAssignor.getAssignorInstances refuses it too
            raise InputError(f"assignor {a!r} listed twice", field=f"group.assignors[{i}]")
    server = _get(
        gd,
        "server_assignor",
        w,
        lambda v: v in SERVER_ASSIGNORS,
        " or ".join(SERVER_ASSIGNORS),
        d.server_assignor,
    )
    delivery = _get(gd, "delivery", w, lambda v: v in DELIVERY, " or ".join(DELIVERY), d.delivery)
    ints = {}
    for k, least in GROUP_MINIMUM.items():
        if k != "rebalance_timeout_ms":
            ints[k] = _get(gd, k, w, _is_int, "an integer", getattr(d, k), min_value=least)
    rto = None
    if gd.get("rebalance_timeout_ms") is not None:
        least = GROUP_MINIMUM["rebalance_timeout_ms"]
        rto = _get(gd, "rebalance_timeout_ms", w, _is_int, "an integer", None, min_value=least)
    if not heartbeat_below_session(ints["heartbeat_interval_ms"], ints["session_timeout_ms"]):
        raise InputError(
            "must be lower than session_timeout_ms", field="group.heartbeat_interval_ms"
        )
    gid = _get(gd, "id", w, lambda v: isinstance(v, str) and v != "", "a non-empty string", d.id)
    return GroupConfig(
        id=gid,
        assignors=tuple(assignors),
        server_assignor=server,
        static_membership=_get(
            gd, "static_membership", w, lambda v: isinstance(v, bool), "true or false", False
        ),
        enable_auto_commit=_get(
            gd, "enable_auto_commit", w, lambda v: isinstance(v, bool), "true or false", True
        ),
        delivery=delivery,
        rebalance_timeout_ms=rto,
        **ints,
    )


def _parse_topics(td: Any) -> tuple[TopicSpec, ...]:
    if td is None:
        raise InputError("missing", field="topics")
    if not isinstance(td, list) or not td:
        raise InputError(f"expected a non-empty list, got {show(td)}", field="topics")
    out = []
    seen = set()
    for i, t in enumerate(td):
        w = f"topics[{i}]."
        if not isinstance(t, Mapping):
            raise InputError(f"expected a mapping, got {show(t)}", field=f"topics[{i}]")
        _keys(t, {"name", "partitions", "produce_rate"}, w)
        name = _get(t, "name", w, lambda v: isinstance(v, str) and v != "", "a non-empty string")
        if name in seen:
            raise InputError(f"duplicate topic {name!r}", field=f"{w}name")
        seen.add(name)
        least = TOPIC_MINIMUM
        n = _get(t, "partitions", w, _is_int, "an integer", min_value=least["partitions"])
        rate = _get(
            t,
            "produce_rate",
            w,
            _num,
            "a number",
            0,
            min_value=least["produce_rate"],
            max_value=MAX_RATE,
        )
        out.append(TopicSpec(name, n, float(rate)))
    return tuple(out)


def _parse_members(md: Any) -> tuple[tuple[MemberSpec, ...], float]:
    if md is None:
        raise InputError("missing", field="members")
    if not isinstance(md, Mapping):
        raise InputError(f"expected a mapping, got {show(md)}", field="members")
    _keys(md, _MEMBERS, "members.")
    ms = _get(md, "processing_ms_per_record", "members.", _num, "a number", 1.0, max_value=1e9)
    if ms < SCENARIO_MINIMUM["processing_ms_per_record"]:
        raise InputError(
            f"must be >= {SCENARIO_MINIMUM['processing_ms_per_record']:.6f}, got {show(ms)}",
            field="members.processing_ms_per_record",
        )
    if "list" in md:
        lst = md["list"]
        if not isinstance(lst, list):
            raise InputError(f"expected a list, got {show(lst)}", field="members.list")
        limits.check("members", len(lst), field="members.list")
        out = []
        for i, m in enumerate(lst):
            w = f"members.list[{i}]."
            if not isinstance(m, Mapping):
                raise InputError(f"expected a mapping, got {show(m)}", field=f"members.list[{i}]")
            _keys(m, {"name", "rack", "start_ms"}, w)
            out.append(
                MemberSpec(
                    _get(
                        m, "name", w, lambda v: isinstance(v, str) and v != "", "a non-empty string"
                    ),
                    _get(m, "rack", w, lambda v: v is None or isinstance(v, str), "a string", None),
                    _get(
                        m,
                        "start_ms",
                        w,
                        _is_int,
                        "an integer",
                        0,
                        min_value=MEMBER_MINIMUM["start_ms"],
                    ),
                )
            )
        if len({m.name for m in out}) != len(out):
            raise InputError("duplicate member names", field="members.list")
    else:
        count = _get(md, "count", "members.", _is_int, "an integer", min_value=0)
        limits.check("members", count, field="members.count")
        rack = _get(
            md, "rack", "members.", lambda v: v is None or isinstance(v, str), "a rack name", None
        )
        out = [MemberSpec(f"m{i}", rack) for i in range(count)]
    return tuple(out), ms


def _parse_events(ed: Any, topics: set[str]) -> tuple[SimEvent, ...]:
    if not isinstance(ed, list):
        raise InputError(f"expected a list, got {show(ed)}", field="events")
    limits.check("events", len(ed), field="events")
    out = []
    for i, e in enumerate(ed):
        w = f"events[{i}]."
        if not isinstance(e, Mapping):
            raise InputError(f"expected a mapping, got {show(e)}", field=f"events[{i}]")
        _keys(e, _EVENT, w)
        least = EVENT_MINIMUM
        at = _get(e, "at_ms", w, _is_int, "an integer", min_value=least["at_ms"])
        kind = _get(e, "kind", w, lambda v: v in EVENT_KINDS, "one of " + ", ".join(EVENT_KINDS))
        member = _get(
            e, "member", w, lambda v: isinstance(v, str) and v != "", "a member name", None
        )
        ints = {
            k: _get(e, k, w, _is_int, "an integer", 0, min_value=least[k])
            for k in ("down_ms", "every_ms", "for_ms", "count")
        }
        topic = _get(e, "topic", w, lambda v: isinstance(v, str), "a topic name", None)
        if kind == "add_partitions":
            if topic is None:
                raise InputError("missing", field=f"{w}topic")
            if topic not in topics:
                raise InputError(f"unknown topic {topic!r}", field=f"{w}topic")
        if kind in EVENT_KIND_MINIMUM:
            k, least_for_kind = EVENT_KIND_MINIMUM[kind]
            if ints[k] < least_for_kind:
                raise InputError(f"must be > {least_for_kind - 1} for {kind}", field=f"{w}{k}")
        out.append(SimEvent(at, kind, member, topic=topic, **ints))
    return tuple(out)
