"""`kafka-rebalance assign FILE --strategy S [--rounds N]`: Kafka's assignment for a group scenario.

Output (docs/formats.md section 1): `{"strategy": S, "rounds": [{"assignment":
{member: [[topic, partition], ...]}, "stats": {...}}]}`; round k+1 is fed
from round k as the parity vectors define (`assign.rounds.run_rounds`).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from .. import io_util, output, textfmt
from ..errors import InputError
from ..ops.assign import STRATEGIES, assign_partitions, check


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "assign",
        help="compute a partition assignment with one of Kafka's assignors",
        description="Compute the assignment Kafka's assignor STRATEGY gives a group scenario "
        "(JSON or YAML, see docs/formats.md section 1), round after round, with stats.",
    )
    p.add_argument("file", metavar="FILE", help="group scenario: topics, members, optional rounds")
    p.add_argument(
        "--strategy", required=True, metavar="S", help=f"one of: {', '.join(STRATEGIES)}"
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=None,
        metavar="N",
        help="rebalances to run back to back (default: the file's `rounds`, else 1)",
    )
    output.add_format_flag(p)
    p.set_defaults(func=run)


def compute(path: str, strategy: str, rounds: int | None = None) -> dict[str, Any]:
    """The command's JSON result; InputError (naming file and field) for bad input."""
    try:
        check(strategy, rounds)
    except InputError as exc:
        raise InputError(exc.message, field=f"--{exc.field}") from None
    doc = io_util.read_structured(path)
    return assign_partitions(doc, strategy, rounds, source=path).to_json()


def run(args) -> int:
    result = compute(args.file, args.strategy, args.rounds)
    output.emit(result, args.format, _table)
    return 0


def compact_partitions(tps: list[list]) -> str:
    """`audit: 1; orders: 0-3, 7`: a member's partitions, per topic as ranges, for people."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in tps:
        by_topic.setdefault(topic, []).append(partition)
    parts = []
    for topic in sorted(by_topic):
        nums = sorted(by_topic[topic])
        ranges: list[str] = []
        start = prev = nums[0]
        for x in nums[1:] + [None]:
            if x is not None and x == prev + 1:
                prev = x
                continue
            ranges.append(str(start) if start == prev else f"{start}-{prev}")
            if x is not None:
                start = prev = x
        parts.append(f"{topic}: {', '.join(ranges)}")
    return "; ".join(parts)


def _table(console: Console, result: dict[str, Any]) -> None:
    rounds = result["rounds"]
    for i, rnd in enumerate(rounds, start=1):
        title = f"{result['strategy']}, round {i} of {len(rounds)}"
        textfmt.print_table(
            console,
            title,
            ["member", ">partitions", "assigned"],
            [
                (member, textfmt.count(len(tps)), compact_partitions(tps) if tps else "-")
                for member, tps in rnd["assignment"].items()
            ],
        )
        st = rnd["stats"]
        bal = st["balance"]
        c = textfmt.count
        textfmt.print_kv(
            console,
            None,
            [
                (
                    "balance: min / max per member",
                    f"{c(bal['min'])} / {c(bal['max'])} (spread {c(bal['spread'])})",
                ),
                ("assigned / subscribed", f"{c(st['assigned'])} / {c(st['partitions'])}"),
                ("kept", c(st["kept"])),
                ("moved", c(st["moved"])),
                ("newly assigned", c(st["new"])),
                ("held back (unassigned)", c(st["held_back"])),
                ("revoked", c(st["revoked"])),
                ("rack mismatches", c(st["rack_mismatches"])),
            ],
        )
        console.print()


__all__ = ["register", "compute", "run", "compact_partitions"]
