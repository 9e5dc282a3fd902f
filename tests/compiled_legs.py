"""The compiled legs of the tests: when to skip them and when their absence is a failure.

`make test` sets KAFKA_REBALANCE_REQUIRE_COMPILED=1 when the install built the compiled modules
(their stamps exist): a compiled leg that would skip then fails, so a build that is silently not
used (stale, unloadable) cannot pass unnoticed. Elsewhere (a pure install, no compiler) the
compiled legs skip, saying why.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

from kafka_rebalance import native

REQUIRED = os.environ.get("KAFKA_REBALANCE_REQUIRE_COMPILED", "") == "1"


def no_compiled_leg(reason: str) -> NoReturn:
    """Skip (or, under KAFKA_REBALANCE_REQUIRE_COMPILED=1, fail) a test whose compiled leg is absent."""
    if REQUIRED:
        pytest.fail(
            f"{reason}; KAFKA_REBALANCE_REQUIRE_COMPILED=1 (make test after a build that "
            "succeeded) requires the compiled leg"
        )
    pytest.skip(reason)


def require_build(name: str, package: str = "kafka_rebalance.sim") -> ModuleType:
    """The fresh Cython build of `package.name` (setup.py's CYTHON); without one the test skips,
    or fails under KAFKA_REBALANCE_REQUIRE_COMPILED=1 (`no_compiled_leg`): the one rule for a
    missing or stale build."""
    build = native.cython_build(package, name)
    if build is None:
        path = package.removeprefix("kafka_rebalance.").replace(".", "/")
        no_compiled_leg(f"no fresh Cython build of {path}/{name}.pyx (missing or stale)")
    return build


def from_source(source: Path, name: str) -> ModuleType:
    """A compiled module's source loaded as plain Python under `name`, whatever the install built."""
    spec = importlib.util.spec_from_file_location(name, source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CountingKernel:
    """A kernel module with one of its functions counted: the groups it took (a result) and
    declined (None, the caller then runs the reference path). A test that compares a kernel with
    the reference must also show the kernel took its share, or a kernel that always declines passes."""

    def __init__(self, module: ModuleType, function: str) -> None:
        self.module = module
        self.accepted = 0
        self.declined = 0
        inner = getattr(module, function)

        def counted(*args: object) -> object:
            out = inner(*args)
            if out is None:
                self.declined += 1
            else:
                self.accepted += 1
            return out

        setattr(self, function, counted)
