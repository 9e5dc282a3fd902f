"""Which classic scenarios the native core claims, and the native world that runs them.

`native_support(sc)` is None when the native core claims `sc`, else the first reason it does not
(docs/sim-native.md, "How the choice is made"). The claim is conservative: any field or feature not
listed here as supported is a reason, so a new scenario field falls back to the reference until it is
ported and checked against the fingerprints (tests/test_sim_native_fingerprints.py).

Milestone M2: the world is `native_world.NativeWorld` (Cython: `world_core.WorldCore` and
`world.Simulation` over `native_books`' books and arrivals by member index), its members
`native_world_member.NativeMember` (the reference's `SimMember` line by line, its rebalance half
`native_world_client.NativeClient`), holding their world as `native_world_base.WorldBase` (C calls).
The coordinator is `native_coordinator.NativeCoordinator` (`coordinator.py`'s `ClassicCoordinator`
line by line over the group twin's C-level API, `native_group_handlers.GroupHandlers`). A claimed
run is checked to be the reference's (tests/test_sim_native_fingerprints.py).
"""

from __future__ import annotations

from dataclasses import fields
from types import ModuleType
from typing import Any

from .. import native
from ..fields import INT32_MAX
from .scenario import GroupConfig, Scenario, SimEvent

# every Scenario / GroupConfig / SimEvent field the claim looks at: a field added to the scenario
# model and not listed here is a reason (the native core may not know what it means)
_SCENARIO_FIELDS = frozenset(
    {
        "name", "seed", "duration_ms", "protocol", "group", "topics", "members",
        "processing_ms_per_record", "events", "network_latency_ms", "poll_idle_ms",
        "lag_sample_ms", "poll_timeout_ms", "network_jitter_ms", "processing_jitter",
        "network_latency_samples_ms", "member_startup_ms", "member_close_ms", "log_append_ms",
        "extra",
    }
)  # fmt: skip
_GROUP_FIELDS = frozenset(
    {
        "id", "assignors", "server_assignor", "static_membership", "session_timeout_ms",
        "heartbeat_interval_ms", "max_poll_interval_ms", "group_initial_rebalance_delay_ms",
        "enable_auto_commit", "auto_commit_interval_ms", "max_poll_records", "delivery",
        "group_max_size", "metadata_max_age_ms", "retry_backoff_ms", "rebalance_timeout_ms",
    }
)  # fmt: skip
_EVENT_FIELDS = frozenset(
    {"at_ms", "kind", "member", "down_ms", "every_ms", "for_ms", "topic", "count"}
)
_EAGER_ASSIGNORS = frozenset({"range", "roundrobin"})
# the second and later assignors of the list only add their metadata to JoinGroup (the first one
# the members all list is selected): these user data are built as the reference builds them
_LISTED_ASSIGNORS = frozenset({"range", "roundrobin", "cooperative-sticky"})
_EVENTS = frozenset({"rolling_restart"})
_EXACT = 1 << 53  # times and rates must be exact in a double (the poll's batch times)


_MODULES = (
    "native_world_base",
    "native_world_client",
    "native_world_member",
    "native_coordinator",
    "native_world",
)
_MISSING = f"native build missing or stale ({', '.join(_MODULES)})"


def _build() -> ModuleType | None:
    """native_world when its build and those of the modules it runs are fresh."""
    for name in _MODULES[:-1]:
        if native.cython_build(__package__, name) is None:
            return None
    return native.cython_build(__package__, _MODULES[-1])


def _too_large_int(sc: Scenario) -> str | None:
    """The first int setting (of the scenario, its group or an event) beyond what the native
    member's 64-bit fields hold with room for sums (a time plus an interval): the reference's ints
    are unbounded, so such a run would wrap on the native core. YAML caps these values; a Scenario
    built through the Python API may not."""
    bound = _EXACT // 4
    places: list[tuple[str, object]] = [("", sc), ("group.", sc.group)]
    places += [(f"events[{i}].", e) for i, e in enumerate(sc.events)]
    for prefix, value in places:
        for f in fields(value):  # type: ignore[arg-type]
            v = getattr(value, f.name)
            if isinstance(v, int) and not isinstance(v, bool) and not -bound < v < bound:
                return f"{prefix}{f.name} {v} beyond the native core's 64-bit range"
    return None


# the smallest value the scenario parser accepts for each int setting (sim/scenario.py): a Scenario
# built through the Python API may hold less (heartbeat_interval_ms=0 divides by zero in C, where the
# reference raises ZeroDivisionError; a negative latency leaves the native books' range)
_GROUP_MINIMUM = {
    "session_timeout_ms": 1, "heartbeat_interval_ms": 1, "max_poll_interval_ms": 1,
    "auto_commit_interval_ms": 1, "max_poll_records": 1, "group_max_size": 1,
    "metadata_max_age_ms": 1, "retry_backoff_ms": 1, "group_initial_rebalance_delay_ms": 0,
}  # fmt: skip
_SCENARIO_MINIMUM = {
    "duration_ms": 1, "network_latency_ms": 0, "network_jitter_ms": 0, "poll_idle_ms": 1,
    "poll_timeout_ms": 1, "lag_sample_ms": 1,
}  # fmt: skip
_EVENT_MINIMUM = {"at_ms": 0, "down_ms": 0, "every_ms": 0}


