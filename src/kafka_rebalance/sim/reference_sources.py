"""The simulator's reference path from its sources, beside whatever compiled builds are installed.

The compiled builds (mypyc, setup.py's COMPILED) are used when fresh and must give the sources'
results byte for byte; comparing the two, or observing the reference from inside (an interpreted
subclass, which a compiled class refuses), needs the sources loaded as plain Python under other
names: the poll kernels, the engine, the group's compiled set and the simulator's compiled-together
set (its world, members and coordinators), each binding the others' sources. `use_sources` makes a
run take them; `RecordingGroup` keeps every call the reference coordinator makes to its group, to be
replayed through another implementation (the native group twin).

Importing this module loads those sources (a second copy of each; a fraction of a second): for
tests/test_sim_fingerprint_legs.py (the pure leg), tests/test_sim_native_group_replay.py and
bench/sim_group_replay.py, never imported by a run.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from .. import group, native, sim
from ..assign import range as range_mod
from ..assign import roundrobin, sticky, uniform
from . import compiled

HERE = Path(compiled.__file__).resolve().parent


def _from_source(source: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, source)
    if spec is None or spec.loader is None:  # pragma: no cover - a file always has a loader
        raise ImportError(source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PURE_POLL = _from_source(HERE / "poll_kernels.py", "pure_poll_kernels_legs")
PURE_ENGINE = _from_source(HERE / "engine.py", "pure_engine_legs")
ASSIGNORS = (uniform, range_mod, roundrobin, sticky)
# the group's compiled set (the classic and the KIP-848 group, group/__init__.py) from source
PURE_GROUP = native.sources_of("kafka_rebalance.group", group.COMPILED_MODULES)
PURE_CLASSIC = PURE_GROUP["classic_group"]


@contextmanager
def group_sources() -> Iterator[None]:
    """The group's sources in sys.modules and on the package while the simulator's sources load,
    so that theirs bind the sources' functions and values (a source reading the compiled group
    would run it: the KIP-848 world reads the group's values and calls its functions)."""
    package = sys.modules["kafka_rebalance.group"]
    saved = {name: sys.modules.get(f"kafka_rebalance.group.{name}") for name in PURE_GROUP}
    try:
        for name, module in PURE_GROUP.items():
            sys.modules[f"kafka_rebalance.group.{name}"] = module
            setattr(package, name, module)
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(f"kafka_rebalance.group.{name}", None)
                if hasattr(package, name):
                    delattr(package, name)
            else:
                sys.modules[f"kafka_rebalance.group.{name}"] = old
                setattr(package, name, old)


# compiled together (sim/__init__.py), so loaded from source together; the KIP-848 world with
# them, since it subclasses their world and member; all of them on the group's sources
with group_sources():
    PURE_SIM = native.sources_of("kafka_rebalance.sim", sim.COMPILED_TOGETHER)
PURE_COORDINATOR = PURE_SIM["coordinator"]
PURE_MEMBER = PURE_SIM["member"]
PURE_WORLD = PURE_SIM["world"]
PURE_CORE = PURE_SIM["world_core"]


class Patcher(Protocol):
    """What `use_sources` patches with (pytest's MonkeyPatch is one; `patched` makes another)."""

    def setattr(self, target: object, name: str, value: object) -> None: ...

    def setitem(self, mapping: MutableMapping[Any, Any], name: Any, value: Any) -> None: ...


def use_sources(patch: Patcher) -> None:
    """Make `api.simulate` run on the sources: the assignors' reference paths, the poll kernels,
    the engine, the classic group, the coordinator, world and members (undone by `patch`)."""
    for module in ASSIGNORS:
        patch.setattr(module, "USE_COMPILED", False)
    for name in ("changed_positions", "fetch", "finish", "next_arrival", "uncommitted"):
        patch.setattr(PURE_MEMBER, f"_k_{name}", getattr(PURE_POLL, name))
    patch.setattr(PURE_COORDINATOR, "_k_store_commits", PURE_POLL.store_commits)
    patch.setattr(PURE_CORE, "ENGINE", PURE_ENGINE)
    patch.setattr(PURE_COORDINATOR, "ClassicGroup", PURE_CLASSIC.ClassicGroup)
    patch.setattr(PURE_COORDINATOR, "ClassicGroupConfig", PURE_CLASSIC.ClassicGroupConfig)
    patch.setattr(PURE_CORE, "KERNELS", PURE_POLL)
    # api.simulate imports its world classes when called: the sources'
    for name in ("world", "consumer_world"):
        patch.setitem(sys.modules, f"kafka_rebalance.sim.{name}", PURE_SIM[name])


class _Undo:
    """A `Patcher` that remembers what it replaced, for `patched` to put back."""

    def __init__(self) -> None:
        self.undo: list[tuple[Any, ...]] = []

    def setattr(self, target: object, name: str, value: object) -> None:
        self.undo.append(("attr", target, name, getattr(target, name)))
        setattr(target, name, value)

    def setitem(self, mapping: MutableMapping[Any, Any], name: Any, value: Any) -> None:
        missing = name not in mapping
        self.undo.append(("item", mapping, name, None if missing else mapping[name], missing))
        mapping[name] = value


@contextmanager
def patched() -> Iterator[Patcher]:
    """A `Patcher` whose changes are undone, last first, when the block ends."""
    patch = _Undo()
    try:
        yield patch
    finally:
        for entry in reversed(patch.undo):
            if entry[0] == "attr":
                setattr(entry[1], entry[2], entry[3])
            elif entry[4]:
                entry[1].pop(entry[2], None)
            else:
                entry[1][entry[2]] = entry[3]


class RecordingGroup(PURE_CLASSIC.ClassicGroup):  # type: ignore[name-defined]
    """The reference group, keeping each call the coordinator makes and its answer (`calls`, in
    order; `init`: its constructor's arguments). Every group made is appended to `made`."""

    made: list[RecordingGroup] = []

    def __init__(self, group_id: str, config: Any = None, **kw: Any) -> None:
        super().__init__(group_id, config, **kw)
        self.init = (group_id, config, kw)
        self.calls: list[tuple[str, tuple, Any]] = []
        RecordingGroup.made.append(self)

    def _record(self, method: str, args: tuple, answer: Any) -> Any:
        self.calls.append((method, args, answer))
        return answer

    def join(self, req: Any, now_ms: int) -> list:
        return self._record("join", (req, now_ms), super().join(req, now_ms))

    def sync(self, req: Any, now_ms: int) -> list:
        return self._record("sync", (req, now_ms), super().sync(req, now_ms))

    def heartbeat(self, req: Any, now_ms: int) -> list:
        return self._record("heartbeat", (req, now_ms), super().heartbeat(req, now_ms))

    def leave(self, req: Any, now_ms: int) -> list:
        return self._record("leave", (req, now_ms), super().leave(req, now_ms))

    def on_timer(self, key: tuple, payload: Any, now_ms: int) -> list:
        answer = super().on_timer(key, payload, now_ms)
        return self._record("on_timer", (key, payload, now_ms), answer)

    def validate_offset_commit(self, member_id: str, instance_id: Any, generation: int) -> Any:
        answer = super().validate_offset_commit(member_id, instance_id, generation)
        return self._record("validate_offset_commit", (member_id, instance_id, generation), answer)
