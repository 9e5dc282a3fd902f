# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=False
"""The native classic world (docs/sim-native.md, M2): `world_core.WorldCore` and `world.Simulation`
as one Cython class, for the scenarios `classic_native.native_support` claims (eager
`range`/`roundrobin`; since M3 `sticky` and `cooperative-sticky`; dynamic members, no faults).

The reference is `sim/world_core.py` and `sim/world.py`: every method here is theirs, in the same
order, with the same `loop.at`/`after` calls (so the engine's sequence numbers and
`simulated_events` are the reference's), the same draws of the world's rng and the same event-log
rows. The books (availability, moves, revocations, paused time, duplicates, processed, lag max) are
`native_books.Books` by member index, the connections' last arrivals `native_books.Network` (the
world's `rng.random` drawn at the reference's points); the partition table's numbers are
`native_members.PartitionColumns` (log ends, committed offsets: range-checked for the whole run at
construction) and `ProcessedTable` (the processed intervals), the reference's `PartitionTable` kept
only for the partitions' names and TopicPartitions. Members and the coordinator call the world through `WorldBase`'s methods
(`native_world_base.pxd`). What the claim excludes (crashes, pauses, partition growth, failover)
raises rather than guesses.
"""

from cpython.mem cimport PyMem_Free, PyMem_Realloc
from libc.stdint cimport INT32_MAX, int64_t

import json
import random
from array import array

from ..assign.registry import get_assignor
from ..assign.userdata import decode_sticky_user_data as _decode_sticky
from ..group.consumer_client import RebalanceProtocol
from ..group.coordinator_location import partition_for
from ..model import DEFAULT_GENERATION, GroupSpec, TopicMetadata, TopicPartition
from .partitions import PartitionTable

from .native_books cimport Books, Network
from .native_coordinator cimport NativeCoordinator
from .native_engine cimport EventLoop
from .native_member_messages cimport member_subscription_c
from .native_members cimport PartitionColumns, ProcessedTable
from .native_world_base cimport WorldBase
from .native_world_client cimport NativeClient, assignment_indices

cdef object _COOPERATIVE = RebalanceProtocol.COOPERATIVE
cdef object _NO_CLAIM = array("i", [-1])  # times the partition count: no partition claimed

# the world's engine events (native_engine.EventLoop.at_c: fire(kind, a, payload)), one per `at` of
# the reference: a request reaching the coordinator (a: the member's index, payload: the request), a
# response reaching a member (a: index << 32 | incarnation, payload: the response), a batch of them
cdef tuple _KINDS = ("join", "sync", "heartbeat", "leave", "commit")
cdef enum:
    EV_RECEIVE = 16  # + the kind's place in _KINDS
    EV_DELIVER = 32  # + the kind's place in _KINDS
    EV_DELIVER_MANY = 48


cdef inline int _kind_code(str kind):
    """kind's place in _KINDS (-1: another kind, sent through the Python-level path)."""
    if kind == "heartbeat":
        return 2
    if kind == "commit":
        return 4
    if kind == "join":
        return 0
    if kind == "sync":
        return 1
    if kind == "leave":
        return 3
    return -1


