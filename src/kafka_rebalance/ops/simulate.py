"""Simulate a consumer group scenario, or compare protocol variants of it (docs/formats.md section 2)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..sim.api import COMPARE_VARIANTS, simulate_scenario
from ..sim.api import variant as variant_of
from ..sim.event_log import write_events
from ..sim.offsets_topic import GroupMetadataWrite, simulate_recording_group_metadata
from ..sim.scenario import Scenario, parse_simulation_scenario


def as_scenario(scenario: Scenario | Mapping[str, Any]) -> Scenario:
    """A parsed scenario, from the dict of a scenario file or a Scenario itself."""
    return scenario if isinstance(scenario, Scenario) else parse_simulation_scenario(scenario)


@dataclass(frozen=True)
class SimulationRun:
    """One simulated run: the summary (what `kafka-rebalance simulate` prints), the event log if asked,
    the GroupMetadata records the coordinator wrote if asked (classic groups), and which core ran it
    ("native" or "reference", beside the summary: both give the same summary; `core_reason`: why
    not the native one, None when it ran or was not asked about)."""

    summary: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list, repr=False)
    group_metadata: tuple[GroupMetadataWrite, ...] = field(default=(), repr=False)
    core: str = "reference"
    core_reason: str | None = None

    def write_events(self, path: str | Path) -> None:
        """The event log as `.jsonl` or Parquet, as `simulate --events-out` writes it."""
        write_events(self.events, path)

    def to_json(self) -> dict[str, Any]:
        return self.summary


def simulate(
    scenario: Scenario | Mapping[str, Any],
    *,
    variant: str | None = None,
    events: bool = False,
    record_group_metadata: bool = False,
    progress: Callable[[int, int], None] | None = None,
    core: str = "auto",
) -> SimulationRun:
    """Run a scenario (optionally as one of COMPARE_VARIANTS); deterministic for a given seed.
    `core`: "auto" (the native core when it claims the scenario, else the reference), "native" (an
    InputError naming why when it does not) or "reference": `sim.api.simulate_scenario`'s."""
    sc = as_scenario(scenario)
    if variant is not None:
        sc = variant_of(sc, variant)
    if record_group_metadata:
        res, writes = simulate_recording_group_metadata(sc, core=core)
        return SimulationRun(res.summary, res.events, writes, res.core, res.core_reason)
    res = simulate_scenario(sc, progress=progress, collect_events=events, core=core)
    return SimulationRun(res.summary, res.events, (), res.core, res.core_reason)


@dataclass(frozen=True)
class Comparison:
    """The same scenario under each variant: {variant: summary}."""

    runs: dict[str, dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {"compare": self.runs}


def check_variants(names: Sequence[str]) -> list[str]:
    for n in names:
        if n not in COMPARE_VARIANTS:
            raise InputError(
                f"unknown variant {n!r} (known: {', '.join(COMPARE_VARIANTS)})", field="compare"
            )
    return list(names)


def compare(
    scenario: Scenario | Mapping[str, Any],
    variants: Sequence[str] = COMPARE_VARIANTS,
    *,
    progress: Callable[[str, int, int], None] | None = None,
    core: str = "auto",
) -> Comparison:
    """Run the scenario once per variant (eager, cooperative, static, consumer) and keep each summary
    (`core` as `simulate`'s, for every variant)."""
    sc = as_scenario(scenario)
    out: dict[str, dict[str, Any]] = {}
    for n in check_variants(variants):
        cb = (lambda now, end, _n=n: progress(_n, now, end)) if progress else None
        try:
            res = simulate_scenario(variant_of(sc, n), progress=cb, collect_events=False, core=core)
        except InputError as exc:  # the core asked for: say which variant it refused
            raise InputError(f"variant {n}: {exc.message}", field=exc.field) from None
        out[n] = res.summary
    return Comparison(out)
