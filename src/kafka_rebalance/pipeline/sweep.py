"""A grid of simulation scenarios run as Spark tasks, one simulation per task, into one table.

Grid file (YAML or JSON):

```yaml
base: {...}                # a simulation scenario (docs/formats.md section 2), or
base_file: scenario.yaml   # a path to one, relative to the grid file
grid:
  protocol: [classic, consumer]
  assignor: [range, cooperative-sticky, uniform]   # classic: group.assignors = [a];
                                                   # consumer: group.server_assignor = a
  session_timeout_ms: [10000, 45000]
  static_membership: [false, true]
  seeds: 3                 # seeds 0..2, or `seed: [7, 8]`
  group.max_poll_records: [100, 500]               # any other axis: a dotted path into the scenario
```

Combinations that make no sense are skipped and counted: a client assignor
(roundrobin, sticky, cooperative-sticky) under the consumer protocol, or a
server assignor (uniform) under the classic one. Every other combination is
checked with the simulator's scenario parser before Spark starts: an invalid
base or axis value is an InputError naming the grid file and `base.<field>`
or `grid.<axis>`. A simulation that still fails at run time gives a row with
its `error`; the sweep goes on.
"""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

from .. import limits
from ..errors import InputError
from ..fields import INT32_MAX, INT64_MAX, INT64_MIN
from ..io_util import read_structured
from .io import staged_output, write_parquet

CLIENT_ONLY = {"roundrobin", "sticky", "cooperative-sticky"}
SERVER_ONLY = {"uniform"}
SWEEP_SCHEMA = (
    "scenario int, protocol string, assignor string, session_timeout_ms int, static_membership boolean, seed long, "
    "params string, rebalances long, generation long, unavailable_partition_ms long, member_paused_ms long, "
    "partitions_moved long, revocations long, records_produced long, records_processed long, duplicates long, "
    "lost long, lag_max long, lag_final long, wall_ms double, error string"
)


def _set_path(doc: dict, path: str, value: Any, where: str, axis: str) -> None:
    parts = path.split(".")
    cur = doc
    for p in parts[:-1]:
        cur = cur.setdefault(p, {})
        if not isinstance(cur, dict):
            raise InputError(
                f"cannot set {path}: {p} is not an object in the base scenario",
                source=where,
                field=f"grid.{axis}",
            )
    cur[parts[-1]] = value


def _axis_path(name: str, protocol: Any) -> str:
    """Where an axis lands in the scenario."""
    if name == "assignor":
        return "group.server_assignor" if protocol == "consumer" else "group.assignors"
    if name in ("session_timeout_ms", "static_membership"):
        return f"group.{name}"
    return name


def _under(field: str, path: str) -> bool:
    return field == path or field.startswith(path + ".") or field.startswith(path + "[")


def _validate(sc: dict, params: dict[str, Any], protocol: Any, where: str) -> None:
    """Parse one combination as the simulator will; blame the axis whose value is at fault, else the base."""
    from ..sim.scenario import parse_simulation_scenario

    try:
        parsed = parse_simulation_scenario(sc)
    except InputError as exc:
        field = exc.field or ""
        for name, value in params.items():
            if field and _under(field, _axis_path(name, protocol)):
                raise InputError(
                    f"{exc.message} (value {value!r}; combination {params})",
                    source=where,
                    field=f"grid.{name}",
                ) from None
        others = f" (combination {params})" if params else ""
        raise InputError(
            f"{exc.message}{others}", source=where, field=f"base.{field}" if field else "base"
        ) from None
    except (
        TypeError,
        ValueError,
        KeyError,
        AttributeError,
    ) as exc:  # a shape the parser did not foresee
        raise InputError(
            f"invalid scenario: {type(exc).__name__}: {exc} (combination {params})",
            source=where,
            field="grid" if params else "base",
        ) from None
    # the sweep table's columns are Spark int/long
    if parsed.group.session_timeout_ms > INT32_MAX:
        raise InputError(
            f"must be <= {INT32_MAX}, got {parsed.group.session_timeout_ms}",
            source=where,
            field="grid.session_timeout_ms"
            if "session_timeout_ms" in params
            else "base.group.session_timeout_ms",
        )
    if not INT64_MIN <= parsed.seed <= INT64_MAX:
        raise InputError(
            f"must fit in 64 bits, got {parsed.seed}",
            source=where,
            field="grid.seed" if "seed" in params else "base.seed",
        )


