"""Cluster rebalancing acceptance benchmarks (issue 4) on the seeded synthetic cluster.

    .venv/bin/python bench/cluster.py            # all four cases, 100 brokers / 100,000 partitions
    .venv/bin/python bench/cluster.py --case 2   # one case
    .venv/bin/python bench/cluster.py --partitions 10000 --brokers 30   # smaller, for a quick look

Each case runs in its own process so its wall time and peak memory (ru_maxrss)
are its own; the cluster is built by `cluster.synthetic` with seed 7: brokers
in 3 racks (broker i in rack i % 3), RF 3, lognormal sizes, Zipf byte rates.
Prints one JSON object per case and a Markdown table at the end.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections import Counter

SEED = 7


def rack_valid(snap) -> bool:
    """Every partition has its replicas on distinct racks (RF 3 on 3 racks: one per rack)."""
    rack = {b.id: b.rack for b in snap.brokers}
    return all(len({rack[r] for r in p.replicas}) == len(p.replicas) for p in snap.partitions)


def replica_counts(snap, brokers) -> dict[int, int]:
    c = Counter(r for p in snap.partitions for r in p.replicas)
    return {b: c.get(b, 0) for b in brokers}


def case_add(args) -> dict:
    from kafka_rebalance.cluster.generate import generate_reassignment
    from kafka_rebalance.cluster.planner import plan
    from kafka_rebalance.cluster.synthetic import add_empty_broker, synthetic_cluster

    base = synthetic_cluster(brokers=args.brokers, partitions=args.partitions, seed=SEED)
    snap, new = add_empty_broker(base)
    t0 = time.perf_counter()
    res = plan(snap, "add-brokers", [new])
    wall = time.perf_counter() - t0
    ids = [b.id for b in snap.brokers]
    counts = replica_counts(res.after_snapshot, ids)
    mean = sum(counts.values()) / len(counts)
    rack = {b.id: b.rack for b in snap.brokers}
    per_rack: dict[str, list[int]] = {}
    for b, c in counts.items():
        per_rack.setdefault(rack[b], []).append(c)
    within = max(max(v) / (sum(v) / len(v)) for v in per_rack.values())
    # with one replica per rack, a rack's replica total is fixed: the best any plan can reach
    best = max(-(-args.partitions // len(v)) for v in per_rack.values()) / mean
    gen = generate_reassignment(snap, ids, seed=SEED)
    gen_moves = sum(
        len(set(gen[(p.topic, p.partition)]) - set(p.replicas)) for p in snap.partitions
    )
    return {
        "case": "1 add one empty broker",
        "replica_moves": res.replica_moves,
        "lower_bound_moves": res.lower_bound_moves,
        "moves_over_bound": res.replica_moves / max(res.lower_bound_moves, 1),
        "new_broker_replicas": counts[new],
        "replicas_max_over_mean": max(counts.values()) / mean,
        "replicas_max_over_mean_best_possible": best,
        "replicas_max_over_mean_within_rack": within,
        "racks_valid": rack_valid(res.after_snapshot),
        "generate_moves": gen_moves,
        "generate_over_plan": gen_moves / max(res.replica_moves, 1),
        "bytes_moved": res.bytes_moved,
        "leader_changes": res.leader_changes,
        "after": res.after,
        "wall_s": wall,
    }


def case_skewed(args) -> dict:
    from kafka_rebalance.cluster.planner import plan
    from kafka_rebalance.cluster.synthetic import synthetic_cluster

    snap = synthetic_cluster(
        brokers=args.brokers, partitions=args.partitions, seed=SEED, skew=args.skew
    )
    t0 = time.perf_counter()
    res = plan(snap, "full")
    wall = time.perf_counter() - t0
    t1 = time.perf_counter()
    lean = plan(snap, "full", topic_spread=False)
    lean_wall = time.perf_counter() - t1
    return {
        "case": "2 rebalance a skewed cluster",
        "without_topic_spread": {
            "replica_moves": lean.replica_moves,
            "lower_bound_moves": lean.lower_bound_moves,
            "max_after": max(lean.after.values()),
            "wall_s": lean_wall,
        },
        "replica_moves": res.replica_moves,
        "lower_bound_moves": res.lower_bound_moves,
        "moves_over_bound": res.replica_moves / max(res.lower_bound_moves, 1),
        "before": res.before,
        "after": res.after,
        "max_after": max(res.after.values()),
        "goals_satisfied": res.goals_satisfied,
        "goals_failed": [g for g, ok in res.goals if not ok],
        "racks_valid": rack_valid(res.after_snapshot),
        "bytes_moved": res.bytes_moved,
        "leader_changes": res.leader_changes,
        "wall_s": wall,
    }


def case_rolling(args) -> dict:
    from kafka_rebalance.cluster.leader_skew import kraft_imbalanced_partitions
    from kafka_rebalance.cluster.planner import plan
    from kafka_rebalance.cluster.synthetic import rolling_restart, synthetic_cluster

    snap = rolling_restart(
        synthetic_cluster(brokers=args.brokers, partitions=args.partitions, seed=SEED)
    )
    t0 = time.perf_counter()
    res = plan(snap, "leaders")
    wall = time.perf_counter() - t0
    leaders = Counter(p.leader for p in snap.partitions)
    alive = [b.id for b in snap.brokers if b.alive]
    floor = len(snap.partitions) // len(alive)
    # every leader change gives one broker one more leader: the brokers below floor need at least this many
    bound = sum(max(0, floor - leaders.get(b, 0)) for b in alive)
    after = Counter(p.leader for p in res.after_snapshot.partitions)
    return {
        "case": "3 leader skew after a rolling restart",
        "replica_moves": res.replica_moves,
        "bytes_moved": res.bytes_moved,
        "leader_changes": res.leader_changes,
        "optimal_leader_changes": res.optimal_leader_changes,
        "leader_change_lower_bound": bound,
        "preferred_election_changes": len(kraft_imbalanced_partitions(snap)),
        "leaders_before_min_max": [min(leaders.get(b, 0) for b in alive), max(leaders.values())],
        "leaders_after_min_max": [min(after.get(b, 0) for b in alive), max(after.values())],
        "before": res.before,
        "after": res.after,
        "wall_s": wall,
    }


def case_decommission(args) -> dict:
    from kafka_rebalance.cluster.planner import plan
    from kafka_rebalance.cluster.synthetic import synthetic_cluster

    snap = synthetic_cluster(brokers=args.brokers, partitions=args.partitions, seed=SEED)
    rows = []
    for k in (1, 3, 5):
        removed = list(range(0, k * 7, 7))[:k]  # spread over the racks: 0, 7, 14, 21, 28
        on = sum(1 for p in snap.partitions for r in p.replicas if r in removed)
        t0 = time.perf_counter()
        res = plan(snap, "remove-brokers", removed)
        wall = time.perf_counter() - t0
        left = sum(1 for p in res.after_snapshot.partitions for r in p.replicas if r in removed)
        rows.append(
            {
                "removed": removed,
                "complete": res.complete,
                "replicas_on_removed": on,
                "replica_moves": res.replica_moves,
                "lower_bound_moves": res.lower_bound_moves,
                "left_on_removed": left,
                "racks_valid": rack_valid(res.after_snapshot),
                "after": res.after,
                "wall_s": wall,
            }
        )
    return {"case": "4 decommission 1, 3, 5 brokers", "runs": rows}


def with_cpu_and_capacity(snap, seed: int = SEED):
    """CPU samples per partition (0.7 x bytes in + 0.15 x bytes out per MB/s, lognormal noise, as a
    load model would give) and a CPU capacity per broker 2.5x the even share (Cruise Control percent)."""
    from dataclasses import replace

    import numpy as np

    rng = np.random.default_rng(seed)
    noise = rng.lognormal(0.0, 0.2, size=len(snap.partitions))
    parts = tuple(
        replace(
            p,
            load=replace(
                p.load, cpu=(0.7 * p.load.bytes_in + 0.15 * p.load.bytes_out) / 1e6 * float(n)
            ),
        )
        for p, n in zip(snap.partitions, noise)
    )
    total = sum(p.load.cpu * 1.3 for p in parts)  # leaders plus the followers' share, roughly
    brokers = tuple(replace(b, cpu=2.5 * total / len(snap.brokers)) for b in snap.brokers)
    return replace(snap, brokers=brokers, partitions=parts)


def case_goals(args) -> dict:
    """Cruise Control's default goal list with capacities (disk, network in/out, CPU) on a skewed cluster."""
    from kafka_rebalance.cluster.planner import plan
    from kafka_rebalance.cluster.synthetic import synthetic_cluster

    snap = with_cpu_and_capacity(
        synthetic_cluster(
            brokers=args.brokers, partitions=args.partitions, seed=SEED, skew=args.skew
        )
    )
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    res = plan(snap, "full")
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    goals = [
        {
            "goal": r.goal,
            "hard": r.hard,
            "satisfied": r.satisfied,
            "before": r.before.get("value"),
            "after": r.after.get("value"),
            "limit": r.after.get("limit"),
            "reason": r.reason,
        }
        for r in res.reports
    ]
    dist = [
        g
        for g in goals
        if g["goal"].endswith("DistributionGoal") and g["goal"] != "TopicReplicaDistributionGoal"
    ]
    return {
        "case": "5 Cruise Control default goals with capacities",
        "replicas": sum(len(p.replicas) for p in snap.partitions),
        "replica_moves": res.replica_moves,
        "lower_bound_moves": res.lower_bound_moves,
        "headline": res.headline(),
        "bytes_moved": res.bytes_moved,
        "leader_changes": res.leader_changes,
        "refused": res.refused,
        "hard_goals_met": all(g["satisfied"] for g in goals if g["hard"]),
        "distribution_max_after": max(g["after"] for g in dist),
        "goals": goals,
        "cpu_source": res.cpu_source,
        "racks_valid": rack_valid(res.after_snapshot),
        "wall_s": wall,
        "cpu_s": cpu,
    }


