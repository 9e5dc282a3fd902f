"""The planner's working state: numpy arrays indexed by partition and broker, updated per move.

A cluster of 100,000 partitions at RF 3 is 300,000 replica slots; every goal
reads per-broker load vectors that are kept current incrementally (a move
touches two brokers), never recomputed from the partitions.

`rep[p, s]` is the broker index holding slot s of partition p (-1 pads short
replica lists); slot order is the original replica order. `lslot[p]` is the
slot that will lead once the plan is applied (its broker becomes replicas[0]).

Every resource is carried the way Cruise Control's load model carries it: each
replica carries `follower[r][p]`, the leader carries `follower[r][p] +
extra[r][p]`. Network out is the leader's consumer bytes out plus replication
to its RF - 1 followers; CPU is the leader's CPU and, on followers, Cruise
Control's follower share of it (see `cpu_model`); potential network out is the
network out each replica would carry if it led.
"""

from __future__ import annotations

import numpy as np

from ...model import ClusterSnapshot
from .cpu_model import partition_cpu
from .options import PlanOptions

LEADER_RESOURCES = ("leaders", "bytes_out", "messages_in")
REPLICA_RESOURCES = ("replicas", "size_bytes", "bytes_in")
RESOURCES = ("replicas", "leaders", "size_bytes", "bytes_in", "bytes_out", "messages_in")
# resources whose loads are floats kept per broker
LOADS = (
    "size_bytes",
    "bytes_in",
    "bytes_out",
    "messages_in",
    "nw_out",
    "cpu",
    "potential_nw_out",
    "leader_bytes_in",
)


