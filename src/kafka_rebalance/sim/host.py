"""What the simulated member and coordinator need from the world that drives them.

`world.Simulation` satisfies both protocols. Typing the member and the
coordinator against these, rather than against the world itself, keeps the
dependency one way: the world imports the member and the coordinator, and
neither imports the world.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
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


class MemberHost(WorldBase, Protocol):
    """The world as a member sees it: its network, its coordinator and the books it keeps."""

    coord: Any  # the coordinator node (receive, heartbeat_stopped)
    topic_names: tuple[str, ...]
    processed: int
    duplicates: int
    rand: Callable[[], float]
    rng: random.Random  # the seeded generator rand() draws from

    def send(self, member: Any, kind: str, req: Any) -> None: ...
    def send_leave(self, member: Any, kind: str, req: Any) -> None: ...
    def commit(self, m: Any, offsets: dict[int, int], why: str, answer: bool = False) -> None: ...
    def coordinator_retry_time(self, now: int, backoff: int) -> int: ...
    def group_needs_heartbeats(self) -> bool: ...
    def partition_counts(self) -> dict[str, int]: ...
    def set_available_many(self, ps: Iterable[int], now: int, name: str) -> None: ...
    def set_unavailable_many(self, ps: Iterable[int], now: int) -> None: ...
    def add_paused(self, m: Any, ms: int) -> None: ...
    def revoke(self, m: Any, ps: Sequence[int], why: str) -> None: ...
    def lose(self, m: Any, ps: Sequence[int], why: str) -> None: ...
    def assigned(self, m: Any, added: Any, owned: Any) -> None: ...
    def leader_assign(self, m: Any, r: Any) -> dict[str, list[int]]: ...


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
