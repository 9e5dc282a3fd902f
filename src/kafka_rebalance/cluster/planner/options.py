"""What the operator asks of a plan beyond the mode: thresholds, exclusions, demotion, CPU model.

Names and defaults are Cruise Control's (analyzer config and the request
parameters of its REST API): `disk.capacity.threshold` 0.8,
`cpu.capacity.threshold` 0.7, `network.inbound/outbound.capacity.threshold`
0.8, `max.replicas.per.broker` 10000, `excluded_topics` (a regular expression
matched against the whole topic name), `excluded_brokers_for_leadership`,
`excluded_brokers_for_replica_move`, and the CPU weights of its load model.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ...errors import InputError

DEFAULT_CAPACITY_THRESHOLDS = {"size_bytes": 0.8, "bytes_in": 0.8, "nw_out": 0.8, "cpu": 0.7}
DEFAULT_MAX_REPLICAS_PER_BROKER = 10_000
# Cruise Control's cpu.weight.of.leader.bytes.in.rate, ...leader.bytes.out.rate, ...follower.bytes.in.rate
DEFAULT_CPU_WEIGHTS = (0.7, 0.15, 0.15)


@dataclass(frozen=True)
class PlanOptions:
    capacity_thresholds: dict[str, float] = field(
        default_factory=lambda: dict(DEFAULT_CAPACITY_THRESHOLDS)
    )
    max_replicas_per_broker: int = DEFAULT_MAX_REPLICAS_PER_BROKER
    exclude_topics: str | None = None
    exclude_brokers_for_leadership: tuple[int, ...] = ()
    exclude_brokers_for_replica_move: tuple[int, ...] = ()
    demote_brokers: tuple[int, ...] = ()
    cpu_weights: tuple[float, float, float] = DEFAULT_CPU_WEIGHTS

    def __post_init__(self) -> None:
        for res, t in self.capacity_thresholds.items():
            if res not in DEFAULT_CAPACITY_THRESHOLDS:
                raise InputError(f"unknown capacity resource {res!r}", field="capacity_thresholds")
            if not (isinstance(t, (int, float)) and math.isfinite(t) and 0.0 < t <= 1.0):
                raise InputError(
                    f"a share of broker capacity: a number in (0, 1], got {t!r}",
                    field=f"{_THRESHOLD_FIELDS[res]}",
                )
        if self.max_replicas_per_broker < 1:
            raise InputError(
                f"expected a count >= 1, got {self.max_replicas_per_broker}",
                field="max_replicas_per_broker",
            )
        if self.exclude_topics is not None:
            try:
                re.compile(self.exclude_topics)
            except re.error as exc:
                raise InputError(
                    f"not a regular expression ({exc}): {self.exclude_topics!r}",
                    field="exclude_topics",
                ) from None
        w = self.cpu_weights
        if len(w) != 3 or not all(math.isfinite(x) and x >= 0 for x in w) or w[0] + w[1] <= 0:
            raise InputError(
                f"three weights >= 0 (leader bytes in, leader bytes out, follower bytes in), got {w!r}",
                field="cpu_weights",
            )

    def threshold(self, resource: str) -> float:
        return self.capacity_thresholds.get(resource, DEFAULT_CAPACITY_THRESHOLDS[resource])

    def topic_excluded(self, topic: str) -> bool:
        return (
            self.exclude_topics is not None and re.fullmatch(self.exclude_topics, topic) is not None
        )


_THRESHOLD_FIELDS = {
    "size_bytes": "disk_capacity_threshold",
    "bytes_in": "network_inbound_capacity_threshold",
    "nw_out": "network_outbound_capacity_threshold",
    "cpu": "cpu_capacity_threshold",
}
