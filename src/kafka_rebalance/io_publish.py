"""Publishing outputs so that a reader sees the old ones or the new ones, never a mix or half a file.

Every output is first written to a hidden temporary beside its target, named
`.NAME.kr-PID-RAND.tmp` (a folder is staged the same way), then renamed over it. A run
that is killed leaves its temporaries behind; the next run that writes into the same folder
removes them: the name says whose they are, and a temporary whose process is gone (or that
is older than STALE_AGE_S) is stale.

Several outputs of one command (a plan and its election file, the batch files) are published
as a set: all are written and synced first, then a journal `.NAME.kr-PID-RAND.publish`
listing the renames is written (atomically), then the renames run, then the journal goes. A
kill between two renames leaves the journal; the next run finishes the renames from it
before anything else, so the set ends complete (the new outputs), never a mix.

A folder (the demo's results) is switched in one step with renameat2(RENAME_EXCHANGE) where
the system has it; elsewhere the old folder is first renamed to `.NAME.kr-PID-RAND.old`,
which the next run puts back if the switch did not finish.

Output paths are checked before any work (`check_output_paths`): a directory given as a file,
a parent that is a file or cannot be created, no permission, two outputs on one path.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from .errors import InputError
from .io_util import _TEMP, clean_stale, fsync_dir, temp_name, write_files  # noqa: F401 - re-exported

# -- checking output paths before any work -------------------------------------------------


def check_output_paths(
    outputs: Mapping[str, str | os.PathLike | None], folders: Sequence[str] = ()
) -> None:
    """Refuse (InputError, naming the flag and the path) an output that cannot be written.

    `outputs` maps a flag to a file path (None: not asked for); flags in `folders` name a folder
    to write into. Nothing is created here.
    """
    seen: dict[str, str] = {}
    for flag, path in outputs.items():
        if path is None or path == "":
            continue
        p = Path(path)
        folder = flag in folders
        if not folder and (p.is_dir() or str(path).endswith(os.sep)):
            raise InputError(f"{path} is a directory; give a file name", field=flag)
        if folder and p.exists() and not p.is_dir():
            raise InputError(f"{path} is a file; give a folder", field=flag)
        _check_parent(p if folder and p.is_dir() else p.parent, flag, path)
        key = os.path.realpath(p)
        if key in seen:
            raise InputError(
                f"{path} is also the output of {seen[key]}: give each output its own path",
                field=flag,
            )
        seen[key] = flag


def _check_parent(parent: Path, flag: str, path: str | os.PathLike) -> None:
    probe = parent
    while not probe.exists():
        if probe.is_symlink():
            raise InputError(f"{path}: {probe} is a broken link", field=flag)
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        raise InputError(f"{path}: {probe} is not a folder", field=flag)
    if _read_only(probe):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fspath(path))
    if not os.access(probe, os.W_OK | os.X_OK):
        raise InputError(f"{path}: no permission to write in {probe}", field=flag)
    # folders still to be created: this file system must take new ones (/proc takes none)
    if probe != parent:
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".kr-probe-", dir=probe))
        except OSError as exc:
            raise InputError(
                f"{path}: cannot create a folder in {probe}: {exc.strerror}", field=flag
            ) from None


def _read_only(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False


# -- folders ---------------------------------------------------------------------------------


def staging_folder(target: str | os.PathLike) -> Path:
    """A fresh hidden folder beside `target` (parents created) to build a folder output in."""
    t = Path(target)
    t.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(t.parent)
    stage = temp_name(t)
    stage.mkdir()
    return stage


# the pipeline's names for its staging folders and side tables (pipeline/swap.py)
SWAP_LEFTOVER = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old)-(?:(?P<pid>\d+)-)?[0-9a-f]{8}$")
PASS_SIDE = re.compile(r"^\.pass-side-[0-9a-f]{32}$")


def is_leftover(name: str) -> bool:
    """A run's temporary, old folder, journal or side table (either naming scheme), not the user's."""
    return bool(_TEMP.match(name) or SWAP_LEFTOVER.match(name) or PASS_SIDE.match(name))


def adopt(stage: Path, target: Path, owned: Callable[[str], bool]) -> None:
    """Before switching `stage` in for `target`: carry over what is not the run's to replace.

    Every entry of the old folder that is not `owned` by the job (its outputs), not a
    leftover and not written anew is linked (or copied) into `stage`, hidden files
    included; the folder's mode, and its owner where allowed, are copied onto `stage`,
    so the switch changes the job's outputs and nothing else.
    """
    if not target.is_dir():
        return
    for entry in sorted(target.iterdir()):
        name = entry.name
        if owned(name) or is_leftover(name) or os.path.lexists(stage / name):
            continue
        link_copy(entry, stage / name)
    st = target.stat()
    try:
        os.chown(stage, st.st_uid, st.st_gid)
    except OSError:
        pass  # not ours to give away: the mode still follows
    os.chmod(stage, stat.S_IMODE(st.st_mode))


def link_copy(src: Path, dst: Path) -> None:
    """Copy a file or folder by hard links where possible (the original stays as it is)."""
    if src.is_dir() and not src.is_symlink():
        shutil.copytree(src, dst, symlinks=True, copy_function=_link_or_copy)
    else:
        _link_or_copy(str(src), str(dst))


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        shutil.copy2(src, dst, follow_symlinks=False)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2); False where the system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    rc = fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), os.fspath(b))


def publish_folder(stage: Path, target: str | os.PathLike) -> None:
    """Put a completely written folder in `target`'s place, replacing what was there."""
    t = Path(target)
    if not t.exists():
        os.replace(stage, t)
        fsync_dir(t.parent)
        return
    if _exchange(stage, t):
        fsync_dir(t.parent)
        shutil.rmtree(stage, ignore_errors=True)  # now holds the old folder
        return
    old = temp_name(t, "old")
    os.replace(t, old)
    os.replace(stage, t)
    fsync_dir(t.parent)
    shutil.rmtree(old, ignore_errors=True)


def remove_folder(stage: Path) -> None:
    shutil.rmtree(stage, ignore_errors=True)
