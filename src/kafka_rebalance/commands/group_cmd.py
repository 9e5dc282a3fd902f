"""`kafka-rebalance group list|describe|reset-offsets|lag` on a live cluster.

Thin: flags in, library calls (kafka/groups, group_views, group_reset, group_lag,
group_whatif), output out. Three output forms: a table for people (human units), `--format
json` (raw numbers), and `--format kafka`, the exact text of `kafka-consumer-groups.sh`.
Exit codes: 0 ok, 1 runtime (cluster unreachable, group missing or active for a reset), 2 bad
input, 3 a failed `lag --check`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from .. import textfmt
from ..errors import InputError
from ..kafka import group_reset as gr
from ..kafka import group_views as gv
from ..kafka.groups import Group, GroupAdmin, GroupRuntimeError
from .assign_cmd import compact_partitions

FORMATS = ("table", "json", "kafka")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "group",
        help="live consumer groups: list, describe, reset offsets, lag (Burrow rules), what-if",
        description="Live consumer groups (classic and KIP-848) on a real cluster.",
    )
    sub = p.add_subparsers(dest="group_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: (p.print_help(sys.stderr), 2)[1])

    ls = sub.add_parser("list", help="the groups (kafka-consumer-groups.sh --list)")
    _connection(ls)
    ls.add_argument(
        "--state",
        nargs="?",
        const="",
        metavar="STATES",
        help="show each group's state; with a comma-separated list, only groups in those states",
    )
    ls.add_argument(
        "--type",
        nargs="?",
        const="",
        metavar="TYPES",
        help="show each group's type; with a list (classic,consumer), only those types",
    )
    _format(ls)
    ls.set_defaults(func=_guard(run_list))

    d = sub.add_parser("describe", help="offsets, members or state of groups (--describe)")
    _connection(d)
    _groups(d)
    view = d.add_mutually_exclusive_group()
    view.add_argument("--members", action="store_true", help="the members and their partitions")
    view.add_argument("--state", action="store_true", help="coordinator, strategy, state, members")
    view.add_argument("--offsets", action="store_true", help="committed offsets and lag (default)")
    d.add_argument(
        "--verbose",
        action="store_true",
        help="with --members: each member's assignment (and KIP-848 epochs, target assignment)",
    )
    d.add_argument(
        "--assignor",
        metavar="STRATEGY",
        help="what if: our Kafka-exact STRATEGY's assignment for the same members, beside the "
        "live one, and how many partitions would move",
    )
    _format(d)
    d.set_defaults(func=_guard(run_describe))

    r = sub.add_parser("reset-offsets", help="reset committed offsets (dry run unless --execute)")
    _connection(r)
    _groups(r)
    r.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="TOPIC[:P,...]",
        help="scope: a topic, or some of its partitions (repeatable)",
    )
    r.add_argument(
        "--all-topics", action="store_true", help="scope: every partition with a committed offset"
    )
    spec = r.add_mutually_exclusive_group()
    spec.add_argument("--to-earliest", action="store_true")
    spec.add_argument("--to-latest", action="store_true")
    spec.add_argument("--to-current", action="store_true")
    spec.add_argument("--to-offset", type=int, metavar="OFFSET")
    spec.add_argument("--shift-by", type=int, metavar="N")
    spec.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss")
    spec.add_argument("--by-duration", metavar="PnDTnHnMnS")
    spec.add_argument(
        "--from-file", metavar="CSV", help="Kafka's reset plan CSV ([group,]topic,partition,offset)"
    )
    r.add_argument("--export", action="store_true", help="print the plan as Kafka's CSV")
    mode = r.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true", help="commit the new offsets")
    mode.add_argument("--dry-run", action="store_true", help="only show the new offsets (default)")
    _format(r)
    r.set_defaults(func=_guard(run_reset))

    from .group_delete_cmd import register_delete

    register_delete(sub, _connection, _groups, _format, _guard)

    from .group_lag_cmd import register_lag

    register_lag(sub, _connection, _format, _guard)


# -- shared flags ----------------------------------------------------------------------------------


def _connection(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    p.add_argument("--command-config", metavar="FILE", help="client properties (security)")
    p.add_argument(
        "--timeout",
        type=int,
        default=5000,
        metavar="MS",
        help="time to wait for the cluster per request (default 5000, as Kafka's tool)",
    )


def _groups(p: argparse.ArgumentParser) -> None:
    p.add_argument("--group", action="append", default=[], metavar="GROUP", help="repeatable")
    p.add_argument("--all-groups", action="store_true", help="every group")


def _format(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="table for people (default), json (raw numbers), or kafka: the exact text of "
        "kafka-consumer-groups.sh",
    )


def _guard(fn):
    """Runtime failures (unreachable cluster, refused request) exit 1 with one line."""

    def run(args: argparse.Namespace) -> int:
        if getattr(args, "timeout", 1) <= 0:
            raise InputError(f"must be > 0 (ms), got {args.timeout}", field="--timeout")
        try:
            return fn(args)
        except GroupRuntimeError as exc:
            print(f"kafka-rebalance group {args.group_command}: error: {exc}", file=sys.stderr)
            return 1

    return run


def admin_for(args: argparse.Namespace) -> GroupAdmin:
    return GroupAdmin(args.bootstrap_server, args.command_config, args.timeout)


def _group_ids(args: argparse.Namespace, admin: GroupAdmin) -> list[str]:
    if args.all_groups and args.group:
        raise InputError("give --group or --all-groups, not both", field="--group")
    if args.all_groups:
        return [g.group_id for g in admin.list_groups()]
    if not args.group:
        raise InputError("give --group GROUP (repeatable) or --all-groups", field="--group")
    return list(dict.fromkeys(args.group))


def _emit_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


# -- list ------------------------------------------------------------------------------------------

_STATES = {
    s.lower(): s
    for s in (
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
        "Empty",
        "Assigning",
        "Reconciling",
    )
}
_TYPES = {"classic": "Classic", "consumer": "Consumer"}


def _filter(text: str | None, known: dict[str, str], flag: str) -> set[str]:
    if not text:
        return set()
    out = set()
    for s in text.split(","):
        key = s.strip().lower()
        if key not in known:
            raise InputError(
                f"invalid value '{s.strip()}' in '{text}' (valid: {', '.join(known.values())})",
                field=flag,
            )
        out.add(known[key])
    return out


def run_list(args: argparse.Namespace) -> int:
    states = _filter(args.state, _STATES, "--state")
    types = _filter(args.type, _TYPES, "--type")
    with admin_for(args) as admin:
        listings = [
            g
            for g in admin.list_groups()
            if (not states or g.state in states) and (not types or g.type in types)
        ]
    with_type, with_state = args.type is not None, args.state is not None
    if args.format == "json":
        _emit_json(
            {"groups": [{"group": g.group_id, "type": g.type, "state": g.state} for g in listings]}
        )
    elif args.format == "kafka":
        sys.stdout.write(gv.kafka_text_list(listings, with_type, with_state))
    else:
        cols = ["group"] + (["type"] if with_type else []) + (["state"] if with_state else [])
        rows = [
            [g.group_id] + ([g.type] if with_type else []) + ([g.state] if with_state else [])
            for g in sorted(listings, key=lambda g: g.group_id)
        ]
        textfmt.print_table(Console(), f"{len(rows)} consumer groups", cols, rows)
    return 0


# -- describe --------------------------------------------------------------------------------------


def run_describe(args: argparse.Namespace) -> int:
    if args.verbose and not args.members:
        raise InputError("--verbose goes with --members", field="--verbose")
    if args.assignor:
        from ..assign.registry import assignor_factory

        assignor_factory(args.assignor)  # unknown name -> exit 2 before any request
    view = "members" if args.members else "state" if args.state else "offsets"
    with admin_for(args) as admin:
        ids = _group_ids(args, admin)
        groups = admin.describe(ids, raw_metadata=bool(args.assignor))
        results = []
        for gid in gv.group_order(ids):
            g = groups[gid]
            item: dict[str, Any] = {"group": g, "view": view}
            if view == "offsets":
                committed = admin.committed(gid)
                tps = {tp for m in g.members for tp in m.assignment} | set(committed)
                ends = admin.log_offsets(
                    sorted(tps, key=lambda tp: (tp.topic, tp.partition)), "latest"
                )
                item["rows"] = gv.offset_rows(g, committed, ends)
            elif view == "members":
                item["rows"] = gv.member_rows(g)
            if args.assignor and g.state != "Dead":
                from ..kafka.group_whatif import what_if

                topics = {t for m in g.members for t in (m.subscribed_topics or ())} | {
                    tp.topic for m in g.members for tp in m.assignment
                }
                counts: dict[str, int] = {}
                if topics:
                    for tp in admin.topic_partitions(sorted(topics)):
                        counts[tp.topic] = max(counts.get(tp.topic, 0), tp.partition + 1)
                item["what_if"] = what_if(g, counts, args.assignor)
            results.append(item)
    missing = [r["group"].group_id for r in results if r["group"].state == "Dead"]
    _print_describe(results, args)
    if missing:
        print(
            f"kafka-rebalance group describe: error: group(s) not found: {', '.join(missing)}",
            file=sys.stderr,
        )
        return 1
    return 0


def _print_describe(results: list[dict], args: argparse.Namespace) -> None:
    if args.format == "json":
        out = []
        for item in results:
            g: Group = item["group"]
            entry: dict[str, Any] = gv.state_json(g)
            entry["exists"] = g.state != "Dead"
            if item["view"] == "offsets":
                entry["offsets"] = [r.to_json() for r in item["rows"]]
            elif item["view"] == "members":
                entry["members_detail"] = [r.to_json() for r in item["rows"]]
            if "what_if" in item:
                entry["what_if"] = item["what_if"].to_json()
            out.append(entry)
        _emit_json({"groups": out})
        return
    if args.format == "kafka":
        for item in results:
            g = item["group"]
            rows = item.get("rows", [None])
            error, notice, show = gv.group_notice(g, len(rows))
            if error:
                sys.stdout.write(f"\nError: {error}\n")
                continue
            if notice:
                sys.stderr.write(f"\n{notice}\n")
            if item["view"] == "offsets" and show:
                sys.stdout.write(gv.kafka_text_offsets(rows))
            elif item["view"] == "members":
                # printMembers prints the header even for a group with no members
                sys.stdout.write(gv.kafka_text_members(rows, args.verbose))
            elif item["view"] == "state":
                sys.stdout.write(gv.kafka_text_state(g))
            if "what_if" in item:
                sys.stdout.write(item["what_if"].kafka_text())
        sys.stdout.flush()
        return
    console = Console()
    for item in results:
        _table_describe(console, item, args.verbose)


def _table_describe(console: Console, item: dict, verbose: bool) -> None:
    g: Group = item["group"]
    if g.state == "Dead":
        console.print(f"Consumer group '{g.group_id}' does not exist.")
        return
    title = f"{g.group_id}: {g.type} group, {g.state}, {len(g.members)} members"
    if g.group_epoch is not None:
        title += f", group epoch {g.group_epoch}, assignment epoch {g.assignment_epoch}"
    if item["view"] == "offsets":
        rows = [
            [
                r.topic or textfmt.DASH,
                textfmt.count(r.partition),
                textfmt.count(r.current_offset),
                textfmt.count(r.log_end_offset),
                textfmt.count(r.lag),
                r.consumer_id or textfmt.DASH,
                r.host or textfmt.DASH,
                r.client_id or textfmt.DASH,
            ]
            for r in item["rows"]
        ]
        textfmt.print_table(
            console,
            title,
            [
                "TOPIC",
                ">PARTITION",
                ">CURRENT-OFFSET",
                ">LOG-END-OFFSET",
                ">LAG",
                "CONSUMER-ID",
                "HOST",
                "CLIENT-ID",
            ],
            rows,
        )
    elif item["view"] == "members":
        kip848 = g.type == "Consumer"
        cols = ["CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", ">#PARTITIONS"]
        if verbose:
            cols.append("ASSIGNMENT")
            if kip848:
                cols += [">MEMBER-EPOCH", "TARGET-ASSIGNMENT"]
        rows = []
        for r in item["rows"]:
            row = [
                r.consumer_id,
                r.group_instance_id or textfmt.DASH,
                r.host,
                r.client_id,
                textfmt.count(r.partitions),
            ]
            if verbose:
                row.append(_assignment_cell(r.assignment))
                if kip848:
                    row += [
                        textfmt.count(r.member_epoch),
                        _assignment_cell(r.target_assignment or ()),
                    ]
            rows.append(row)
        textfmt.print_table(console, title, cols, rows)
    else:
        c = g.coordinator
        pairs = [
            ("coordinator", c.label() if c else textfmt.NA),
            ("assignment strategy", g.assignor or textfmt.DASH),
            ("state", g.state),
            ("type", g.type),
            ("members", textfmt.count(len(g.members))),
        ]
        if g.group_epoch is not None:
            pairs += [
                ("group epoch", textfmt.count(g.group_epoch)),
                ("target assignment epoch", textfmt.count(g.assignment_epoch)),
            ]
        textfmt.print_kv(console, title, pairs)
    if "what_if" in item:
        _print_what_if(console, item["what_if"])


def _print_what_if(console: Console, w) -> None:
    rows = [
        [m, _assignment_cell(w.live.get(m, ())), _assignment_cell(w.proposed.get(m, ()))]
        for m in w.live
    ]
    title = f"what if {w.strategy}: {textfmt.count(w.moved)} partitions would move" + (
        " (over 2 cooperative rounds)" if w.rounds == 2 else ""
    )
    textfmt.print_table(console, title, ["MEMBER", "LIVE", w.strategy.upper()], rows)


def _assignment_cell(tps: Sequence) -> str:
    """`topic: 0-2; other: 3` (the assign command's compact form)."""
    return compact_partitions([[tp.topic, tp.partition] for tp in tps]) or textfmt.DASH


# -- reset-offsets ---------------------------------------------------------------------------------


def _spec(args: argparse.Namespace) -> gr.ResetSpec:
    if args.to_earliest:
        return gr.ResetSpec("to-earliest")
    if args.to_latest:
        return gr.ResetSpec("to-latest")
    if args.to_current:
        return gr.ResetSpec("to-current")
    if args.to_offset is not None:
        return gr.ResetSpec("to-offset", args.to_offset)
    if args.shift_by is not None:
        return gr.ResetSpec("shift-by", args.shift_by)
    if args.to_datetime is not None:
        return gr.ResetSpec("to-datetime", gr.parse_datetime_ms(args.to_datetime))
    if args.by_duration is not None:
        ms = gr.parse_duration_ms(args.by_duration)
        return gr.ResetSpec("by-duration", int(time.time() * 1000) - ms)
    if args.from_file is not None:
        try:
            with open(args.from_file, encoding="utf-8") as fh:
                text = fh.read()
        except FileNotFoundError:
            raise InputError("file not found", source=args.from_file) from None
        return gr.ResetSpec("from-file", plan=gr.parse_csv_plan(text, args.group, args.from_file))
    raise InputError(
        "give one of --to-earliest, --to-latest, --to-current, --to-offset, --shift-by, "
        "--to-datetime, --by-duration, --from-file",
        field="--reset-offsets",
    )


def run_reset(args: argparse.Namespace) -> int:
    spec = _spec(args)
    if args.topic and args.all_topics:
        raise InputError("give --topic or --all-topics, not both", field="--topic")
    if not args.topic and not args.all_topics and spec.kind != "from-file":
        raise InputError(
            "One of the reset scopes should be defined: --all-topics, --topic.", field="--topic"
        )
    named, whole = gr.parse_topic_args(args.topic)
    with admin_for(args) as admin:
        ids = _group_ids(args, admin)
        groups = admin.describe(ids)
        active = [g for g in groups.values() if g.active]
        if active:
            for g in active:
                who = (
                    ", ".join(f"{m.member_id} ({m.client_id}@{m.host})" for m in g.members)
                    or "none listed"
                )
                print(
                    f"kafka-rebalance group reset-offsets: error: group '{g.group_id}' is {g.state}, "
                    f"not inactive; offsets can only be reset when it has no active members. "
                    f"Active members: {who}",
                    file=sys.stderr,
                )
            return 1
        scope_topics = named + admin.topic_partitions(whole) if args.topic else []
        plan: dict[str, dict] = {}
        warnings: list[str] = []
        notices: list[str] = []
        for gid in gr.java_group_order(ids):
            if args.all_topics:
                scope = list(gr.java_map_order({tp: 0 for tp in admin.committed(gid)}))
            elif spec.kind == "from-file" and not args.topic:
                scope = []
            else:
                scope = scope_topics
            res = gr.plan_reset(admin, gid, scope, spec)
            plan[gid] = res.offsets
            warnings.extend(res.warnings)
            notices.extend(f"\nWarn: {n}" for n in res.notices)
            notices.extend(f"\nError: {e}" for e in res.errors)
        if args.execute:
            for gid, offsets in plan.items():
                admin.alter_offsets(gid, offsets)
    for w in warnings:
        print(f"WARN {w}", file=sys.stderr)
    for n in notices:
        # Kafka prints these on stdout, before the table; ours keep stdout for the table/JSON/CSV
        print(n, file=sys.stdout if args.format == "kafka" and not args.export else sys.stderr)
    if args.export:
        _write_stdout(gr.export_csv(plan, single_group=len(args.group) == 1) + "\n")
    elif args.format == "json":
        _emit_json(
            {
                "executed": bool(args.execute),
                "groups": [
                    {
                        "group": gid,
                        "offsets": [
                            {"topic": tp.topic, "partition": tp.partition, "new_offset": off}
                            for tp, off in offsets.items()
                        ],
                    }
                    for gid, offsets in plan.items()
                ],
            }
        )
    elif args.format == "kafka":
        _write_stdout(gr.kafka_text_reset(plan))
    else:
        rows = [
            [gid, tp.topic, textfmt.count(tp.partition), textfmt.count(off)]
            for gid, offsets in plan.items()
            for tp, off in sorted(offsets.items(), key=lambda kv: (kv[0].topic, kv[0].partition))
        ]
        what = "committed" if args.execute else "dry run, nothing committed (add --execute)"
        textfmt.print_table(
            Console(), f"new offsets: {what}", ["GROUP", "TOPIC", ">PARTITION", ">NEW-OFFSET"], rows
        )
    return 0


def _write_stdout(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
