"""Local folder swaps that a kill cannot tear, and the hidden names a killed run leaves behind.

A job's outputs are written into a hidden staging folder beside the target and
switched into place in one step: Linux's `renameat2(RENAME_EXCHANGE)` swaps
the two folders atomically (the staging folder then holds the old set, which
is deleted). Where the file system refuses the exchange, two renames are used
(target aside to a hidden `.old-` folder, staging into place); a kill between
them leaves no target but the old set complete in its `.old-` folder, which
the next run puts back before it starts (`recover`).

Hidden names carry the writer's PID: `.NAME.tmp-PID-HEX` and
`.NAME.old-PID-HEX`. The next run removes those whose process is gone, never a
running job's (names without a PID are from before this scheme: always stale).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import re
import shutil
import uuid
from pathlib import Path

from ..io_publish import PASS_SIDE, SWAP_LEFTOVER
from ..io_publish import link_copy as link_copy  # re-exported

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_LEFTOVER = SWAP_LEFTOVER
_PASS_SIDE = PASS_SIDE


def hidden_name(target_name: str, kind: str) -> str:
    """`.NAME.tmp-PID-HEX` (kind "tmp") or `.NAME.old-PID-HEX` (kind "old")."""
    return f".{target_name}.{kind}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _libc():
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = lib.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_renameat2 = _libc()


def exchange(a: Path, b: Path) -> bool:
    """Atomically swap two existing paths; False when the system or file system cannot."""
    if _renameat2 is None:
        return False
    rc = _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), str(b))


def switch_in(stage: Path, target: Path) -> None:
    """Put the complete folder `stage` at `target`, the old target (if any) deleted after the switch."""
    if not target.exists():
        os.replace(stage, target)
        return
    if exchange(stage, target):
        shutil.rmtree(stage, ignore_errors=True)  # it holds the old set now
        return
    old = target.parent / hidden_name(target.name, "old")
    os.replace(target, old)
    os.replace(stage, target)
    shutil.rmtree(old, ignore_errors=True)


def _alive(pid: int | None) -> bool:
    if pid is None or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover(target: Path) -> list[str]:
    """Before a run: put a killed run's old set back if the target is missing, remove dead leftovers.

    Looks beside `target` (its staging and old folders) and inside it (the
    leftovers of single outputs and of the offsets job's side tables).
    Returns the names removed or restored, for tests.
    """
    done: list[str] = []
    parent = target.parent
    if not parent.is_dir():
        return done
    mine = []
    for entry in parent.iterdir():
        m = _LEFTOVER.match(entry.name)
        if m and m["name"] == target.name and not _alive(_pid(m)):
            mine.append((m["kind"], entry))
    for kind, entry in sorted(mine, key=lambda ke: ke[0] != "old"):
        if kind == "old" and not target.exists() and entry.is_dir():
            os.replace(entry, target)  # the old set, complete: the kill came between two renames
            done.append(f"restored {entry.name}")
        else:
            _rm(entry)
            done.append(entry.name)
    if target.is_dir():
        for entry in target.iterdir():
            m = _LEFTOVER.match(entry.name)
            if (m and not _alive(_pid(m))) or _PASS_SIDE.match(entry.name):
                _rm(entry)
                done.append(entry.name)
    return done


def _pid(m: re.Match) -> int | None:
    return int(m["pid"]) if m["pid"] else None


def _rm(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