class PlanState:
    """Mutable arrays; every change goes through move_replica / set_leader so loads stay exact."""

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        remove: tuple[int, ...] = (),
        new: tuple[int, ...] = (),
        options: PlanOptions | None = None,
    ) -> None:
        opts = options or PlanOptions()
        self.options = opts
        ids = [b.id for b in snapshot.brokers]
        known = set(ids)
        extra_ids = sorted({r for p in snapshot.partitions for r in p.replicas if r not in known})
        racks_by_id = {b.id: b.rack for b in snapshot.brokers}
        self.broker_ids = np.array(ids + extra_ids, dtype=np.int64)
        self.index = {int(b): i for i, b in enumerate(self.broker_ids)}
        B = len(self.broker_ids)
        self.B = B
        rack_names = sorted({r for r in racks_by_id.values() if r is not None})
        self.rack_names = rack_names
        rix = {r: i for i, r in enumerate(rack_names)}
        self.rack = np.array(
            [
                -1 if (rack := racks_by_id.get(b)) is None else rix[rack]
                for b in self.broker_ids.tolist()
            ],
            dtype=np.int32,
        )
        alive_by_id = {b.id: b.alive for b in snapshot.brokers}
        self.alive = np.array(
            [alive_by_id.get(b, False) for b in self.broker_ids.tolist()], dtype=bool
        )
        self.removed = np.zeros(B, dtype=bool)
        for b in remove:
            self.removed[self.index[b]] = True
        self.new = np.zeros(B, dtype=bool)
        for b in new:
            self.new[self.index[b]] = True
        # brokers that may hold replicas once the plan is applied
        self.eligible = self.alive & ~self.removed
        # brokers that may receive a replica (Cruise Control's excluded_brokers_for_replica_move)
        self.receives = self.eligible.copy()
        # brokers that may receive leadership (excluded_brokers_for_leadership, demoted brokers)
        self.leads = self.eligible.copy()
        for b in opts.exclude_brokers_for_replica_move:
            if b in self.index:
                self.receives[self.index[b]] = False
        for b in tuple(opts.exclude_brokers_for_leadership) + tuple(opts.demote_brokers):
            if b in self.index:
                self.leads[self.index[b]] = False
        # racks a replica can still be placed in; a partition must keep spanning min(RF, this many)
        self.eligible_racks = len(set(self.rack[self.eligible & (self.rack >= 0)].tolist()))
        by_id = {b.id: b for b in snapshot.brokers}

        def cap(attr: str) -> np.ndarray:
            return np.array(
                [getattr(by_id[b], attr, None) if b in by_id else None for b in ids + extra_ids],
                dtype=object,
            )

        self.capacity: dict[str, np.ndarray] = {}
        for res, attr in (
            ("size_bytes", "disk_bytes"),
            ("bytes_in", "nw_in_bytes"),
            ("nw_out", "nw_out_bytes"),
            ("cpu", "cpu"),
        ):
            c = cap(attr)
            self.capacity[res] = np.array([np.inf if v is None else v for v in c], dtype=float)
        self.capacity["potential_nw_out"] = self.capacity["nw_out"]
        self.disk_cap = self.capacity["size_bytes"]
        self.nw_in_cap = self.capacity["bytes_in"]

        parts = snapshot.partitions
        P = len(parts)
        self.P = P
        R = max((len(p.replicas) for p in parts), default=1)
        self.R = R
        topics = sorted({p.topic for p in parts})
        self.topic_names = topics
        tix = {t: i for i, t in enumerate(topics)}
        self.topic = np.array([tix[p.topic] for p in parts], dtype=np.int32)
        self.partition_num = np.array([p.partition for p in parts], dtype=np.int64)
        self.rf = np.array([len(p.replicas) for p in parts], dtype=np.int32)
        excluded_topic = np.array([opts.topic_excluded(t) for t in topics], dtype=bool)
        # partitions of excluded topics: no replica moves and no leadership change
        self.frozen = excluded_topic[self.topic] if P else np.zeros(0, dtype=bool)
        rep = np.full((P, R), -1, dtype=np.int32)
        isr = np.zeros((P, R), dtype=bool)
        leader = np.full(P, -1, dtype=np.int32)
        idx = self.index
        for i, p in enumerate(parts):
            reps = p.replicas
            isr_set = set(p.isr)
            for s, b in enumerate(reps):
                rep[i, s] = idx[b]
                isr[i, s] = b in isr_set
                if b == p.leader:
                    leader[i] = s
        self.rep0 = rep.copy()
        self.rep = rep
        # slot may lead after the plan: in the ISR on a broker that stays, or a new replica (caught up by then)
        self.isr0 = isr & self.eligible[np.maximum(rep, 0)] & (rep >= 0)
        self.leader0 = leader  # slot of the actual leader, -1 when leaderless
        lslot = leader.copy()
        # a leaderless partition, or one led from a broker that goes away, is planned on its first eligible slot
        for q in np.nonzero(
            (lslot < 0) | ~self.eligible[np.maximum(rep[np.arange(P), np.maximum(lslot, 0)], 0)]
        )[0]:
            ok = np.nonzero(self.isr0[q])[0]
            lslot[q] = ok[0] if len(ok) else 0
        self.lslot = lslot.astype(np.int32)
        load = [p.load for p in parts]
        self.bytes_in = np.array([x.bytes_in if x else 0.0 for x in load], dtype=np.float64)
        self.bytes_out = np.array([x.bytes_out if x else 0.0 for x in load], dtype=np.float64)
        self.messages_in = np.array([x.messages_in if x else 0.0 for x in load], dtype=np.float64)
        self.size_bytes = np.array([x.size_bytes if x else 0.0 for x in load], dtype=np.float64)
        sampled = np.array([x.cpu if x else 0.0 for x in load], dtype=np.float64)
        cpu_lead, cpu_follow, self.cpu_source = partition_cpu(
            self.bytes_in, self.bytes_out, sampled, opts.cpu_weights
        )
        nw_out = self.bytes_out + self.bytes_in * np.maximum(self.rf - 1, 0)
        zero = np.zeros(P)
        self.follower = {
            "size_bytes": self.size_bytes,
            "bytes_in": self.bytes_in,
            "bytes_out": zero,
            "messages_in": zero,
            "nw_out": zero,
            "cpu": cpu_follow,
            "potential_nw_out": nw_out,
            "leader_bytes_in": zero,
        }
        self.extra = {
            "size_bytes": zero,
            "bytes_in": zero,
            "bytes_out": self.bytes_out,
            "messages_in": self.messages_in,
            "nw_out": nw_out,
            "cpu": cpu_lead - cpu_follow,
            "potential_nw_out": zero,
            "leader_bytes_in": self.bytes_in,
        }
        # only resources some partition carries are updated per move
        self._fol = [r for r in LOADS if self.follower[r].any()]
        self._ext = [r for r in LOADS if self.extra[r].any()]
        self._recompute_loads()
        self._build_index()
        self.before = self._actual_ratios()

    def _actual_ratios(self) -> dict[str, float]:
        """max/mean over alive brokers as the cluster is now (actual leaders, not planned ones)."""
        has = self.leader0 >= 0
        lb = np.where(has, self.rep[np.arange(self.P), np.maximum(self.leader0, 0)], -1)
        lead = np.bincount(lb[has], minlength=self.B)
        bout = np.bincount(lb[has], weights=self.bytes_out[has], minlength=self.B)
        msg = np.bincount(lb[has], weights=self.messages_in[has], minlength=self.B)
        alive = np.nonzero(self.alive)[0]
        vals = {
            "replicas": self.cnt,
            "leaders": lead,
            "size_bytes": self.disk,
            "bytes_in": self.bin,
            "bytes_out": bout,
            "messages_in": msg,
        }
        out = {}
        for r in RESOURCES:
            v = vals[r][alive].astype(np.float64)
            m = v.mean() if len(v) else 0.0
            out[r] = float(v.max() / m) if m > 0 else 1.0
        return out

    # -- loads ---------------------------------------------------------------

    def _recompute_loads(self) -> None:
        B = self.B
        valid = self.rep >= 0
        flat = self.rep[valid]
        rows = np.nonzero(valid)[0]
        self.cnt = np.bincount(flat, minlength=B).astype(np.int64)
        lb = self.leader_broker()
        has = lb >= 0
        self.lead = np.bincount(lb[has], minlength=B).astype(np.int64)
        self.loads: dict[str, np.ndarray] = {}
        for r in LOADS:
            v = np.bincount(flat, weights=self.follower[r][rows], minlength=B)
            v += np.bincount(lb[has], weights=self.extra[r][has], minlength=B)
            self.loads[r] = v
        self.disk = self.loads["size_bytes"]
        self.bin = self.loads["bytes_in"]
        self.bout = self.loads["bytes_out"]
        self.msg = self.loads["messages_in"]
        T = len(self.topic_names)
        self.tcnt = np.zeros((T, B), dtype=np.int32)
        np.add.at(self.tcnt, (self.topic[rows], flat), 1)

    def leader_broker(self) -> np.ndarray:
        """Broker index of each partition's planned leader (-1 when it has none)."""
        return self.rep[np.arange(self.P), self.lslot]

    def load(self, resource: str) -> np.ndarray:
        if resource == "replicas":
            return self.cnt
        if resource == "leaders":
            return self.lead
        return self.loads[resource]

    def partition_value(self, resource: str) -> np.ndarray:
        """What a follower replica of each partition carries (the leader carries `leader_value`)."""
        return self.follower[resource]

    def leader_value(self, resource: str) -> np.ndarray:
        return self.follower[resource] + self.extra[resource]

    def slot_value(self, resource: str, slots: np.ndarray) -> np.ndarray:
        """What each flat slot (p*R + s) carries now: the leader's share when it leads."""
        p = slots // self.R
        v = self.follower[resource][p]
        ext = self.extra[resource]
        if ext.any():
            v = v + np.where(self.lslot[p] == slots % self.R, ext[p], 0.0)
        return v

    # -- per-broker replica index (flat slot ids p*R+s), kept current by move_replica ----

    def _build_index(self) -> None:
        flat = self.rep.ravel()
        order = np.argsort(flat, kind="stable")
        sorted_b = flat[order]
        self._on: list[np.ndarray] = []
        starts = np.searchsorted(sorted_b, np.arange(self.B))
        ends = np.searchsorted(sorted_b, np.arange(self.B), side="right")
        for b in range(self.B):
            self._on.append(order[starts[b] : ends[b]].astype(np.int64))

    def slots_on(self, b: int) -> np.ndarray:
        """Flat slot ids (p*R + s) of the replicas broker b holds now."""
        return self._on[b]

    # -- checks ----------------------------------------------------------------

    def brokers_of(self, p: int) -> np.ndarray:
        r = self.rep[p]
        return r[r >= 0]

    def racks_needed(self, p: int) -> int:
        """The spread rack awareness asks of p: one rack per replica, as far as the usable racks allow."""
        return min(int(self.rf[p]), self.eligible_racks)

    def rack_ok(self, p: int, s: int, dst: int) -> bool:
        """Moving slot s of p to dst never lowers p's rack count below min(its count now, racks needed).

        As Kafka's rack-aware placement: a partition spread over min(RF, racks) racks stays so, one that
        never was is not made worse, and when racks go away (a whole rack decommissioned) a partition may
        lose only the spread that is no longer available.
        """
        rd = self.rack[dst]
        rs = self.rack[self.rep[p, s]]
        if rd == rs:
            return True
        row = self.rack[self.rep[p, : self.rf[p]]].tolist()
        others = row[:s] + row[s + 1 :]
        if rs < 0 or rs in others or (rd >= 0 and rd not in others):
            return True  # the source's rack stays spanned, or the destination brings a new one
        return len({r for r in row if r >= 0}) > self.racks_needed(p)

    def rack_ok_many(self, p: int, s: int, dsts: np.ndarray) -> np.ndarray:
        """rack_ok for many destination brokers at once (the same rule, vectorized)."""
        row = self.rack[self.rep[p, : self.rf[p]]]
        rs = row[s]
        others = np.delete(row, s)
        rd = self.rack[dsts]
        gain = (rd >= 0) & ~np.isin(rd, others)
        lose = rs >= 0 and not (others == rs).any()
        if not lose:
            return np.ones(len(dsts), dtype=bool)
        now = len(set(row[row >= 0].tolist()))
        return gain | (rd == rs) | (now > self.racks_needed(p))

    def structurally_ok(self, p: int, s: int, dst: int) -> bool:
        """A move Kafka can make and the operator allows: to a receiving broker not holding p, rack spread
        kept, and never a replica of an excluded topic (unless it leaves a dead or removed broker)."""
        if not self.receives[dst]:
            return False
        if self.frozen[p] and self.eligible[self.rep[p, s]]:
            return False
        row = self.rep[p]
        if (row == dst).any():
            return False
        if self.lslot[p] == s and not self.leads[dst]:
            return False  # the leader's replica would carry leadership to an excluded broker
        return self.rack_ok(p, s, dst)

    # -- mutations ---------------------------------------------------------------

    def move_replica(self, p: int, s: int, dst: int) -> None:
        src = int(self.rep[p, s])
        self.cnt[src] -= 1
        self.cnt[dst] += 1
        loads = self.loads
        for r in self._fol:
            v = self.follower[r][p]
            loads[r][src] -= v
            loads[r][dst] += v
        t = self.topic[p]
        self.tcnt[t, src] -= 1
        self.tcnt[t, dst] += 1
        if self.lslot[p] == s:
            self._shift_leadership(p, src, dst)
        self.rep[p, s] = dst
        fid = p * self.R + s
        on = self._on[src]
        self._on[src] = on[on != fid]
        self._on[dst] = np.append(self._on[dst], fid)

    def set_leader(self, p: int, s: int) -> None:
        old = int(self.rep[p, self.lslot[p]])
        new = int(self.rep[p, s])
        if old != new:
            self._shift_leadership(p, old, new)
        self.lslot[p] = s

    def set_leaders(self, lslot: np.ndarray) -> None:
        """Every partition's planned leader slot at once (loads recomputed: O(partitions))."""
        self.lslot = lslot.astype(np.int32, copy=True)
        self._recompute_loads()

    def _shift_leadership(self, p: int, old: int, new: int) -> None:
        """p's leader load (count, bytes out, network out, CPU share...) goes from broker old to new."""
        self.lead[old] -= 1
        self.lead[new] += 1
        loads = self.loads
        for r in self._ext:
            v = self.extra[r][p]
            loads[r][old] -= v
            loads[r][new] += v

    def replicas_to_shed(self, resource: str, limit: np.ndarray | float) -> int:
        """Lower bound on moves to bring every usable broker's load under `limit` (scalar or per broker):
        per broker over it, the fewest of its largest replicas whose values cover the excess."""
        lim = np.broadcast_to(np.asarray(limit, dtype=np.float64), (self.B,))
        load = self.load(resource)
        total = 0
        for b in np.nonzero(self.eligible & (load > lim))[0].tolist():
            v = np.sort(self.slot_value(resource, self.slots_on(b)))[::-1]
            total += int(np.searchsorted(np.cumsum(v), load[b] - lim[b]) + 1)
        return total

    def can_lead(self, p: int, s: int) -> bool:
        """After the plan a slot may lead if it is a new replica or was in the ISR on a staying broker,
        on a broker allowed to lead; an excluded topic keeps its leader."""
        b = self.rep[p, s]
        if b < 0 or not self.eligible[b]:
            return False
        if self.frozen[p] and s != self.lslot[p]:
            return False
        if not self.leads[b] and s != self.lslot[p]:
            return False
        return bool(b != self.rep0[p, s] or self.isr0[p, s])

    # -- snapshots for rollback ----------------------------------------------------

    def save(self) -> tuple[np.ndarray, np.ndarray]:
        return self.rep.copy(), self.lslot.copy()

    def restore(self, saved: tuple[np.ndarray, np.ndarray]) -> None:
        """Back to a saved placement (a goal's work undone); loads and indexes rebuilt."""
        self.rep = saved[0].copy()
        self.lslot = saved[1].copy()
        self._recompute_loads()
        self._build_index()

    # -- summaries ---------------------------------------------------------------

    def moved_replicas(self) -> tuple[int, float]:
        """Replicas that land on a broker that did not hold the partition, and their bytes."""
        moves = 0
        nbytes = 0.0
        changed = np.nonzero((self.rep != self.rep0).any(axis=1))[0]
        for p in changed.tolist():
            before = set(self.rep0[p][self.rep0[p] >= 0].tolist())
            added = sum(1 for b in self.rep[p][self.rep[p] >= 0].tolist() if b not in before)
            moves += added
            nbytes += added * float(self.size_bytes[p])
        return moves, nbytes

    def ratios(self, brokers: np.ndarray) -> dict[str, float]:
        out = {}
        for r in RESOURCES:
            v = self.load(r)[brokers].astype(np.float64)
            m = v.mean() if len(v) else 0.0
            out[r] = float(v.max() / m) if m > 0 else 1.0
        return out
