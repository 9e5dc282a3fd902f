"""Documented size limits of every input (README "Limits"), checked before any work starts.

Without them a scenario with `members: 1000000`, `partitions: 1e12` or a sweep grid of a million
runs grows memory or time without bound. Each limit has a name: `--limit NAME=N` on any command,
or `KAFKA_REBALANCE_LIMITS="NAME=N,..."` in the environment, raises (or lowers) it. A job whose
estimated memory exceeds what the machine has available is refused with the estimate.

The active limits are a context value: the CLI sets them from the flags, the environment and
MemAvailable (read by the shell, `io_util.mem_available`), a library caller through `use`; the
parsers deep inside check them without every signature carrying them. Nothing here does I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

from .errors import InputError

ENV = "KAFKA_REBALANCE_LIMITS"
FLAG = "--limit"


@dataclass(frozen=True, slots=True)
class Limit:
    name: str
    default: int
    unit: str  # what is counted, for the error line: "members", "partitions", "bytes"
    applies: str  # where it is checked (the README table)


_MiB = 1 << 20
LIMITS: tuple[Limit, ...] = (
    Limit(
        "members",
        10_000,
        "members",
        "members of one group: `assign` `members`, `simulate` `members.count` / `members.list`",
    ),
    Limit(
        "topics",
        10_000,
        "topics",
        "topics of an `assign` group scenario; topics of a `cluster generate` "
        "`--topics-to-move-json-file`",
    ),
    Limit(
        "partitions",
        1_000_000,
        "partitions",
        "partitions in total: an `assign` group scenario's topics, a `simulate` scenario's topics "
        "(with `add_partitions` events), a cluster snapshot (JSON or describe text), a "
        "reassignment or election JSON file, a `group reset-offsets` CSV",
    ),
    Limit(
        "replicas",
        3_000_000,
        "replicas",
        "replicas in total (partitions x replication factor) in a cluster snapshot (JSON or "
        "describe text) or a reassignment JSON file",
    ),
    Limit(
        "brokers",
        10_000,
        "brokers",
        "brokers of a cluster snapshot (JSON or describe text), and of a broker list flag "
        "(`--brokers`, `--broker-list`, `--demote-brokers`, `--exclude-brokers-for-leadership`)",
    ),
    Limit("rounds", 1_000, "rounds", "`assign` rounds: the file's `rounds` or `--rounds`"),
    Limit(
        "duration_ms",
        7 * 24 * 3_600_000,
        "ms of simulated time",
        "`simulate` `duration_ms` (7 days)",
    ),
    Limit("events", 100_000, "events", "`simulate` `events`"),
    Limit(
        "sweep_runs",
        10_000,
        "runs",
        "simulations in one `pipeline sweep` grid (the product of its axes, before skips)",
    ),
    Limit("demo_scale", 100, "", "`demo --scale`"),
    Limit("input_bytes", 512 * _MiB, "bytes", "size of one JSON, YAML or text input file"),
)
MEMORY = Limit(
    "memory",
    0,  # no fixed default: what the machine has available
    "bytes",
    "memory a job may need: `assign`, `simulate`, the `cluster` commands and `demo` estimate "
    "their peak memory first and refuse a job that needs more than the machine has available "
    "(`needs about 31.0 GiB, 22.0 GiB available`); `--limit memory=64GiB` lets it try anyway",
)
BY_NAME: Mapping[str, Limit] = {lim.name: lim for lim in LIMITS}


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits in force: the defaults overridden by name; `memory_bytes` is what the machine
    has available (None: unknown, no memory check)."""

    overrides: Mapping[str, int] = field(default_factory=dict)
    memory_bytes: int | None = None
    memory_from: str = "available"  # "available" (MemAvailable) or the flag that set it

    def __getitem__(self, name: str) -> int:
        return self.overrides.get(name, BY_NAME[name].default)

    def with_overrides(self, overrides: Mapping[str, int], memory: int | None = None) -> Limits:
        return replace(
            self,
            overrides={**self.overrides, **overrides},
            memory_bytes=memory if memory is not None else self.memory_bytes,
            memory_from=f"{FLAG} memory" if memory is not None else self.memory_from,
        )


_DEFAULT = Limits()
_ACTIVE: ContextVar[Limits | None] = ContextVar("kafka_rebalance_limits", default=None)


def current() -> Limits:
    """The limits in force (the defaults, with no memory check, outside `use`)."""
    return _ACTIVE.get() or _DEFAULT


@contextmanager
def use(limits: Limits) -> Iterator[Limits]:
    """Run the block under `limits` (the CLI wraps every command in it)."""
    token = _ACTIVE.set(limits)
    try:
        yield limits
    finally:
        _ACTIVE.reset(token)


def _count(n: float) -> str:
    from .textfmt import count

    return count(n)


def _bytes(n: float) -> str:
    from .textfmt import bytes_

    return bytes_(n)


