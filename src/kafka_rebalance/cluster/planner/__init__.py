"""Reassignment planner: one goal per module behind `goal.Goal`, composed by `optimizer.plan`."""

from .optimizer import DEFAULT_PLAN_BAND, Mode, PlanResult, plan

__all__ = ["DEFAULT_PLAN_BAND", "Mode", "PlanResult", "plan"]