cdef class NativeWorld(WorldBase):
    """The classic world: partitions, members, the coordinator, the network and the books."""

    cdef object _sink, _member_type, _json_dumps
    cdef readonly Books books
    cdef readonly Network net
    cdef dict _index, _client_names, _client_keys, _assignors
    cdef list _names, _by_index  # by member index: names, members (NativeClient)
    cdef NativeCoordinator _nc  # `coord` when native (its calls are C calls), else None
    cdef int64_t* _buf
    cdef Py_ssize_t _buf_cap

    def __init__(self, sc, sink, member_type, coordinator_type):
        self.sc = sc
        self.loop = EventLoop()
        self.parts = PartitionTable()
        self._sink = sink
        self.wants_events = sink is not None
        self.events_emitted = 0
        self.topic_names = tuple(t.name for t in sc.topics)
        for t in sc.topics:
            self.parts.add_topic(t.name, t.partitions, t.produce_rate, 0)
        parts = self.parts
        # the numbers in C; `parts` keeps the names (its numeric columns are not updated)
        self.cols = PartitionColumns.from_table(parts, sc.duration_ms)
        self.processed_table = ProcessedTable(len(parts))
        self.p_tps = parts.tps
        self.members = {}
        self._index = {}
        self._names = []
        self._by_index = []
        self._client_names = {}
        self._client_keys = {}
        self._assignors = {}
        self.coord = None
        self.generation = 0
        self.pending_cause = "initial join"
        self.books = Books(len(parts))
        self.rng = random.Random(sc.seed)
        self.rand = self.rng.random
        self.net = Network(
            self.rand, sc.network_latency_ms, sc.network_jitter_ms, sc.network_latency_samples_ms
        )
        self._json_dumps = json.dumps
        self._member_type = member_type
        for m in sc.members:
            self._add_member(m.name, m.rack)
        self.coord = coordinator_type(self)
        self._nc = self.coord if isinstance(self.coord, NativeCoordinator) else None

    def __dealloc__(self):
        PyMem_Free(self._buf)

    cdef object _add_member(self, name, rack):
        cdef Py_ssize_t i = len(self._names)
        m = self._member_type(self, name, rack)
        if not isinstance(m, NativeClient):
            raise TypeError(f"a native world's members are NativeClients, not {type(m).__name__}")
        self.members[name] = m
        self._by_index.append(m)
        self._index[name] = i
        self._names.append(name)
        self.books.ensure_member(i)
        self.net.ensure_member(i)
        return m

    cdef const int64_t* _indices(self, object ps, Py_ssize_t* n) except NULL:
        """ps (partition indices) in the world's scratch buffer."""
        cdef Py_ssize_t i = 0, k = len(ps)
        cdef int64_t* grown
        if k + 1 > self._buf_cap:
            grown = <int64_t*>PyMem_Realloc(self._buf, (k + 1) * sizeof(int64_t))
            if grown == NULL:
                raise MemoryError()
            self._buf = grown
            self._buf_cap = k + 1
        for p in ps:
            self._buf[i] = p
            i += 1
        n[0] = k
        return self._buf

    # ---------------------------------------------------------------- output

    cdef int64_t now_c(self) except? -1:
        return self.loop.now

    cpdef emit(self, str kind, object member="", object generation=None, object partitions=None,
               object detail=None):
        """One event-log row. `partitions` may hold partition indices (named here, only when logging)."""
        self.events_emitted += 1
        if self._sink is None:
            return
        if partitions and type(partitions[0]) is int:
            names = self.parts.names
            partitions = [names[p] for p in partitions]
        self._sink(
            {
                "ts_ms": self.loop.now,
                "group": self.sc.group.id,
                "member": member,
                "kind": kind,
                "generation": self.generation if generation is None else generation,
                "partitions": partitions or [],
                "detail": self._json_dumps(detail or {}, sort_keys=True, separators=(",", ":")),
            }
        )

    # ------------------------------------------------------------- network

    cdef int64_t _arrival_up(self, object name, int64_t incarnation) except? -1:
        return self.net.arrival_c(self._index[name], incarnation, True, self.loop.now)

    cdef tuple _client_key(self, str client):
        """(member index, incarnation) of a client string `name#incarnation`."""
        key = self._client_keys.get(client)
        if key is None:
            name, _, inc = client.rpartition("#")
            key = self._client_keys[client] = (self._index[name], int(inc))
        return key

    cdef int64_t _arrival_down(self, str client) except? -1:
        key = self._client_key(client)
        return self.net.arrival_c(key[0], key[1], False, self.loop.now_c())

    cpdef object draw(self, tuple samples):
        """One value of a measured distribution, drawn with the seed."""
        return samples[int(self.rand() * len(samples))]

    cpdef send(self, object member, str kind, object req):
        cdef int code = _kind_code(kind)
        cdef Py_ssize_t i = self._index[member.name]
        cdef int64_t t = self.net.arrival_c(i, member.incarnation, True, self.loop.now_c())
        if code < 0:
            self.loop.at(t, self.coord.receive, kind, req, member.name)
        else:
            self.loop.at_c(t, self, EV_RECEIVE + code, i, req)

    cpdef to_coordinator(self, str kind, object req, object name):
        """A request reaching the coordinator now (`coord.receive`: a C call when native)."""
        if self._nc is not None:
            self._nc.receive(kind, req, name)
        else:
            self.coord.receive(kind, req, name)

    cpdef reply(self, str client, str kind, object resp):
        cdef tuple key = self._client_key(client)
        cdef int64_t i = key[0], inc = key[1]
        cdef int64_t t = self.net.arrival_c(i, inc, False, self.loop.now_c())
        cdef int code = _kind_code(kind)
        if code < 0 or not 0 <= inc <= INT32_MAX:  # packed below the index
            self.loop.at(t, self._deliver, client, kind, resp)
        else:
            self.loop.at_c(t, self, EV_DELIVER + code, (i << 32) | inc, resp)

    cdef int fire(self, int kind, int64_t a, object payload) except -1:
        """The world's engine events (see EV_RECEIVE)."""
        cdef NativeClient m
        cdef str k
        if kind >= EV_DELIVER_MANY:
            for r in <list>payload:
                self._deliver_c(r[0], r[1], r[2])
        elif kind >= EV_DELIVER:
            m = <NativeClient>self._by_index[a >> 32]
            if m.alive and m.incarnation == (a & 0xFFFFFFFF):
                self._deliver_to(m, <str>_KINDS[kind - EV_DELIVER], payload)
        elif kind >= EV_RECEIVE:
            self.to_coordinator(<str>_KINDS[kind - EV_RECEIVE], payload, self._names[a])
        else:
            raise ValueError(f"no world event kind {kind}")
        return 0

    cpdef reply_many(self, list replies):
        """Responses sent at once: one network event per distinct arrival time."""
        cdef dict by_t = {}
        for r in replies:
            t = self._arrival_down(r[0])
            lst = by_t.get(t)
            if lst is None:
                by_t[t] = [r]
            else:
                lst.append(r)
        for t in sorted(by_t):
            self.loop.at_c(t, self, EV_DELIVER_MANY, 0, by_t[t])

    def _deliver_many(self, list replies):
        for r in replies:
            self._deliver_c(r[0], r[1], r[2])

    def _deliver(self, str client, str kind, resp):
        self._deliver_c(client, kind, resp)

    cdef int _deliver_c(self, str client, str kind, resp) except -1:
        name = self._client_names.get(client)
        if name is None:
            name = self._client_names[client] = client.rpartition("#")[0]
        m = self.members.get(name)
        if m is None or not m.alive or m.client != client:
            return 0
        return self._deliver_to(<NativeClient>m, kind, resp)

    cdef int _deliver_to(self, NativeClient m, str kind, resp) except -1:
        """A response reaching its (alive, same incarnation) member."""
        if kind == "heartbeat":
            m.on_heartbeat_response(resp[0].error, resp[1])
        elif kind == "commit":
            m.on_commit_response(resp[0], resp[1], resp[2])  # (error, sent, answered)
        else:
            m.on_response(resp)
        return 0

    cpdef object coordinator_retry_time(self, int64_t now, int64_t backoff):
        up = self.coord.up_at
        if up <= now:
            return now + backoff
        steps = -(-(up - now) // backoff)
        return now + steps * backoff

    cpdef bint group_needs_heartbeats(self) except -1:
        return self.coord.needs_real_heartbeats()

    # ----------------------------------------------------------- accounting

    cpdef dict partition_counts(self):
        return {t: len(ps) for t, ps in self.parts.topic_partitions.items()}

    cpdef set_available_many(self, object ps, int64_t now, object name):
        """`name` processes partitions ps again from now (their unavailable time stops counting)."""
        cdef Py_ssize_t n
        cdef const int64_t* buf = self._indices(ps, &n)
        self.books.set_available_c(buf, n, now, self._index[name])

    cpdef set_unavailable_many(self, object ps, int64_t now):
        """Nobody processes partitions ps from now (revoked, lost, crashed or stuck owner)."""
        cdef Py_ssize_t n
        cdef const int64_t* buf = self._indices(ps, &n)
        self.books.set_unavailable_c(buf, n, now)

    cpdef add_paused(self, object m, int64_t ms):
        cdef Py_ssize_t i
        if ms > 0:
            i = self._index[m.name]
            self.books.add_paused_c(i, ms)
            if self.wants_events:
                self.emit(
                    "paused",
                    m.name,
                    m.generation,
                    detail={"ms": ms, "since_ms": self.loop.now - ms},
                )

    cpdef revoke(self, object m, object ps, str why):
        cdef Py_ssize_t n
        cdef const int64_t* buf = self._indices(ps, &n)
        self.books.revoke_c(buf, n, self.loop.now)
        if self.wants_events:
            self.emit("revoked", m.name, m.generation, ps, {"reason": why})

    cpdef lose(self, object m, object ps, str why):
        self.set_unavailable_many(ps, self.loop.now)
        self.emit("lost", m.name, m.generation, ps, {"reason": why})

    cpdef assigned(self, object m, object added, object owned):
        cdef Py_ssize_t n
        cdef const int64_t* buf = self._indices(added, &n)
        self.books.assigned_c(self._index[m.name], buf, n)
        if self.wants_events:
            self.emit("assigned", m.name, m.generation, list(added), {"owned": len(owned)})

    cpdef add_processed(self, int64_t done, int64_t dup):
        self.books.processed_c(done, dup)

    @property
    def duplicates(self):
        return self.books.duplicates

    @duplicates.setter
    def duplicates(self, value):
        self.books.processed_c(0, value - self.books.duplicates)

    @property
    def processed(self):
        return self.books.processed

    @processed.setter
    def processed(self, value):
        self.books.processed_c(value - self.books.processed, 0)

    @property
    def paused_by_member(self):
        """{name: paused ms} of the members that paused, in the order they first paused (the
        reference's `paused_by_member`; the books keep that order)."""
        return {self._names[i]: ms for i, ms in self.books.paused_by_member().items()}

    @property
    def member_paused_ms(self):
        return self.books.member_paused_ms

    cpdef commit(self, object m, object offsets, str why, bint answer=False):
        """An OffsetCommit on the member's connection; `answer`: the member waits for the response.
        `offsets`: the member's changed positions (`native_members.Triples`, owned order)."""
        self.loop.at(
            self._arrival_up(m.name, m.incarnation),
            self.coord.commit,
            m.name,
            m.client,
            m.member_id,
            m.instance_id,
            m.generation,
            offsets,
            why,
            answer,
            self.loop.now,
            self.events_emitted,
        )

    cpdef on_generation(self, int64_t generation):
        self.generation = generation
        self.books.pending_cause = self.pending_cause
        self.books.on_generation(generation, self.loop.now)

    # -------------------------------------------------------------- leader

    cpdef dict leader_assign(self, object m, object r):
        """The leader runs the selected client-side assignor over the members' subscriptions
        (`WorldCore.leader_assign`: sticky's user data, KIP-429's withholding)."""
        name = r.protocol_name or self.sc.group.assignors[0]
        assignor = self._assignors.get(name)
        if assignor is None:
            assignor = self._assignors[name] = get_assignor(name)
        counts = m.known_partitions
        topics = {t: TopicMetadata(t, n) for t, n in counts.items()}
        cdef bint coop = m.protocol is _COOPERATIVE
        cdef bint sticky = name == "sticky"
        # KIP-429's withholding: owner[p] the ordinal of the member claiming p (-1: none)
        cdef int[::1] owner = _NO_CLAIM * len(self.p_tps) if coop else _NO_CLAIM
        cdef int o
        index = self.parts.index
        subs = []
        ordinal = {}  # member id -> its ordinal in `owner`
        for jm in r.members:
            s = jm.metadata
            if sticky:
                # StickyAssignor.memberData: owned partitions and generation from the user data only
                ud = _decode_sticky(s.user_data)
                subs.append(
                    member_subscription_c(
                        jm.member_id,
                        s.topics,
                        tuple([TopicPartition(t, q) for t, q in ud.partitions]),
                        DEFAULT_GENERATION if ud.generation is None else ud.generation,
                        s.rack,
                        jm.group_instance_id,
                    )
                )
                continue
            subs.append(
                member_subscription_c(
                    jm.member_id, s.topics, s.owned, s.generation, s.rack, jm.group_instance_id
                )
            )
            if coop and s.owned:
                idx = s.owned_idx
                if idx is None:
                    idx = [index[tp] for tp in s.owned if tp in index]
                o = ordinal.setdefault(jm.member_id, len(ordinal))
                for p in idx:
                    owner[<Py_ssize_t>p] = o
        result = assignor.assign(GroupSpec(topics, tuple(subs)))
        m.assigned_view = dict(counts)
        return assignment_indices(result, self.parts.topic_partitions, owner, ordinal, coop)

    cpdef send_leave(self, object member, str kind, object req):
        """A closing member's LeaveGroup (or leaving heartbeat), after its close time."""
        delay, member.leave_delay_ms = member.leave_delay_ms, 0
        if not delay:
            self.send(member, kind, req)
            return
        self.loop.after(delay, self._send_later, member.name, member.incarnation, kind, req)

    def _send_later(self, name, int64_t incarnation, str kind, req):
        self.loop.at(self._arrival_up(name, incarnation), self.coord.receive, kind, req, name)

    # -------------------------------------------------------- scenario events

    def _schedule_scenario(self):
        sc = self.sc
        for spec in sc.members:
            self.loop.at(spec.start_ms, self._started, spec.name)
        for e in sc.events:
            if e.kind == "rolling_restart":
                self.loop.at(e.at_ms, self._rolling_restart, e.down_ms, e.every_ms)
            else:
                self.loop.at(e.at_ms, self._event, e)
        self.loop.at(0, self._lag_sample)

    def _start_member(self, name):
        if self.sc.member_startup_ms:
            self.loop.after(self.draw(self.sc.member_startup_ms), self._started, name)
        else:
            self._started(name)

    def _close_member(self, name):
        m = self.members.get(name)
        if m is None or not m.alive:
            return
        if self.sc.member_close_ms:
            m.leave_delay_ms = self.draw(self.sc.member_close_ms)
        m.shutdown()

    def _started(self, name):
        m = self.members.get(name)
        if m is None:
            m = self._add_member(name, None)
        if not m.alive:
            m.start()

    def _rolling_restart(self, int64_t down_ms, int64_t every_ms):
        cdef int64_t now
        names = [n for n, m in self.members.items() if m.alive]
        self.emit(
            "rolling_restart",
            detail={"members": len(names), "down_ms": down_ms, "every_ms": every_ms},
        )
        now = self.loop.now
        for i, name in enumerate(names):
            self.loop.at(now + i * every_ms, self._restart, name, down_ms)

    def _restart(self, name, int64_t down_ms):
        self._close_member(name)
        self.loop.after(down_ms, self._start_member, name)

    def _event(self, e):
        k = e.kind
        if k == "join":
            self._start_member(e.member)
        elif k == "leave":
            self._close_member(e.member)
        elif k == "restart":
            self._close_member(e.member)
            self.loop.after(e.down_ms, self._start_member, e.member)
        else:
            raise NotImplementedError(f"{k} events are not in the native core's claim")

    def _lag_sample(self):
        self.books.lag_sample_c(self.cols.total_lag_c(self.loop.now))
        self.loop.after(self.sc.lag_sample_ms, self._lag_sample)

    # ------------------------------------------------------------------ run

    def run(self, progress=None):
        self._schedule_scenario()
        end = self.sc.duration_ms
        self.loop.run_until(end, progress)
        for m in self.members.values():
            if m.alive:
                m._finish_batch(end, partial=True)
                if m.pause_start is not None:
                    self.add_paused(m, end - m.pause_start)
                    m.pause_start = None
        self.books.finish_c(end)
        return self.summary(end)

    def summary(self, int64_t end):
        books = self.books
        cols = self.cols
        produced = cols.produced_c(end)  # int64 sums as the reference's numpy sums
        lost = self.processed_table.lost_c(cols)
        final_lag = cols.total_lag_c(end)
        books.lag_sample_c(final_lag)
        return {
            "rebalances": books.rebalances,
            "generation": self.generation,
            "unavailable_partition_ms": int(books.unavailable_ms),
            "member_paused_ms": int(books.member_paused_ms),
            "partitions_moved": books.partitions_moved,
            "revocations": books.revocations,
            "records": {
                "produced": produced,
                "processed": books.processed,
                "duplicates": books.duplicates,
                "lost": lost,
            },
            "lag": {"max": int(books.lag_max), "final": final_lag},
            "timeline": list(books.timeline),
            "protocol": self.sc.protocol,
            "coordinator_partition": partition_for(self.sc.group.id),
            "rebalance_protocol": (
                next(iter(self.members.values())).protocol.name.lower() if self.members else None
            ),
            "static_membership": self.sc.group.static_membership,
            "delivery": self.sc.group.delivery,
            "simulated_events": self.loop.processed,
        }


def partition_range_refusal(sc):
    """Why NativeWorld would refuse `sc`'s partition table (None: it fits): a log end offset or its
    arithmetic leaving int64 within the run (`native_members.PartitionColumns`' range check; the
    reference's ints are unbounded). For `classic_native.native_support`."""
    parts = PartitionTable()
    for t in sc.topics:
        parts.add_topic(t.name, t.partitions, t.produce_rate, 0)
    try:
        PartitionColumns.from_table(parts, sc.duration_ms)
    except OverflowError as e:
        return f"partition offsets beyond int64 ({e})"
    return None
