"""Cruise Control's broker capacity files (capacity.json, capacityJBOD.json, capacityCores.json).

    {"brokerCapacities": [{"brokerId": "-1", "capacity": {"DISK": "100000", "CPU": "100",
                                                          "NW_IN": "10000", "NW_OUT": "10000"}}, ...]}

As BrokerCapacityConfigFileResolver reads them: `brokerId` -1 is the default for brokers not listed;
DISK is in MB (1024 x 1024 bytes), or an object of absolute log dir paths to MB (JBOD: the broker's
disk is their sum); CPU is a percentage (100 = the whole broker) or {"num.cores": N} (capacity 100 x N,
the percent of one core summed over cores), all brokers or none giving cores; NW_IN and NW_OUT are in
KB/s (1024 bytes). Numbers may be JSON strings (as Cruise Control writes them) or numbers. Pure: takes
the decoded document, returns values; `apply_capacities` puts them on a snapshot's brokers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .. import fields as F
from ..errors import InputError
from ..model import Broker, ClusterSnapshot, LogDir

MB = 1024 * 1024
KB = 1024
DEFAULT_BROKER = -1
RESOURCES = ("DISK", "CPU", "NW_IN", "NW_OUT")


@dataclass(frozen=True)
class BrokerCapacity:
    disk_bytes: float
    cpu: float  # Cruise Control's percent: 100 per core with num.cores, else 100 = the whole broker
    nw_in_bytes: float
    nw_out_bytes: float
    disk_by_dir: tuple[LogDir, ...] = ()  # JBOD: capacity per absolute log dir path
    num_cores: float | None = None


@dataclass(frozen=True)
class CapacityConfig:
    by_broker: dict[int, BrokerCapacity]  # -1: the default

    def for_broker(self, broker: int) -> BrokerCapacity:
        cap = self.by_broker.get(broker, self.by_broker.get(DEFAULT_BROKER))
        if cap is None:
            raise InputError(
                f"broker {broker} has no capacity and there is no default (brokerId -1)",
                field="brokerCapacities",
            )
        return cap


def _number(v: Any, where: str) -> float:
    if isinstance(v, bool):
        raise InputError(f"expected a number, got {F.show(v)}", field=where)
    if isinstance(v, str):
        try:
            x = float(v)
        except ValueError:
            raise InputError(f"expected a number, got {F.show(v)}", field=where) from None
    elif isinstance(v, (int, float)):
        x = float(v)
    else:
        raise InputError(f"expected a number, got {F.show(v)}", field=where)
    if not math.isfinite(x) or x < 0 or x > F.INT64_MAX:
        raise InputError(f"expected a number >= 0 (at most 2^63), got {F.show(v)}", field=where)
    return x


def _broker_id(v: Any, where: str) -> int:
    if isinstance(v, bool):
        raise InputError(f"expected a broker id, got {F.show(v)}", field=where)
    try:
        b = int(v) if isinstance(v, (int, str)) else None
    except ValueError:
        b = None
    if b is None or b < -1 or b > F.INT32_MAX:
        raise InputError(f"expected a broker id (-1 for the default), got {F.show(v)}", field=where)
    return b


def parse_capacity(doc: Any) -> CapacityConfig:
    """Validate a decoded capacity file; InputError names the field (`brokerCapacities[2].capacity.DISK`)."""
    if not isinstance(doc, Mapping) or "brokerCapacities" not in doc:
        raise InputError('expected {"brokerCapacities": [...]}', field="brokerCapacities")
    entries = doc["brokerCapacities"]
    if not isinstance(entries, list) or not entries:
        raise InputError(f"expected a non-empty list, got {entries!r}", field="brokerCapacities")
    out: dict[int, BrokerCapacity] = {}
    cores_given: set[bool] = set()
    for i, e in enumerate(entries):
        where = f"brokerCapacities[{i}]"
        if not isinstance(e, Mapping):
            raise InputError(f"expected an object, got {e!r}", field=where)
        for k in e:
            if k not in ("brokerId", "capacity", "doc"):
                raise InputError(
                    "unknown field (allowed: brokerId, capacity, doc)", field=f"{where}.{k}"
                )
        if "brokerId" not in e:
            raise InputError("missing", field=f"{where}.brokerId")
        bid = _broker_id(e["brokerId"], f"{where}.brokerId")
        if bid in out:
            raise InputError(f"broker {bid} listed twice", field=f"{where}.brokerId")
        cap = e.get("capacity")
        if not isinstance(cap, Mapping):
            raise InputError(f"expected an object, got {cap!r}", field=f"{where}.capacity")
        for k in cap:
            if k not in RESOURCES:
                raise InputError(
                    f"unknown resource (allowed: {', '.join(RESOURCES)})",
                    field=f"{where}.capacity.{k}",
                )
        for k in RESOURCES:
            if k not in cap:
                raise InputError("missing", field=f"{where}.capacity.{k}")
        disk = cap["DISK"]
        dirs: tuple[LogDir, ...] = ()
        if isinstance(disk, Mapping):
            if not disk:
                raise InputError("expected at least one log dir", field=f"{where}.capacity.DISK")
            items = []
            for path, mb in disk.items():
                if not isinstance(path, str) or not path.startswith("/"):
                    raise InputError(
                        f"the log dir {path!r} must be an absolute path",
                        field=f"{where}.capacity.DISK",
                    )
                items.append(LogDir(path, _number(mb, f"{where}.capacity.DISK.{path}") * MB))
            dirs = tuple(sorted(items, key=lambda d: d.path))
            disk_bytes = sum(d.capacity_bytes or 0.0 for d in dirs)
        else:
            disk_bytes = _number(disk, f"{where}.capacity.DISK") * MB
        cpu = cap["CPU"]
        cores = None
        if isinstance(cpu, Mapping):
            if "num.cores" not in cpu or len(cpu) != 1:
                raise InputError(
                    'expected {"num.cores": N} or a percentage', field=f"{where}.capacity.CPU"
                )
            cores = _number(cpu["num.cores"], f"{where}.capacity.CPU.num.cores")
            if cores <= 0:
                raise InputError(
                    f"expected cores > 0, got {cores}", field=f"{where}.capacity.CPU.num.cores"
                )
            cpu_cap = 100.0 * cores
        else:
            cpu_cap = _number(cpu, f"{where}.capacity.CPU")
            if cpu_cap > 100:
                raise InputError(
                    f'a percentage in [0, 100] (use {{"num.cores": N}} for cores), got {cpu!r}',
                    field=f"{where}.capacity.CPU",
                )
        cores_given.add(cores is not None)
        if len(cores_given) > 1:
            raise InputError(
                "num.cores must be given for all brokers or for none", field=f"{where}.capacity.CPU"
            )
        out[bid] = BrokerCapacity(
            disk_bytes,
            cpu_cap,
            _number(cap["NW_IN"], f"{where}.capacity.NW_IN") * KB,
            _number(cap["NW_OUT"], f"{where}.capacity.NW_OUT") * KB,
            dirs,
            cores,
        )
    return CapacityConfig(out)


def apply_capacities(snapshot: ClusterSnapshot, config: CapacityConfig) -> ClusterSnapshot:
    """The snapshot with every broker's capacities from the file (the file wins over the snapshot).

    JBOD capacities name the broker's log dirs: directories the snapshot already knows keep their order
    and get a capacity, the others are added.
    """
    brokers: list[Broker] = []
    for b in snapshot.brokers:
        c = config.for_broker(b.id)
        dirs = b.log_dirs
        if c.disk_by_dir:
            caps = {d.path: d.capacity_bytes for d in c.disk_by_dir}
            known = [LogDir(d.path, caps.get(d.path, d.capacity_bytes)) for d in dirs]
            seen = {d.path for d in dirs}
            dirs = tuple(known) + tuple(d for d in c.disk_by_dir if d.path not in seen)
        brokers.append(
            replace(
                b,
                disk_bytes=c.disk_bytes,
                nw_in_bytes=c.nw_in_bytes,
                nw_out_bytes=c.nw_out_bytes,
                cpu=c.cpu,
                log_dirs=dirs,
            )
        )
    return replace(snapshot, brokers=tuple(brokers))
