"""The group coordinator node: routes requests into the classic state machine and carries out its effects.

Heartbeats are elided while nothing can come of them: a member whose
heartbeat thread is running has, at any instant, sent its last heartbeat at a
known phase time. When the session timer of such a member fires, the
coordinator is handed that heartbeat (at its true send time) instead of an
expiry, which is exactly what a heartbeat every `heartbeat.interval.ms` would
have done. When the group starts a rebalance, real heartbeats are scheduled
again so members learn about it at their next heartbeat, as in Kafka.

Failover: the node goes down (parked requests fail with NOT_COORDINATOR), and
on return rebuilds the group from the last GroupMetadata written to the
offsets log and the committed offsets from their records.

Compiled with mypyc (setup.py) together with the classic group it drives: every request and
effect of a simulated group passes through here. Effect and error classes are read through
`Final` module constants (C statics in the build); values only passed along are typed `Any`, so
the build hands the same objects on. The source is the reference path: `sim/__init__.py` runs it
whenever this build, or the group's, is stale.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

from ..group.classic_group import ClassicGroup, ClassicGroupConfig
from ..group.classic_messages import (
    CancelTimer,
    GroupMetadataChanged,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    MemberRemoved,
    ScheduleTimer,
    StateChanged,
    SyncGroupResponse,
)
from ..group.classic_state import ClassicGroupState
from ..group.consumer_client import MemberState
from ..group.errors import Errors
from .compiled import KERNELS
from .offsets_store import SimOffsetsStore

if TYPE_CHECKING:
    from .world_core import WorldCore

S = ClassicGroupState
_MEMBER_ID: Final = re.compile(r"([^\s,#]+)(?:#\d+)?-\d+-[0-9a-f]{8}")
_SCHEDULE: Final = ScheduleTimer
_CANCEL: Final = CancelTimer
_JOIN_RESPONSE: Final = JoinGroupResponse
_SYNC_RESPONSE: Final = SyncGroupResponse
_HEARTBEAT_RESPONSE: Final = HeartbeatResponse
_LEAVE_RESPONSE: Final = LeaveGroupResponse
_STATE_CHANGED: Final = StateChanged
_MEMBER_REMOVED: Final = MemberRemoved
_METADATA_CHANGED: Final = GroupMetadataChanged
_NONE: Final = Errors.NONE
_MEMBER_ID_REQUIRED: Final = Errors.MEMBER_ID_REQUIRED
_NOT_COORDINATOR: Final = Errors.NOT_COORDINATOR
_STABLE: Final = ClassicGroupState.STABLE
_k_store_commits: Final = KERNELS.store_commits


class ClassicCoordinator:
    def __init__(self, world: WorldCore) -> None:
        # the classic world (world.Simulation), typed concretely: compiled with it, its reads of the
        # world and calls into it are native (the KIP-848 world has its own coordinator)
        self.w: WorldCore = world
        g = world.sc.group
        self.config: ClassicGroupConfig = ClassicGroupConfig(
            initial_rebalance_delay_ms=g.group_initial_rebalance_delay_ms, max_size=g.group_max_size
        )
        self.epoch: int = 0
        self.group: ClassicGroup | None = ClassicGroup(
            g.id, self.config, member_id_salt="0-", now_ms=0
        )
        self.up_at: int = 0
        self.store: SimOffsetsStore = SimOffsetsStore(g.id)
        # member id -> member name (the simulator's routing table)
        self.by_member_id: dict[str, str] = {}
        # the broker handles one request per connection at a time: while a JoinGroup or SyncGroup is
        # parked in the group (awaiting the join phase / the leader), later requests on that client's
        # connection wait behind it (client -> requests queued, in order)
        self.muted: dict[str, list[tuple]] = {}
        # member id -> (phase base, first beat, stop time, generation, client)
        self.hb_history: dict[str, Any] = {}

    # ------------------------------------------------------------- requests

    @property
    def up(self) -> bool:
        return self.group is not None

    def receive(self, kind: str, req: Any, name: str) -> None:
        client: str = req.client
        if self.muted:
            queued = self.muted.get(client)
            if queued is not None:
                queued.append((self.receive, kind, req, name))
                return
        now: int = self.w.loop.now
        g = self.group
        if g is None:
            err = _NOT_COORDINATOR
            if kind == "join":
                self.w.reply(client, kind, _JOIN_RESPONSE(client, err, req.member_id))
            elif kind == "sync":
                self.w.reply(client, kind, _SYNC_RESPONSE(client, err))
            elif kind == "heartbeat":
                self.w.reply(
                    client,
                    kind,
                    (_HEARTBEAT_RESPONSE(client, err), (req.generation_id, req.member_id)),
                )
            return
        if kind == "join" or kind == "sync":
            fx = g.join(req, now) if kind == "join" else g.sync(req, now)
            self.apply(fx)
            if not self._answers(fx, client):
                self.muted[client] = []  # parked: the connection waits for its answer
            return
        elif kind == "heartbeat":
            self.apply(g.heartbeat(req, now), (req.generation_id, req.member_id))
            return
        elif kind == "leave":
            fx = g.leave(req, now)
        else:
            raise ValueError(kind)
        self.apply(fx)

    def commit(
        self,
        name: str,
        client: str,
        member_id: str,
        instance_id: str | None,
        generation: int,
        offsets: dict[int, int],
        why: str,
        answer: bool = False,
        sent_ms: Any = -1,
        sent_event: Any = -1,
    ) -> None:
        """An OffsetCommit sent at `sent_ms`, after the first `sent_event` event-log rows. Failures are
        answered, and successes the member waits for (`answer`)."""
        queued = self.muted.get(client) if self.muted else None
        if queued is not None:
            queued.append(
                (
                    self.commit,
                    name,
                    client,
                    member_id,
                    instance_id,
                    generation,
                    offsets,
                    why,
                    answer,
                    sent_ms,
                    sent_event,
                )
            )
            return
        w = self.w
        g = self.group
        err = (
            _NOT_COORDINATOR
            if g is None
            else g.validate_offset_commit(member_id, instance_id, generation)
        )
        if err is _NONE:
            # one OffsetCommit record per partition of the request, into the store and the partition
            # table's committed column in one pass (every commit of every member comes through here)
            store = self.store
            _k_store_commits(offsets, w.loop.now, store.offsets, w.p_committed)
            store.records_appended += len(offsets)
            if w.wants_events:
                parts = w.parts
                tps = parts.tps
                for p, off in offsets.items():
                    tp = tps[p]
                    w.emit(
                        "commit",
                        name,
                        generation,
                        [parts.names[p]],
                        {
                            "topic": tp.topic,
                            "partition": tp.partition,
                            "offset": off,
                            "metadata": "",
                            "generation": generation,
                            "member_id": member_id,
                            "reason": why,
                            "sent_ms": sent_ms,
                            "sent_event": sent_event,
                        },
                    )
            if answer:
                resp = (err, (generation, member_id), True)
                if w.sc.log_append_ms:  # answered once the write is replicated
                    w.loop.after(w.draw(w.sc.log_append_ms), w.reply, client, "commit", resp)
                else:
                    w.reply(client, "commit", resp)
            return
        w.reply(client, "commit", (err, (generation, member_id), answer))

    # -------------------------------------------------------------- effects

    def apply(self, fx: list, hb_sent: Any = None) -> None:
        """Carry out effects; `hb_sent` is the (generation, member id) of the heartbeat they answer."""
        w = self.w
        loop = w.loop
        replies: list = []  # responses leave together: one network event for a batch sent at once
        wrote = False
        on_timer = self._on_timer
        for e in fx:
            t = type(e)
            if t is _SCHEDULE:
                loop.set_timer((self.epoch, e.key), e.deadline_ms, on_timer, e.payload)
            elif t is _CANCEL:
                loop.cancel_timer((self.epoch, e.key))
            elif t is _JOIN_RESPONSE:
                error = e.error
                if error is _NONE or error is _MEMBER_ID_REQUIRED:
                    client: str = e.client
                    self.by_member_id[e.member_id] = client.rpartition("#")[0]
                replies.append((e.client, "join", e))
            elif t is _SYNC_RESPONSE:
                replies.append((e.client, "sync", e))
            elif t is _HEARTBEAT_RESPONSE:
                replies.append((e.client, "heartbeat", (e, hb_sent)))
            elif t is _LEAVE_RESPONSE:
                pass
            elif t is _STATE_CHANGED:
                self._on_state(e)
            elif t is _MEMBER_REMOVED:
                name = self.by_member_id.get(e.member_id, e.member_id)
                w.emit(
                    "member_removed", name, detail={"member_id": e.member_id, "reason": e.reason}
                )
            elif t is _METADATA_CHANGED:
                self.store.write_group(e.snapshot, loop.now)
                wrote = True
        if wrote and replies and w.sc.log_append_ms:
            # the responses wait for the group's record to be replicated (the coordinator answers a
            # write once committed); the connections stay muted until then
            loop.after(w.draw(w.sc.log_append_ms), self._send_replies, replies)
        else:
            self._send_replies(replies)

    def _send_replies(self, replies: list) -> None:
        w = self.w
        if len(replies) == 1:
            w.reply(*replies[0])
        elif replies:
            w.reply_many(replies)
        if self.muted:
            for r in replies:
                if r[1] == "join" or r[1] == "sync":
                    self._unmute(r[0])

    @staticmethod
    def _answers(fx: list, client: str) -> bool:
        for e in fx:
            t = type(e)
            if (t is _JOIN_RESPONSE or t is _SYNC_RESPONSE) and e.client == client:
                return True
        return False

    def _unmute(self, client: str) -> None:
        """The parked request was answered: the connection's next requests are handled, in order."""
        queued = self.muted.pop(client, None)
        while queued:
            call = queued.pop(0)
            call[0](*call[1:])
            if client in self.muted:  # parked again: the rest keeps waiting behind it
                self.muted[client].extend(queued)
                return

    def _on_state(self, e: Any) -> None:
        """`e` is a StateChanged effect."""
        w = self.w
        w.emit(
            "group_state",
            detail={"from": str(e.old), "to": str(e.new), "reason": e.reason},
            generation=self.group.generation_id if self.group else e.generation_id,
        )
        if e.new is S.PREPARING_REBALANCE:
            w.pending_cause = self._named(e.reason)
            stable = MemberState.STABLE
            for m in w.members.values():
                if m.state is stable:
                    m.start_heartbeat_ticks()  # no-op unless its heartbeat thread runs and is idle
        elif e.new is S.COMPLETING_REBALANCE or (
            e.new is S.EMPTY and e.old is S.PREPARING_REBALANCE
        ):
            w.on_generation(self.group.generation_id if self.group else e.generation_id)
            w.pending_cause = "-"

    def _named(self, reason: str) -> str:
        """Member ids in a reason, replaced by the simulator's member names."""
        return _MEMBER_ID.sub(r"\1", reason)

    def needs_real_heartbeats(self) -> bool:
        g = self.group
        return g is not None and g.state is not _STABLE

    def _on_timer(self, key: Any, payload: Any) -> None:
        epoch, gkey = key
        g = self.group
        if g is None or epoch != self.epoch:
            return
        now = self.w.loop.now
        if gkey[0] == "heartbeat" and self._elided_heartbeat(g, gkey[1], now):
            return
        self.apply(g.on_timer(gkey, payload, now))

    def _elided_heartbeat(self, g: ClassicGroup, member_id: str, now: int) -> bool:
        """Deliver the last heartbeat `member_id` really sent, if it keeps the session alive past now."""
        w = self.w
        name = self.by_member_id.get(member_id)
        m = w.members.get(name) if name is not None else None
        if m is None:
            return False
        lat = w.sc.network_latency_ms
        if m.member_id == member_id and m.heartbeating():
            hb_base, hb_first, stop, generation, client = (
                m.hb_base,
                m.hb_first,
                now,
                m.generation,
                m.client,
            )
        else:
            hist = self.hb_history.get(member_id)
            if hist is None:
                return False
            hb_base, hb_first, stop, generation, client = hist
        if stop - lat < hb_base:
            return False
        hb = w.sc.group.heartbeat_interval_ms
        sent = hb_base + ((stop - lat - hb_base) // hb) * hb
        if sent < hb_first:  # its phase put that beat before the join completed: none was sent
            return False
        sent += lat
        member = g.members.get(member_id)
        if member is None or sent + member.session_timeout_ms <= now:
            return False
        fx = g.heartbeat(HeartbeatRequest(client, member_id, generation, m.instance_id), sent)
        rescheduled = False
        for e in fx:
            if type(e) is _SCHEDULE:
                rescheduled = True
        # the member already had its (error-free) answer back then; only errors still need delivering
        self.apply(
            [e for e in fx if type(e) is not _HEARTBEAT_RESPONSE or e.error is not _NONE],
            (generation, member_id),
        )
        return rescheduled

    def heartbeat_stopped(
        self, member_id: str, hb_base: int, hb_first: int, now: int, generation: int, client: str
    ) -> None:
        """A member's heartbeat thread stopped (crash, close, poll timeout): remember its last phase."""
        if member_id:
            self.hb_history[member_id] = (hb_base, hb_first, now, generation, client)

    # ------------------------------------------------------------- failover

    def failover(self, down_ms: int) -> None:
        w = self.w
        now = w.loop.now
        if self.group is None:
            return
        w.emit("coordinator_failover", detail={"down_ms": down_ms, "epoch": self.epoch + 1})
        old = self.group
        # parked JoinGroup / SyncGroup requests are answered NOT_COORDINATOR
        for mem in list(old.members.values()):
            if mem.awaiting_join is not None:
                w.reply(
                    mem.awaiting_join,
                    "join",
                    JoinGroupResponse(mem.awaiting_join, Errors.NOT_COORDINATOR, mem.member_id),
                )
                mem.awaiting_join = None
            if mem.awaiting_sync is not None:
                w.reply(
                    mem.awaiting_sync,
                    "sync",
                    SyncGroupResponse(mem.awaiting_sync, Errors.NOT_COORDINATOR),
                )
                mem.awaiting_sync = None
        old.mark_dead(now)
        self.muted = {}  # the connections drop with the coordinator: what waited on them is gone
        self.group = None
        self.epoch += 1
        self.up_at = now + down_ms
        w.loop.at(self.up_at, self._load)

    def _load(self) -> None:
        """The new coordinator replays the offsets log: group metadata and committed offsets."""
        w = self.w
        now = w.loop.now
        snap, offsets = self.store.recover(w.parts.tps, w.parts.index)
        if snap is None:
            self.group = ClassicGroup(
                w.sc.group.id, self.config, member_id_salt=f"{self.epoch}-", now_ms=now
            )
            fx: list = []
        else:
            self.group, fx = ClassicGroup.load(
                snap, self.config, now, member_id_salt=f"{self.epoch}-"
            )
        parts = w.parts
        for tp, off in offsets.items():
            p = parts.index.get(tp)
            if p is not None:
                parts.committed[p] = off
        w.emit(
            "coordinator_loaded",
            detail={
                "epoch": self.epoch,
                "members": len(self.group.members),
                "generation": self.group.generation_id,
                "state": str(self.group.state),
            },
        )
        self.apply(fx)
