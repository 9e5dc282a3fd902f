"""`--reset-offsets` as ConsumerGroupCommand computes it: scopes, specs, clamping, Kafka's CSV.

The planning functions are pure (offsets in, offsets out); `plan_reset` asks a GroupAdmin for
the log offsets and committed offsets a spec needs. Kafka's rules kept here:

* `--to-offset`, `--shift-by` and `--from-file` are clamped into [log start, log end]
  (checkOffsetsRange); `--to-earliest`/`--to-latest`/`--to-datetime`/`--by-duration` are not
  (they come from the log);
* `--shift-by` needs a committed offset on every partition in scope;
* `--to-datetime`/`--by-duration` fall back to the log end where no record is that recent;
* `--to-current` keeps the committed offset, or the log end where there is none;
* `--all-topics` means the partitions the group has committed offsets for.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from decimal import Decimal

from .. import limits
from ..assign.javacompat import JavaHashMap
from ..errors import InputError
from ..fields import INT32_MAX, INT64_MAX, INT64_MIN, show
from ..model import TopicPartition


@dataclass(frozen=True, slots=True)
class ResetSpec:
    """Exactly one of Kafka's reset scenarios."""

    kind: str  # to-offset | to-earliest | to-latest | shift-by | to-datetime | by-duration | to-current | from-file
    value: int | None = None  # offset, shift, or timestamp (ms) for datetime/duration
    plan: Mapping[str, Mapping[TopicPartition, int]] | None = None  # from-file


# -- parsing user input ---------------------------------------------------------------------------


def parse_topic_args(args: Sequence[str]) -> tuple[list[TopicPartition], list[str]]:
    """`--topic T` and `--topic T:0,2`: (named partitions, whole topics), as parseTopicPartitionsToReset."""
    named: list[TopicPartition] = []
    whole: list[str] = []
    for arg in args:
        if ":" not in arg:
            whole.append(arg)
            continue
        parts = arg.split(":")
        if len(parts) != 2 or not parts[0]:
            raise InputError(
                f"Invalid topic arg '{arg}', expected topic name and partitions", field="--topic"
            )
        topic, partitions = parts
        for p in partitions.split(","):
            if not re.fullmatch(r"[+-]?\d+", p.strip() if p else "x") or p != p.strip():
                raise InputError(
                    f"Invalid partition '{p}' specified in topic arg '{arg}'", field="--topic"
                )
            named.append(TopicPartition(topic, int(p)))
    return named, whole


def parse_datetime_ms(text: str) -> int:
    """Utils.getDateTime: `YYYY-MM-DDTHH:mm:SS.sss`, optional `Z`, `+hh`, `+hh:mm`; UTC without one."""
    if "T" not in text:
        raise InputError(
            f"Error parsing timestamp '{text}'. It does not contain a 'T' according to ISO8601 format",
            field="--to-datetime",
        )
    m = re.fullmatch(
        r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})(Z|[+-]\d{2}(?::?\d{2})?)?", text
    )
    if not m:
        raise InputError(
            f"Unparseable date: '{text}' (expected yyyy-MM-ddTHH:mm:ss.SSS with an optional "
            "time zone such as Z or +01:00)",
            field="--to-datetime",
        )
    y, mo, d, h, mi, s, ms, tz = m.groups()
    offset = timedelta(0)
    if tz and tz != "Z":
        sign = -1 if tz[0] == "-" else 1
        digits = tz[1:].replace(":", "")
        offset = sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
    try:
        dt = datetime(
            int(y), int(mo), int(d), int(h), int(mi), int(s), int(ms) * 1000, timezone(offset)
        )
    except ValueError as exc:
        raise InputError(f"Unparseable date: '{text}' ({exc})", field="--to-datetime") from None
    return int(dt.timestamp() * 1000)


_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+(?:[.,]\d{0,9})?)S)?)?",
    re.IGNORECASE,
)


