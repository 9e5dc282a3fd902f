"""Shared by the native classic core's tests: is a core="native" run the reference's run?

One definition of "the same run" (event rows, summary, event count, paused times in the reference's
first-pause order) for every test that compares the two cores, so a new thing to compare is added
once (review 9 D7), and the native world's builds required (compiled_legs.require_build's rule).
"""

from __future__ import annotations

from typing import Any

from compiled_legs import require_build
from kafka_rebalance.sim import classic_native


def require_native_build() -> None:
    """Skip without fresh builds of every module the native world runs (`classic_native`'s list,
    as its `_build` checks them); fail instead under KAFKA_REBALANCE_REQUIRE_COMPILED=1."""
    for name in classic_native._MODULES:
        require_build(name)


def assert_same_run(nat: Any, ref: Any) -> None:
    """`nat` (a core="native" `SimulationResult`) is `ref`, the reference's run of the same scenario."""
    assert nat.core == "native" and ref.core == "reference"
    assert nat.summary == ref.summary
    assert nat.events == ref.events
    assert nat.simulated_events == ref.simulated_events
    # the same members in the same (first-pause) order: review 9 F3
    assert list(nat.paused_ms_by_member.items()) == list(ref.paused_ms_by_member.items())


def native_coordinator_module() -> Any:
    """sim/native_coordinator's fresh build (skip without it and the native world's, as above)."""
    build = require_build("native_coordinator")
    require_native_build()
    return build
