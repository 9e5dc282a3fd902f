"""Assignor names -> factories, the one place the CLI, simulator and benchmarks look them up."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from ..errors import InputError
from .base import Assignor

# name -> (module, class). Imported lazily so a missing optional module only
# fails the assignor that needs it.
_FACTORIES: dict[str, tuple[str, str]] = {
    "range": ("range", "RangeAssignor"),
    "roundrobin": ("roundrobin", "RoundRobinAssignor"),
    "sticky": ("sticky", "StickyAssignor"),
    "cooperative-sticky": ("sticky", "CooperativeStickyAssignor"),
    "uniform": ("uniform", "UniformAssignor"),
    "server-range": ("server_range", "ServerRangeAssignor"),
}

NAMES: tuple[str, ...] = tuple(_FACTORIES)
CLIENT_SIDE: tuple[str, ...] = ("range", "roundrobin", "sticky", "cooperative-sticky")
SERVER_SIDE: tuple[str, ...] = ("uniform", "server-range")


def assignor_factory(name: str) -> Callable[[], Assignor]:
    """The class implementing `name`; raises InputError for an unknown name."""
    try:
        module, cls = _FACTORIES[name]
    except KeyError:
        raise InputError(
            f"unknown strategy {name!r} (known: {', '.join(NAMES)})", field="strategy"
        ) from None
    return getattr(importlib.import_module(f"{__package__}.{module}"), cls)


def get_assignor(name: str) -> Assignor:
    """A fresh assignor instance for `name`."""
    return assignor_factory(name)()
