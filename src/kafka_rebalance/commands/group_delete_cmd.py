"""`kafka-rebalance group delete|delete-offsets`: kafka-consumer-groups.sh --delete and --delete-offsets."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console

from .. import textfmt
from ..errors import InputError
from ..kafka import group_reset as gr
from ..kafka import group_views as gv
from ..kafka.groups import GroupAdmin


def register_delete(sub, connection, groups, fmt, guard) -> None:
    dl = sub.add_parser("delete", help="delete groups (--delete); only groups without members")
    connection(dl)
    groups(dl)
    fmt(dl)
    dl.set_defaults(func=guard(run_delete))

    do = sub.add_parser(
        "delete-offsets", help="delete a group's committed offsets (--delete-offsets)"
    )
    connection(do)
    do.add_argument("--group", required=True, metavar="GROUP")
    do.add_argument("--topic", action="append", required=True, metavar="TOPIC[:P,...]")
    fmt(do)
    do.set_defaults(func=guard(run_delete_offsets))


def _admin(args: argparse.Namespace) -> GroupAdmin:
    return GroupAdmin(args.bootstrap_server, args.command_config, args.timeout)


def _emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _write_stdout(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


# -- delete, delete-offsets ------------------------------------------------------------------------


def run_delete(args: argparse.Namespace) -> int:
    with _admin(args) as admin:
        if args.all_groups and args.group:
            raise InputError("give --group or --all-groups, not both", field="--group")
        if not args.all_groups and not args.group:
            raise InputError("give --group GROUP (repeatable) or --all-groups", field="--group")
        ids = (
            [g.group_id for g in admin.list_groups()]
            if args.all_groups
            else list(dict.fromkeys(args.group))
        )
        results = admin.delete_groups(ids)
    text, ok = gv.kafka_text_delete(results)
    if args.format == "json":
        _emit_json(
            {"groups": [{"group": g, "deleted": e is None, "error": e} for g, e in results.items()]}
        )
    elif args.format == "kafka":
        _write_stdout(text)
    else:
        textfmt.print_table(
            Console(),
            "deleted groups",
            ["GROUP", "RESULT"],
            [[g, "deleted" if e is None else e] for g, e in results.items()],
        )
    return 0 if ok else 1


def run_delete_offsets(args: argparse.Namespace) -> int:
    named, whole = gr.parse_topic_args(args.topic)
    with _admin(args) as admin:
        partitions = named + (admin.topic_partitions(whole) if whole else [])
        top, results = admin.delete_offsets(args.group, partitions)
    if args.format == "json":
        _emit_json(
            {
                "group": args.group,
                "error": None if top == "NONE" else top,
                "partitions": [
                    {"topic": tp.topic, "partition": tp.partition, "error": e}
                    for tp, e in sorted(
                        results.items(), key=lambda kv: (kv[0].topic, kv[0].partition)
                    )
                ],
            }
        )
    elif args.format == "kafka":
        _write_stdout(gv.kafka_text_delete_offsets(args.group, args.topic, top, results))
    else:
        textfmt.print_table(
            Console(),
            f"{args.group}: offsets deleted" if top == "NONE" else f"{args.group}: {top}",
            ["TOPIC", ">PARTITION", "STATUS"],
            [
                [tp.topic, textfmt.count(tp.partition), "deleted" if e is None else e]
                for tp, e in sorted(results.items(), key=lambda kv: (kv[0].topic, kv[0].partition))
            ],
        )
    return 0 if top == "NONE" else 1
