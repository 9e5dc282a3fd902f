"""Compile a benchmark's own Cython driver (bench/<name>.pyx) and import it.

The drivers call the native simulator modules' C-level APIs through their `.pxd` files (cimported
from src/), which only Cython code can; they are built here, under build/bench-native, never
installed (`native_polls.py`: native_polls.pyx; `sim_group_replay.py`: group_tape.pyx; and
tests/test_sim_native_engine_c.py's tests/engine_c_driver.pyx, with `where`). Needs Cython (the dev
extras): ImportError without it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = ROOT / "build" / "bench-native"


def build(name: str, where: Path = HERE) -> ModuleType:
    """<where>/<name>.pyx (bench/ unless told) compiled with -O3 against the package's `.pxd`
    files, then imported."""
    from Cython.Build import cythonize
    from setuptools import Extension
    from setuptools.dist import Distribution

    ext = Extension(name, [str(where / f"{name}.pyx")], extra_compile_args=["-O3"])
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
    # loaded from the file just built, not by a search of sys.path: bench/native_polls.py is also
    # "native_polls" there, and which came first depended on the order tests ran
    built = cmd.get_ext_fullpath(name)
    loaded = sys.modules.get(name)
    if loaded is not None and getattr(loaded, "__file__", None) == built:
        return loaded
    spec = importlib.util.spec_from_file_location(name, built)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module
