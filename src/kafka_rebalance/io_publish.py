"""Publishing outputs so that a reader sees the old ones or the new ones, never a mix or half a file.

Files are written to hidden temporaries and renamed over their targets, several as one set
through a journal (io_util.write_files); io_temp names the temporaries and holds the one rule
for what a killed run left. This module checks output paths before any work and switches whole
folders: the demo's results and every pipeline job's output set.

A folder is built in a hidden staging folder beside its target and switched in one step with
renameat2(RENAME_EXCHANGE) where the system has it (the staging folder then holds the old set,
which is deleted); elsewhere the old folder is first renamed to `.NAME.kr-PID-RAND.old`, which
the next run puts back if the switch did not finish (`recover`, or any `clean_stale` of the
parent).

Output paths are checked before any work (`check_output_paths`): a directory given as a file,
a parent that is a file or cannot be created, no permission, two outputs on one path.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import InputError
from .io_temp import PASS_SIDE, clean_stale, fsync_dir, hidden_name, is_leftover, remove, temp_name

__all__ = [
    "adopt",
    "check_output_paths",
    "clean_stale",
    "exchange",
    "hidden_name",
    "link_copy",
    "publish_folder",
    "recover",
    "remove_folder",
    "staging_folder",
]

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
_NO_EXCHANGE = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV}


def _libc_renameat2() -> Any:
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_renameat2 = _libc_renameat2()


def exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one step (Linux renameat2); False where the system or the file
    system cannot (the caller then falls back to two renames)."""
    if _renameat2 is None:
        return False
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _NO_EXCHANGE:
        return False
    raise OSError(code, os.strerror(code), os.fspath(b))


def publish_folder(stage: Path, target: str | os.PathLike) -> None:
    """Put the completely written folder `stage` in `target`'s place, replacing what was there.

    One exchange where the system has it; else the old folder goes aside as a `.old` temporary
    first, so a kill between the two renames leaves the old set whole for the next run to put
    back. The old set is deleted after the switch.
    """
    t = Path(target)
    if not t.exists():
        os.replace(stage, t)
        fsync_dir(t.parent)
        return
    if exchange(stage, t):
        fsync_dir(t.parent)
        shutil.rmtree(stage, ignore_errors=True)  # now holds the old folder
        return
    old = temp_name(t, "old")
    os.replace(t, old)
    os.replace(stage, t)
    fsync_dir(t.parent)
    shutil.rmtree(old, ignore_errors=True)


def recover(target: Path) -> list[str]:
    """Before a job writes `target`: clean what killed runs left beside it and inside it.

    The job vouches that none of this process's own writes to `target` is open (a job never
    starts while one of its own is), so an earlier failed job's leftovers go too; another live
    process's are never touched. Inside the target: the leftovers of single outputs and the
    offsets job's side tables. Returns what was done, for tests and logs.
    """
    done = clean_stale(target.parent, only=target.name, mine_done=True)
    if target.is_dir() and not target.is_symlink():
        done += clean_stale(target, mine_done=True)
        for entry in sorted(target.iterdir()):
            if PASS_SIDE.match(entry.name):
                remove(entry)
                done.append(f"removed {entry.name}")
    return done


def remove_folder(stage: Path) -> None:
    shutil.rmtree(stage, ignore_errors=True)