CASES = {1: case_add, 2: case_skewed, 3: case_rolling, 4: case_decommission, 5: case_goals}


def child(args) -> None:
    t0 = time.perf_counter()
    out = CASES[args.case](args)
    out["process_wall_s"] = time.perf_counter() - t0
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out))


def markdown(results: list[dict], args) -> str:
    r = {x["case"][0]: x for x in results}
    lines = [
        f"Synthetic cluster: {args.brokers} brokers in 3 racks, {args.partitions:,} partitions at RF 3, seed {SEED}.",
        "",
        "| case | result | target |",
        "|---|---|---|",
    ]
    if "1" in r:
        a = r["1"]
        lines.append(
            f"| 1 add one empty broker | {a['replica_moves']} moves, lower bound {a['lower_bound_moves']} "
            f"({a['moves_over_bound']:.3f}x); `--generate` emulation {a['generate_moves']} moves "
            f"({a['generate_over_plan']:.0f}x); replica max/mean {a['replicas_max_over_mean']:.4f} "
            f"(best reachable with one replica per rack {a['replicas_max_over_mean_best_possible']:.4f}, "
            f"within each rack {a['replicas_max_over_mean_within_rack']:.4f}); racks valid "
            f"{a['racks_valid']}; {a['wall_s']:.1f} s | <= 1.05x bound, max/mean <= 1.01 |"
        )
    if "2" in r:
        b = r["2"]
        after = ", ".join(f"{k} {v:.3f}" for k, v in b["after"].items())
        before = ", ".join(f"{k} {v:.2f}" for k, v in b["before"].items())
        lines.append(
            f"| 2 rebalance a skewed cluster (skew {args.skew}) | before: {before}; after: {after}; "
            f"{b['replica_moves']} moves vs lower bound {b['lower_bound_moves']} "
            f"({b['moves_over_bound']:.3f}x), {b['bytes_moved'] / 1e12:.1f} TB; without the topic spread goal "
            f"{b['without_topic_spread']['replica_moves']} moves vs bound "
            f"{b['without_topic_spread']['lower_bound_moves']} (max/mean "
            f"{b['without_topic_spread']['max_after']:.3f}, {b['without_topic_spread']['wall_s']:.1f} s); "
            f"optimizer {b['wall_s']:.1f} s, peak RSS "
            f"{b['peak_rss_mb']:.0f} MB; racks valid {b['racks_valid']}; all goals satisfied "
            f"{b['goals_satisfied']}"
            + (f" (failed: {', '.join(b['goals_failed'])})" if b["goals_failed"] else "")
            + " | every max/mean <= 1.09, "
            "< 60 s, < 2 GB |"
        )
    if "3" in r:
        c = r["3"]
        lines.append(
            f"| 3 leader skew after a rolling restart | {c['replica_moves']} replica moves, "
            f"{c['leader_changes']} leader changes = min-cost-flow optimum {c['optimal_leader_changes']} "
            f"(counting bound {c['leader_change_lower_bound']}; a plain preferred election would make "
            f"{c['preferred_election_changes']}); leaders per broker {c['leaders_before_min_max']} -> "
            f"{c['leaders_after_min_max']}; {c['wall_s']:.1f} s | no data moved, exact optimum |"
        )
    if "4" in r:
        for row in r["4"]["runs"]:
            lines.append(
                f"| 4 decommission {len(row['removed'])} ({row['removed']}) | {row['replica_moves']} moves "
                f"= {row['replicas_on_removed']} replicas on them; {row['left_on_removed']} left "
                f"(complete {row['complete']}); racks "
                f"valid {row['racks_valid']}; {row['wall_s']:.1f} s | moves = replicas on them |"
            )
    if "5" in r:
        g = r["5"]
        hard = ", ".join(
            f"{x['goal']} {x['before']:.2f} -> {x['after']:.2f}"
            for x in g["goals"]
            if x["hard"] and isinstance(x.get("after"), float)
        )
        dist = ", ".join(
            f"{x['goal'].replace('DistributionGoal', '')} {x['before']:.2f} -> {x['after']:.3f}"
            for x in g["goals"]
            if x["goal"].endswith("DistributionGoal")
            and x["goal"] != "TopicReplicaDistributionGoal"
        )
        lines.append(
            f"| 5 Cruise Control's default goals with capacities ({g['replicas']:,} replicas, skew "
            f"{args.skew}) | {g['headline']} (lower bound {g['lower_bound_moves']:,}); every hard goal met "
            f"{g['hard_goals_met']} (used/capacity: {hard}); distribution max/mean: {dist}; CPU "
            f"{g['cpu_source']}; racks valid {g['racks_valid']}; {g['wall_s']:.1f} s wall, "
            f"{g['cpu_s']:.1f} s CPU, peak RSS {g['peak_rss_mb']:.0f} MB | < 60 s, < 2 GB, hard goals met, "
            "distribution max/mean <= 1.09 |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--case", type=int, choices=sorted(CASES))
    ap.add_argument("--brokers", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument(
        "--skew", type=float, default=0.25, help="lognormal sigma of placement weights (case 2)"
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    results = []
    for case in [args.case] if args.case else sorted(CASES):
        cmd = [
            sys.executable,
            __file__,
            "--child",
            "--case",
            str(case),
            "--brokers",
            str(args.brokers),
            "--partitions",
            str(args.partitions),
            "--skew",
            str(args.skew),
        ]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        res = json.loads(out.strip().splitlines()[-1])
        print(json.dumps(res), flush=True)
        results.append(res)
    print()
    print(markdown(results, args))


if __name__ == "__main__":
    main()
