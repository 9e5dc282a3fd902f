"""Which builds of the poll kernels and the engine run (`sim/poll_kernels.py`, `sim/engine.py`).

The poll kernels are in the simulator's compiled-together set (`sim.COMPILED_TOGETHER`):
`sim/__init__.py` decides, for all seven at once, whether their fresh builds run or their sources,
and this module re-exports the poll kernels as that decision imported them. The engine is chosen on
its own, by content (`kafka_rebalance.native`: a build only when made from the source now present):
the Cython heap (`sim/native_engine.pyx`, docs/sim-native.md) when its build is fresh, else
engine.py's mypyc build when fresh, else engine.py itself, which is the reference. Every leg gives
the same results (tests/test_sim_poll_kernels.py, tests/test_sim_native_engine.py,
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
NATIVE_ENGINE = native.cython_build(__package__, "native_engine")  # None: absent or stale
ENGINE = NATIVE_ENGINE if NATIVE_ENGINE is not None else native.load(engine)


def engine_build(module: object = None) -> str:
    """Which build of the event loop `module` (default: ENGINE) is: "cython" (native_engine.pyx),
    "mypyc" (engine.py's build) or "source" (engine.py as it is, or anything that is not a module
    file, as bench/sim_event_mix.py's counting engine)."""
    file = getattr(ENGINE if module is None else module, "__file__", None)  # None: not a module
    if native.is_fresh_build(file, ".pyx"):
        return "cython"
    return "mypyc" if native.is_fresh_build(file) else "source"


def is_compiled() -> bool:
    """Are compiled builds of the poll kernels and the engine the ones in use?"""
    return native.is_compiled(KERNELS) and engine_build() != "source"
