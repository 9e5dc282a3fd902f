"""`kafka-rebalance cluster describe|skew|elect|plan|generate|execute`: one module per subcommand.

Every subcommand reads a cluster from `--snapshot FILE` (docs/formats.md section 3
JSON, or the text of `kafka-topics --describe`) or from a live cluster with
`--bootstrap-server HOST:PORT [--command-config FILE]`. Files are written
atomically in the exact JSON of Kafka's own tools. The work is done by the
library (`kafka_rebalance.ops.cluster`); these modules parse flags and print.
"""

from __future__ import annotations

from . import (
    cluster_describe,
    cluster_elect,
    cluster_execute,
    cluster_generate,
    cluster_plan,
    cluster_skew,
)

SUBCOMMANDS = (
    cluster_describe,
    cluster_skew,
    cluster_elect,
    cluster_plan,
    cluster_generate,
    cluster_execute,
)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "cluster",
        help="broker and leader skew, preferred leader election, reassignment plans",
        description="Cluster rebalancing on a snapshot or a live cluster.",
    )
    sub = p.add_subparsers(dest="cluster_command", metavar="SUBCOMMAND")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
    for module in SUBCOMMANDS:
        module.register(sub)
