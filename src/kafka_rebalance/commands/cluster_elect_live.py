"""`cluster elect --execute`: kafka-leader-election.sh through the Admin API, with its lines and exit status."""

from __future__ import annotations

import argparse
import sys

from .. import io_util
from ..cluster import kafka_json
from ..errors import InputError
from ..fields import INT32_MAX
from ..output import emit, stderr


def _partitions(args: argparse.Namespace) -> list[tuple[str, int]] | None:
    """LeaderElectionCommand's validate(): exactly one of --topic, --all-topic-partitions, --path-to-json-file."""
    chosen = [
        name
        for name, given in (
            ("topic", args.topic is not None),
            ("all-topic-partitions", args.all_topic_partitions),
            ("path-to-json-file", args.path_to_json_file is not None),
        )
        if given
    ]
    if len(chosen) != 1:
        raise InputError(
            "One and only one of the following options is required: topic, all-topic-partitions, "
            "path-to-json-file",
            field="--execute",
        )
    if args.topic is not None and args.partition is None:
        raise InputError("Missing required option(s): partition", field="--partition")
    if args.topic is None and args.partition is not None:
        raise InputError("Option partition is only allowed if topic is used", field="--partition")
    if args.topics:
        raise InputError(
            "not with --execute: use --topic/--partition or a JSON file", field="--topics"
        )
    if args.topic is not None:
        if args.partition is not None and not 0 <= args.partition <= INT32_MAX:
            raise InputError(
                f"expected a partition number in [0, {INT32_MAX}], got {args.partition}",
                field="--partition",
            )
        return [(args.topic, args.partition)]
    if args.path_to_json_file is not None:
        try:
            tps = kafka_json.parse_election_json(io_util.read_structured(args.path_to_json_file))
        except InputError as exc:
            raise exc.in_file(args.path_to_json_file) from None
        return [(tp.topic, tp.partition) for tp in tps]
    return None


def run_elect_execute(args: argparse.Namespace) -> int:
    from kafka.errors import KafkaError

    from ..kafka.admin import (
        ELECTION_NOT_NEEDED,
        PREFERRED,
        UNCLEAN,
        AdminError,
        KafkaAdmin,
        error_text,
    )

    if not args.bootstrap_server:
        raise InputError("--execute needs --bootstrap-server", field="--execute")
    partitions = _partitions(args)
    kind = args.election_type or "PREFERRED"
    try:
        with KafkaAdmin(args.bootstrap_server, args.command_config) as admin:
            results = admin.elect_leaders(PREFERRED if kind == "PREFERRED" else UNCLEAN, partitions)
    except (AdminError, KafkaError) as exc:
        stderr.print(f"[red]kafka-rebalance cluster elect: {exc or type(exc).__name__}[/red]")
        return 1
    name = lambda k: f"{k[0]}-{k[1]}"  # noqa: E731
    succeeded = sorted(k for k, (c, _) in results.items() if c == 0)
    noop = sorted(k for k, (c, _) in results.items() if c == ELECTION_NOT_NEEDED)
    failed = {k: v for k, v in sorted(results.items()) if v[0] not in (0, ELECTION_NOT_NEEDED)}
    lines = []
    if succeeded:
        lines.append(
            f"Successfully completed leader election ({kind}) for partitions "
            + ", ".join(map(name, succeeded))
        )
    if noop:
        lines.append("Valid replica already elected for partitions " + ", ".join(map(name, noop)))
    for k, (code, msg) in failed.items():
        lines.append(
            f"Error completing leader election ({kind}) for partition: {name(k)}: {error_text(code, msg)}"
        )
    if args.format == "json":
        emit(
            {
                "election_type": kind,
                "elected": [name(k) for k in succeeded],
                "not_needed": [name(k) for k in noop],
                "failed": {name(k): error_text(c, m) for k, (c, m) in failed.items()},
                "lines": lines,
            },
            "json",
        )
    else:
        for line in lines:
            print(line, flush=True)
    if failed:
        print(f"{len(failed)} replica(s) could not be elected", file=sys.stderr, flush=True)
        return 1
    return 0
