"""The main job: every part of the toolkit, end to end, on an embedded default that needs no cluster.

Steps (each shown as it runs):
 1. a synthetic cluster: brokers in racks, Zipf topic rates, leader skew after a
    rolling restart, and a freshly added empty broker;
 2. a day of metric samples for it;
 3. a consumer group's rolling restart simulated under eager, cooperative,
    static and KIP-848; the eager run's commits and generations become
    `__consumer_offsets` records (the group record codecs); log-end offsets
    follow from the scenario's produce rate, as the simulator produces them;
 4. the Spark jobs: load model, offsets, lag, a small sweep;
 5. skew, preferred leader election, leader balance and a reassignment plan
    on the load model's snapshot, compared with Kafka's `--generate`;
 6. `kafka-rebalance cluster execute` of the plan (in a process of its own, through
    the real kafka-python client) against the simulated cluster;
 7. the HTML report.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .. import ClusterSnapshot
from .. import write_json as atomic_write_json

START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: telemetry starts here


@dataclass(frozen=True)
class DemoConfig:
    out: Path
    scale: int = 1
    seed: int = 7
    master: str | None = None
    execute_speedup: float = 2000.0

    @property
    def brokers(self) -> int:
        return 12 * self.scale

    @property
    def partitions(self) -> int:
        return 600 * self.scale


def rolling_restart_scenario(scale: int, seed: int) -> dict[str, Any]:
    members = 6 * scale
    return {
        "name": "demo rolling restart",
        "seed": seed,
        "duration_ms": 600_000,
        "protocol": "classic",
        "group": {
            "id": "orders-app",
            "assignors": ["range", "cooperative-sticky"],
            "session_timeout_ms": 45_000,
            "enable_auto_commit": True,
            "auto_commit_interval_ms": 5_000,
            "delivery": "at-least-once",
        },
        "topics": [{"name": "orders", "partitions": 12 * scale, "produce_rate": 600 * scale}],
        "members": {"count": members, "processing_ms_per_record": 1.0},
        "events": [
            {"at_ms": 120_000, "kind": "rolling_restart", "down_ms": 10_000, "every_ms": 60_000},
            # then one member's processing gets stuck (heartbeats go on, max.poll.interval.ms is not
            # reached): its partitions stop committing, which is what Burrow's STOP rule is for
            {"at_ms": 480_000, "kind": "pause", "member": "m2", "for_ms": 200_000},
        ],
    }


def sweep_grid(seed: int) -> dict[str, Any]:
    base = rolling_restart_scenario(1, seed)
    base = {
        **base,
        "duration_ms": 480_000,
        "events": [e for e in base["events"] if e["kind"] != "pause"],
    }
    return {
        "base": base,
        "grid": {
            "protocol": ["classic", "consumer"],
            "assignor": ["range", "cooperative-sticky", "uniform"],
            "session_timeout_ms": [10_000, 45_000],
            "static_membership": [False, True],
            "seed": [seed],
        },
    }


class Demo:
    """Runs the steps in order; `step(name)` reports progress through the callback."""

    def __init__(self, cfg: DemoConfig, progress: Callable[[str, str], None]) -> None:
        self.cfg = cfg
        self.progress = progress
        self.out = cfg.out
        self.report: dict[str, Any] = {
            "title": "kafka-rebalance demo",
            "subtitle": f"embedded default, scale {cfg.scale}, seed {cfg.seed}",
            "cards": {},
        }
        self.timings: dict[str, float] = {}
        self.files: dict[str, str] = {}

    # -- helpers ---------------------------------------------------------------------------

    def _path(self, *parts: str) -> Path:
        p = self.out.joinpath(*parts)
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def _timed(self, name: str, fn: Callable[[], None]) -> None:
        self.progress(name, "start")
        t0 = time.perf_counter()
        fn()
        self.timings[name] = round(time.perf_counter() - t0, 2)
        self.progress(name, f"done in {self.timings[name]:.1f}s")

    # -- 1. cluster -------------------------------------------------------------------------

    def make_cluster(self) -> None:
        from .. import add_empty_broker, rolling_restart, snapshot_to_json, synthetic_cluster

        base = synthetic_cluster(
            brokers=self.cfg.brokers,
            racks=3,
            partitions=self.cfg.partitions,
            rf=3,
            seed=self.cfg.seed,
            total_bytes_in=2.0e8 * self.cfg.scale,
            size_median=2.0e8,
        )
        restarted = rolling_restart(base)
        grown, new_broker = add_empty_broker(restarted)
        self.cluster = grown
        self.new_broker = new_broker
        atomic_write_json(
            self._path("cluster", "snapshot.json"), snapshot_to_json(grown), indent=None
        )
        self.files["cluster snapshot"] = str(self.out / "cluster" / "snapshot.json")

    # -- 2. telemetry -----------------------------------------------------------------------

    def make_samples(self) -> None:
        from .telemetry import metric_samples, write_parquet

        table = metric_samples(self.cluster, START_MS, step_ms=300_000, seed=self.cfg.seed)
        write_parquet(table, self._path("telemetry", "metric_samples.parquet"))
        self.report["cards"]["metric samples"] = table.num_rows

    # -- 3. simulations ---------------------------------------------------------------------

    def simulate(self) -> None:
        from .. import COMPARE_VARIANTS, consumer_offsets_records, log_end_offsets, simulate
        from .ownership import ownership_intervals
        from .telemetry import write_parquet

        doc = rolling_restart_scenario(self.cfg.scale, self.cfg.seed)
        compare: dict[str, dict] = {}
        ownership: dict[str, dict] = {}
        for name in COMPARE_VARIANTS:
            self.progress("simulate", name)
            # the __consumer_offsets telemetry carries the eager coordinator's own GroupMetadata
            res = simulate(doc, variant=name, events=True, record_group_metadata=name == "eager")
            compare[name] = res.summary
            res.write_events(self._path("simulations", f"{name}.events.jsonl"))
            intervals, stops = ownership_intervals(res.events, doc["duration_ms"])
            ownership[name] = {
                "duration_ms": doc["duration_ms"],
                "intervals": intervals,
                "stops": stops,
            }
            if name == "eager":
                records = consumer_offsets_records(
                    res.events, START_MS, group_metadata=res.group_metadata
                )
                write_parquet(records, self._path("telemetry", "consumer_offsets.parquet"))
                self.report["cards"]["__consumer_offsets records"] = records.num_rows
        atomic_write_json(self._path("simulations", "compare.json"), compare)
        write_parquet(
            log_end_offsets(doc["topics"], START_MS, doc["duration_ms"]),
            self._path("telemetry", "log_end_offsets.parquet"),
        )
        self.report["compare"] = compare
        self.report["ownership"] = ownership

    # -- 4. Spark ---------------------------------------------------------------------------

    def spark_jobs(self) -> None:
        from pyspark.sql import SparkSession

        from .. import spark_session

        # Reuse a session someone else started (tests, notebooks) and leave it running for them.
        owned = SparkSession.getActiveSession() is None
        spark = spark_session(
            self.cfg.master, shuffle_partitions=8, app_name="kafka-rebalance-demo"
        )
        try:
            self._spark_jobs(spark)
        finally:
            if owned:
                spark.stop()

    def _spark_jobs(self, spark) -> None:
        from .. import LoadModelConfig, run_lag, run_load_model, run_offsets, run_sweep

        self.progress("spark", "load-model")

        # Samples every 5 minutes: 12 per 1-hour window, Cruise Control's default of 5 windows.
        lm = run_load_model(
            spark,
            str(self.out / "telemetry" / "metric_samples.parquet"),
            str(self.out / "load_model"),
            LoadModelConfig(),
            snapshot=str(self.out / "cluster" / "snapshot.json"),
        )
        self.load_model = _as_dict(lm)
        self.progress("spark", "offsets")
        self.offsets = _as_dict(
            run_offsets(
                spark,
                str(self.out / "telemetry" / "consumer_offsets.parquet"),
                str(self.out / "offsets"),
            )
        )
        self.progress("spark", "lag")
        lag = _as_dict(
            run_lag(
                spark,
                str(self.out / "offsets"),
                str(self.out / "telemetry" / "log_end_offsets.parquet"),
                str(self.out / "lag"),
            )
        )
        self.lag = lag
        self.report["lag"] = _lag_section(self.out / "lag", lag)
        self.progress("spark", "sweep")
        grid_path = self._path("sweep", "grid.json")
        atomic_write_json(grid_path, sweep_grid(self.cfg.seed))
        sweep = _as_dict(run_sweep(spark, str(grid_path), str(self.out / "sweep")))
        self.sweep = sweep
        self.report["sweep"] = _sweep_section(self.out / "sweep")
        self.report["cards"]["simulations in the sweep"] = len(self.report["sweep"].get("rows", []))

    # -- 5. cluster analysis ----------------------------------------------------------------

    def analyse_cluster(self) -> None:
        from .. import Mode, elect, load_snapshot, plan, skew

        snap_path = self.out / "load_model" / "snapshot.json"
        snap = load_snapshot(snap_path) if snap_path.exists() else self.cluster
        # The load model knows loads, the synthetic cluster knows the new empty broker and leaders.
        snap = _with_brokers_of(snap, self.cluster)
        self.snapshot = snap
        before = skew(snap, 1.10, 10.0).to_json()
        atomic_write_json(self._path("cluster", "skew_before.json"), before)
        election = elect(snap)
        atomic_write_json(self._path("plans", "preferred_election.json"), election.election_json())
        elected = election.after
        leaders_res = plan(elected, Mode.LEADERS, [])
        leaders = leaders_res.to_json()
        atomic_write_json(
            self._path("plans", "leaders_reassignment.json"),
            leaders_res.reassignment_json(),
            indent=None,
        )
        plan_res = plan(
            snap, Mode.ADD_BROKERS, [self.new_broker], compare_generate=True, seed=self.cfg.seed
        )
        add_broker = plan_res.to_json()
        atomic_write_json(
            self._path("plans", "add_broker_reassignment.json"),
            plan_res.reassignment_json(),
            indent=None,
        )
        full_res = plan(snap, Mode.FULL, [])
        full = full_res.to_json()
        atomic_write_json(
            self._path("plans", "full_reassignment.json"),
            full_res.reassignment_json(),
            indent=None,
        )
        after = skew(full_res.after_snapshot, 1.10, 10.0).to_json()
        atomic_write_json(self._path("cluster", "skew_after.json"), after)
        self.plan_file = self.out / "plans" / "add_broker_reassignment.json"
        self.plan_summary = add_broker
        resources = ("replicas", "leaders", "bytes_in", "bytes_out", "size_bytes")
        self.report["broker_load"] = {
            "intro": "Each resource per broker before and after the full rebalance plan (new broker included).",
            "before": {r: {str(b["broker"]): b[r] for b in before["brokers"]} for r in resources},
            "after": {r: {str(b["broker"]): b[r] for b in after["brokers"]} for r in resources},
            "max_over_mean": {"before": before["max_over_mean"], "after": after["max_over_mean"]},
        }
        count = lambda s: {
            str(b.id): sum(1 for p in s.partitions if p.leader == b.id) for b in s.brokers
        }  # noqa: E731
        self.report["leaders"] = {
            "after rolling restart": count(snap),
            "after preferred election": count(elected),
            "after leader balance": count(leaders_res.after_snapshot),
        }
        self.report["moves"] = {
            "plan (add broker)": add_broker["replica_moves"],
            "lower bound": add_broker["lower_bound_moves"],
            "kafka --generate": add_broker.get("generate", {}).get("replica_moves", 0),
        }
        self.report["moves_intro"] = (
            f"Adding broker {self.new_broker}: our plan moves {add_broker['bytes_moved'] / 2**30:,.1f} GiB; "
            "the lower bound is the replicas the new broker must take for balance; --generate lays every "
            "topic out again from scratch."
        )
        keep = ("mode", "replica_moves", "lower_bound_moves", "bytes_moved", "leader_changes")
        self.report["plans"] = [{k: p.get(k) for k in keep} for p in (add_broker, full, leaders)]
        self.report["cards"].update(
            {
                "replica moves (add broker)": add_broker["replica_moves"],
                "lower bound": add_broker["lower_bound_moves"],
                "kafka --generate moves": add_broker.get("generate", {}).get("replica_moves", 0),
                "preferred elections": len(election.partitions),
                "leader changes (balance)": leaders["leader_changes"],
            }
        )

    # -- 6. execute -------------------------------------------------------------------------

    def execute(self) -> None:
        from .. import SimCluster

        state = self.out / "plans" / "add_broker_execution.state.json"
        if state.exists():
            state.unlink()
        with SimCluster(self.snapshot, speedup=self.cfg.execute_speedup) as sim:
            # the command a person would run, in a process of its own, against the simulated cluster
            argv = [
                "cluster",
                "execute",
                "--reassignment-json-file",
                str(self.plan_file.relative_to(self.out)),
                "--bootstrap-server",
                sim.bootstrap,
                "--throttle",
                "50000000",
                "--max-moves-per-broker",
                "50",
                "--state-file",
                str(state.relative_to(self.out)),
                "--execute",
                "--format",
                "json",
            ]
            proc = subprocess.run(
                [sys.executable, "-m", "kafka_rebalance", *argv],
                capture_output=True,
                text=True,
                check=False,
                # paths relative to the results folder: the state file names its rollback file,
                # and the folder is built under another name, then moved into place
                cwd=self.out,
            )
            rc = proc.returncode
            result = json.loads(proc.stdout or "{}")
            final = sim.snapshot()
        if rc != 0:
            raise RuntimeError(
                f"cluster execute failed with exit code {rc}: {result or proc.stderr[-2000:]}"
            )
        target = json.loads(self.plan_file.read_text())
        wanted = {(p["topic"], p["partition"]): tuple(p["replicas"]) for p in target["partitions"]}
        got = {(p.topic, p.partition): p.replicas for p in final.partitions}
        mismatched = [k for k, v in wanted.items() if got.get(k) != v]
        if mismatched:
            raise RuntimeError(
                f"after execute, {len(mismatched)} partitions differ from the plan, e.g. {mismatched[:3]}"
            )
        self.execute_result = {
            "phase": result.get("phase"),
            "batches": len(result.get("status", {})),
            "partitions": len(wanted),
        }
        self.report["cards"]["executed batches (simulated cluster)"] = self.execute_result[
            "batches"
        ]
        self.report["execute"] = {
            "simulated": True,
            "plan": "plans/add_broker_reassignment.json",
            "partitions": len(wanted),
            "batches": self.execute_result["batches"],
            "phase": result.get("phase"),
        }

    # -- 7. report --------------------------------------------------------------------------

    def write_report(self) -> Path:
        from .. import write_report

        self.report["timings_s"] = self.timings
        # every chart names the input or plan it shows
        self.report["sources"] = {
            "broker_load": "full plan, plans/full_reassignment.json, on the load model's snapshot",
            "leaders": "cluster/snapshot.json, then plans/preferred_election.json and "
            "plans/leaders_reassignment.json",
            "moves": "add-broker plan, plans/add_broker_reassignment.json",
            "ownership": "scenario: demo rolling restart",
            "compare": "scenario: demo rolling restart",
            "lag": "telemetry/consumer_offsets.parquet and telemetry/log_end_offsets.parquet",
            "sweep": "sweep/grid.json",
            "execute": "plans/add_broker_reassignment.json",
        }
        atomic_write_json(self.out / "report.json", self.report)
        return write_report(self.out)

    def run(self) -> dict[str, Any]:
        self.out.mkdir(parents=True, exist_ok=True)
        self._timed("cluster", self.make_cluster)
        self._timed("telemetry", self.make_samples)
        self._timed("simulate", self.simulate)
        self._timed("spark", self.spark_jobs)
        self._timed("plan", self.analyse_cluster)
        self._timed("execute", self.execute)
        report: list[Path] = []
        self._timed("report", lambda: report.append(self.write_report()))
        return {
            "report": str(report[0]),
            "out": str(self.out),
            "plans": sorted(str(p) for p in (self.out / "plans").glob("*.json")),
            "timings_s": self.timings,
            "plan": {
                k: self.plan_summary.get(k)
                for k in (
                    "replica_moves",
                    "lower_bound_moves",
                    "bytes_moved",
                    "complete",
                    "goals_satisfied",
                )
            },
            "execute": self.execute_result,
            "load_model": self.load_model,
            "offsets": self.offsets,
            "lag": self.lag,
            "sweep": self.sweep,
        }


def _as_dict(res: Any) -> dict:
    if isinstance(res, dict):
        return res
    if hasattr(res, "summary"):
        s = res.summary
        return s() if callable(s) else s
    from dataclasses import asdict, is_dataclass

    return asdict(res) if is_dataclass(res) and not isinstance(res, type) else {"result": str(res)}


def _with_brokers_of(snap: ClusterSnapshot, reference: ClusterSnapshot) -> ClusterSnapshot:
    """Keep the reference's broker list (racks, capacity, the empty new broker) and its leaders/ISR."""
    ref = {(p.topic, p.partition): p for p in reference.partitions}
    parts = []
    for p in snap.partitions:
        r = ref.get((p.topic, p.partition))
        parts.append(replace(p, replicas=r.replicas, leader=r.leader, isr=r.isr) if r else p)
    return ClusterSnapshot(reference.brokers, tuple(parts))


