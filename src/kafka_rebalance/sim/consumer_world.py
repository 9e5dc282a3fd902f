"""The KIP-848 consumer protocol behind the same driver.

Only the protocol differs from the classic world: members heartbeat
(ConsumerGroupHeartbeat) every `heartbeat_interval_ms`, the coordinator
computes targets with the server-side assignor, members reconcile at their
next poll (commit, revoke, then take what is free) and acknowledge at once.
Partitions, processing, commits, faults and books are the classic world's.
The state machines are `group.consumer_group` (coordinator) and
`group.consumer_group_member` (client).
"""

from __future__ import annotations

import base64
import dataclasses
import re
from collections.abc import Callable
from typing import Any, Final, cast

from ..group import consumer_group as cg
from ..group import consumer_group_member as cgm
from ..group.consumer_group_model import (
    CancelRebalanceTimeout,
    ConsumerGroupConfig,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupMember,
    GroupEpochBumped,
    MemberRemoved,
    ScheduleRebalanceTimeout,
    ScheduleSessionTimeout,
    sorted_partitions,
)
from ..group.consumer_group_steady import STEADY_MOVED_CANCEL, steady_answer
from ..group.errors import Errors
from ..group.offset_messages import OffsetCommitRequest
from ..group.offsets import validate_offset_commit
from ..model import TopicMetadata
from .member import SimMember
from .scenario import Scenario
from .world import Simulation
from .world_core import EventSink

_NONE: Final = Errors.NONE
_STABLE: Final = cgm.ClientState.STABLE
_JOINING: Final = cgm.ClientState.JOINING
_SERVER_ASSIGNOR = {"uniform": "uniform", "range": "range"}
# member ids in the coordinator's texts: a Kafka Uuid string (22 URL-safe base64 characters) or the
# state machine's own "<group>-member-<n>"; unknown tokens are left as they are
_MEMBER_ID = re.compile(r"[\w.-]+-member-\d+|(?<![\w-])[A-Za-z0-9_-]{22}(?![\w-])")


