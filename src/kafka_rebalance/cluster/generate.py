"""Emulation of `kafka-reassign-partitions.sh --generate`: Kafka's AdminUtils.assignReplicasToBrokers.

`--generate` throws the current placement away and, per topic, lays the
partitions out again round-robin from a random start index and a random
replica shift. Kafka draws both from an unseeded java.util.Random; here they
come from a java.util.Random built from a seed, so the output is reproducible
and, for a given seed and topic order, identical to what Java would draw.
Topics are taken in name order (Kafka iterates a HashMap).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import InputError
from ..model import ClusterSnapshot

_MULT = 0x5DEECE66D
_MASK = (1 << 48) - 1


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


class JavaRandom:
    """java.util.Random: the 48-bit LCG and nextInt(bound), bit for bit."""

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ _MULT) & _MASK

    def _next(self, bits: int) -> int:
        self._seed = (self._seed * _MULT + 0xB) & _MASK
        return _int32(self._seed >> (48 - bits))

    def next_int(self, bound: int) -> int:
        if bound <= 0:
            raise ValueError("bound must be positive")
        r = self._next(31)
        m = bound - 1
        if bound & m == 0:
            return _int32((bound * r) >> 31)
        u = r
        r = u % bound
        while _int32(u - r + m) < 0:
            u = self._next(31)
            r = u % bound
        return r


@dataclass(frozen=True, slots=True)
class BrokerMetadata:
    id: int
    rack: str | None = None


def replica_index(
    first_replica_index: int, second_replica_shift: int, replica_index_: int, n_brokers: int
) -> int:
    shift = 1 + (second_replica_shift + replica_index_) % (n_brokers - 1)
    return (first_replica_index + shift) % n_brokers


def rack_alternated_broker_list(broker_rack: Mapping[int, str]) -> list[int]:
    """getRackAlternatedBrokerList: racks in name order, each rack's brokers in id order, interleaved."""
    by_rack: dict[str, list[int]] = {}
    for b, r in broker_rack.items():
        by_rack.setdefault(r, []).append(b)
    racks = sorted(by_rack)
    iters = {r: iter(sorted(by_rack[r])) for r in racks}
    left = {r: len(by_rack[r]) for r in racks}
    out: list[int] = []
    i = 0
    while len(out) < len(broker_rack):
        r = racks[i]
        if left[r]:
            out.append(next(iters[r]))
            left[r] -= 1
        i = (i + 1) % len(racks)
    return out


def assign_replicas_to_brokers(
    brokers: Sequence[BrokerMetadata],
    n_partitions: int,
    replication_factor: int,
    fixed_start_index: int = -1,
    start_partition_id: int = -1,
    rng: JavaRandom | None = None,
) -> dict[int, list[int]]:
    """AdminUtils.assignReplicasToBrokers; rack aware as soon as any broker has a rack."""
    if n_partitions <= 0:
        raise InputError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InputError("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise InputError(
            f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}."
        )
    rng = rng or JavaRandom(0)
    if all(b.rack is None for b in brokers):
        return _rack_unaware(
            n_partitions,
            replication_factor,
            [b.id for b in brokers],
            fixed_start_index,
            start_partition_id,
            rng,
        )
    if any(b.rack is None for b in brokers):
        raise InputError("Not all brokers have rack information for replica rack aware assignment.")
    return _rack_aware(
        n_partitions,
        replication_factor,
        {b.id: b.rack for b in brokers if b.rack is not None},  # all have one (checked above)
        fixed_start_index,
        start_partition_id,
        rng,
    )


def _round_robin(
    n_partitions: int, n: int, fixed_start_index: int, start_partition_id: int, rng: JavaRandom
) -> list[tuple[int, int, int]]:
    """(partition id, index of its first replica, replica shift) per partition, as both of Kafka's
    layouts walk them; the start index and then the shift are drawn first, in Kafka's order."""
    start_index = fixed_start_index if fixed_start_index >= 0 else rng.next_int(n)
    current = max(0, start_partition_id)
    shift = fixed_start_index if fixed_start_index >= 0 else rng.next_int(n)
    out = []
    for _ in range(n_partitions):
        if current > 0 and current % n == 0:
            shift += 1
        out.append((current, (current + start_index) % n, shift))
        current += 1
    return out


def _rack_unaware(
    n_partitions: int,
    rf: int,
    broker_list: list[int],
    fixed_start_index: int,
    start_partition_id: int,
    rng: JavaRandom,
) -> dict[int, list[int]]:
    n = len(broker_list)
    out: dict[int, list[int]] = {}
    for current, first, shift in _round_robin(
        n_partitions, n, fixed_start_index, start_partition_id, rng
    ):
        reps = [broker_list[first]]
        for j in range(rf - 1):
            reps.append(broker_list[replica_index(first, shift, j, n)])
        out[current] = reps
    return out


def _rack_aware(
    n_partitions: int,
    rf: int,
    broker_rack: Mapping[int, str],
    fixed_start_index: int,
    start_partition_id: int,
    rng: JavaRandom,
) -> dict[int, list[int]]:
    num_racks = len(set(broker_rack.values()))
    arranged = rack_alternated_broker_list(broker_rack)
    n = len(arranged)
    out: dict[int, list[int]] = {}
    for current, first, shift in _round_robin(
        n_partitions, n, fixed_start_index, start_partition_id, rng
    ):
        leader = arranged[first]
        reps = [leader]
        racks_with = {broker_rack[leader]}
        brokers_with = {leader}
        k = 0
        for _j in range(rf - 1):
            while True:
                b = arranged[replica_index(first, shift * num_racks, k, n)]
                rack = broker_rack[b]
                k += 1
                if (rack not in racks_with or len(racks_with) == num_racks) and (
                    b not in brokers_with or len(brokers_with) == n
                ):
                    reps.append(b)
                    racks_with.add(rack)
                    brokers_with.add(b)
                    break
        out[current] = reps
    return out


def generate_reassignment(
    snapshot: ClusterSnapshot,
    broker_ids: Sequence[int] | None = None,
    topics: Sequence[str] | None = None,
    seed: int = 0,
) -> dict[tuple[str, int], list[int]]:
    """ReassignPartitionsCommand.calculateAssignment over the snapshot: (topic, partition) -> replicas.

    `broker_ids` is `--broker-list` (default: alive brokers, in id order); each
    topic keeps the replication factor of its first partition, as Kafka does.
    """
    info = {b.id: b for b in snapshot.brokers}
    ids = (
        list(broker_ids)
        if broker_ids is not None
        else sorted(b.id for b in snapshot.brokers if b.alive)
    )
    for b in ids:
        if b not in info:
            raise InputError(f"broker {b} is not in the cluster", field="brokers")
    metas = [BrokerMetadata(b, info[b].rack) for b in ids]
    by_topic: dict[str, list] = {}
    for p in snapshot.partitions:
        by_topic.setdefault(p.topic, []).append(p)
    wanted = sorted(by_topic) if topics is None else list(topics)
    rng = JavaRandom(seed)
    out: dict[tuple[str, int], list[int]] = {}
    for t in wanted:
        parts = by_topic.get(t)
        if parts is None:
            raise InputError(f"topic {t!r} not found", field="topics")
        rf = len(min(parts, key=lambda p: p.partition).replicas)
        assigned = assign_replicas_to_brokers(metas, len(parts), rf, rng=rng)
        for num, reps in assigned.items():
            out[(t, num)] = reps
    return out
