"""CPU per partition as Cruise Control models it, without a trained regression.

The leader's CPU is the sampled one (the load model's `cpu`, Cruise Control's
percent: 100 = one core) where the samples have it. Where they do not, it is
estimated from bytes: Cruise Control splits a broker's CPU over its replicas in
proportion to `0.7 x leader bytes in + 0.15 x leader bytes out + 0.15 x follower
bytes in` (ModelParameters' default weights), so a partition's leader CPU is
`k x (0.7 x bytes_in + 0.15 x bytes_out)`, k fitted on the sampled partitions
(total sampled CPU over total weighted bytes). A follower carries the leader's
CPU times `0.15 x bytes_in / (0.7 x bytes_in + 0.15 x bytes_out)`
(ModelUtils.getFollowerCpuUtilFromLeaderLoad).

With no sample at all there is no scale: CPU is then in relative units, good for
balancing it but not for a capacity in cores, and the source says so.
"""

from __future__ import annotations

import enum

import numpy as np


class CpuSource(enum.Enum):
    SAMPLED = "sampled"  # every partition with traffic has a sample
    FITTED = "sampled, the rest estimated from bytes"
    RELATIVE = "estimated from bytes (relative units, no samples)"
    NONE = "no traffic"


def partition_cpu(
    bytes_in: np.ndarray,
    bytes_out: np.ndarray,
    sampled: np.ndarray,
    weights: tuple[float, float, float],
) -> tuple[np.ndarray, np.ndarray, CpuSource]:
    """(leader CPU, follower CPU, source) per partition."""
    w_in, w_out, w_follow = weights
    weighted = w_in * bytes_in + w_out * bytes_out
    has = sampled > 0
    if has.any():
        denom = weighted[has].sum()
        k = sampled[has].sum() / denom if denom > 0 else 0.0
        lead = np.where(has, sampled, k * weighted)
        missing = (~has) & (weighted > 0)
        source = CpuSource.FITTED if missing.any() else CpuSource.SAMPLED
    elif weighted.any():
        lead = weighted / max(weighted.mean(), 1e-300) * 1.0
        source = CpuSource.RELATIVE
    else:
        lead = np.zeros_like(weighted)
        source = CpuSource.NONE
    share = np.divide(
        w_follow * bytes_in, weighted, out=np.zeros_like(weighted), where=weighted > 0
    )
    return lead, lead * np.minimum(share, 1.0), source
