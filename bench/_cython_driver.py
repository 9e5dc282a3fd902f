"""Compile a benchmark's own Cython driver (bench/<name>.pyx) and import it.

The drivers call the native simulator modules' C-level APIs through their `.pxd` files (cimported
from src/), which only Cython code can; they are built here, under build/bench-native, never
installed (`native_polls.py`: native_polls.pyx; `sim_group_replay.py`: group_tape.pyx). Needs
Cython (the dev extras): ImportError without it.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = ROOT / "build" / "bench-native"


def build(name: str) -> ModuleType:
    """bench/<name>.pyx compiled with -O3 against the package's `.pxd` files, then imported."""
    from Cython.Build import cythonize
    from setuptools import Extension
    from setuptools.dist import Distribution

    ext = Extension(name, [str(HERE / f"{name}.pyx")], extra_compile_args=["-O3"])
    dist = Distribution(
        {
            "ext_modules": cythonize(
                [ext], build_dir=str(OUT / "c"), include_path=[str(ROOT / "src")], quiet=True
            )
        }
    )
    cmd: Any = dist.get_command_obj("build_ext")
    cmd.build_lib, cmd.build_temp = str(OUT), str(OUT / "tmp")
    dist.run_command("build_ext")
    if str(OUT) not in sys.path:
        sys.path.insert(0, str(OUT))
    return importlib.import_module(name)