def _lag_section(lag_dir: Path, summary: dict) -> dict:
    """Total lag per group every log-end sample (lag.parquet) and Burrow's final evaluation per group."""
    import pyarrow.parquet as pq

    section: dict[str, Any] = {
        "series": {},
        "statuses": {},
        "title": "Consumer lag of the eager rolling restart, then m2 stuck from 8 min (sum over partitions)",
    }
    lag_file = lag_dir / "lag.parquet"
    if lag_file.exists():
        t = pq.read_table(lag_file, columns=["ts", "group", "lag"]).to_pandas()
        t["ms"] = t["ts"].astype("datetime64[ms]").astype("int64")
        total = t.groupby(["group", "ms"], as_index=False)["lag"].sum().sort_values(["group", "ms"])
        for group, g in total.groupby("group"):
            t0 = int(g["ms"].iloc[0])
            section["series"][str(group)] = [
                [(int(x) - t0) / 1000.0, float(y)] for x, y in zip(g["ms"], g["lag"])
            ]
    groups = summary.get("groups") or {}
    if isinstance(groups, dict) and groups:
        cols = [
            "group",
            "status",
            "complete",
            "total_lag",
            "partitions",
            "worst partition",
            "worst lag",
            "worst status",
        ]
        rows = []
        for g, v in sorted(groups.items()):
            ml = v.get("maxlag") or {}
            rows.append(
                [
                    g,
                    v.get("status"),
                    v.get("complete"),
                    v.get("total_lag"),
                    v.get("partitions"),
                    f"{ml.get('topic')}-{ml.get('partition')}",
                    ml.get("current_lag"),
                    ml.get("status"),
                ]
            )
        section["statuses"] = {"columns": cols, "rows": rows}
    return section


def _sweep_section(sweep_dir: Path) -> dict:
    import pyarrow.parquet as pq

    path = sweep_dir / "sweep.parquet"
    if not path.exists():
        return {}
    df = pq.read_table(path).to_pandas()
    hidden = {
        "timeline",
        "params",
        "scenario",
        "error",
        "wall_ms",
        "generation",
        "records_produced",
    }
    cols = [c for c in df.columns if df[c].dtype.kind in "biufO" and c not in hidden]
    df = df[cols]
    return {
        "columns": cols,
        "rows": df.astype(object).where(df.notna(), "").values.tolist(),
        "label_columns": [
            c
            for c in ("protocol", "assignor", "session_timeout_ms", "static_membership")
            if c in cols
        ],
        "metrics": ["unavailable_partition_ms", "member_paused_ms"],
    }
