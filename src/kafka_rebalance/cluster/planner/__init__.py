"""Reassignment planner: one goal per module behind `goal.Goal`, composed by `optimizer.plan`."""

from .optimizer import DEFAULT_PLAN_BAND, GoalReport, Mode, PlanResult, plan
from .options import PlanOptions
from .registry import DEFAULT_GOALS, GOAL_NAMES, parse_goals

__all__ = [
    "DEFAULT_GOALS",
    "DEFAULT_PLAN_BAND",
    "GOAL_NAMES",
    "GoalReport",
    "Mode",
    "PlanOptions",
    "PlanResult",
    "parse_goals",
    "plan",
]
