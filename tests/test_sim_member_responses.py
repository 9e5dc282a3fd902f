"""The simulated consumer reacts to heartbeat and commit errors as AbstractCoordinator does, given what the
request went out with (generationUnchanged()) and the member's state when the answer arrives."""

from __future__ import annotations

from kafka_rebalance.group.consumer_client import MemberState
from kafka_rebalance.group.errors import Errors
from kafka_rebalance.sim.api import parse_simulation_scenario
from kafka_rebalance.sim.member_rebalance import PrepareCommit
from kafka_rebalance.sim.world import Simulation

DOC = {
    "name": "t",
    "seed": 1,
    "duration_ms": 120_000,
    "group": {"id": "g", "assignors": ["range"]},
    "topics": [{"name": "t", "partitions": 4, "produce_rate": 10}],
    "members": {"count": 2, "processing_ms_per_record": 1.0},
    "events": [],
}


def stable_member():
    sim = Simulation(parse_simulation_scenario(DOC), sink=lambda e: None)
    sim._schedule_scenario()
    sim.loop.run_until(30_000)
    m = sim.members["m0"]
    assert m.state is MemberState.STABLE and m.generation == 1 and not m.rejoin_needed
    return sim, m


def test_rebalance_in_progress_rejoins_only_a_stable_member():
    sim, m = stable_member()
    m.state = (
        MemberState.COMPLETING_REBALANCE
    )  # awaiting SyncGroup: the SyncGroup answer carries the news
    m.on_heartbeat_response(Errors.REBALANCE_IN_PROGRESS, (m.generation, m.member_id))
    assert not m.rejoin_needed and m.generation == 1
    m.state = MemberState.STABLE
    m.on_heartbeat_response(Errors.REBALANCE_IN_PROGRESS, (m.generation, m.member_id))
    # idle: poll() runs onJoinPrepare at once, which sends the auto-commit; JoinGroup waits for its answer
    assert m.rejoin_needed and not m.join_inflight and m.prepare_commit is PrepareCommit.IN_FLIGHT
    sim.loop.run_until(
        sim.loop.now + 12
    )  # the commit's round trip (latency 1 ms plus up to 4 ms each way)
    assert m.state is MemberState.PREPARING_REBALANCE and m.join_inflight


def test_a_generation_error_about_a_generation_left_since_is_ignored():
    _, m = stable_member()
    member_id = m.member_id
    m.on_heartbeat_response(Errors.UNKNOWN_MEMBER_ID, (0, member_id))  # sent in generation 0
    assert m.member_id == member_id and m.generation == 1 and not m.rejoin_needed
    m.on_heartbeat_response(Errors.ILLEGAL_GENERATION, (1, member_id))  # about the current one
    # the generation is reset (ILLEGAL_GENERATION keeps the member id) and the idle member rejoins at once
    assert m.generation == -1 and m.member_id == member_id
    assert m.state is MemberState.PREPARING_REBALANCE and m.join_inflight


def test_a_stale_commit_error_during_a_rebalance_does_not_reset_the_generation():
    """ConsumerCoordinator: ILLEGAL_GENERATION for an old generation while PREPARING_REBALANCE raises
    RebalanceInProgressException and resets nothing; in any other case the generation is reset."""
    sim, m = stable_member()
    m.state = MemberState.PREPARING_REBALANCE
    m.on_commit_response(Errors.ILLEGAL_GENERATION, (0, m.member_id))
    assert m.generation == 1 and m.state is MemberState.PREPARING_REBALANCE
    m.state = MemberState.STABLE
    m.on_commit_response(Errors.ILLEGAL_GENERATION, (0, m.member_id))
    assert m.generation == -1