def parse_duration_ms(text: str) -> int:
    """java.time.Duration.parse: `PnDTnHnMn.nS` (days, hours, minutes, seconds), in ms."""
    m = _DURATION.fullmatch(text)
    if not m or text.upper().endswith("T") or not any(m.groups()[1:]):
        raise InputError(
            f"Text cannot be parsed to a Duration: '{text}' (e.g. PT30M, P1DT2H, PT0.5S)",
            field="--by-duration",
        )
    neg, d, h, mi, s = m.groups()
    total = (
        Decimal(d or 0) * 86400
        + Decimal(h or 0) * 3600
        + Decimal(mi or 0) * 60
        + Decimal((s or "0").replace(",", "."))
    )
    ms = int(total * 1000)
    return -ms if neg == "-" else ms


def parse_csv_plan(
    text: str, groups: Sequence[str], source: str
) -> dict[str, dict[TopicPartition, int]]:
    """parseResetPlan: `topic,partition,offset` (one --group given) or `group,topic,partition,offset`."""
    reader = csv.reader(io.StringIO(text))
    try:
        rows = [r for r in reader if r]
    except csv.Error as exc:  # a stray carriage return, an unterminated quote
        raise InputError(f"line {reader.line_num}: {exc}", source=source) from None
    plan: dict[str, dict[TopicPartition, int]] = {}
    single = len(groups) == 1 and rows and len(rows[0]) == 3
    for i, r in enumerate(rows, 1):
        if single:
            if len(r) != 3:
                raise InputError(
                    f"line {i}: expected topic,partition,offset, got {show(','.join(r))}",
                    source=source,
                )
            group, (topic, p, off) = groups[0], r
        else:
            if len(r) != 4:
                raise InputError(
                    f"line {i}: expected group,topic,partition,offset, got {show(','.join(r))}",
                    source=source,
                )
            group, topic, p, off = r
        num = _csv_int(p, i, "partition", 0, INT32_MAX, source)
        # Kafka clamps an offset below the log start (a negative one too) into range; it is a long
        value = _csv_int(off, i, "offset", INT64_MIN, INT64_MAX, source)
        plan.setdefault(group, {})[TopicPartition(topic, num)] = value
        limits.check("partitions", i, field=f"line {i}", source=source)
    return plan


def _csv_int(text: str, line: int, what: str, lo: int, hi: int, source: str) -> int:
    """An integer cell of the reset CSV within Kafka's width (partition int32, offset int64)."""
    t = text.strip(" \t")  # as Kafka's toInt/toLong: no other space, no control characters
    digits = t[1:] if t[:1] in "+-" else t
    if not digits.isascii() or not digits.isdigit() or len(digits) > 40:
        raise InputError(f"line {line}: {what} must be an integer, got {show(text)}", source=source)
    n = int(t)
    if not lo <= n <= hi:
        raise InputError(f"line {line}: {what} must be in [{lo}, {hi}], got {n}", source=source)
    return n


