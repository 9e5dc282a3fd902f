"""Public entry points of the simulator, used by the CLI, the Spark sweep and the benchmarks.

    result = simulate(doc)          # doc: the decoded YAML/JSON scenario
    result.summary                  # docs/formats.md section 2
    result.events                   # event log rows: ts_ms, group, member, kind,
                                    # generation, partitions, detail (JSON text)

Same scenario and seed, same summary and event log, byte for byte.

Event kinds: start, stop, crash, pause, poll_timeout, leave, join (JoinGroup sent;
partitions = what the member still owns), join_error, sync_error, heartbeat_error,
commit_failed, fatal, fenced, assigned (partitions added; detail.owned = count held),
revoked / lost (detail.reason), paused (detail.ms: protocol pause that just ended),
group_state (detail.from/to/reason), member_removed, commit (one row per partition:
detail.topic/partition/offset/metadata/generation/member_id), rolling_restart,
add_partitions, metadata_changed, coordinator_failover, coordinator_loaded.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from .scenario import Scenario, parse_simulation_scenario

__all__ = [
    "SimulationResult",
    "simulate",
    "simulate_scenario",
    "parse_simulation_scenario",
    "compare",
    "COMPARE_VARIANTS",
]

EVENT_COLUMNS = ("ts_ms", "group", "member", "kind", "generation", "partitions", "detail")


CORES = ("auto", "native", "reference")


@dataclass
class SimulationResult:
    summary: dict
    events: list[dict] = field(default_factory=list)
    simulated_events: int = 0
    paused_ms_by_member: dict[str, int] = field(default_factory=dict)
    # which core ran (beside the summary, never in it: the summary is fingerprinted), and why not the
    # native one when the reference ran (None when native ran or was not asked about)
    core: str = "reference"
    core_reason: str | None = None


def simulate(
    doc: Mapping[str, Any] | Scenario,
    *,
    progress: Callable[[int, int], None] | None = None,
    collect_events: bool = True,
    core: str = "auto",
) -> SimulationResult:
    """Run one scenario; `progress(now_ms, duration_ms)` is called now and then on long runs;
    `core` as `simulate_scenario`'s."""
    sc = doc if isinstance(doc, Scenario) else parse_simulation_scenario(doc)
    return simulate_scenario(sc, progress=progress, collect_events=collect_events, core=core)


def simulate_scenario(
    sc: Scenario,
    *,
    progress: Callable[[int, int], None] | None = None,
    collect_events: bool = True,
    on_world: Callable[[Any], None] | None = None,
    core: str = "auto",
) -> SimulationResult:
    """Run one parsed scenario. `on_world(world)` is called with the world before it runs, for callers
    that instrument it (the demo keeps a copy of the coordinator's GroupMetadata writes). `core`:
    "reference" (the Python simulator), "native" (the native core, InputError naming the reason when
    it does not claim the scenario) or "auto" (the default: native when claimed, else the
    reference; its output is the reference's, checked by the fingerprint gate); docs/sim-native.md,
    "How the choice is made"."""
    if core not in CORES:
        raise InputError(f"unknown core {core!r} (known: {', '.join(CORES)})", field="core")
    events: list[dict] = []
    sink = events.append if collect_events else None
    from .classic_native import native_support, native_world
    from .consumer_world import ConsumerSimulation
    from .world import Simulation

    reason = None if core == "reference" else native_support(sc)
    if core == "native" and reason is not None:
        raise InputError(f"the native core does not claim this scenario: {reason}", field="core")
    ran = "native" if core != "reference" and reason is None else "reference"
    if ran == "native":
        world = native_world(sc, sink)
    else:
        world_type = ConsumerSimulation if sc.protocol == "consumer" else Simulation
        world = world_type(sc, sink)
    if on_world is not None:
        on_world(world)
    cb: Callable[[int], None] | None = None
    if progress is not None:
        cb = lambda now: progress(now, sc.duration_ms)  # noqa: E731
    with _gc_relaxed():
        summary = world.run(cb)
    if progress is not None:
        progress(sc.duration_ms, sc.duration_ms)
    return SimulationResult(
        summary, events, world.loop.processed, dict(world.paused_by_member), ran, reason
    )


@contextmanager
def _gc_relaxed():
    """A run allocates millions of short-lived acyclic objects (messages, heap entries, batches); with the
    default thresholds the cyclic collector runs thousands of times over the long-lived world for nothing
    (10-15% of a 1,000-member run). Collect less often meanwhile; collection still happens."""
    before = gc.get_threshold()
    gc.set_threshold(50_000, 20, 100)
    try:
        yield
    finally:
        gc.set_threshold(*before)


# --compare: the same scenario under each protocol choice.
COMPARE_VARIANTS = ("eager", "cooperative", "static", "consumer")


def variant(sc: Scenario, name: str) -> Scenario:
    """The scenario re-run as one protocol choice (eager: [range]; cooperative: [cooperative-sticky];
    static: static membership on; consumer: the KIP-848 protocol)."""
    from dataclasses import replace

    if name == "eager":
        return replace(
            sc,
            protocol="classic",
            group=replace(sc.group, assignors=("range",), static_membership=False),
        )
    if name == "cooperative":
        return replace(
            sc,
            protocol="classic",
            group=replace(sc.group, assignors=("cooperative-sticky",), static_membership=False),
        )
    if name == "static":
        return replace(sc, protocol="classic", group=replace(sc.group, static_membership=True))
    if name == "consumer":
        return replace(sc, protocol="consumer")
    raise InputError(
        f"unknown variant {name!r} (known: {', '.join(COMPARE_VARIANTS)})", field="compare"
    )


def compare(
    doc: Mapping[str, Any] | Scenario,
    names: list[str],
    *,
    progress: Callable[[str, int, int], None] | None = None,
) -> dict[str, dict]:
    sc = doc if isinstance(doc, Scenario) else parse_simulation_scenario(doc)
    out: dict[str, dict] = {}
    for n in names:
        cb = (lambda now, end, _n=n: progress(_n, now, end)) if progress else None
        out[n] = simulate_scenario(variant(sc, n), progress=cb, collect_events=False).summary
    return out
