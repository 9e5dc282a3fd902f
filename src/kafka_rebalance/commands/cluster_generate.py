"""`kafka-rebalance cluster generate`: emulate kafka-reassign-partitions.sh --generate."""

from __future__ import annotations

import argparse

from .. import io_util, output
from ..cluster import kafka_json
from ..errors import InputError
from ..io_publish import check_output_paths
from ..ops.cluster import check_seed, generate
from .cluster_common import add_source, kv_table, load_snapshot, parse_ids, read_input


def register(sub) -> None:
    g = sub.add_parser("generate", help="emulate kafka-reassign-partitions.sh --generate")
    add_source(g)
    g.add_argument(
        "--topics-to-move-json-file",
        metavar="F",
        help='{"version": 1, "topics": [...]} (default all)',
    )
    g.add_argument(
        "--broker-list", metavar="IDS", help="brokers to place on (default: alive brokers)"
    )
    g.add_argument(
        "--seed", type=int, default=0, help="seed of the java.util.Random Kafka leaves unseeded"
    )
    g.add_argument(
        "--disable-rack-aware",
        action="store_true",
        help="ignore the brokers' racks, as the tool's --disable-rack-aware",
    )
    g.add_argument("--output", metavar="FILE", help="write the proposed reassignment JSON here")
    output.add_format_flag(g)
    g.set_defaults(func=run_generate)


def run_generate(args: argparse.Namespace) -> int:
    check_output_paths({"--output": args.output})
    topics = None
    if args.topics_to_move_json_file:
        topics = read_input(args.topics_to_move_json_file, kafka_json.parse_topics_to_move_json)
    check_seed(args.seed, "--seed")
    brokers = parse_ids(args.broker_list, "--broker-list") or None
    snap = load_snapshot(args)
    if args.disable_rack_aware:
        from dataclasses import replace

        snap = replace(snap, brokers=tuple(replace(b, rack=None) for b in snap.brokers))
    try:
        res = generate(snap, brokers, topics, seed=args.seed)
    except InputError as exc:
        if exc.field == "topics" and args.topics_to_move_json_file:
            # a topic of the topics-to-move file the cluster does not have: name that file
            raise exc.in_file(args.topics_to_move_json_file) from None
        raise
    result = res.to_json()
    if args.output:
        io_util.atomic_write_json(args.output, res.reassignment_json(), indent=None)
        result["output"] = args.output
    output.emit(result, args.format, kv_table("--generate"))
    return 0