def expand_grid(doc: Any, where: str = "grid") -> tuple[list[dict[str, Any]], int]:
    """(scenarios, skipped): each scenario is {"scenario", "params", "doc"}."""
    if not isinstance(doc, dict):
        raise InputError("expected an object with 'base' (or 'base_file') and 'grid'", source=where)
    base = doc.get("base")
    if base is None and "base_file" in doc:
        base_path = Path(where).parent / str(doc["base_file"])
        base = read_structured(base_path)
    if not isinstance(base, dict):
        raise InputError("expected a simulation scenario object", source=where, field="base")
    grid = doc.get("grid", {})
    if not isinstance(grid, dict):
        raise InputError("expected an object of axis: [values]", source=where, field="grid")
    axes: dict[str, list] = {}
    runs = 1
    for name, values in grid.items():
        if name == "seeds":
            if not isinstance(values, int) or isinstance(values, bool) or values < 1:
                raise InputError("expected a positive integer", source=where, field="grid.seeds")
            runs *= values
            limits.check("sweep_runs", runs, field="grid.seeds", source=where)
            axes["seed"] = list(range(values))
            continue
        if not isinstance(values, list) or not values:
            raise InputError("expected a non-empty list", source=where, field=f"grid.{name}")
        runs *= len(values)
        limits.check("sweep_runs", runs, field=f"grid.{name}", source=where)
        axes[name] = values
    names = list(axes)
    scenarios: list[dict[str, Any]] = []
    skipped = 0
    for i, v in enumerate(axes.get("assignor", [])):
        if not isinstance(v, str):
            raise InputError(
                f"expected an assignor name, got {v!r}", source=where, field=f"grid.assignor[{i}]"
            )
    for combo in itertools.product(*(axes[n] for n in names)):
        params = dict(zip(names, combo))
        sc = copy.deepcopy(base)
        protocol = params.get("protocol", sc.get("protocol", "classic"))
        assignor = params.get("assignor")
        if assignor is not None:
            if (
                protocol == "consumer"
                and assignor in CLIENT_ONLY
                or protocol != "consumer"
                and assignor in SERVER_ONLY
            ):
                skipped += 1
                continue
        for name, value in params.items():
            path = _axis_path(name, protocol)
            _set_path(sc, path, [value] if path == "group.assignors" else value, where, name)
        sc["name"] = f"{sc.get('name', 'sweep')}#{len(scenarios)}"
        _validate(sc, params, protocol, where)
        scenarios.append({"scenario": len(scenarios), "params": params, "doc": sc})
    if not scenarios and not skipped:  # an empty product: still say what is wrong with the base
        _validate(copy.deepcopy(base), {}, base.get("protocol", "classic"), where)
    return scenarios, skipped


