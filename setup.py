"""Optional compiled hot paths: the modules in COMPILED (the assignors' kernels, model_fields.py,
the classic group state machine, the simulator's engine, coordinator and poll loops) built with
mypyc, and the Cython kernels in CYTHON (`.pyx`, each with a Python twin that stays the reference).

The build is optional: without mypyc or Cython, without a C compiler, or when it fails for any
reason, the install goes on and the modules stay plain Python (the assignors then use
their numpy paths; a Cython kernel that failed alone leaves the mypyc builds in place, its
callers then use its twin). KAFKA_REBALANCE_PURE=1 skips the compile on purpose;
KAFKA_REBALANCE_CYTHON_CHECKED=1 turns the Cython modules' index checks on. Beside each
built module goes a stamp, `<name>.build-sha256`, the SHA-256 of the source it was built
from (for a Cython module, of its `.pyx` and the `.pxd` files the build read: `cython_digest`):
`kafka_rebalance.native` uses a build only when its stamp matches the source now present. Every rebuild, and every failed or skipped one, first removes all compiled
artefacts (modules, stamps, mypyc's shared library). Everything else about the package is
in pyproject.toml.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

COMPILED = [
    "src/kafka_rebalance/model_fields.py",
    "src/kafka_rebalance/assign/kernels.py",
    "src/kafka_rebalance/assign/kernels_hashmap.py",
    "src/kafka_rebalance/assign/kernels_heterogeneous.py",
    "src/kafka_rebalance/assign/kernels_sticky.py",
    "src/kafka_rebalance/assign/kernels_sticky_general.py",
    "src/kafka_rebalance/assign/kernels_sticky_moves.py",
    "src/kafka_rebalance/assign/sticky_general.py",
    "src/kafka_rebalance/sim/poll_kernels.py",
    "src/kafka_rebalance/sim/engine.py",
    "src/kafka_rebalance/group/classic_member.py",
    "src/kafka_rebalance/group/classic_group_base.py",
    "src/kafka_rebalance/group/classic_group_join.py",
    "src/kafka_rebalance/group/classic_group.py",
    "src/kafka_rebalance/group/consumer_group_values.py",
    "src/kafka_rebalance/group/consumer_group_model.py",
    "src/kafka_rebalance/group/consumer_group_reconcile.py",
    "src/kafka_rebalance/group/consumer_group_target.py",
    "src/kafka_rebalance/group/consumer_group_tx.py",
    "src/kafka_rebalance/group/consumer_group_steady.py",
    "src/kafka_rebalance/group/consumer_group.py",
    "src/kafka_rebalance/group/consumer_group_member.py",
    "src/kafka_rebalance/sim/coordinator.py",
    "src/kafka_rebalance/sim/member_rebalance.py",
    "src/kafka_rebalance/sim/member.py",
    "src/kafka_rebalance/sim/world_core.py",
    "src/kafka_rebalance/sim/world.py",
    "src/kafka_rebalance/sim/consumer_world.py",
]
# Cython kernels (optional, as the mypyc ones): `.pyx` sources, generated C under build/cython
CYTHON = [
    "src/kafka_rebalance/assign/uniform_native.pyx",
    "src/kafka_rebalance/assign/uniform_native_plan.pyx",
    "src/kafka_rebalance/assign/uniform_native_balance.pyx",
    "src/kafka_rebalance/assign/range_native.pyx",
    "src/kafka_rebalance/sim/native_engine.pyx",
    "src/kafka_rebalance/sim/native_members.pyx",
    "src/kafka_rebalance/sim/native_books.pyx",
    "src/kafka_rebalance/sim/native_batch_time.pyx",
    "src/kafka_rebalance/sim/native_group_core.pyx",
    "src/kafka_rebalance/sim/native_group_handlers.pyx",
    "src/kafka_rebalance/sim/native_group.pyx",
    "src/kafka_rebalance/sim/native_member_messages.pyx",
    "src/kafka_rebalance/sim/native_world_client.pyx",
    "src/kafka_rebalance/sim/native_world_member.pyx",
    "src/kafka_rebalance/sim/native_world_base.pyx",
    "src/kafka_rebalance/sim/native_world.pyx",
    "src/kafka_rebalance/sim/native_coordinator.pyx",
]
# compile arguments beside -O3, per module: the native core's doubles must be the reference's, so
# no `a * b + c` may become a fused multiply-add (docs/sim-native.md, "Floats"). Every module of the
# native simulator core (sim/native_*.pyx) gets it, floats or not (it costs nothing without them):
# a `cdef inline` function of a `.pxd` compiles into each module that cimports it, with that
# module's flags, so a module without floats of its own may still compute the reference's doubles.
CYTHON_ARGS = {
    s: ["-ffp-contract=off"]
    for s in CYTHON
    if Path(s).parent.name == "sim" and Path(s).name.startswith("native_")
}
PLACEHOLDER = Extension("kafka_rebalance.assign.kernels", sources=COMPILED)
# KAFKA_REBALANCE_CYTHON_CHECKED=1: the Cython modules built with boundscheck, wraparound and
# initializedcheck on (an index out of range raises IndexError instead of reading past the end)
CHECKED_ENV = "KAFKA_REBALANCE_CYTHON_CHECKED"
_CHECKS_OFF = re.compile(r"\b(boundscheck|wraparound|initializedcheck)=False\b")


STAMP_SUFFIX = ".build-sha256"  # kafka_rebalance.native.STAMP_SUFFIX


def _module_name(source: str) -> str:
    return ".".join(Path(source).relative_to("src").with_suffix("").parts)


def compiled_artefacts(root: Path) -> list[Path]:
    """Every compiled artefact under `root` (a source tree or a build/lib folder): each COMPILED
    module's builds and stamp, and mypyc's shared library (`<hash>__mypyc...` at the top); also
    any build or stamp in the package that no list names any more (review 5 F3: a module taken
    off COMPILED kept its old build, which shadowed its .py). The package ships no other binary."""
    found: list[Path] = []
    for source in COMPILED + CYTHON:
        rel = Path(source).relative_to("src")
        folder = root / rel.parent
        for pattern in (f"{rel.stem}.*.so", f"{rel.stem}.*.pyd", f"{rel.stem}{STAMP_SUFFIX}"):
            found.extend(folder.glob(pattern))
    for pattern in ("*.so", "*.pyd", f"*{STAMP_SUFFIX}"):
        found.extend((root / "kafka_rebalance").rglob(pattern))
    found.extend(root.glob("*__mypyc*"))
    return sorted(set(found))


def _cython_deps() -> ModuleType:
    """src/kafka_rebalance/cython_deps.py, loaded by its path: the `.pxd` scan and `cython_digest`
    that the loader (`kafka_rebalance.native`) uses, one copy, without importing the package (a
    build environment has none of its dependencies; that module imports the standard library
    only)."""
    path = Path(__file__).resolve().parent / "src" / "kafka_rebalance" / "cython_deps.py"
    spec = importlib.util.spec_from_file_location("kafka_rebalance_setup_cython_deps", path)
    if spec is None or spec.loader is None:  # pragma: no cover - a file always has a loader
        raise ImportError(path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# a Cython build's stamp: its `.pyx` and the `.pxd` files the build reads (the loader's digest)
cython_digest = _cython_deps().cython_digest


def source_digests() -> dict[str, str]:
    """{source: SHA-256} of every COMPILED and CYTHON source, as they are now (before the compile);
    a CYTHON source's covers the `.pxd` files its build reads (`cython_digest`)."""
    digests = {source: hashlib.sha256(Path(source).read_bytes()).hexdigest() for source in COMPILED}
    digests.update({source: cython_digest(Path(source)) for source in CYTHON})
    return digests


