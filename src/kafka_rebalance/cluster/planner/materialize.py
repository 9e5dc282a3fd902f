"""From the planner's arrays back to Kafka's terms: reassignment entries and the resulting snapshot.

Each changed partition lists its planned leader first (a preferred election then makes it leader),
the other replicas in slot order, and demoted brokers last. `log_dirs` (per slot, or None) come from
the intra-broker pass; a replica whose directory the plan chooses gets it, the others "any".
"""

from __future__ import annotations

import numpy as np

from ...model import ClusterSnapshot, PartitionReplicas
from ..kafka_json import ANY_LOG_DIR, Reassignment
from .state import PlanState


def materialize(
    snapshot: ClusterSnapshot,
    state: PlanState,
    demoted: np.ndarray | None = None,
    dirs: dict[int, list[str | None]] | None = None,
    dirs_moved: set[int] | None = None,
):
    """(reassignments, snapshot after, leader changes, reorder-only count)."""
    ids = state.broker_ids.tolist()
    out: list[Reassignment] = []
    parts: list[PartitionReplicas] = []
    changes = 0
    reorder_only = 0
    rep, rep0, lslot = state.rep, state.rep0, state.lslot
    touched_mask = (rep != rep0).any(axis=1) | (lslot != 0) | (lslot != state.leader0)
    if demoted is not None and demoted.any():
        touched_mask |= demoted[np.maximum(rep, 0)].any(axis=1)
    touched = set(np.nonzero(touched_mask)[0].tolist())
    dirs_moved = dirs_moved or set()
    touched |= dirs_moved
    for i, p in enumerate(snapshot.partitions):
        pdirs = dirs.get(i) if dirs else None
        if i not in touched:
            new_leader = (
                p.leader if p.leader is not None or not state.can_lead(i, 0) else p.replicas[0]
            )
            if new_leader != p.leader:
                changes += 1
                parts.append(
                    PartitionReplicas(
                        p.topic, p.partition, p.replicas, new_leader, p.isr, p.load, p.log_dirs
                    )
                )
            else:
                parts.append(p)
            continue
        row = rep[i, : state.rf[i]].tolist()
        ls = int(lslot[i])
        order = [ls] + [j for j in range(len(row)) if j != ls]
        if demoted is not None and demoted.any():
            order = [j for j in order if not demoted[row[j]]] + [
                j for j in order if demoted[row[j]]
            ]
        reps = tuple(ids[row[j]] for j in order)
        lead = ids[row[ls]]
        new_dirs = None
        if pdirs is not None:
            new_dirs = tuple(pdirs[j] for j in order)
        if reps != p.replicas or i in dirs_moved:
            log_dirs = None
            if new_dirs is not None and any(d is not None for d in new_dirs):
                log_dirs = tuple(
                    d
                    if d is not None and (i in dirs_moved or reps[k] not in p.replicas)
                    else ANY_LOG_DIR
                    for k, d in enumerate(new_dirs)
                )
                if all(d == ANY_LOG_DIR for d in log_dirs):
                    log_dirs = None
            out.append(Reassignment(p.topic, p.partition, reps, log_dirs))
            if set(reps) == set(p.replicas) and i not in dirs_moved:
                reorder_only += 1
        if lead != p.leader:
            changes += 1
        kept = set(p.isr) & set(reps)
        isr = tuple(r for r in reps if r in kept or r not in p.replicas)
        parts.append(
            PartitionReplicas(p.topic, p.partition, reps, lead, isr, p.load, new_dirs or p.log_dirs)
        )
    return out, ClusterSnapshot(snapshot.brokers, tuple(parts)), changes, reorder_only
