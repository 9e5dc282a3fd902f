"""The native coordinator's rarer paths: reached, and equal to the reference (review 9 F2).

sim/native_coordinator.pyx is coordinator.py line by line; the fingerprint scenarios never reach some
of its lines: requests queued behind a parked JoinGroup/SyncGroup (and replayed by `_unmute`), the
heartbeat elision from a stopped member's `hb_history` and its early returns, SyncGroup errors,
removals of members that did not rejoin before the rebalance timeout. Each scenario below (small,
claimed by `classic_native.native_support`, found by a search over random claimed scenarios and
written out) reaches its path, observed from outside the coordinator:

- the native coordinator runs in the reference world (`world.Simulation`, as
  tests/test_sim_native_coordinator.py does) behind two see-through proxies: the world's calls into
  it (`receive`, `commit`) note whether the connection was muted (the request must queue), and its
  calls into the world (`reply`, `reply_many`, the loop's timers) note an answer that unmutes a
  connection with requests queued, the errors of SyncGroup answers, and, when a heartbeat timer
  fires, which way `_elided_heartbeat` must go (the reference's rule, read from the state it reads);
- the rows (`member_removed` with its reason) say who was removed and why;

and that run, and the whole core="native" run, equal the reference's: event rows, summary, event
count, paused times, the offsets store. The scenarios are explicit, so the paths are reached on every
run (no draw); the commit that added this file names the mutant each test catches.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest

from kafka_rebalance.sim import classic_native
from kafka_rebalance.sim.api import simulate_scenario
from kafka_rebalance.sim.scenario import Scenario, parse_simulation_scenario
from kafka_rebalance.sim.world import Simulation
from sim_native_runs import assert_same_run, native_coordinator_module


class _Probe(Counter):
    """What the run did, by path name."""


class _Loop:
    """The event loop as the coordinator sees it: its timers' callbacks pass through `on_fire`."""

    def __init__(self, loop: Any, on_fire: Any) -> None:
        self._loop = loop
        self._on_fire = on_fire

    @property
    def now(self) -> Any:
        return self._loop.now

    def set_timer(self, key: Any, deadline: Any, callback: Any, payload: Any = None) -> None:
        on_fire = self._on_fire
        self._loop.set_timer(key, deadline, lambda k, p: on_fire(k, p, callback), payload)

    def cancel_timer(self, key: Any) -> None:
        self._loop.cancel_timer(key)


