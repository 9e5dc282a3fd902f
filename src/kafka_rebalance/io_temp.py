"""Temporaries beside their targets: their names, whose they are, and what a killed run left.

Every output is first written to a hidden temporary beside its target (a file, a staged folder,
a journal, an old folder set aside), named `.NAME.kr-PID-RAND.KIND` with KIND one of `tmp`,
`old`, `publish`, then renamed over it. The pipeline's earlier scheme, `.NAME.tmp-PID-RAND` and
`.NAME.old-PID-RAND` (and, earlier still, without the PID), is still recognised, so what an
older version left is cleaned too.

One rule decides what may be cleaned (`clean_stale`): a temporary of a live process is never
touched; a dead one's is cleaned, or restored (an old folder whose target is missing: the kill
came between two renames), or finished (a journal: its renames complete the killed run's set).
A process is live while its PID runs, unless the temporary is older than STALE_AGE_S (the PID
was reused). This process's own temporaries are live while its writes may be under way; a job
about to write a target vouches that none of its own writes to that target is open
(`mine_done`), so it cleans what an earlier failed job of the same process left.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import time
from pathlib import Path
from typing import Any

from .errors import RuntimeFailure

STALE_AGE_S = 7 * 24 * 3600  # a temporary this old is stale even if its PID is running (reused)
_TEMP = re.compile(
    r"^\.(?P<name>.+)\.kr-(?P<pid>\d+)-(?P<rand>[0-9a-f]{8})\.(?P<kind>tmp|old|publish)$"
)
_LEGACY = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old)-(?:(?P<pid>\d+)-)?[0-9a-f]{8}$")
PASS_SIDE = re.compile(r"^\.pass-side-[0-9a-f]{32}$")  # the offsets job's side tables


def hidden_name(target_name: str, kind: str = "tmp") -> str:
    """`.NAME.kr-PID-RAND.KIND`: a temporary's name that tells the next run it is ours and whose."""
    return f".{target_name}.kr-{os.getpid()}-{secrets.token_hex(4)}.{kind}"


def temp_name(target: Any, kind: str = "tmp") -> Any:
    """A hidden temporary beside `target` (a Path, or anything with `.parent`, `.name` and `/`)."""
    return target.parent / hidden_name(target.name, kind)


def is_temp(name: str) -> bool:
    """A name `hidden_name` makes (an error naming one is about the user's target)."""
    return bool(_TEMP.match(name))


def leftover(name: str) -> tuple[str, str, int | None] | None:
    """(target name, kind, writer's PID or None) of a temporary's name, either scheme; else None."""
    m = _TEMP.match(name) or _LEGACY.match(name)
    if m is None:
        return None
    return m["name"], m["kind"], int(m["pid"]) if m["pid"] else None


def is_leftover(name: str) -> bool:
    """A run's temporary, old folder, journal or side table (any scheme), not the user's."""
    return leftover(name) is not None or bool(PASS_SIDE.match(name))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    except OverflowError:
        return False
    return True


def is_stale(entry: Path, pid: int | None, mine_done: bool = False) -> bool:
    """The rule: is the writer of the temporary `entry` gone (see the module's docstring)?"""
    if pid is None:
        return True  # named before PIDs were recorded: no run of this version holds it
    if pid == os.getpid():
        if mine_done:
            return True
    elif not _alive(pid):
        return True
    try:
        return time.time() - entry.lstat().st_mtime > STALE_AGE_S
    except FileNotFoundError:
        return False


def remove(path: Path) -> None:
    """Remove a file, link or folder tree; gone already is fine."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except FileNotFoundError:
        pass


def clean_stale(
    folder: str | os.PathLike, only: str | None = None, mine_done: bool = False
) -> list[str]:
    """Finish or undo what killed runs left in `folder`; returns what it did (for tests and logs).

    Journals first (their renames complete the killed run's set), then `.old` folders (put back
    when their target is missing, else removed), then temporaries. `only`: just the temporaries
    of that target; `mine_done`: this process has no write open to it (see `is_stale`).
    """
    d = Path(folder)
    try:
        entries = sorted(d.iterdir())
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []
    done: list[str] = []
    ours = [(e, info) for e in entries if (info := leftover(e.name))]
    for kind in ("publish", "old", "tmp"):
        for entry, (name, k, pid) in ours:
            if k != kind or (only is not None and name != only) or not os.path.lexists(entry):
                continue
            if not is_stale(entry, pid, mine_done):
                continue
            target = d / name
            if kind == "publish":
                _roll_forward(entry)
                done.append(f"finished {entry.name}")
            elif kind == "old" and not os.path.lexists(target):
                os.replace(entry, target)
                done.append(f"restored {target.name}")
            else:
                remove(entry)
                done.append(f"removed {entry.name}")
    return done


def _roll_forward(journal: Path) -> None:
    """Finish a killed run's renames. Names are relative to the journal's folder (any cwd
    recovers them); a temporary that is gone while its target is not the file it was (inode)
    cannot be finished: the journal stays and the error says what to check."""
    try:
        doc = json.loads(journal.read_text(encoding="utf-8"))
        pairs, removes = doc["renames"], doc.get("removes", [])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pairs, removes = [], []  # a journal is written whole (temp + rename): unreadable: not ours
    here = journal.parent
    for tmp, target, *ino in pairs:
        tmp, target = here / tmp, here / target
        if os.path.lexists(tmp):
            os.replace(tmp, target)
        elif ino and not (os.path.lexists(target) and os.lstat(target).st_ino == ino[0]):
            raise RuntimeFailure(
                f"{target}: a killed run's set cannot be finished: its new version is gone "
                f"(journal {journal}); check the set's files, then remove the journal"
            )
    for gone in removes:
        (here / gone).unlink(missing_ok=True)
    journal.unlink(missing_ok=True)


def fsync_dir(folder: Path) -> None:
    """Make a rename or a new file in `folder` durable (best effort: some file systems refuse)."""
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
