"""The `kafka-rebalance` command: parses arguments and hands off to a command module."""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from collections.abc import Sequence

from . import __version__, limits
from .commands import COMMANDS
from .errors import InputError, RuntimeFailure
from .io_util import OutputError, mem_available
from .textfmt import escape_controls


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kafka-rebalance",
        description="Kafka rebalancing toolkit: assignors, group protocol simulator, cluster plans, Spark pipeline.",
    )
    parser.add_argument("--version", action="version", version=f"kafka-rebalance {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f".commands.{name}_cmd", __package__)
        except ModuleNotFoundError as exc:
            if exc.name == f"{__package__}.commands.{name}_cmd":
                continue
            raise
        module.register(sub)
    _add_limit_flag(sub)
    return parser


def _add_limit_flag(sub: argparse._SubParsersAction) -> None:
    """`--limit NAME=N` on every command (the leaves of the subcommand tree)."""
    names = ", ".join([*limits.BY_NAME, "memory"])
    for parser in sub.choices.values():
        leaves = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if leaves:
            for action in leaves:
                _add_limit_flag(action)
            continue
        parser.add_argument(
            limits.FLAG,
            action="append",
            default=None,
            dest="limits",
            metavar="NAME=N",
            help=f"raise (or lower) a size limit (README: Limits); NAME is one of {names}; "
            f"also ${limits.ENV}=NAME=N,...",
        )


def active_limits(args: argparse.Namespace, environ: dict[str, str] | None = None) -> limits.Limits:
    """The limits of this run: defaults, then $KAFKA_REBALANCE_LIMITS, then --limit; the memory
    check against MemAvailable unless `memory=` is given."""
    env = (os.environ if environ is None else environ).get(limits.ENV, "")
    from_env, mem_env = limits.parse_overrides(env, limits.ENV)
    from_flag, mem_flag = limits.parse_overrides(getattr(args, "limits", None) or [], limits.FLAG)
    memory = mem_flag if mem_flag is not None else mem_env
    base = limits.Limits(memory_bytes=mem_available())
    return base.with_overrides({**from_env, **from_flag}, memory)


def os_error_message(exc: OSError) -> str | None:
    """`PATH: reason` for an OSError about a file, else None.

    For a two-path call (`os.replace(tmp, target)` in the atomic writers) the second path is the one
    the user gave; the first is a temporary file beside it.
    """
    path = exc.filename2 if exc.filename2 is not None else exc.filename
    if path is None:
        return None
    reason = exc.strerror or type(exc).__name__
    return f"{os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else path}: {reason}"


# A full disk, a quota, a read-only file system or a failing device is the run's failure (exit 1),
# not the user's bad input (exit 2: a missing file, a directory given as a file, no permission).
_RUNTIME_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG})


def _error(command: str, message: str) -> None:
    """One error line on stderr; control characters from names and paths shown escaped, a
    newline in a name or value too (the error stays one line)."""
    text = escape_controls(message).replace("\n", "\\n").replace("\r", "\\r")
    print(f"kafka-rebalance {command}: error: {text}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        with limits.use(active_limits(args)):
            rc = args.func(args)
    except InputError as exc:
        _error(args.command, str(exc))
        return 2
    except OutputError as exc:
        _error(args.command, str(exc))
        return 1
    except RuntimeFailure as exc:
        _error(args.command, str(exc))
        return 1
    except OSError as exc:
        # A file the user named could not be read or written (a directory given as a file, a parent
        # folder that cannot exist, no permission, a full disk): one line, not a traceback. An OSError
        # that names no file is not about the user's paths, so it stays visible as the bug it may be.
        message = os_error_message(exc)
        if message is None and exc.errno in _RUNTIME_ERRNOS:
            message = exc.strerror or str(exc)  # a full disk met outside the shared writer
        if message is None:
            raise
        _error(args.command, message)
        return 1 if exc.errno in _RUNTIME_ERRNOS else 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return int(rc or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
