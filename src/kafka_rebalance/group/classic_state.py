"""The classic group's states, how each answers requests, and which moves are legal.

Mirrors Kafka's `ClassicGroupState`: one place to read the whole machine.

=====================  ====================================================
State                  Behaviour (what moves it on)
=====================  ====================================================
Empty                  JoinGroup from a new member is accepted (-> PreparingRebalance);
                       SyncGroup / Heartbeat / LeaveGroup / OffsetCommit with a
                       member id get UNKNOWN_MEMBER_ID; generation -1 commits are
                       allowed. Offsets all expired -> Dead.
PreparingRebalance     JoinGroup requests are parked until every known member has
                       rejoined or the rebalance timeout (largest
                       max.poll.interval.ms) fires (-> CompletingRebalance, or
                       Empty if nobody rejoined). Heartbeat and SyncGroup get
                       REBALANCE_IN_PROGRESS; LeaveGroup removes the member;
                       commits of the current generation are accepted.
CompletingRebalance    Waits for the leader's SyncGroup (-> Stable); followers'
                       SyncGroups are parked. Heartbeats are answered normally;
                       OffsetCommit gets REBALANCE_IN_PROGRESS. A join with new
                       metadata, a leave or a member failure -> PreparingRebalance.
Stable                 Heartbeats normal; SyncGroup returns the current assignment;
                       a follower's JoinGroup with unchanged metadata returns the
                       current generation; the leader's JoinGroup, a changed
                       subscription, a leave or a session expiry -> PreparingRebalance.
Dead                   Every request gets COORDINATOR_NOT_AVAILABLE / UNKNOWN_MEMBER_ID;
                       final (the group moved to another coordinator or was deleted).
=====================  ====================================================
"""

from __future__ import annotations

from enum import Enum


class ClassicGroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    # members are singletons compared by identity: identity hashing keeps set/dict lookups off Enum.__hash__
    __hash__ = object.__hash__

    def __str__(self) -> str:
        return self.value

    @property
    def valid_previous_states(self) -> frozenset[ClassicGroupState]:
        """States a group must be in to move to this one (Kafka's `validPreviousStates`)."""
        return _VALID_PREVIOUS[self]


S = ClassicGroupState
_VALID_PREVIOUS: dict[ClassicGroupState, frozenset[ClassicGroupState]] = {
    S.EMPTY: frozenset({S.PREPARING_REBALANCE}),
    S.PREPARING_REBALANCE: frozenset({S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY}),
    S.COMPLETING_REBALANCE: frozenset({S.PREPARING_REBALANCE}),
    S.STABLE: frozenset({S.COMPLETING_REBALANCE}),
    S.DEAD: frozenset({S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD}),
}


class IllegalStateTransition(RuntimeError):
    """A transition the table forbids: a bug in the caller, never user input."""


def check_transition(current: ClassicGroupState, target: ClassicGroupState) -> None:
    if current not in target.valid_previous_states:
        raise IllegalStateTransition(f"cannot move from {current} to {target}")
