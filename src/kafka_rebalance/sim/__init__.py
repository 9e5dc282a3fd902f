"""Deterministic discrete-event simulator that drives group/ and assign/ over a virtual clock.

    from kafka_rebalance.sim.api import simulate
    result = simulate(scenario_doc)     # docs/formats.md section 2 in, summary + event log out

Modules: `scenario` (parsing and defaults), `engine` (event loop, keyed timers),
`world` (the scenario's driver: members, faults, the run and its summary), `world_core` (the
world as members see it: clock, partitions, network, books), `member` (a classic consumer: poll
loop, processing, commits), `poll_kernels` (the poll loop's per-partition fetch and commit work), `member_rebalance` (its rebalance client: heartbeats, JoinGroup/SyncGroup),
`subscription` (the JoinGroup metadata), `coordinator` (the classic
coordinator node: requests, effects, elided heartbeats, failover), `consumer_world`
(the KIP-848 protocol behind the same driver), `partitions` (closed-form production,
processed-offset intervals), `offsets_store` (the compacted __consumer_offsets view
replayed through Kafka's record schemas on failover), `api` (the public entry points).

Randomness: one `random.Random(scenario.seed)` in the world, drawn in event order, so the
same scenario and seed give the same event log byte for byte and another seed another log.
It draws each request's and response's network latency (`network.latency_ms` plus up to
`network.jitter_ms`, default 4; order kept per connection, or one of the measured samples),
each poll's per-record processing time (`processing_ms_per_record` times a factor in
1 +/- `simulation.processing_jitter`, default 0.2), and, from measured samples, a member's
startup and close delays and the coordinator's log-append time. A member's heartbeats are not
drawn: they run every heartbeat.interval.ms from its join. The KIP-848 world also draws each
member id (128 random bits). Records are still counted one by one.
"""

from .. import group, native

# The classic coordinator node, the world and its classic members, and the KIP-848 world
# (consumer_world: native subclasses of the member and world) are compiled with mypyc with the
# group state machine they drive (their builds call each other's and the group's builds directly,
# and the member calls the poll kernels' builds directly): their fresh builds run only all together
# and beside the group's fresh builds; else their sources do.
COMPILED_TOGETHER = (
    "poll_kernels",
    "coordinator",
    "world_core",
    "member_rebalance",
    "member",
    "world",
    "consumer_world",
)
COORDINATOR_COMPILED = native.builds_or_sources(
    __name__, COMPILED_TOGETHER, with_builds=group.CLASSIC_COMPILED
)
