"""What the simulated coordinator needs from the world that drives it.

`world.Simulation` satisfies these protocols. Typing the coordinator against them, rather than
against the world itself, keeps the dependency one way: the world imports the coordinator, which
does not import the world. The classic member (`member.py`, `member_rebalance.py`) is typed
against the concrete `world_core.WorldCore` instead: mypyc compiles them together, and a concrete
class is what turns the member's reads of the world into direct field reads and calls (through a
Protocol they stay generic attribute lookups).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .engine import EventLoop
from .partitions import PartitionTable
from .scenario import Scenario


class WorldBase(Protocol):
    """What every simulated party reads: the scenario, the clock, the partitions, the event log."""

    sc: Scenario
    loop: EventLoop
    parts: PartitionTable
    wants_events: bool

    def emit(
        self,
        kind: str,
        member: str = "",
        generation: int | None = None,
        partitions: Sequence | None = None,
        detail: dict | None = None,
    ) -> None: ...


class CoordinatorHost(WorldBase, Protocol):
    """The world as the coordinator node sees it: replies to clients and the generation books."""

    members: dict[str, Any]
    pending_cause: str

    def reply(self, client: str, kind: str, resp: Any) -> None: ...
    def reply_many(self, replies: list) -> None: ...
    def draw(self, samples: tuple[int, ...]) -> int: ...
    def on_generation(self, generation: int) -> None: ...


class SimCoordinator(Protocol):
    """The coordinator node a world drives: classic (sim/coordinator.py) or KIP-848 (sim/consumer_world.py)."""

    up_at: int

    def receive(self, kind: str, req: Any, name: str) -> None: ...
    def needs_real_heartbeats(self) -> bool: ...
    def failover(self, down_ms: int) -> None: ...

    @property
    def commit(self) -> Callable[..., Any]: ...
