"""The native classic core against the reference on random scenarios it claims.

`core="auto"` runs the native core for every scenario `classic_native.native_support` claims, so the
claim must hold beyond the 42 fingerprint scenarios (tests/test_sim_native_fingerprints.py): here
hypothesis draws small groups (eager: range / roundrobin, a listed cooperative-sticky; and since
session 16 cooperative-sticky and sticky first, alone or with a listed one; one topic,
network latency and jitter, processing jitter, heartbeat, session, commit and poll settings, one or
two rolling restarts; the sticky/cooperative draws also late joiners, long down times and a
max_poll_interval_ms, and must reach cooperative revocations) and every claimed one must give the
reference's event rows, summary, event count and paused times. Skips without the native build (fails under
KAFKA_REBALANCE_REQUIRE_COMPILED=1).
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, assume, find, given, seed, settings
from hypothesis import strategies as st

from kafka_rebalance.sim import classic_native
from kafka_rebalance.sim.api import SimulationResult, simulate_scenario
from kafka_rebalance.sim.scenario import parse_simulation_scenario
from sim_native_runs import assert_same_run, require_native_build

EAGER_LISTS = (
    ["range"],
    ["roundrobin"],
    ["range", "cooperative-sticky"],
    ["roundrobin", "range"],
)
# M3 (session 16): cooperative-sticky (KIP-429: withholding, partial revocation, the follow-up
# rebalance), sticky (its user data), and each first in a list whose common protocol is eager
STICKY_LISTS = (
    ["cooperative-sticky"],
    ["sticky"],
    ["cooperative-sticky", "range"],
    ["sticky", "cooperative-sticky"],
    ["sticky", "roundrobin"],
)
# what the sticky/cooperative test draws: cooperative-sticky alone (the only list whose common
# protocol is cooperative) three times as often, so KIP-429's revocations are reached (review 11 S1)
STICKY_DRAWS = STICKY_LISTS + (["cooperative-sticky"], ["cooperative-sticky"])
# of the 60 derandomized examples, the claimed runs with `revoked` rows of reason `cooperative`
# must be at least this many (12 at f7a285f+S1; review 11 S1)
MIN_COOPERATIVE_RUNS = 8
# The seeds `derandomize=True` took from the two tests' sources (hypothesis hashes the source) before
# their bodies became `claimed_run_is_the_reference` (review 11 D10): pinned, so the 60 + 60 runs
# are the same draws as before it (12 claimed runs with cooperative revocations).
EAGER_SEED = int(
    "97935616052270244559700092074392917950587821797186966848085290"
    "90232998672418403704033515516095204408784261675723422"
)
STICKY_SEED = int(
    "23244164729683334789386439118603647816194979180662697909554769"
    "01009796303703567280806792745543779213240259976617085"
)


@st.composite
def eager_scenarios(
    draw: st.DrawFn, lists: tuple[list[str], ...] = EAGER_LISTS, late_joiners: bool = False
) -> dict:
    """`late_joiners` (review 11 S1): members listed with staggered start_ms (a late joiner makes
    the others revoke cooperatively), longer down times and a drawn max_poll_interval_ms (poll
    timeouts during a rebalance); without it the eager test's 60 scenarios are as they were."""
    members = draw(st.integers(1, 7))
    heartbeat = draw(st.sampled_from([500, 1000, 3000]))
    restarts = [
        {
            "at_ms": draw(st.integers(0, 40_000)),
            "kind": "rolling_restart",
            "down_ms": draw(st.integers(0, 40_000 if late_joiners else 15_000)),
            "every_ms": draw(st.integers(1, 12_000)),
        }
        for _ in range(draw(st.integers(1, 2)))
    ]
    doc = {
        "name": "random-eager",
        "seed": draw(st.integers(0, 2**31)),
        "duration_ms": draw(st.integers(10_000, 120_000)),
        "group": {
            "id": draw(st.sampled_from(["g", "orders-app", "bench"])),
            "assignors": list(draw(st.sampled_from(lists))),
            "heartbeat_interval_ms": heartbeat,
            "session_timeout_ms": draw(st.sampled_from([6000, 10_000, 45_000])),
            "group_initial_rebalance_delay_ms": draw(st.sampled_from([0, 500, 3000])),
            "auto_commit_interval_ms": draw(st.sampled_from([100, 1000, 5000])),
            "max_poll_records": draw(st.sampled_from([1, 50, 500])),
        },
        "topics": [
            {
                "name": "t",
                "partitions": draw(st.integers(1, 24)),
                "produce_rate": draw(st.sampled_from([1, 10, 100.0, 600])),
            }
        ],
        "members": {
            "count": members,
            "processing_ms_per_record": draw(st.sampled_from([0.01, 0.1, 1.0, 2.5])),
        },
        "network": {"latency_ms": draw(st.integers(0, 20)), "jitter_ms": draw(st.integers(0, 10))},
        "simulation": {
            "poll_idle_ms": draw(st.sampled_from([100, 1000, 5000])),
            "poll_timeout_ms": draw(st.sampled_from([10, 100, 500])),
            "lag_sample_ms": draw(st.sampled_from([1000, 5000, 60_000])),
            "processing_jitter": draw(st.sampled_from([0.0, 0.2, 0.5])),
        },
        "events": restarts,
    }
    if late_joiners:
        doc["members"]["list"] = [
            {"name": f"m{i}", "start_ms": draw(st.sampled_from([0, 0, 500, 4000, 15_000, 30_000]))}
            for i in range(members)
        ]
        del doc["members"]["count"]
        doc["group"]["max_poll_interval_ms"] = draw(st.sampled_from([300_000, 2000, 10_000]))
    return doc