def _outside_parser_range(sc: Scenario) -> str | None:
    """The first int setting the scenario parser would refuse (below its minimum, not an int, or a
    heartbeat not below the session timeout): the native core claims only what YAML can say."""
    places: list[tuple[str, object, dict[str, int]]] = [
        ("", sc, _SCENARIO_MINIMUM),
        ("group.", sc.group, _GROUP_MINIMUM),
    ]
    places += [(f"events[{i}].", e, _EVENT_MINIMUM) for i, e in enumerate(sc.events)]
    places += [(f"members[{i}].", m, {"start_ms": 0}) for i, m in enumerate(sc.members)]
    places += [(f"topics[{i}].", t, {"partitions": 1}) for i, t in enumerate(sc.topics)]
    for prefix, value, minimum in places:
        for name, least in minimum.items():
            v = getattr(value, name)
            if type(v) is not int or v < least:
                return f"{prefix}{name} {v!r} outside the scenario's range (an int >= {least})"
    g = sc.group
    if g.rebalance_timeout_ms is not None and (
        type(g.rebalance_timeout_ms) is not int or g.rebalance_timeout_ms < 1
    ):
        return f"group.rebalance_timeout_ms {g.rebalance_timeout_ms!r} outside the scenario's range"
    if g.heartbeat_interval_ms >= g.session_timeout_ms:
        return "group.heartbeat_interval_ms not below group.session_timeout_ms"
    for i, t in enumerate(sc.topics):
        if type(t.produce_rate) not in (int, float) or not t.produce_rate >= 0:
            return f"topics[{i}].produce_rate {t.produce_rate!r} outside the scenario's range"
    return None


def native_support(sc: Scenario) -> str | None:
    """None when the native core claims `sc`; else the first reason it does not."""
    unknown = {f.name for f in fields(Scenario)} - _SCENARIO_FIELDS
    unknown |= {f.name for f in fields(GroupConfig)} - _GROUP_FIELDS
    unknown |= {f.name for f in fields(SimEvent)} - _EVENT_FIELDS
    if unknown:
        return f"unknown scenario fields {sorted(unknown)}"
    g = sc.group
    if sc.protocol != "classic":
        return f"protocol {sc.protocol}"
    if g.static_membership:
        return "static membership"
    if not g.assignors or g.assignors[0] not in _EAGER_ASSIGNORS:
        return f"assignor {g.assignors[0] if g.assignors else None}"
    for a in g.assignors[1:]:
        if a not in _LISTED_ASSIGNORS:
            return f"listed assignor {a}"
    if g.delivery != "at-least-once" or not g.enable_auto_commit:
        return f"delivery {g.delivery}, auto-commit {g.enable_auto_commit}"
    if g.group_max_size != INT32_MAX:
        return "group_max_size"
    if sc.extra:
        return f"extra settings {sorted(sc.extra)}"
    if len(sc.topics) != 1:
        return "several topics"
    for name in ("network_latency_samples_ms", "member_startup_ms", "member_close_ms"):
        if getattr(sc, name):
            return f"measured environment ({name})"
    if sc.log_append_ms:
        return "measured environment (log_append_ms)"
    for e in sc.events:
        if e.kind not in _EVENTS:
            return f"{e.kind} events"
    for m in sc.members:
        if m.rack is not None:
            return "member racks"
    rate = sc.processing_ms_per_record
    if type(rate) not in (int, float) or not 0 < rate < _EXACT:
        return f"processing_ms_per_record {rate!r}"
    if type(sc.processing_jitter) not in (int, float) or not 0 <= sc.processing_jitter < 1:
        return f"processing_jitter {sc.processing_jitter!r}"
    if not 0 <= sc.duration_ms < _EXACT // 4:
        return f"duration_ms {sc.duration_ms}"
    too_large = _too_large_int(sc)
    if too_large:
        return too_large
    outside = _outside_parser_range(sc)
    if outside:
        return outside
    if _build() is None:
        return _MISSING
    return None


def native_world(sc: Scenario, sink: Any) -> Any:
    """The native core's world for a claimed scenario (check `native_support` first)."""
    build = _build()
    if build is None:
        raise RuntimeError(_MISSING)
    coordinator = native.cython_build(__package__, "native_coordinator")
    assert coordinator is not None  # _build checked it
    member = native.cython_build(__package__, "native_world_member")
    assert member is not None  # _build checked it
    return build.NativeWorld(sc, sink, member.NativeMember, coordinator.NativeCoordinator)
