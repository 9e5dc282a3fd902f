"""Which build of `sim/poll_kernels.py` runs: the mypyc one that `pip install` made, unless it is
older than its source (an edited kernel whose build was not redone would otherwise shadow the edit);
then, or without a build, the source itself. Both give the same results (tests/test_sim_poll_kernels.py).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from . import poll_kernels


def _load() -> ModuleType:
    built = Path(poll_kernels.__file__ or "")
    if built.suffix == ".py":
        return poll_kernels
    source = built.with_name("poll_kernels.py")
    try:
        stale = source.stat().st_mtime > built.stat().st_mtime
    except OSError:
        stale = False
    if not stale:
        return poll_kernels
    spec = importlib.util.spec_from_file_location(f"{__package__}._poll_kernels_source", source)
    if spec is None or spec.loader is None:
        return poll_kernels
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


KERNELS = _load()


def is_compiled() -> bool:
    """Is the compiled build of the poll kernels the one in use?"""
    return Path(KERNELS.__file__ or "").suffix != ".py"