def export_csv(plan: Mapping[str, Mapping[TopicPartition, int]], single_group: bool) -> str:
    """exportOffsetsToCsv: one `[group,]topic,partition,offset` line per partition, no header."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    for group, offsets in plan.items():
        for tp, off in offsets.items():
            w.writerow(
                [tp.topic, tp.partition, off]
                if single_group
                else [group, tp.topic, tp.partition, off]
            )
    return buf.getvalue()


# -- the pure rules ------------------------------------------------------------------------------


def clamp(
    requested: Mapping[TopicPartition, int],
    start: Mapping[TopicPartition, int | None],
    end: Mapping[TopicPartition, int | None],
) -> tuple[dict[TopicPartition, int], list[str]]:
    """checkOffsetsRange: above the log end -> log end, below the log start -> log start."""
    out: dict[TopicPartition, int] = {}
    warnings: list[str] = []
    for tp, off in requested.items():
        e, s = end.get(tp), start.get(tp)
        if e is not None and off > e:
            warnings.append(
                f"New offset ({off}) is higher than latest offset for topic partition {tp}. "
                f"Value will be set to {e}"
            )
            out[tp] = e
        elif s is not None and off < s:
            warnings.append(
                f"New offset ({off}) is lower than earliest offset for topic partition {tp}. "
                f"Value will be set to {s}"
            )
            out[tp] = s
        else:
            out[tp] = off
    return out, warnings


def java_map_order(offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """The iteration order of the HashMap the tool prints and exports from."""
    m = JavaHashMap()
    for tp, off in offsets.items():
        m.put((tp.topic, tp.partition), off)
    return {TopicPartition(t, p): off for (t, p), off in m.items()}


def java_group_order(groups: Iterable[str]) -> list[str]:
    m = JavaHashMap()
    for g in groups:
        m.put(g, True)
    return list(m.keys())


@dataclass(frozen=True, slots=True)
class ResetResult:
    """New offsets; `warnings` Kafka logs (stderr), `notices` it prints on stdout (`Warn: ...`)."""

    offsets: dict[TopicPartition, int]
    warnings: tuple[str, ...] = ()
    notices: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()  # printError on stdout: `Error: ...`


def plan_reset(
    admin, group_id: str, scope: Sequence[TopicPartition], spec: ResetSpec
) -> ResetResult:
    """prepareOffsetsToReset for one group: the new offset of every partition in scope."""

    def need(offsets: Mapping[TopicPartition, int | None], what: str) -> dict[TopicPartition, int]:
        out = {}
        for tp, off in offsets.items():
            if off is None or off < 0:
                from .groups import GroupRuntimeError

                raise GroupRuntimeError(f"Error getting {what} offset of topic partition: {tp}")
            out[tp] = off
        return out

    warnings: list[str] = []
    if spec.kind == "to-earliest":
        return ResetResult(java_map_order(need(admin.log_offsets(scope, "earliest"), "starting")))
    if spec.kind == "to-latest":
        return ResetResult(java_map_order(need(admin.log_offsets(scope, "latest"), "ending")))
    if spec.kind in ("to-offset", "shift-by", "from-file"):
        if spec.kind == "to-offset":
            requested = {tp: int(spec.value or 0) for tp in scope}
        elif spec.kind == "shift-by":
            committed = admin.committed(group_id)
            requested = {}
            for tp in scope:
                if tp not in committed:
                    raise InputError(
                        f"Cannot shift offset for partition {tp} since there is no current "
                        "committed offset",
                        field="--shift-by",
                    )
                requested[tp] = committed[tp] + int(spec.value or 0)
        else:
            requested = dict((spec.plan or {}).get(group_id, {}))
            if not requested:
                return ResetResult({}, (), (), (f"No reset plan for group {group_id} found",))
        keys = list(requested)
        done, w = clamp(
            requested, admin.log_offsets(keys, "earliest"), admin.log_offsets(keys, "latest")
        )
        return ResetResult(java_map_order(done), tuple(warnings + w))
    if spec.kind in ("to-datetime", "by-duration"):
        found = admin.log_offsets(scope, int(spec.value or 0))
        empty = [tp for tp, off in found.items() if off is None or off < 0]
        notices = tuple(
            f"Partition {tp.partition} from topic {tp.topic} is empty. Falling back to latest known offset."
            for tp in java_map_order({tp: 0 for tp in empty})
        )
        got = {tp: off for tp, off in found.items() if tp not in empty}
        got.update(need(admin.log_offsets(empty, "latest"), "ending"))
        return ResetResult(java_map_order(need(got, "timestamp")), (), notices)
    if spec.kind == "to-current":
        committed = admin.committed(group_id)
        have = {tp: committed[tp] for tp in scope if tp in committed}
        missing = [tp for tp in scope if tp not in committed]
        have.update(need(admin.log_offsets(missing, "latest"), "ending"))
        return ResetResult(java_map_order(have))
    raise InputError(f"unknown reset scenario {spec.kind!r}", field="--reset-offsets")


def kafka_text_reset(plan: Mapping[str, Mapping[TopicPartition, int]]) -> str:
    """printOffsetsToReset: GROUP/TOPIC/PARTITION/NEW-OFFSET in %-30s %-30s %-10s %-15s."""

    def line(g: str, t: str, p: str, o: str) -> str:
        return f"\n{g.ljust(30)} {t.ljust(30)} {p.ljust(10)} {o.ljust(15)}"

    out = ""
    if plan:
        out += line("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
    for group, offsets in plan.items():
        for tp, off in offsets.items():
            out += line(group, tp.topic, str(tp.partition), str(off))
    return out + "\n"