def _uuid_string(bits: int) -> str:
    """org.apache.kafka.common.Uuid.toString(): the 16 bytes in URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(bits.to_bytes(16, "big")).decode("ascii").rstrip("=")


class ConsumerCoordinator:
    """Routes ConsumerGroupHeartbeats into the KIP-848 state machine and carries out its effects."""

    def __init__(self, world: ConsumerSimulation) -> None:
        self.w = world
        g = world.sc.group
        self.config = ConsumerGroupConfig(
            session_timeout_ms=g.session_timeout_ms,
            heartbeat_interval_ms=g.heartbeat_interval_ms,
            max_size=g.group_max_size,
        )
        self.group: cg.ConsumerGroup | None = cg.new_group(g.id, world.topic_metadata(), 0)
        self.up_at = 0
        self.epoch = 0
        # (the committed offsets are the world's `parts.committed`, written only by a commit this
        # coordinator accepts: what the offsets log keeps, so a failover keeps them as they are)
        self.by_member_id: dict[str, str] = {}
        # the timers' callback, bound once (a compiled build would bind a new method object for
        # every timer it sets: one per heartbeat)
        self._timer_callback: Callable[[tuple, Any], None] = self._on_timer

    @property
    def up(self) -> bool:
        return self.group is not None

    def needs_real_heartbeats(self) -> bool:
        return True

    def heartbeat_stopped(self, *args: Any) -> None:
        pass

    def receive(self, kind: str, req: Any, name: str) -> None:
        w = self.w
        now = w.loop.now
        client = w.members[name].client
        if self.group is None:
            w.reply(client, "cheartbeat", ConsumerGroupHeartbeatResponse(Errors.NOT_COORDINATOR))
            return
        # cg.heartbeat(in_place=True) tries the steady answer first; asked here first and
        # without its effect objects, the commonest heartbeats (nearly all) cost no extra call,
        # no effects and no effects loop: what _apply would do with them is done here
        group, config = self.group, self.config
        hreq = cast(ConsumerGroupHeartbeatRequest, req)
        done = steady_answer(group, hreq, now, config)
        if done >= 0:
            mid = hreq.member_id  # known (its first answer went through the path below)
            if done == STEADY_MOVED_CANCEL:
                w.loop.cancel_timer((self.epoch, "rebalance", mid))
            w.loop.set_timer(
                (self.epoch, "session", mid), now + config.session_timeout_ms, self._timer_callback
            )
            answers = cast(dict[str, ConsumerGroupHeartbeatResponse], group.answers)
            w.reply(client, "cheartbeat", answers[mid])
            return
        self.group, resp, fx = cg.heartbeat(group, req, now, config, in_place=True)
        if resp.member_id:
            self.by_member_id[resp.member_id] = name
        if len(fx) == 1 and type(fx[0]) is ScheduleSessionTimeout:
            e = fx[0]
            w.loop.set_timer(
                (self.epoch, "session", e.member_id), e.deadline_ms, self._timer_callback
            )
        else:
            self._apply(fx)
        w.reply(client, "cheartbeat", resp)

    def _apply(self, fx: list) -> None:
        w = self.w
        loop = w.loop
        for e in fx:
            t = type(e)
            if t is ScheduleSessionTimeout:
                loop.set_timer((self.epoch, "session", e.member_id), e.deadline_ms, self._on_timer)
            elif t is ScheduleRebalanceTimeout:
                loop.set_timer(
                    (self.epoch, "rebalance", e.member_id),
                    e.deadline_ms,
                    self._on_timer,
                    e.member_epoch,
                )
            elif t is CancelRebalanceTimeout:
                loop.cancel_timer((self.epoch, "rebalance", e.member_id))
            elif t is GroupEpochBumped:
                w.pending_cause = self._named(e.cause)
                w.on_generation(e.group_epoch)
            elif t is MemberRemoved:
                name = self.by_member_id.get(e.member_id, e.member_id)
                w.emit(
                    "member_removed", name, detail={"member_id": e.member_id, "reason": e.reason}
                )
                if e.reason != "replaced":
                    w.pending_cause = f"{name}: {e.reason}"

    def _named(self, cause: str) -> str:
        return _MEMBER_ID.sub(lambda m: self.by_member_id.get(m.group(0), m.group(0)), cause)

    def _on_timer(self, key: tuple, payload: Any) -> None:
        epoch, kind, mid = key
        if self.group is None or epoch != self.epoch:
            return
        now = self.w.loop.now
        if kind == "session":
            self.group, fx = cg.on_session_timeout(self.group, mid, now, in_place=True)
        else:
            self.group, fx = cg.on_rebalance_timeout(self.group, mid, payload, now, in_place=True)
        self._apply(fx)

    def commit(
        self,
        name: str,
        client: str,
        member_id: str,
        instance_id: str | None,
        epoch: int,
        offsets: dict[int, int],
        why: str,
        answer: bool = False,
        sent_ms: int = -1,
        sent_event: int = -1,
    ) -> None:
        w = self.w
        parts = w.parts
        group = self.group
        if group is None:
            err = Errors.NOT_COORDINATOR
        elif (
            known := cast(dict[str, ConsumerGroupMember], group.members).get(member_id)
        ) is not None and known.member_epoch == epoch:
            # a member committing at its own epoch (nearly every commit): what the validation
            # below answers for it (a consumer-protocol member, OffsetCommit v9+)
            if not w.wants_events:  # (the commonest: written, answered if asked, nothing else)
                # the table's column as the world types it, the offsets as the objects they are
                # (a compiled build stores them without unboxing and boxing each again)
                column = cast(list[Any], w.p_committed)
                for p, off in cast(dict[int, Any], offsets).items():
                    column[p] = off
                if answer:
                    w.reply(client, "commit", (_NONE, None, answer))
                return
            err = Errors.NONE
        else:
            # the validation is the group's (member and epoch), the same for every partition: the
            # request carries no partitions, which are written below
            req = OffsetCommitRequest(group.group_id, (), member_id, epoch, instance_id)
            err = validate_offset_commit(cg.commit_view(group), req)
        if err is Errors.NONE and not w.wants_events:
            column = cast(list[Any], w.p_committed)
            for p, off in cast(dict[int, Any], offsets).items():
                column[p] = off
        elif err is Errors.NONE:
            committed, log = parts.committed, True
            for p, off in offsets.items():
                committed[p] = off
                if log:
                    tp = parts.tps[p]
                    w.emit(
                        "commit",
                        name,
                        epoch,
                        [parts.names[p]],
                        {
                            "topic": tp.topic,
                            "partition": tp.partition,
                            "offset": off,
                            "metadata": "",
                            "generation": epoch,
                            "member_id": member_id,
                            "reason": why,
                            "sent_ms": sent_ms,
                            "sent_event": sent_event,
                        },
                    )
        if err is not Errors.NONE or answer:
            # (error, sent generation: epochs are checked above, answered)
            w.reply(client, "commit", (err, None, answer))

    def update_topics(self) -> None:
        if self.group is not None:
            self.group = cg.update_topics(self.group, self.w.topic_metadata())

    def failover(self, down_ms: int) -> None:
        w = self.w
        if self.group is None:
            return
        w.emit("coordinator_failover", detail={"down_ms": down_ms, "epoch": self.epoch + 1})
        self._persisted = cg.persisted(self.group)
        self.group = None
        self.epoch += 1
        self.up_at = w.loop.now + down_ms
        w.loop.at(self.up_at, self._load)

    def _load(self) -> None:
        w = self.w
        now = w.loop.now
        group, fx = cg.on_loaded(self._persisted, now, self.config)
        self.group = cg.update_topics(group, w.topic_metadata())
        # (the committed offsets stay what they were: parts.committed, as the offsets log)
        w.emit(
            "coordinator_loaded",
            detail={
                "epoch": self.epoch,
                "members": len(group.members),
                "generation": group.group_epoch,
                "state": group.state.value,
            },
        )
        self._apply(fx)


class ConsumerSimMember(SimMember):
    """A consumer on the KIP-848 protocol: heartbeats carry the whole rebalance."""

    def start(self) -> None:
        g = self.w.sc.group
        # a random Uuid per incarnation: at Kafka 1eb7644349cb the coordinator draws it for a first
        # heartbeat with an empty id (GroupMetadataManager:1744; the client adopts it from the answer,
        # ConsumerMembershipManager:241; KIP-1082, later, has the client draw it). Drawn here at start from
        # the seed either way; the uniform assignor's ties follow the ids' HashMap order
        member_id = _uuid_string(self.w.rng.getrandbits(128))
        self.cm = cgm.ConsumerMember(
            g.id,
            tuple(self.w.topic_names),
            member_id,
            self.instance_id,
            self.rack,
            g.rebalance_timeout_ms or g.max_poll_interval_ms,
            _SERVER_ASSIGNOR[g.server_assignor],
        )
        self.pending_rec: cgm.Reconciliation | None = None
        self.rec_due = 0  # when the application thread next returns from poll()'s wait
        self.lost_pending: list[int] = []
        self.hb_token = 0
        self._hb_cm: cgm.ConsumerMember | None = None
        self._hb_req: Any = None
        self._hb_owned: frozenset | None = None
        self._hb_interval = g.heartbeat_interval_ms
        # the next beat's callback, bound once per incarnation (not a new method object per beat)
        self._hb_send: Callable[[int], None] = self._send_heartbeat
        super().start()
        self.rejoin_needed = False
        self._heartbeat_now()

    def heartbeating(self) -> bool:
        return self.alive and not self.poll_timed_out

    def _heartbeat_now(self) -> None:
        self.hb_token += 1
        self._send_heartbeat(self.hb_token)

    def _send_heartbeat(self, token: int) -> None:
        if not self.alive or token != self.hb_token or self.poll_timed_out:
            return
        cm = self.cm
        if (
            cm is not self._hb_cm
        ):  # the request is a value of the member's state: built once per state
            req = self._hb_req
            if req is not None and cm.owned is self._hb_owned and cm.state is not _JOINING:
                # the same owned set at a new epoch (every member, once per epoch): its sorted
                # tuple is the one heartbeat_request made last time
                self._hb_req = ConsumerGroupHeartbeatRequest(
                    cm.group_id,
                    cm.member_id,
                    cm.member_epoch,
                    cm.instance_id,
                    None,
                    -1,
                    None,
                    None,
                    req.owned_partitions,
                )
            else:
                self._hb_req = cgm.heartbeat_request(cm)
            self._hb_cm = cm
            # (a joining request reports nothing, whatever the member holds)
            joining = cm.state is _JOINING
            self._hb_owned = None if joining else cm.owned
        w = self.w
        w.send(self, "cheartbeat", self._hb_req)
        token = self.hb_token = self.hb_token + 1
        w.loop.after(self._hb_interval, self._hb_send, token)

    def on_cheartbeat_response(self, resp: ConsumerGroupHeartbeatResponse) -> None:
        if not self.alive:
            return
        cm = self.cm
        if (
            resp.error is _NONE
            and resp.assignment is None
            and cm.state is _STABLE
            and (resp.member_id == cm.member_id or not resp.member_id)
        ):
            # a stable member's heartbeat answered with nothing new but maybe an epoch (nearly all
            # of them): what cgm.on_heartbeat_response gives, without its general steps
            if resp.member_epoch != cm.member_epoch:
                self.cm = cm = cgm.at_epoch(cm, resp.member_epoch)
            self.member_id = cm.member_id
            self.generation = cm.member_epoch
            return
        if resp.error in (
            Errors.NOT_COORDINATOR,
            Errors.COORDINATOR_NOT_AVAILABLE,
            Errors.COORDINATOR_LOAD_IN_PROGRESS,
        ):
            self.hb_token += 1
            t = self.w.coordinator_retry_time(self.w.loop.now, self.w.sc.group.retry_backoff_ms)
            self.w.loop.at(t, self._send_heartbeat, self.hb_token)
            return
        if resp.error not in (Errors.NONE, Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID):
            self.w.emit(
                "heartbeat_error", self.name, self.generation, detail={"error": resp.error.name}
            )
            if resp.error in (
                Errors.UNRELEASED_INSTANCE_ID,
                Errors.FENCED_INSTANCE_ID,
                Errors.GROUP_MAX_SIZE_REACHED,
            ):
                self.w.emit("fatal", self.name, self.generation, detail={"error": resp.error.name})
                self.crash()
            return
        self.cm, rec, lost = cgm.on_heartbeat_response(self.cm, resp)
        if resp.error is not Errors.NONE:
            self.w.emit(
                "heartbeat_error", self.name, self.generation, detail={"error": resp.error.name}
            )
            if lost:
                idx = self.w.parts.index
                # in (topic, partition) order: Kafka's onPartitionsLost gets a SortedSet
                ps = [idx[tp] for tp in sorted_partitions(lost) if tp in idx]
                self.w.lose(self, ps, "fenced")
                keep = set(ps)
                self.owned = [p for p in self.owned if p not in keep]
                for p in ps:
                    self.positions.pop(p, None)
            self.pending_rec = None
            self._heartbeat_now()  # rejoin with epoch 0
            return
        self.member_id = self.cm.member_id
        self.generation = self.cm.member_epoch
        if rec is None and resp.assignment is not None and self.pause_start is not None:
            self.w.add_paused(self, self.w.loop.now - self.pause_start)  # joined; nothing to take
            self.pause_start = None
        if rec is not None:
            first = self.pending_rec is None
            self.pending_rec = rec
            if first:
                self._reconcile_at_poll_return()

    def _reconcile_at_poll_return(self) -> None:
        """The reconciliation's callbacks run on the application thread, in poll() (AsyncKafkaConsumer
        processBackgroundEvents, Kafka 1eb7644349cb): at once for a member busy with a batch once it is
        done (its next poll() starts with them); for a member waiting in poll() when that wait ends,
        which a heartbeat response does not cut short (pollForFetches: fetchBuffer.awaitNotEmpty):
        when a record lands on a partition it owns, else at the scenario's poll_timeout_ms."""
        w = self.w
        now = w.loop.now
        if now < self.busy_until or now < self.stall_until:
            self.rec_due = now
            self.wake()
            return
        due = min(self._next_record_after(now), now + w.sc.poll_timeout_ms)
        self.rec_due = due
        if due <= now:
            self.wake()
        else:
            w.loop.at(due, self._poll_returns, self.incarnation)

    def _poll_returns(self, inc: int) -> None:
        if inc == self.incarnation and self.alive and self.pending_rec is not None:
            self.wake()

    def _next_record_after(self, now: int) -> int:
        """When the next record lands on an owned partition after now (a caught-up member has every
        earlier one: the simulator's poll_idle_ms batches are dated back, see SimMember._busy_for)."""
        parts = self.w.parts
        base, base_t, nums, den = parts.base, parts.base_t, parts.num, parts.den
        best = 1 << 62
        for p in self.owned:
            num = nums[p]
            if num <= 0:
                continue
            need = (parts.leo(p, now) + 1 - base[p]) * den[p]
            t = base_t[p] + (-(-need // num) if need > 0 else 0)
            if t < best:
                best = t
        return best

    def _poll(self, token: int) -> None:
        if token != self.poll_token or not self.alive:
            return
        if self.pending_rec is not None and self.w.loop.now >= max(
            self.busy_until, self.stall_until, self.rec_due
        ):
            self._finish_batch(self.w.loop.now)
            self._reconcile()
        if self.poll_timed_out and self.w.loop.now >= self.stall_until:
            # polling again after a poll timeout: what it held is gone; rejoin with epoch 0
            self._finish_batch(self.w.loop.now)
            if self.owned:
                self.w.lose(self, list(self.owned), "poll timeout")
                self.owned, self.positions = [], {}
            self.poll_timed_out = False
            self.pending_rec = None
            self.cm = dataclasses.replace(self.cm, state=cgm.ClientState.JOINING, member_epoch=0)
            if self.pause_start is None:
                self.pause_start = self.w.loop.now
            self._heartbeat_now()
        super()._poll(token)

    def _reconcile(self) -> None:
        """Commit and revoke what goes, take what comes, acknowledge at once (the new consumer's reconciliation)."""
        w = self.w
        now = w.loop.now
        while self.pending_rec is not None:
            rec = self.pending_rec
            self.pending_rec = None
            idx = w.parts.index
            revoke = [idx[tp] for tp in sorted_partitions(rec.revoke) if tp in idx]
            assign = [idx[tp] for tp in sorted_partitions(rec.assign) if tp in idx]
            if revoke:
                offsets = {p: self.positions[p] for p in revoke if p in self.positions}
                if (
                    offsets
                    and w.sc.group.enable_auto_commit
                    and w.sc.group.delivery == "at-least-once"
                ):
                    w.commit(self, offsets, "before-revocation")
                w.revoke(self, revoke, "reconciliation")
                gone = set(revoke)
                self.owned = [p for p in self.owned if p not in gone]
                for p in revoke:
                    self.positions.pop(p, None)
                self.cm = cgm.revocation_done(self.cm)
            for p in assign:
                self.positions[p] = self.sent_offsets[p] = w.parts.committed[p]
            if assign:
                self.caught_up_from = now  # their records can be fetched from now on only
            self.owned = self.owned + [p for p in assign if p not in self.owned]
            w.assigned(self, assign, self.owned)
            if now >= self.stall_until:
                w.set_available_many(self.owned, now, self.name)
            if self.pause_start is not None:
                w.add_paused(self, now - self.pause_start)
                self.pause_start = None
            self.cm, nxt = cgm.complete_reconciliation(self.cm)
            self.generation = self.cm.member_epoch
            self.pending_rec = nxt
        self._heartbeat_now()

    def _poll_timeout(self, inc: int, last_poll: int) -> None:
        if inc != self.incarnation or not self.alive or self.last_poll != last_poll:
            return
        w = self.w
        w.emit("poll_timeout", self.name, self.generation)
        w.send(self, "cheartbeat", cgm.leave_request(self.cm))
        w.emit("leave", self.name, self.generation, detail={"reason": "poll timeout"})
        self.cm = cgm.on_left(self.cm)
        self.poll_timed_out = True
        self.hb_token += 1

    def shutdown(self) -> None:
        if not self.alive:
            return
        w = self.w
        now = w.loop.now
        self._finish_batch(now)
        if self.owned:
            offsets = {p: self.positions[p] for p in self.owned if p in self.positions}
            if offsets:
                w.commit(self, offsets, "close")
            self._revoke_pending_then_close()
        self.owned, self.positions = [], {}
        if self.cm.member_id:
            w.send_leave(self, "cheartbeat", cgm.leave_request(self.cm))
        self.hb_token += 1
        self._die("stop")

    def _revoke_pending_then_close(self) -> None:
        """close() with a reconciliation's revocation requested but not reconciled: the
        AsyncKafkaConsumer runs that onPartitionsRevoked, then close()'s onPartitionsRevoked for every
        partition still in the subscription, the same ones again (Kafka 1eb7644349cb: revokePartitions
        leaves the subscription as it is until assignPartitions, which maybeAbortReconciliation skips
        once leaveGroup has moved to PREPARE_LEAVING; leaveGroup releases
        subscriptions.assignedPartitions(), ConsumerMembershipManager.
        invokeOnPartitionsRevokedOrLostToReleaseAssignment). The user's callback sees them twice."""
        w = self.w
        rec = self.pending_rec
        if rec is not None and rec.revoke:
            idx, owned = w.parts.index, set(self.owned)
            again = [
                idx[tp] for tp in sorted_partitions(rec.revoke) if tp in idx and idx[tp] in owned
            ]
            if again:
                w.revoke(self, again, "reconciliation")
        self.pending_rec = None
        w.revoke(self, list(self.owned), "close")

    def crash(self, killed: bool = False) -> None:
        self.hb_token += 1
        super().crash(killed)

    def on_metadata_refresh(self, inc: int) -> None:
        pass


class ConsumerSimulation(Simulation):
    member_class = ConsumerSimMember

    def __init__(self, sc: Scenario, sink: EventSink | None = None) -> None:
        super().__init__(sc, sink)
        self.members = {m.name: ConsumerSimMember(self, m.name, m.rack) for m in sc.members}
        self.coord = self.consumer_coord = ConsumerCoordinator(self)
        self._client_members: dict[str, Any] = {}

    def topic_metadata(self) -> dict[str, TopicMetadata]:
        return {t: TopicMetadata(t, n) for t, n in self.partition_counts().items()}

    def _deliver(self, client: str, kind: str, resp: Any) -> None:
        if kind != "cheartbeat":
            return super()._deliver(client, kind, resp)
        # client "<name>#<incarnation>" -> its member (a member object stays its name's for the
        # run): one lookup per answer instead of splitting the string
        m = self._client_members.get(client)
        if m is None:
            m = self.members.get(client.rpartition("#")[0])
            if m is None:
                return
            self._client_members[client] = m
        if not isinstance(m, ConsumerSimMember) or not m.alive or m.client != client:
            return
        m.on_cheartbeat_response(resp)

    def _start_member(self, name: str) -> None:
        if name not in self.members:
            self.members[name] = ConsumerSimMember(self, name, None)
        super()._start_member(name)

    def _add_partitions(self, topic: str, count: int) -> None:
        super()._add_partitions(topic, count)
        self.consumer_coord.update_topics()