def run_one(item: dict[str, Any]) -> dict[str, Any]:
    """One Spark task: one simulation. The simulator is imported here, inside the task."""
    import time

    doc = item["doc"]
    group = doc.get("group", {}) or {}
    protocol = doc.get("protocol", "classic")
    row: dict[str, Any] = {
        "scenario": item["scenario"],
        "protocol": protocol,
        "assignor": group.get("server_assignor", "uniform")
        if protocol == "consumer"
        else ",".join(group.get("assignors", []) or ["range", "cooperative-sticky"]),
        "session_timeout_ms": group.get("session_timeout_ms", 45000),
        "static_membership": bool(group.get("static_membership", False)),
        "seed": doc.get("seed", 0),
        "params": json.dumps(item["params"], sort_keys=True),
        "error": None,
    }
    t0 = time.perf_counter()
    try:
        from ..sim.api import simulate

        s = simulate(doc, collect_events=False).summary
        rec = s.get("records", {})
        row.update(
            rebalances=s["rebalances"],
            generation=s["generation"],
            unavailable_partition_ms=s["unavailable_partition_ms"],
            member_paused_ms=s["member_paused_ms"],
            partitions_moved=s["partitions_moved"],
            revocations=s["revocations"],
            records_produced=rec.get("produced"),
            records_processed=rec.get("processed"),
            duplicates=rec.get("duplicates"),
            lost=rec.get("lost"),
            lag_max=s.get("lag", {}).get("max"),
            lag_final=s.get("lag", {}).get("final"),
        )
    except Exception as exc:  # one bad scenario never kills the sweep
        row["error"] = f"{type(exc).__name__}: {exc}"
    row["wall_ms"] = (time.perf_counter() - t0) * 1000.0
    return row


def run_sweep(spark, grid_path: str, out: str | None, grid_doc: Any = None) -> dict[str, Any]:
    """Simulate every point of a sweep grid (docs/formats.md) on Spark; write sweep.parquet under `out`."""
    import time

    from pyspark.sql.types import StructType, _parse_datatype_string

    doc = grid_doc if grid_doc is not None else read_structured(grid_path)
    scenarios, skipped = expand_grid(doc, grid_path or "grid")
    if not scenarios:
        raise InputError("the grid has no runnable combination", source=grid_path)
    schema = _parse_datatype_string(SWEEP_SCHEMA)
    assert isinstance(schema, StructType)  # SWEEP_SCHEMA is a struct of columns
    names = [f.name for f in schema.fields]
    t0 = time.perf_counter()
    rdd = (
        spark.sparkContext.parallelize(scenarios, len(scenarios))
        .map(run_one)
        .map(lambda r: tuple(r.get(n) for n in names))
    )
    df = spark.createDataFrame(rdd, schema).persist()
    try:
        rows = df.orderBy("scenario").collect()
        wall = time.perf_counter() - t0
        if out:
            with staged_output(out, ("sweep.parquet",)) as stage:
                write_parquet(df.orderBy("scenario"), stage / "sweep.parquet", files=1)
    finally:
        df.unpersist()
    failed = [r for r in rows if r["error"]]
    return {
        "scenarios": len(rows),
        "ok": len(rows) - len(failed),
        "failed": len(failed),
        "skipped": skipped,
        "wall_s": wall,
        "simulations_per_minute": 60.0 * len(rows) / wall if wall > 0 else None,
        "errors": [{"scenario": r["scenario"], "error": r["error"]} for r in failed][:20],
        "by_variant": _by_variant(rows),
        "out": out,
    }


def _by_variant(rows) -> list[dict[str, Any]]:
    """Means over seeds per (protocol, assignor, session timeout, static membership)."""
    acc: dict[tuple, list] = {}
    for r in rows:
        if r["error"]:
            continue
        acc.setdefault(
            (r["protocol"], r["assignor"], r["session_timeout_ms"], r["static_membership"]), []
        ).append(r)
    metrics = (
        "rebalances",
        "unavailable_partition_ms",
        "member_paused_ms",
        "partitions_moved",
        "duplicates",
        "lost",
        "lag_max",
    )
    out = []
    for (protocol, assignor, timeout, static), rs in sorted(
        acc.items(), key=lambda kv: tuple(str(x) for x in kv[0])
    ):
        entry: dict[str, Any] = {
            "protocol": protocol,
            "assignor": assignor,
            "session_timeout_ms": timeout,
            "static_membership": static,
            "runs": len(rs),
        }
        for m in metrics:
            vals = [r[m] for r in rs if r[m] is not None]
            entry[m] = sum(vals) / len(vals) if vals else None
        out.append(entry)
    return out
