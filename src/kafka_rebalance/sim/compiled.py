"""Which build of `sim/poll_kernels.py` runs: the mypyc one that `pip install` made, only when it
was built from the source now present (`kafka_rebalance.native`: a content check, not mtimes);
else the source itself. Both give the same results (tests/test_sim_poll_kernels.py).
"""

from __future__ import annotations

from types import ModuleType

from .. import native
from . import poll_kernels


def _load() -> ModuleType:
    return native.load(poll_kernels)


KERNELS = _load()


def is_compiled() -> bool:
    """Is the compiled build of the poll kernels the one in use?"""
    return native.is_compiled(KERNELS)
