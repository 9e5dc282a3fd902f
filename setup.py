"""Optional compiled hot paths: `src/kafka_rebalance/assign/kernels*.py` built with mypyc.

The build is optional: without mypyc, without a C compiler, or when it fails for any
reason, the install goes on and the module stays plain Python (the assignors then use
their numpy paths). KAFKA_REBALANCE_PURE=1 skips the compile on purpose. Everything
else about the package is in pyproject.toml.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

COMPILED = [
    "src/kafka_rebalance/assign/kernels.py",
    "src/kafka_rebalance/assign/kernels_heterogeneous.py",
    "src/kafka_rebalance/assign/kernels_sticky.py",
    "src/kafka_rebalance/sim/poll_kernels.py",
]
PLACEHOLDER = Extension("kafka_rebalance.assign.kernels", sources=COMPILED)


def _remove_stale_builds() -> None:
    """A failed build must not leave an older compiled kernels module in the tree (it would shadow
    kernels.py)."""
    folder = Path(COMPILED[0]).parent
    # the modules, and mypyc's shared library (src/<hash>__mypyc... for a group of modules)
    for pattern in ("kernels*.so", "kernels*.pyd"):
        for stale in [*folder.glob(pattern), *Path("src").glob("*__mypyc*")]:
            stale.unlink(missing_ok=True)


def _warn(what: str, error: BaseException) -> None:
    _remove_stale_builds()
    print(
        f"kafka-rebalance: {what} ({type(error).__name__}: {error}); the pure-Python path is used",
        file=sys.stderr,
    )


class OptionalMypycBuild(build_ext):
    """build_ext that swaps the placeholder for mypyc's extensions, and never fails the install."""

    def finalize_options(self) -> None:
        self.distribution.ext_modules = self._mypyc_extensions()
        super().finalize_options()

    @staticmethod
    def _mypyc_extensions() -> list[Extension]:
        if os.environ.get("KAFKA_REBALANCE_PURE"):
            _remove_stale_builds()
            print(
                "kafka-rebalance: KAFKA_REBALANCE_PURE is set: the kernels stay plain Python",
                file=sys.stderr,
            )
            return []
        try:
            from mypyc.build import mypycify

            # --config-file: pyproject's [tool.mypy] checks the whole package; here only this file
            return mypycify(
                ["--config-file", os.devnull, "--follow-imports=skip", *COMPILED],
                opt_level="3",
                target_dir="build/mypyc",
            )
        except (Exception, SystemExit) as e:  # noqa: BLE001 - optional: any failure -> pure path
            _warn("mypyc could not translate the assignor kernels", e)
            return []

    def run(self) -> None:
        try:
            super().run()
        except (Exception, SystemExit) as e:  # noqa: BLE001 - e.g. no C compiler
            _warn("the assignor kernels could not be compiled", e)

    def get_outputs(self) -> list[str]:
        try:
            return super().get_outputs()
        except Exception:  # noqa: BLE001
            return []


setup(ext_modules=[PLACEHOLDER], cmdclass={"build_ext": OptionalMypycBuild})
