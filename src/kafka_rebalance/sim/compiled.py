"""Which builds of the simulator's compiled modules run (`sim/poll_kernels.py`, `sim/engine.py`):
the mypyc ones that `pip install` made, only when each was built from the source now present
(`kafka_rebalance.native`: a content check, not mtimes); else the source itself. Both give the same
results (tests/test_sim_poll_kernels.py, tests/test_sim_fingerprint_legs.py).

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