def remove_compiled(roots: list[Path]) -> None:
    """A pure, failed or new build must leave no older compiled module behind: a build shadows its
    .py, and a module shim without mypyc's shared library cannot even be imported."""
    for root in roots:
        for stale in compiled_artefacts(root):
            stale.unlink(missing_ok=True)


def _remove_stale_builds() -> None:
    remove_compiled([Path("src"), *Path("build").glob("lib*")])


def _warn(what: str, error: BaseException) -> None:
    _remove_stale_builds()
    print(
        f"kafka-rebalance: {what} ({type(error).__name__}: {error}); the pure-Python path is used",
        file=sys.stderr,
    )


def checked_copies(out: Path) -> Path:
    """The package's `.pyx` and `.pxd` files (and `__init__.py`, for the cimports' packages) copied
    under `out` with boundscheck, wraparound and initializedcheck turned on, for cythonize to read in
    place of `src` (returned): a file's own `# cython:` header wins over cythonize's directives, and
    CYTHON's headers turn those checks off. Slower: for tests, not for measuring."""
    shutil.rmtree(out, ignore_errors=True)  # nothing left from an older tree
    for source in sorted(Path("src").rglob("*")):
        if source.suffix in (".pyx", ".pxd") or source.name == "__init__.py":
            target = out / source
            target.parent.mkdir(parents=True, exist_ok=True)
            text = source.read_text(encoding="utf-8")
            if source.suffix != ".py":
                text = _CHECKS_OFF.sub(r"\1=True", text)
            target.write_text(text, encoding="utf-8")
    return out / "src"


