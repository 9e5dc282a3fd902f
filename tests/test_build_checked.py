"""KAFKA_REBALANCE_CYTHON_CHECKED=1 (setup.py): the Cython modules built with boundscheck,
wraparound and initializedcheck on, so that an index out of range raises instead of reading past an
array. A `.pyx`'s own `# cython:` header wins over cythonize's directives, so setup.py translates
copies with those turned on (`checked_copies`). Builds nothing: the copies are compared with the
sources, and one is translated to C to show that the checks are there.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from types import ModuleType

import pytest

from compiled_legs import from_source

ROOT = Path(__file__).resolve().parent.parent
SETUP: ModuleType = from_source(ROOT / "setup.py", "kafka_rebalance_setup_checked")
OFF = re.compile(r"\b(boundscheck|wraparound|initializedcheck)=False\b")


@pytest.fixture
def copies(tmp_path: Path) -> Path:
    cwd = os.getcwd()
    os.chdir(ROOT)  # setup.py runs from the project's root
    try:
        return SETUP.checked_copies(tmp_path / "checked")
    finally:
        os.chdir(cwd)


def test_every_cython_source_is_copied_with_its_checks_on(copies: Path) -> None:
    turned = 0
    for source in SETUP.CYTHON:
        original = (ROOT / source).read_text(encoding="utf-8")
        copy = (copies / Path(source).relative_to("src")).read_text(encoding="utf-8")
        assert not OFF.search(copy), source
        assert OFF.sub(r"\1=True", original) == copy  # nothing else changed
        turned += len(OFF.findall(original))
    assert turned >= 20  # (10 of the 11 turn boundscheck and wraparound off in their header)
    pxds = sorted(p.relative_to(ROOT / "src") for p in (ROOT / "src").rglob("*.pxd"))
    assert pxds and all((copies / p).is_file() for p in pxds)  # what their cimports read
    assert (copies / "kafka_rebalance" / "sim" / "__init__.py").is_file()


def test_the_copy_translates_to_checked_c(copies: Path, tmp_path: Path) -> None:
    """native_engine's slot lists: indexed without a check by the build, with one by the copy."""
    cython = pytest.importorskip("Cython.Compiler.Main")
    out = {}
    for name, folder in (("build", ROOT / "src"), ("checked", copies)):
        pyx = folder / "kafka_rebalance" / "sim" / "native_engine.pyx"
        c_file = tmp_path / f"{name}.c"
        options = cython.CompilationOptions(
            language_level=3,
            output_file=str(c_file),
            include_path=[str(folder)],
            compiler_directives=(
                dict.fromkeys(("boundscheck", "wraparound", "initializedcheck"), True)
                if name == "checked"
                else {}
            ),
        )
        result = cython.compile_single(str(pyx), options, "kafka_rebalance.sim.native_engine")
        assert result.num_errors == 0
        out[name] = c_file.read_text(encoding="utf-8")
    unchecked = "__Pyx_PyList_GET_ITEM(__pyx_v_self->_fns"
    assert unchecked in out["build"] and unchecked not in out["checked"]
    checked = r"__Pyx_GetItemInt_List\(__pyx_v_self->_fns, [^;]*?, 1, 1, 1[,)]"  # wrap, bounds
    assert re.search(checked, out["checked"]) and not re.search(checked, out["build"])
