"""File helpers for the shell: read JSON/YAML with clear errors, write atomically."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .errors import InputError


def read_text(path: str | os.PathLike) -> str:
    """A UTF-8 text file the user named; InputError naming it when it is missing or unreadable."""
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", source=str(p)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {exc}", source=str(p)) from None


def read_structured(path: str | os.PathLike) -> Any:
    """Load a JSON or YAML file; errors name the file and the position."""
    p = Path(path)
    text = read_text(p)
    if p.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InputError(f"malformed YAML: {exc}", source=str(p)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", source=str(p)
        ) from None


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write to a temporary file beside the target, then rename: never half-written."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=str(p.parent))
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; give the file what open() would
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


_PROC_STATUS = "/proc/self/status"


def _umask() -> int:
    """The process umask, read without changing it.

    `os.umask` reads only by setting: between its two calls another thread
    creating a file would get the temporary mask. Linux (4.7+) reports it in
    /proc/self/status, read on every call (nothing cached: the process may
    change its umask later; one small read is nothing beside the fsync).
    Elsewhere set-and-restore remains, with the most restrictive temporary
    mask, so a file created in that window is private, not world-writable.
    """
    try:
        with open(_PROC_STATUS, "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o777)
    os.umask(mask)
    return mask


def atomic_write_json(path: str | os.PathLike, obj: Any, indent: int | None = 2) -> None:
    """Write `obj` as JSON to `path`: a temporary file beside it, then a rename (never half-written)."""
    atomic_write_text(path, json.dumps(obj, indent=indent) + "\n")
