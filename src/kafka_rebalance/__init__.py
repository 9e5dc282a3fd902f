"""kafka-rebalance: Kafka-exact consumer-group and cluster rebalancing toolkit, as a library.

The public API is `__all__` below (README, "Python API"). Inputs are the dataclasses and JSON
documents the CLI reads (docs/formats.md); results are frozen dataclasses whose `to_json()` is
what the matching `kafka-rebalance` command prints with `--format json`.

    import kafka_rebalance as kr
    result = kr.assign_partitions({"topics": [{"name": "t", "partitions": 4}],
                        "members": [{"id": "a", "topics": ["t"]}]}, "range")
    result.to_json()["rounds"][0]["assignment"]   # {"a": [["t", 0], ["t", 1], ...]}

`import kafka_rebalance` is cheap: each name is imported on first use (module __getattr__), so
Spark, pyarrow or the Kafka clients load only when a function that needs them is called.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> (module under kafka_rebalance, attribute)
_EXPORTS: dict[str, tuple[str, str]] = {
    # inputs: the dataclasses of docs/formats.md
    "TopicPartition": ("model", "TopicPartition"),
    "TopicMetadata": ("model", "TopicMetadata"),
    "MemberSubscription": ("model", "MemberSubscription"),
    "GroupSpec": ("model", "GroupSpec"),
    "GroupScenario": ("model", "GroupScenario"),
    "Broker": ("model", "Broker"),
    "PartitionLoad": ("model", "PartitionLoad"),
    "PartitionReplicas": ("model", "PartitionReplicas"),
    "ClusterSnapshot": ("model", "ClusterSnapshot"),
    "METRIC_SAMPLE_COLUMNS": ("model", "METRIC_SAMPLE_COLUMNS"),
    "Scenario": ("sim.scenario", "Scenario"),
    "InputError": ("errors", "InputError"),
    # consumer group assignment
    "STRATEGIES": ("ops.assign", "STRATEGIES"),
    "assign_partitions": ("ops.assign", "assign_partitions"),
    "AssignResult": ("ops.assign", "AssignResult"),
    # rebalance simulation
    "COMPARE_VARIANTS": ("ops.simulate", "COMPARE_VARIANTS"),
    "simulate": ("ops.simulate", "simulate"),
    "SimulationRun": ("ops.simulate", "SimulationRun"),
    "compare": ("ops.simulate", "compare"),
    "Comparison": ("ops.simulate", "Comparison"),
    "write_events": ("sim.event_log", "write_events"),
    "consumer_offsets_records": ("sim.offsets_topic", "consumer_offsets_records"),
    "log_end_offsets": ("sim.offsets_topic", "log_end_offsets"),
    # cluster rebalancing
    "load_snapshot": ("ops.cluster_source", "load_snapshot"),
    "snapshot_to_json": ("cluster.snapshot", "snapshot_to_json"),
    "synthetic_cluster": ("cluster.synthetic", "synthetic_cluster"),
    "rolling_restart": ("cluster.synthetic", "rolling_restart"),
    "add_empty_broker": ("cluster.synthetic", "add_empty_broker"),
    "describe": ("ops.cluster", "describe"),
    "ClusterSummary": ("ops.cluster", "ClusterSummary"),
    "skew": ("ops.cluster", "skew"),
    "SkewResult": ("ops.cluster", "SkewResult"),
    "elect": ("ops.cluster", "elect"),
    "ElectionResult": ("ops.cluster", "ElectionResult"),
    "auto_elect": ("ops.cluster", "auto_elect"),
    "AutoElectionResult": ("ops.cluster", "AutoElectionResult"),
    "Mode": ("cluster.planner", "Mode"),
    "plan": ("ops.cluster", "plan"),
    "PlanOutcome": ("ops.cluster", "PlanOutcome"),
    "generate": ("ops.cluster", "generate"),
    "GenerateResult": ("ops.cluster", "GenerateResult"),
    "SimCluster": ("kafka.sim_cluster", "SimCluster"),
    "SimGroupCluster": ("sim.kafka_cluster", "SimCluster"),
    "SimConsumer": ("sim.kafka_client", "SimConsumer"),
    # __consumer_offsets
    "decode_offsets_record": ("ops.offsets", "decode_offsets_record"),
    "DecodedRecord": ("ops.offsets", "DecodedRecord"),
    # the parallel consumer
    "ParallelConsumer": ("kafka.parallel", "ParallelConsumer"),
    "ParallelConsumerOptions": ("kafka.parallel", "ParallelConsumerOptions"),
    # Spark jobs and the report
    "spark_session": ("pipeline.session", "get_spark"),
    "LoadModelConfig": ("pipeline.load_model", "LoadModelConfig"),
    "run_load_model": ("pipeline.load_model", "run_load_model"),
    "run_offsets": ("pipeline.offsets", "run_offsets"),
    "run_lag": ("pipeline.lag", "run_lag"),
    "run_sweep": ("pipeline.sweep", "run_sweep"),
    "write_report": ("report.build", "write_report"),
    # files
    "write_json": ("io_util", "atomic_write_json"),
}

__all__ = [
    "AssignResult",
    "AutoElectionResult",
    "Broker",
    "COMPARE_VARIANTS",
    "ClusterSnapshot",
    "ClusterSummary",
    "Comparison",
    "DecodedRecord",
    "ElectionResult",
    "GenerateResult",
    "GroupScenario",
    "GroupSpec",
    "InputError",
    "LoadModelConfig",
    "METRIC_SAMPLE_COLUMNS",
    "MemberSubscription",
    "Mode",
    "ParallelConsumer",
    "ParallelConsumerOptions",
    "PartitionLoad",
    "PartitionReplicas",
    "PlanOutcome",
    "STRATEGIES",
    "Scenario",
    "SimCluster",
    "SimConsumer",
    "SimGroupCluster",
    "SimulationRun",
    "SkewResult",
    "TopicMetadata",
    "TopicPartition",
    "add_empty_broker",
    "assign_partitions",
    "auto_elect",
    "compare",
    "consumer_offsets_records",
    "decode_offsets_record",
    "describe",
    "elect",
    "generate",
    "load_snapshot",
    "log_end_offsets",
    "plan",
    "rolling_restart",
    "run_lag",
    "run_load_model",
    "run_offsets",
    "run_sweep",
    "simulate",
    "skew",
    "snapshot_to_json",
    "spark_session",
    "synthetic_cluster",
    "write_events",
    "write_json",
    "write_report",
]


def __getattr__(name: str) -> Any:
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # the same names, for type checkers and the layering test
    from .cluster.planner import Mode
    from .cluster.snapshot import snapshot_to_json
    from .cluster.synthetic import add_empty_broker, rolling_restart, synthetic_cluster
    from .errors import InputError
    from .io_util import atomic_write_json as write_json
    from .kafka.parallel import ParallelConsumer, ParallelConsumerOptions
    from .kafka.sim_cluster import SimCluster
    from .model import (
        METRIC_SAMPLE_COLUMNS,
        Broker,
        ClusterSnapshot,
        GroupScenario,
        GroupSpec,
        MemberSubscription,
        PartitionLoad,
        PartitionReplicas,
        TopicMetadata,
        TopicPartition,
    )
    from .ops.assign import STRATEGIES, AssignResult, assign_partitions
    from .ops.cluster import (
        AutoElectionResult,
        ClusterSummary,
        ElectionResult,
        GenerateResult,
        PlanOutcome,
        SkewResult,
        auto_elect,
        describe,
        elect,
        generate,
        plan,
        skew,
    )
    from .ops.cluster_source import load_snapshot
    from .ops.offsets import DecodedRecord, decode_offsets_record
    from .ops.simulate import COMPARE_VARIANTS, Comparison, SimulationRun, compare, simulate
    from .pipeline.lag import run_lag
    from .pipeline.load_model import LoadModelConfig, run_load_model
    from .pipeline.offsets import run_offsets
    from .pipeline.session import get_spark as spark_session
    from .pipeline.sweep import run_sweep
    from .report.build import write_report
    from .sim.event_log import write_events
    from .sim.kafka_client import SimConsumer
    from .sim.kafka_cluster import SimCluster as SimGroupCluster
    from .sim.offsets_topic import consumer_offsets_records, log_end_offsets
    from .sim.scenario import Scenario
