"""Deterministic discrete-event simulator that drives group/ and assign/ over a virtual clock.

    from kafka_rebalance.sim.api import simulate
    result = simulate(scenario_doc)     # SCHEMAS.md section 2 in, summary + event log out

Modules: `scenario` (parsing and defaults), `engine` (event loop, keyed timers),
`world` (partitions, members, faults and the books), `member` (a classic consumer:
poll loop, processing, commits, rebalance client), `coordinator` (the classic
coordinator node: requests, effects, elided heartbeats, failover), `consumer_world`
(the KIP-848 protocol behind the same driver), `partitions` (closed-form production,
processed-offset intervals), `offsets_store` (the compacted __consumer_offsets view
replayed through Kafka's record schemas on failover), `api` (the public entry points).
"""
