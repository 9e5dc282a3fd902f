"""Which builds of the poll kernels and the engine run (`sim/poll_kernels.py`, `sim/engine.py`).

The poll kernels are in the simulator's compiled-together set (`sim.COMPILED_TOGETHER`):
`sim/__init__.py` decides, for all seven at once, whether their fresh builds run or their sources,
and this module re-exports the poll kernels as that decision imported them. The engine is chosen on
its own (`kafka_rebalance.native`: its build only when made from the source now present, a content
check, not mtimes). Both legs give the same results (tests/test_sim_poll_kernels.py,
tests/test_sim_fingerprint_legs.py).

Import the engine through here (`ENGINE.EventLoop`), never `from .engine import EventLoop` at run
time: a stale build of engine.py would shadow its source.
"""

from __future__ import annotations

from types import ModuleType

from .. import native
from . import engine, poll_kernels


def _load() -> ModuleType:
    return native.load(poll_kernels)


KERNELS = _load()
ENGINE = native.load(engine)


def is_compiled() -> bool:
    """Are the compiled builds of the poll kernels and the engine the ones in use?"""
    return native.is_compiled(KERNELS) and native.is_compiled(ENGINE)