def check(
    name: str, value: int | float, field: str | None = None, source: str | None = None
) -> None:
    """Refuse `value` above the limit `name`, naming the field (or flag) and how to raise it."""
    limit = current()[name]
    if value > limit:
        unit = BY_NAME[name].unit
        if unit == "bytes":
            shown, cap = _bytes(value), _bytes(limit)
        else:
            shown, cap = _count(value), f"{_count(limit)} {unit}".rstrip()
        raise InputError(
            f"{shown} is above the limit of {cap} (raise it with {FLAG} {name}=N or {ENV})",
            source=source,
            field=field,
        )


def check_memory(estimate_bytes: float, what: str, field: str | None = None) -> None:
    """Refuse a job whose estimated peak memory exceeds what the machine has available."""
    lim = current()
    if lim.memory_bytes is None or estimate_bytes <= lim.memory_bytes:
        return
    raise InputError(
        f"{what} needs about {_bytes(estimate_bytes)}, {_bytes(lim.memory_bytes)} "
        f"{'available' if lim.memory_from == 'available' else 'allowed by ' + lim.memory_from} "
        f"(make the input smaller, or set {FLAG} memory=SIZE to try anyway)",
        field=field,
    )


# -- memory estimates (peak resident bytes; measured in bench/hostile.py, rounded up) ----------

_BASE = 80 * _MiB  # the interpreter, numpy, the toolkit's modules


def assign_memory(members: int, partitions: int, subscriptions: int, rounds: int) -> float:
    """`assign`: ~300 B per partition for the first round, ~150 B more per further round (each
    round's result is kept for the output), plus members and their subscriptions."""
    return (
        _BASE
        + partitions * (300.0 + 150.0 * (rounds - 1))
        + 2_000.0 * members
        + 100.0 * subscriptions
    )


def simulate_memory(
    members: int, partitions: int, duration_ms: int, poll_idle_ms: int, events_out: bool
) -> float:
    """`simulate`: ~1 KB per partition (offsets, ownership), ~10 KB per member; with the event
    log kept (--events-out), ~300 B per member per modelled poll (one per `poll_idle_ms`)."""
    log = 0.0
    if events_out:
        log = 300.0 * members * duration_ms / max(poll_idle_ms, 1)
    return _BASE + 1_000.0 * partitions + 10_000.0 * members + log


def cluster_memory(brokers: int, partitions: int, replicas: int) -> float:
    """A snapshot's plan: numpy arrays over brokers x partitions, Python objects per replica."""
    return _BASE + 1500.0 * partitions + 300.0 * replicas + 8.0 * brokers * partitions / 64


def demo_memory(scale: int) -> float:
    """`demo`: Spark's driver (~1 GiB) plus its cluster (12 brokers, 600 partitions, RF 3 per
    scale step) and its simulations (6 members, 12 partitions per step, 10 minutes, event logs)."""
    return (
        (1 << 30)
        + cluster_memory(12 * scale, 600 * scale, 1_800 * scale)
        + simulate_memory(6 * scale, 12 * scale, 600_000, 1_000, True)
    )


def default_text(lim: Limit) -> str:
    """A limit's default as the README shows it (`10,000`, `512 MiB`, `MemAvailable`)."""
    if lim is MEMORY:
        return "MemAvailable"
    return _bytes(lim.default) if lim.unit == "bytes" else _count(lim.default)


def markdown_table() -> str:
    """The README's Limits table, generated from LIMITS and MEMORY (one source for both)."""
    rows = ["| NAME | default | what it bounds |", "|---|---|---|"]
    for lim in (*LIMITS, MEMORY):
        rows.append(f"| `{lim.name}` | {default_text(lim)} | {lim.applies} |")
    return "\n".join(rows)


# -- overrides from the command line and the environment ----------------------------------------

_SIZE = re.compile(r"^\s*([0-9][0-9_]*)\s*([KMGT]i?B?|B)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _size(text: str) -> int | None:
    m = _SIZE.match(text)
    if not m:
        return None
    unit = (m.group(2) or "").upper().rstrip("B").rstrip("I")
    return int(m.group(1).replace("_", "")) * _UNITS[unit]


def parse_overrides(items: list[str] | str, where: str) -> tuple[dict[str, int], int | None]:
    """`NAME=N` items (or one comma-separated string) -> ({name: n}, memory bytes or None).

    `where` is the flag or environment variable named by the error.
    """
    if isinstance(items, str):
        items = [x for x in items.split(",") if x.strip()]
    out: dict[str, int] = {}
    memory: int | None = None
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or (name not in BY_NAME and name != "memory"):
            raise InputError(
                f"expected NAME=N with NAME one of {', '.join([*BY_NAME, 'memory'])}, got {item!r}",
                field=where,
            )
        n = _size(value)
        if n is None or n < 1:
            raise InputError(f"expected a positive whole number, got {value!r}", field=where)
        if name == "memory":
            memory = n
        else:
            out[name] = n
    return out, memory


__all__ = [
    "BY_NAME",
    "ENV",
    "FLAG",
    "LIMITS",
    "MEMORY",
    "Limit",
    "Limits",
    "assign_memory",
    "check",
    "check_memory",
    "cluster_memory",
    "demo_memory",
    "current",
    "default_text",
    "markdown_table",
    "parse_overrides",
    "simulate_memory",
    "use",
]
