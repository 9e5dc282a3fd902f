"""The simulator's fingerprint set: scenarios whose event logs and summaries must stay byte for byte.

Issue 20 lets the simulator get faster only if every run stays exactly what the reference
(per-message) path gives. Each scenario here is run with its event log kept; its fingerprint is
the SHA-256 of the canonical JSON of the event log and the summary. `tests/sim_fingerprints.json`
holds the reference values; `tests/test_sim_fingerprints.py` checks them.

    python tests/sim_fingerprint_set.py            # print every fingerprint, mark the changed ones
    python tests/sim_fingerprint_set.py --update   # rewrite sim_fingerprints.json

Update only for a deliberate change of behaviour (a fidelity fix), never for a speed-up: say
which scenarios changed and why in the commit message.
"""

from __future__ import annotations

import copy
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FINGERPRINTS = Path(__file__).resolve().parent / "sim_fingerprints.json"
EXAMPLES = ("rolling-restart", "crash", "coordinator-failover", "partition-growth", "scale-out")


def rolling(members: int, assignors: list[str], **group: Any) -> dict:
    """The bench's rolling restart (bench/simulate.py) at a small size."""
    every = 10_000
    return {
        "name": f"rolling-{'-'.join(assignors)}",
        "seed": 1,
        "duration_ms": 60_000 + members * every + 30_000,
        "group": {"id": "bench", "assignors": assignors, **group},
        "topics": [{"name": "t", "partitions": 10 * members, "produce_rate": 10.0 * members}],
        "members": {"count": members, "processing_ms_per_record": 0.1},
        "simulation": {"poll_idle_ms": 5000, "lag_sample_ms": 60_000},
        "events": [
            {"at_ms": 60_000, "kind": "rolling_restart", "down_ms": 5_000, "every_ms": every}
        ],
    }


def day(minutes: int = 20) -> dict:
    """bench/simulate.py's day case, shortened: a crash, a restart and a coordinator failover."""
    m = 60_000
    return {
        "name": "day",
        "seed": 1,
        "duration_ms": minutes * m,
        "group": {"id": "bench-day", "assignors": ["cooperative-sticky"]},
        "topics": [{"name": "t", "partitions": 40, "produce_rate": 400}],
        "members": {"count": 12, "processing_ms_per_record": 0.5},
        "simulation": {"poll_idle_ms": 5000, "lag_sample_ms": 60_000},
        "events": [
            {"at_ms": 4 * m + 1234, "kind": "crash", "member": "m7"},
            {"at_ms": 6 * m, "kind": "restart", "member": "m7", "down_ms": 0},
            {"at_ms": 10 * m, "kind": "coordinator_failover", "down_ms": 5000},
        ],
    }


def measured_env(protocol: str, assignor: str, static: bool) -> dict:
    """A small group under the measured-environment settings (network latency samples, member
    start-up and close delays, log append times: docs/formats.md) with a join, a leave, a crash and
    a rolling restart: the draws of world_core's `_arrival`, `draw` and `send_leave` (review 4 F7)."""
    doc: dict = {
        "name": f"measured-env-{protocol}",
        "seed": 5,
        "duration_ms": 120_000,
        "group": {"group_initial_rebalance_delay_ms": 0, "static_membership": static},
        "topics": [
            {"name": "t", "partitions": 24, "produce_rate": 200},
            {"name": "u", "partitions": 7, "produce_rate": 50},
        ],
        "members": {"count": 6},
        "network": {"latency_samples_ms": [1, 2, 2, 3, 7, 15], "jitter_ms": 3},
        "simulation": {
            "member_startup_ms": [100, 250, 900],
            "member_close_ms": [0, 50, 400],
            "log_append_ms": [1, 3],
        },
        "events": [
            {"at_ms": 20_000, "kind": "join", "member": "m6"},
            {"at_ms": 40_000, "kind": "leave", "member": "m0"},
            {"at_ms": 60_000, "kind": "crash", "member": "m2"},
            {"at_ms": 80_000, "kind": "rolling_restart", "every_ms": 5_000},
        ],
    }
    if protocol == "consumer":
        doc["protocol"] = "consumer"
        doc["group"].pop("static_membership")
    else:
        doc["group"]["assignors"] = [assignor]
    return doc