class _WorldSide:
    """The world as the coordinator sees it: every call passes through to `world`; replies and timer
    firings are noted in `probe` first."""

    def __init__(self, world: Simulation, probe: _Probe) -> None:
        object.__setattr__(self, "_w", world)
        object.__setattr__(self, "_probe", probe)
        object.__setattr__(self, "coord", None)  # the native coordinator, once made
        object.__setattr__(
            self, "in_group", set()
        )  # member ids joined (JoinGroup NONE), not removed
        object.__setattr__(self, "removed", [])  # member ids removed, in order
        object.__setattr__(self, "firings", Counter())  # (timer key, time) -> times it fired
        object.__setattr__(self, "loop", _Loop(world.loop, self._fired))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._w, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._w, name, value)

    def emit(self, kind: str, *args: Any) -> None:
        if kind == "member_removed":
            member_id = args[3]["member_id"]
            self.in_group.discard(member_id)
            self.removed.append(member_id)
        self._w.emit(kind, *args)

    def _answered(self, client: str, kind: str, resp: Any) -> None:
        if kind == "join" and resp.error.name == "NONE":
            self.in_group.add(resp.member_id)
        if kind in ("join", "sync") and self.coord.muted.get(client):
            self._probe["unmute with requests queued"] += 1
        if kind == "sync" and resp.error.name != "NONE":
            self._probe[f"SyncGroup {resp.error.name}"] += 1

    def reply(self, client: str, kind: str, resp: Any) -> None:
        self._answered(client, kind, resp)
        self._w.reply(client, kind, resp)

    def reply_many(self, replies: list) -> None:
        for client, kind, resp in replies:
            self._answered(client, kind, resp)
        self._w.reply_many(replies)

    def _fired(self, key: Any, payload: Any, callback: Any) -> None:
        if key <= 0:  # the join or the sync timer
            callback(key, payload)
            return
        # a member's session timer: the elision's way, and what became of the member
        self.firings[key, self._w.loop.now] += 1
        # a session timer re-armed at or before now fires again at once: a run that never ends
        assert self.firings[key, self._w.loop.now] < 100, "a session timer fires again and again"
        way = self._elision(key)
        removed = len(self.removed)
        callback(key, payload)
        deadline = self._w.loop.timer_deadline(key)
        if deadline is not None and deadline > self._w.loop.now:
            then = "session renewed"
        elif self.coord.group.ids[key] in self.removed[removed:]:
            then = "removed"
        else:
            then = "left as it was"  # not a member, or one whose JoinGroup/SyncGroup is parked
        self._probe[f"elision: {way}; {then}"] += 1

    def _elision(self, key: int) -> str:
        """Which way coordinator.py's `_elided_heartbeat` goes for the member id handle `key` now."""
        coord, w = self.coord, self._w
        now, lat, g = w.loop.now, w.sc.network_latency_ms, w.sc.group
        member_id = coord.group.ids[key]
        name = coord.by_member_id.get(member_id)
        m = w.members.get(name) if name is not None else None
        if m is None:
            return "no member"
        if m.member_id == member_id and m.heartbeating():
            where, (base, first, stop) = "live", (m.hb_base, m.hb_first, now)
        elif member_id in coord.hb_history:
            where, (base, first, stop) = "history", coord.hb_history[member_id][:3]
        else:
            return "no history"
        if stop - lat < base:
            return f"{where}, before its phase"
        sent = base + ((stop - lat - base) // g.heartbeat_interval_ms) * g.heartbeat_interval_ms
        if sent < first:
            return f"{where}, before its first beat"
        if member_id not in self.in_group:
            return f"{where}, not a member"
        if sent + lat + g.session_timeout_ms <= now:
            return f"{where}, session over"
        return f"{where}, delivered"


class _CoordinatorSide:
    """The coordinator as the world sees it: requests on a muted connection are noted, then passed."""

    def __init__(self, coord: Any, probe: _Probe) -> None:
        self._coord = coord
        self._probe = probe

    def __getattr__(self, name: str) -> Any:
        return getattr(self._coord, name)

    def receive(self, kind: str, req: Any, name: Any) -> None:
        if req.client in self._coord.muted:
            self._probe[f"{kind} queued"] += 1
        self._coord.receive(kind, req, name)

    def commit(self, name: Any, client: str, *args: Any, **kwargs: Any) -> None:
        if client in self._coord.muted:
            self._probe["commit queued"] += 1
        self._coord.commit(name, client, *args, **kwargs)


@dataclass
class _ProbedRun:
    rows: list[dict]
    summary: dict
    processed: int
    store: Any
    probe: _Probe


def probed_run(sc: Scenario) -> _ProbedRun:
    """`sc` in the reference world around the native coordinator, its paths noted."""
    mod = native_coordinator_module()
    rows: list[dict] = []
    probe = _Probe()
    w = Simulation(sc, rows.append)
    side = _WorldSide(w, probe)
    coord = mod.NativeCoordinator(side)
    object.__setattr__(side, "coord", coord)
    w.coord = _CoordinatorSide(coord, probe)
    summary = w.run()
    for row in rows:
        if row["kind"] == "member_removed":
            probe[f"removed: {json.loads(row['detail'])['reason']}"] += 1
    return _ProbedRun(rows, summary, w.loop.processed, coord.store, probe)


def _store(store: Any) -> tuple:
    return store.records_appended, store.offsets, store.group


# Two claimed scenarios (found by a search over 4,000 random claimed ones, written out) that between
# them reach every path below but the last (a third, late-join-answer, reaches it). A slow network (3 s each way) with restarts every 50 ms: members close
# while their JoinGroup is parked (their LeaveGroup queues), stopped members' sessions run out while
# the group waits for them. A 200 ms rebalance timeout with long restarts: members do not rejoin in
# time, SyncGroups are answered with errors.
SCENARIOS: dict[str, dict] = {
    "slow-network": {
        "name": "slow-network",
        "seed": 1295268832,
        "duration_ms": 46495,
        "group": {
            "id": "g",
            "assignors": ["roundrobin"],
            "heartbeat_interval_ms": 100,
            "session_timeout_ms": 7000,
            "group_initial_rebalance_delay_ms": 3000,
            "auto_commit_interval_ms": 100,
            "max_poll_records": 1,
        },
        "topics": [{"name": "t", "partitions": 1, "produce_rate": 10}],
        "members": {"count": 5, "processing_ms_per_record": 1.0},
        "network": {"latency_ms": 3000, "jitter_ms": 5},
        "simulation": {"poll_idle_ms": 1000, "poll_timeout_ms": 10, "processing_jitter": 0.0},
        "events": [
            {"at_ms": 9213, "kind": "rolling_restart", "down_ms": 200, "every_ms": 50},
            {"at_ms": 15942, "kind": "rolling_restart", "down_ms": 1000, "every_ms": 4000},
        ],
    },
    "rebalance-timeout-200ms": {
        "name": "rebalance-timeout-200ms",
        "seed": 963347558,
        "duration_ms": 44711,
        "group": {
            "id": "g",
            "assignors": ["range"],
            "heartbeat_interval_ms": 3000,
            "session_timeout_ms": 6000,
            "group_initial_rebalance_delay_ms": 0,
            "auto_commit_interval_ms": 100,
            "max_poll_records": 500,
            "max_poll_interval_ms": 500,
            "rebalance_timeout_ms": 200,
        },
        "topics": [{"name": "t", "partitions": 1, "produce_rate": 100.0}],
        "members": {"count": 6, "processing_ms_per_record": 0.01},
        "network": {"latency_ms": 0, "jitter_ms": 300},
        "simulation": {"poll_idle_ms": 100, "poll_timeout_ms": 10, "processing_jitter": 0.2},
        "events": [{"at_ms": 7873, "kind": "rolling_restart", "down_ms": 15000, "every_ms": 4000}],
    },
    # A 3 s network with up to 1.5 s of jitter and a 7 s session (tools12, session 17): a live
    # member reads its JoinGroup answer late (its heartbeat phase starts then), and its session,
    # restarted when the join completed, runs out before `now - latency` reaches that phase.
    "late-join-answer": {
        "name": "late-join-answer",
        "seed": 1,
        "duration_ms": 40_000,
        "group": {
            "id": "g",
            "assignors": ["range"],
            "heartbeat_interval_ms": 500,
            "session_timeout_ms": 7000,
            "group_initial_rebalance_delay_ms": 0,
        },
        "topics": [{"name": "t", "partitions": 2, "produce_rate": 10}],
        "members": {"count": 3, "processing_ms_per_record": 1.0},
        "network": {"latency_ms": 3000, "jitter_ms": 1500},
        "events": [],
    },
}

# path -> the scenario that reaches it
PATHS = {
    # receive(): a request on a muted connection queues behind the parked JoinGroup/SyncGroup
    "leave queued": "slow-network",
    "heartbeat queued": "rebalance-timeout-200ms",
    # _send_replies() -> _unmute(): the parked request is answered, the queue replays in order
    "unmute with requests queued": "slow-network",
    # FX_SYNC_RESPONSE with an error
    "SyncGroup REBALANCE_IN_PROGRESS": "slow-network",
    "SyncGroup UNKNOWN_MEMBER_ID": "rebalance-timeout-200ms",
    # FX_MEMBER_REMOVED by the group's timers
    "removed: did not rejoin before the rebalance timeout": "rebalance-timeout-200ms",
    "removed: pending SyncGroup expired": "rebalance-timeout-200ms",
    "removed: session timeout": "slow-network",
    # on_timer() -> _elided_heartbeat(): a stopped member's last beat, from hb_history, keeps its
    # session (answers True), or the early returns: its last beat before its phase (the member is
    # removed), too old for the session or no history (a member whose request is parked: the group
    # leaves it as it was); a live member's last beat before its phase (the member is removed).
    # Not reached: a live member's "not a member", its "session over" (its last beat is at most
    # one heartbeat interval before now - latency, and the interval is below the session: it
    # cannot be), and `sent < hb_first` (every member sets hb_first and hb_base together)
    "elision: history, delivered; session renewed": "slow-network",
    "elision: history, before its phase; removed": "slow-network",
    "elision: history, session over; left as it was": "slow-network",
    "elision: no history; left as it was": "rebalance-timeout-200ms",
    "elision: live, before its phase; removed": "late-join-answer",
}


def _scenario(name: str) -> Scenario:
    native_coordinator_module()  # skips (or fails under KAFKA_REBALANCE_REQUIRE_COMPILED) without the build
    sc = parse_simulation_scenario(SCENARIOS[name])
    assert classic_native.native_support(sc) is None  # claimed: core="auto" runs it natively
    return sc


def _reference(sc: Scenario) -> tuple[Any, Any]:
    worlds: list[Any] = []
    ref = simulate_scenario(sc, collect_events=True, core="reference", on_world=worlds.append)
    return ref, worlds[0].coord.store


@pytest.mark.parametrize("path", sorted(PATHS))
def test_the_path_is_reached_and_the_run_is_the_reference(path):
    sc = _scenario(PATHS[path])
    run = probed_run(sc)
    assert run.probe[path] > 0, dict(run.probe)
    ref, ref_store = _reference(sc)
    assert run.rows == ref.events
    assert run.summary == ref.summary
    assert run.processed == ref.simulated_events
    assert _store(run.store) == _store(ref_store)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_native_core_runs_the_scenario_as_the_reference(name):
    """The whole native core (the native world around the native coordinator) on the same scenario."""
    sc = _scenario(name)
    worlds: list[Any] = []
    nat = simulate_scenario(sc, collect_events=True, core="native", on_world=worlds.append)
    ref, ref_store = _reference(sc)
    assert_same_run(nat, ref)
    assert _store(worlds[0].coord.store) == _store(ref_store)
