"""The abstract goal every planner objective implements (Cruise Control's analyzer/goals shape).

A goal improves the plan in `optimize`, using only moves that every goal
optimized before it accepts (`accepts_move` / `accepts_leader`), so a later
goal never undoes an earlier one: hard constraints first, then balance.
`lower_bound` is a provable minimum number of replica moves to satisfy it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable

from .state import PlanState


class Goal(ABC):
    name: str = "goal"
    hard: bool = False

    @abstractmethod
    def optimize(self, state: PlanState, ctx: Context) -> None:
        """Make moves (through ctx) until satisfied or stuck."""

    def accepts_move(self, state: PlanState, p: int, s: int, dst: int) -> bool:
        """Would moving slot s of partition p to broker dst keep this goal satisfied?"""
        return True

    def accepts_leader(self, state: PlanState, p: int, s: int) -> bool:
        """Would making slot s the leader of p keep this goal satisfied?"""
        return True

    def satisfied(self, state: PlanState) -> bool:
        return self.violation(state) <= 0

    def violation(self, state: PlanState) -> float:
        """How far the state is from this goal (0 when met): a later goal may never raise it."""
        return 0.0

    def lower_bound(self, state: PlanState) -> int:
        return 0

    def metric(self, state: PlanState) -> dict:
        """The goal's figure for people and scripts: {"value", "limit"} (empty when it has none)."""
        return {}

    def explain(self, state: PlanState) -> str:
        """Why the goal is not met (called only when it is not): the figure and the cause found."""
        return "not met"


class Context:
    """The goals optimized so far; a move is allowed only if the state and all of them accept it."""

    def __init__(self, state: PlanState) -> None:
        self.state = state
        self._done: list[Goal] = []
        self._movers: list[Goal] = []
        self._leaders: list[Goal] = []
        self.violations: list[str] = []

    @property
    def done(self) -> list[Goal]:
        return self._done

    def finished(self, goal: Goal) -> None:
        """`goal` is optimized: from now on every move and leader change must keep it."""
        self._done.append(goal)
        self.guard(goal)

    def guard(self, goal: Goal) -> None:
        """Every move and leader change from now on must keep `goal` (a hard goal met from the start)."""
        if type(goal).accepts_move is not Goal.accepts_move and goal not in self._movers:
            self._movers.append(goal)
        if type(goal).accepts_leader is not Goal.accepts_leader and goal not in self._leaders:
            self._leaders.append(goal)

    def can_move(self, p: int, s: int, dst: int, ignore: tuple[type, ...] = ()) -> bool:
        st = self.state
        if not st.structurally_ok(p, s, dst):
            return False
        for g in self._movers:
            if ignore and isinstance(g, ignore):
                continue
            if not g.accepts_move(st, p, s, dst):
                return False
        return True

    def can_lead(self, p: int, s: int) -> bool:
        st = self.state
        if not st.can_lead(p, s):
            return False
        return all(g.accepts_leader(st, p, s) for g in self._leaders)

    def lead(self, p: int, s: int) -> None:
        self.state.set_leader(p, s)

    def move(self, p: int, s: int, dst: int) -> None:
        self.state.move_replica(p, s, dst)

    def swap(
        self,
        p: int,
        s: int,
        dst: int,
        back: Iterable[int],
        count_goals: tuple[type, ...],
        accept: Callable[[int, int], bool] = lambda q, t: True,
    ) -> bool:
        """Move (p, s) to dst past the replica-count caps, then the first acceptable replica of `back`
        (flat slot ids on dst) to p's old broker, so counts end where they were. Undone if none can go."""
        st = self.state
        src = int(st.rep[p, s])
        if not self.can_move(p, s, dst, ignore=count_goals):
            return False
        self.move(p, s, dst)
        for f in back:
            q, t = divmod(int(f), st.R)
            if q != p and accept(q, t) and self.can_move(q, t, src):
                self.move(q, t, src)
                return True
        st.move_replica(p, s, src)
        return False