class OptionalMypycBuild(build_ext):
    """build_ext that swaps the placeholder for mypyc's and Cython's extensions, and never fails
    the install."""

    def finalize_options(self) -> None:
        # The stamps' digests are taken before mypyc reads the sources: a source edited during the
        # build (minutes) then leaves a stamp that does not match it, so the build is not used;
        # hashing after the compile would stamp an old build as fresh (review 2 F5).
        self.source_digests = source_digests()
        self.failed: set[str] = set()  # Cython extensions whose compile failed (not stamped)
        _remove_stale_builds()
        if os.environ.get("KAFKA_REBALANCE_PURE"):
            print(
                "kafka-rebalance: KAFKA_REBALANCE_PURE is set: the kernels stay plain Python",
                file=sys.stderr,
            )
            self.distribution.ext_modules = []
        else:
            self.distribution.ext_modules = self._mypyc_extensions() + self._cython_extensions()
        super().finalize_options()

    @staticmethod
    def _cython_extensions() -> list[Extension]:
        """CYTHON's kernels translated to C (under build/cython); [] without Cython."""
        try:
            from Cython.Build import cythonize

            root = Path("src")
            directives: dict[str, object] = {"language_level": "3"}
            if os.environ.get(CHECKED_ENV) == "1":
                print(f"kafka-rebalance: {CHECKED_ENV}=1: index checks on", file=sys.stderr)
                root = checked_copies(Path("build/cython-checked"))
                directives.update(boundscheck=True, wraparound=True, initializedcheck=True)
            return list(
                cythonize(
                    [
                        Extension(
                            _module_name(s),
                            [str(root / Path(s).relative_to("src"))],
                            extra_compile_args=["-O3", *CYTHON_ARGS.get(s, [])],
                        )
                        for s in CYTHON
                    ],
                    build_dir="build/cython",
                    include_path=[str(root)],  # `cimport`s between the package's modules (.pxd)
                    compiler_directives=directives,
                    quiet=True,
                    force=True,
                )
            )
        except (Exception, SystemExit) as e:  # noqa: BLE001 - optional: their twins run
            print(
                f"kafka-rebalance: Cython could not translate {', '.join(CYTHON)} "
                f"({type(e).__name__}: {e}); their Python twins are used",
                file=sys.stderr,
            )
            return []

    @staticmethod
    def _mypyc_extensions() -> list[Extension]:
        try:
            from mypyc.build import mypycify

            # --config-file: pyproject's [tool.mypy] checks the whole package; here only these files.
            # --ignore-missing-imports: pip builds in an isolated environment without the runtime
            # dependencies (numpy, imported by sticky_general.py): they are plain Python imports
            # to the compiled code (typed Any), and must not make the whole build fall back.
            return mypycify(
                [
                    "--config-file",
                    os.devnull,
                    "--follow-imports=skip",
                    "--ignore-missing-imports",
                    *COMPILED,
                ],
                opt_level="3",
                target_dir="build/mypyc",
            )
        except (Exception, SystemExit) as e:  # noqa: BLE001 - optional: any failure -> pure path
            _warn("mypyc could not translate the kernels", e)
            return []

    def build_extension(self, ext: Extension) -> None:
        """A Cython kernel that fails to compile is left out alone (its twin runs); a mypyc
        failure fails the whole build (run() then falls back to the pure path)."""
        if ext.name not in {_module_name(s) for s in CYTHON}:
            super().build_extension(ext)
            return
        try:
            super().build_extension(ext)
        except (Exception, SystemExit) as e:  # noqa: BLE001 - e.g. no C compiler
            self.failed.add(ext.name)
            for built in (Path(self.get_ext_fullpath(ext.name)),):
                built.unlink(missing_ok=True)
            print(
                f"kafka-rebalance: {ext.name} could not be compiled ({type(e).__name__}: {e}); "
                "its Python twin is used",
                file=sys.stderr,
            )

    def run(self) -> None:
        try:
            super().run()
        except (Exception, SystemExit) as e:  # noqa: BLE001 - e.g. no C compiler
            _warn("the kernels could not be compiled", e)
            return
        self._write_stamps()

    def _write_stamps(self) -> None:
        """Beside each built module (in build/lib, and in the source tree when in place), the
        SHA-256 of the source it was built from."""
        built = {ext.name for ext in self.extensions} - getattr(self, "failed", set())
        for source in COMPILED + CYTHON:
            name = _module_name(source)
            if name not in built:
                continue
            digest = self.source_digests[source]
            filename = self.get_ext_filename(self.get_ext_fullname(name))
            targets = [Path(self.build_lib) / filename]
            if self.inplace:
                targets.append(Path(self.get_ext_fullpath(name)))
            for target in targets:
                if target.exists():
                    target.with_name(Path(source).stem + STAMP_SUFFIX).write_text(
                        digest + "\n", encoding="ascii"
                    )

    def get_outputs(self) -> list[str]:
        try:
            return super().get_outputs()
        except Exception:  # noqa: BLE001
            return []


if __name__ == "__main__":  # setuptools runs this file as __main__; tests import the helpers
    setup(ext_modules=[PLACEHOLDER], cmdclass={"build_ext": OptionalMypycBuild})