def scenarios() -> Iterator[tuple[str, dict]]:
    """(name, scenario document) for every member of the set."""
    import yaml

    for ex in EXAMPLES:
        doc = yaml.safe_load((ROOT / "examples" / f"{ex}.yaml").read_text())
        for seed in (1, 7):
            d = copy.deepcopy(doc)
            d["seed"] = seed
            yield f"example-{ex}-seed{seed}", d
            c = copy.deepcopy(d)
            c["protocol"] = "consumer"
            c["group"].pop("assignors", None)
            c["group"].pop("static_membership", None)
            yield f"example-{ex}-consumer-seed{seed}", c
            if ex in ("rolling-restart", "crash") and seed == 1:
                cs = copy.deepcopy(c)
                cs["group"]["static_membership"] = True
                yield f"example-{ex}-consumer-static-seed{seed}", cs
    n = 12
    yield "rolling-range", rolling(n, ["range"])
    yield "rolling-roundrobin", rolling(n, ["roundrobin"])
    yield "rolling-sticky", rolling(n, ["sticky"])
    yield "rolling-cooperative-sticky", rolling(n, ["cooperative-sticky"])
    yield "rolling-static-range", rolling(n, ["range"], static_membership=True)
    yield "rolling-static-cooperative", rolling(n, ["cooperative-sticky"], static_membership=True)
    cons = rolling(n, ["range"])
    cons["protocol"] = "consumer"
    cons["group"].pop("assignors")
    yield "rolling-consumer-uniform", cons
    cons_range = copy.deepcopy(cons)
    cons_range["group"]["server_assignor"] = "range"
    yield "rolling-consumer-range", cons_range
    big = 40
    yield "rolling-range-40", rolling(big, ["range"])
    yield "rolling-cooperative-sticky-40", rolling(big, ["cooperative-sticky"])
    yield "rolling-static-range-40", rolling(big, ["range"], static_membership=True)
    cons = rolling(big, ["range"])
    cons["protocol"] = "consumer"
    cons["group"].pop("assignors")
    yield "rolling-consumer-uniform-40", cons
    for size in (n, big):
        cs = rolling(size, ["range"], static_membership=True)
        cs["protocol"] = "consumer"
        cs["group"].pop("assignors")
        yield f"rolling-consumer-static-{size}", cs
    for name, protocol, assignor, static in (
        ("measured-env-cooperative-sticky", "classic", "cooperative-sticky", False),
        ("measured-env-static-range", "classic", "range", True),
        ("measured-env-consumer-uniform", "consumer", "", False),
    ):
        yield name, measured_env(protocol, assignor, static)
    yield "day-cooperative", day()
    d = day()
    d["group"]["assignors"] = ["range"]
    d["seed"] = 7
    yield "day-eager-seed7", d
    d = day()
    d["protocol"] = "consumer"
    d["group"].pop("assignors")
    yield "day-consumer", d


def fingerprint(doc: dict) -> str:
    from kafka_rebalance.sim.api import simulate

    res = simulate(doc, collect_events=True, core="reference")  # the reference path (the native
    # core is checked against these by tests/test_sim_native_fingerprints.py)
    h = hashlib.sha256()
    for ev in res.events:
        h.update(json.dumps(ev, sort_keys=True, separators=(",", ":")).encode())
        h.update(b"\n")
    h.update(json.dumps(res.summary, sort_keys=True, separators=(",", ":")).encode())
    h.update(f"\n{res.simulated_events}".encode())
    return h.hexdigest()


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT / "src"))
    known = json.loads(FINGERPRINTS.read_text()) if FINGERPRINTS.exists() else {}
    got = {}
    changed = 0
    for name, doc in scenarios():
        got[name] = fingerprint(doc)
        mark = "" if known.get(name) == got[name] else "  CHANGED"
        changed += bool(mark)
        print(f"{name:45} {got[name][:16]}{mark}", flush=True)
    if "--update" in argv:
        FINGERPRINTS.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        print(f"wrote {FINGERPRINTS}")
    return 0 if "--update" in argv or not changed else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
