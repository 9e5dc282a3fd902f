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
run is checked to be the reference's (tests/test_sim_native_fingerprints.py). Milestone M3 (session
16): `sticky` and `cooperative-sticky` as the first assignor (the leader's sticky user data and
KIP-429's withholding in `NativeWorld.leader_assign`, the partial revocation and the assignors'
state in `NativeClient._complete_join`); static membership is still refused.
"""

from __future__ import annotations

from dataclasses import fields
from types import ModuleType
from typing import Any

from .. import native
from ..fields import INT32_MAX
from .scenario import GroupConfig, Scenario, SimEvent, range_refusal

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
# the first assignor (the one the coordinator selects): eager range/roundrobin (M2), sticky (eager,
# its user data) and cooperative-sticky (KIP-429's withholding and follow-up rebalance, M3)
_FIRST_ASSIGNORS = frozenset({"range", "roundrobin", "sticky", "cooperative-sticky"})
# the second and later assignors of the list only add their metadata to JoinGroup (the first one
# the members all list is selected): these user data are built as the reference builds them
_LISTED_ASSIGNORS = frozenset({"range", "roundrobin", "cooperative-sticky"})
_EVENTS = frozenset({"rolling_restart"})
_EXACT = 1 << 53  # times and rates must be exact in a double (the poll's batch times)


_MODULES = (
    "native_world_base",
    "native_member_messages",
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


def group_refusal(sc: Scenario) -> str | None:
    """The group's settings the native coordinator does not run (None: it runs them): the protocol,
    static membership, the first assignor, a group size limit, log append times, a heartbeat
    interval it cannot divide by. Pure (no build check): `native_support` and the coordinator's own
    guard (`native_coordinator.refusal`) both call it, and the coordinator cannot ask for the
    builds' freshness without loading itself."""
    g = sc.group
    if sc.protocol != "classic":
        return f"protocol {sc.protocol}"
    if g.static_membership:
        return "static membership"
    if len(set(g.assignors)) != len(g.assignors):  # the parser refuses it; the group twin holds 8
        return "an assignor listed twice"
    if not g.assignors or g.assignors[0] not in _FIRST_ASSIGNORS:
        return f"assignor {g.assignors[0] if g.assignors else None}"
    if g.group_max_size != INT32_MAX:
        return "group_max_size"
    if g.heartbeat_interval_ms <= 0:  # the elision divides by it (a C division)
        return f"heartbeat_interval_ms {g.heartbeat_interval_ms}"
    if sc.log_append_ms:
        return "log_append_ms"
    return None


def native_support(sc: Scenario) -> str | None:
    """None when the native core claims `sc`; else the first reason it does not."""
    unknown = {f.name for f in fields(Scenario)} - _SCENARIO_FIELDS
    unknown |= {f.name for f in fields(GroupConfig)} - _GROUP_FIELDS
    unknown |= {f.name for f in fields(SimEvent)} - _EVENT_FIELDS
    if unknown:
        return f"unknown scenario fields {sorted(unknown)}"
    too_large = _too_large_int(sc)
    if too_large:
        return too_large
    # what the parser refuses (its minimums, the heartbeat rule) is not claimed: a Scenario built
    # through the Python API may hold it (heartbeat_interval_ms=0 divides by zero in C, where the
    # reference raises ZeroDivisionError; a negative latency leaves the native books' range)
    outside = range_refusal(sc)
    if outside:
        return outside
    unported = group_refusal(sc)
    if unported:
        return unported
    g = sc.group
    for a in g.assignors[1:]:
        if a not in _LISTED_ASSIGNORS:
            return f"listed assignor {a}"
    if g.delivery != "at-least-once" or not g.enable_auto_commit:
        return f"delivery {g.delivery}, auto-commit {g.enable_auto_commit}"
    if sc.extra:
        return f"extra settings {sorted(sc.extra)}"
    if len(sc.topics) != 1:
        return "several topics"
    for name in ("network_latency_samples_ms", "member_startup_ms", "member_close_ms"):
        if getattr(sc, name):
            return f"measured environment ({name})"
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
    build = _build()
    if build is None:
        return _MISSING
    return build.partition_range_refusal(sc)


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