def claimed_run_is_the_reference(doc: dict) -> SimulationResult:
    """The drawn scenario on both cores, assumed away unless the native core claims it; the runs
    must be equal. Returns the reference's run."""
    sc = parse_simulation_scenario(doc)
    assume(classic_native.native_support(sc) is None)
    ref = simulate_scenario(sc, collect_events=True, core="reference")
    nat = simulate_scenario(sc, collect_events=True, core="native")
    assert_same_run(nat, ref)
    return ref


# derandomized: the same 60 scenarios every run (CI must not fail on a draw; review 9's fuzzer ran
# 1,455 random claimed scenarios, equal but for the two differences fixed with this test)
@settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@seed(EAGER_SEED)
@given(eager_scenarios())
def test_a_claimed_random_scenario_is_the_reference(doc):
    require_native_build()
    claimed_run_is_the_reference(doc)


def test_a_claimed_random_sticky_or_cooperative_scenario_is_the_reference():
    """...and across the examples, claimed scenarios reach KIP-429's cooperative revocation (review
    11 S1: the strategy without late joiners reached it in one of 60), so it cannot drift away."""
    require_native_build()
    cooperative_runs = []

    @settings(
        max_examples=60,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @seed(STICKY_SEED)
    @given(eager_scenarios(STICKY_DRAWS, late_joiners=True))
    def run(doc):
        ref = claimed_run_is_the_reference(doc)
        rows = [
            e
            for e in ref.events
            if e["kind"] == "revoked" and json.loads(e["detail"])["reason"] == "cooperative"
        ]
        if rows:
            cooperative_runs.append(len(rows))

    run()
    assert len(cooperative_runs) >= MIN_COOPERATIVE_RUNS


def test_the_drawn_scenarios_are_claimed():
    """The strategy above must reach the native core: a drawn scenario is claimed (else the test
    above would assume every example away)."""
    require_native_build()
    for restarts in (1, 2):
        for members in (1, 7):
            doc = find(
                eager_scenarios(),
                lambda d, r=restarts, n=members: (
                    len(d["events"]) == r and d["members"]["count"] == n
                ),
            )
            assert classic_native.native_support(parse_simulation_scenario(doc)) is None
    for assignors in STICKY_LISTS:
        doc = find(
            eager_scenarios(STICKY_LISTS, late_joiners=True),
            lambda d, a=assignors: d["group"]["assignors"] == a,
        )
        assert classic_native.native_support(parse_simulation_scenario(doc)) is None
