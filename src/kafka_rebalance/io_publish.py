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
import json
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from .errors import InputError

STALE_AGE_S = 7 * 24 * 3600  # a temporary this old is stale even if its PID was reused
_TEMP = re.compile(
    r"^\.(?P<name>.+)\.kr-(?P<pid>\d+)-(?P<rand>[0-9a-f]{8})\.(?P<kind>tmp|old|publish)$"
)


def temp_name(target: Path, kind: str = "tmp") -> Path:
    """A hidden temporary beside `target` that the next run can tell is ours and whose."""
    return target.parent / f".{target.name}.kr-{os.getpid()}-{secrets.token_hex(4)}.{kind}"


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    except OverflowError:
        return False
    return True


def _stale(entry: Path, pid: int) -> bool:
    if not _alive(pid):
        return True
    try:
        return time.time() - entry.lstat().st_mtime > STALE_AGE_S
    except FileNotFoundError:
        return False


def _remove(path: Path) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        pass


def clean_stale(folder: str | os.PathLike) -> list[str]:
    """Finish or undo what killed runs left in `folder`; returns what it did (for tests and logs).

    Journals first (their renames complete the killed run's set), then `.old` folders (put back
    when their target is missing, else removed), then temporaries.
    """
    d = Path(folder)
    try:
        entries = sorted(d.iterdir())
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []
    done: list[str] = []
    ours = [(e, m) for e in entries if (m := _TEMP.match(e.name))]
    for kind in ("publish", "old", "tmp"):
        for entry, m in ours:
            if m["kind"] != kind or not entry.exists() or not _stale(entry, int(m["pid"])):
                continue
            if kind == "publish":
                _roll_forward(entry)
                done.append(f"finished {entry.name}")
            elif kind == "old":
                target = d / m["name"]
                if target.exists() or target.is_symlink():
                    _remove(entry)
                    done.append(f"removed {entry.name}")
                else:
                    os.replace(entry, target)
                    done.append(f"restored {target.name}")
            else:
                _remove(entry)
                done.append(f"removed {entry.name}")
    return done


def _roll_forward(journal: Path) -> None:
    try:
        pairs = json.loads(journal.read_text(encoding="utf-8"))["renames"]
    except (OSError, ValueError, KeyError, TypeError):
        pairs = []  # a journal is written whole (temp + rename): unreadable means not ours
    for tmp, target in pairs:
        if os.path.lexists(tmp):
            os.replace(tmp, target)
    journal.unlink(missing_ok=True)


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


def _read_only(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False


# -- writing ---------------------------------------------------------------------------------


def _umask() -> int:
    from .io_util import _umask as umask

    return umask()


def _make_parents(folder: Path, created: list[Path]) -> None:
    missing = []
    probe = folder
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:
            continue
        created.append(d)


def _drop_created(created: list[Path]) -> None:
    for d in reversed(created):
        try:
            d.rmdir()
        except OSError:
            break


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _named(exc: OSError, path: Path) -> OSError:
    from .io_util import named_os_error

    return named_os_error(exc, path)


def write_files(items: Iterable[tuple[str | os.PathLike, str | bytes]]) -> None:
    """Write every (path, content) as one set: all or none, old or new, never half a file.

    A failure (a full disk, a file too large, no permission) removes the temporaries and the
    folders this call created, and raises the OSError naming the user's path, not a temporary.
    """
    todo = [(Path(p), c) for p, c in items]
    created: list[Path] = []
    temps: list[tuple[Path, Path]] = []
    journal: Path | None = None
    current = todo[0][0] if todo else Path()
    try:
        for folder in dict.fromkeys(p.parent for p, _ in todo):
            _make_parents(folder, created)
            clean_stale(folder)
        for target, content in todo:
            current = target
            tmp = temp_name(target)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 & ~_umask())
            temps.append((tmp, target))
            with os.fdopen(fd, "wb") as fh:
                fh.write(content.encode("utf-8") if isinstance(content, str) else content)
                fh.flush()
                os.fsync(fh.fileno())
        if len(temps) > 1:
            current = todo[0][0]
            journal = temp_name(todo[0][0], "publish")
            body = json.dumps({"renames": [[os.fspath(t), os.fspath(g)] for t, g in temps]})
            staged = temp_name(todo[0][0])
            with open(staged, "w", encoding="utf-8") as fh:
                fh.write(body)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(staged, journal)
    except BaseException as exc:
        for tmp, _ in temps:
            tmp.unlink(missing_ok=True)
        _drop_created(created)
        if isinstance(exc, OSError) and (
            exc.filename is None or _TEMP.match(Path(os.fsdecode(exc.filename)).name)
        ):
            raise _named(exc, current) from None
        raise
    for tmp, target in temps:
        os.replace(tmp, target)
    for folder in dict.fromkeys(t.parent for _, t in temps):
        _fsync_dir(folder)
    if journal is not None:
        journal.unlink(missing_ok=True)


# -- folders ---------------------------------------------------------------------------------


def staging_folder(target: str | os.PathLike) -> Path:
    """A fresh hidden folder beside `target` (parents created) to build a folder output in."""
    t = Path(target)
    t.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(t.parent)
    stage = temp_name(t)
    stage.mkdir()
    return stage


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
        _fsync_dir(t.parent)
        return
    if _exchange(stage, t):
        _fsync_dir(t.parent)
        shutil.rmtree(stage, ignore_errors=True)  # now holds the old folder
        return
    old = temp_name(t, "old")
    os.replace(t, old)
    os.replace(stage, t)
    _fsync_dir(t.parent)
    shutil.rmtree(old, ignore_errors=True)


def remove_folder(stage: Path) -> None:
    shutil.rmtree(stage, ignore_errors=True)
