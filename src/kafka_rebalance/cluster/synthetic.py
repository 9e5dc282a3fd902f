"""Seeded synthetic clusters and the scenarios the benchmarks and tests need.

Brokers sit round-robin in racks (broker i in rack i % racks). Topics get a
Zipf-distributed share of the cluster's byte rate (rank r carries r^-s), each
partition a lognormal wobble around its topic's share and a lognormal size.
Placement is what Kafka itself would have done at topic creation
(AdminUtils.assignReplicasToBrokers, rack aware, start index from the seed),
unless a skewed placement is asked for.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..model import Broker, ClusterSnapshot, PartitionLoad, PartitionReplicas
from .generate import BrokerMetadata, JavaRandom, assign_replicas_to_brokers


def _loads(
    rng: np.random.Generator,
    n_topics: int,
    per_topic: np.ndarray,
    total_bytes_in: float,
    zipf_s: float,
    size_median: float,
    size_sigma: float,
) -> list[list[PartitionLoad]]:
    ranks = rng.permutation(n_topics) + 1
    share = ranks.astype(np.float64) ** -zipf_s
    share /= share.sum()
    fanout = rng.integers(1, 4, size=n_topics).astype(
        np.float64
    )  # consumer groups reading each topic
    msg_size = rng.lognormal(np.log(1000.0), 0.5, size=n_topics)
    out = []
    for t in range(n_topics):
        n = int(per_topic[t])
        wobble = rng.lognormal(0.0, 0.3, size=n)
        bi = total_bytes_in * share[t] * wobble / wobble.sum()
        sizes = rng.lognormal(np.log(size_median), size_sigma, size=n)
        out.append(
            [
                PartitionLoad(
                    bytes_in=float(bi[i]),
                    bytes_out=float(bi[i] * fanout[t]),
                    messages_in=float(bi[i] / msg_size[t]),
                    size_bytes=float(sizes[i]),
                )
                for i in range(n)
            ]
        )
    return out


def synthetic_cluster(
    brokers: int = 100,
    racks: int = 3,
    partitions: int = 100_000,
    rf: int = 3,
    topics: int | None = None,
    seed: int = 7,
    zipf_s: float = 1.0,
    size_median: float = 1.0e9,
    size_sigma: float = 1.0,
    total_bytes_in: float = 2.0e9,
    skew: float = 0.0,
) -> ClusterSnapshot:
    """A healthy cluster laid out by Kafka's own assignment; `skew` > 0 biases placement instead.

    With skew, each replica lands on a broker of its rack drawn with weight
    lognormal(0, skew), so some brokers carry far more replicas, bytes and
    leaders than others (as after years of manual placement).
    """
    rng = np.random.default_rng(seed)
    n_topics = topics if topics is not None else max(1, partitions // 100)
    per_topic = np.full(n_topics, partitions // n_topics, dtype=np.int64)
    per_topic[: partitions - int(per_topic.sum())] += 1
    rack_names = [f"r{i}" for i in range(racks)] if racks > 0 else []
    broker_list = [
        Broker(i, rack_names[i % racks] if racks else None, True) for i in range(brokers)
    ]
    loads = _loads(rng, n_topics, per_topic, total_bytes_in, zipf_s, size_median, size_sigma)
    metas = [BrokerMetadata(b.id, b.rack) for b in broker_list]
    jrng = JavaRandom(seed)
    parts: list[PartitionReplicas] = []
    if skew > 0:
        weights = rng.lognormal(0.0, skew, size=brokers)
        by_rack = [
            [b for b in range(brokers) if racks == 0 or b % racks == r]
            for r in range(max(racks, 1))
        ]
    for t in range(n_topics):
        name = f"topic-{t:05d}"
        n = int(per_topic[t])
        if skew <= 0:
            assigned = assign_replicas_to_brokers(metas, n, rf, rng=jrng)
            rows = [assigned[i] for i in range(n)]
        elif racks >= rf:
            # one replica per rack (rack aware), the broker inside each rack drawn by weight
            rack_order = np.argsort(rng.random((n, len(by_rack))), axis=1)[:, :rf]
            mat = np.empty((n, rf), dtype=np.int64)
            for r, pool in enumerate(by_rack):
                where = rack_order == r
                k = int(where.sum())
                if k:
                    w = weights[pool]
                    mat[where] = np.asarray(pool)[rng.choice(len(pool), size=k, p=w / w.sum())]
            rows = mat.tolist()
        else:
            rows = []
            for _ in range(n):
                chosen: list[int] = []
                for _j in range(rf):
                    pool = [b for b in range(brokers) if b not in chosen]
                    w = weights[pool]
                    chosen.append(int(pool[int(rng.choice(len(pool), p=w / w.sum()))]))
                rows.append(chosen)
        for i in range(n):
            reps = tuple(rows[i])
            parts.append(PartitionReplicas(name, i, reps, reps[0], reps, loads[t][i]))
    # capacities with headroom over an even share: disk 2.5x, network 3x (capacity goals stop at 80%)
    part_loads = [(p.load or PartitionLoad(), len(p.replicas)) for p in parts]  # every part has one
    total_disk = sum(load.size_bytes * rf for load, rf in part_loads)
    total_in = sum(load.bytes_in * rf for load, rf in part_loads)
    # network out as Cruise Control counts it (consumers' bytes out plus replication to the followers),
    # summed over every replica as if each led: the headroom PotentialNwOutGoal asks for
    total_out = sum((load.bytes_out + load.bytes_in * (rf - 1)) * rf for load, rf in part_loads)
    n = max(brokers, 1)
    broker_list = [
        replace(
            b,
            disk_bytes=2.5 * total_disk / n,
            nw_in_bytes=3 * total_in / n,
            nw_out_bytes=3 * total_out / n,
        )
        for b in broker_list
    ]
    return ClusterSnapshot(tuple(broker_list), tuple(parts))


def add_empty_broker(
    snapshot: ClusterSnapshot, rack: str | None = None
) -> tuple[ClusterSnapshot, int]:
    """A new broker with nothing on it; by default in the rack with the fewest brokers."""
    new_id = max(b.id for b in snapshot.brokers) + 1
    racks = [b.rack for b in snapshot.brokers if b.rack is not None]
    if rack is None and racks:
        counts = {r: racks.count(r) for r in sorted(set(racks))}
        rack = min(counts, key=lambda r: (counts[r], r))
    like = snapshot.brokers[0]
    nb = Broker(new_id, rack, True, like.disk_bytes, like.nw_in_bytes, like.nw_out_bytes, like.cpu)
    return ClusterSnapshot(snapshot.brokers + (nb,), snapshot.partitions), new_id


def rolling_restart(snapshot: ClusterSnapshot, order: list[int] | None = None) -> ClusterSnapshot:
    """Leaders after restarting every broker once without auto leader rebalance.

    While a broker is down the controller moves each partition it leads to the
    first other replica in assignment order that is alive and in the ISR; the
    broker rejoins the ISR when it comes back but does not get leadership back.
    The last broker restarted ends with no leadership at all.
    """
    order = order if order is not None else [b.id for b in snapshot.brokers if b.alive]
    alive = {b.id for b in snapshot.brokers if b.alive}
    leaders = [p.leader for p in snapshot.partitions]
    for down in order:
        for i, p in enumerate(snapshot.partitions):
            if leaders[i] == down:
                nxt = next((r for r in p.replicas if r != down and r in alive and r in p.isr), None)
                leaders[i] = nxt
    parts = tuple(replace(p, leader=leaders[i]) for i, p in enumerate(snapshot.partitions))
    return ClusterSnapshot(snapshot.brokers, parts)
