"""Benchmark of the Spark pipeline (issue 5): load-model, offsets decoding, sweep scaling.

    .venv/bin/python bench/pipeline.py                       # full size, prints the markdown section
    .venv/bin/python bench/pipeline.py --write               # ... and puts it in BENCHMARKS.md
    .venv/bin/python bench/pipeline.py --partitions 2000 --records 1000000 --sweep 8   # smaller
    .venv/bin/python bench/pipeline.py --only offsets --repeat 3              # offsets alone, median of 3
    .venv/bin/python bench/pipeline.py --cluster --records 2000000 --repeat 3 # offsets: standalone vs local[2]

Cases (each job in a fresh process, so each gets its own JVM and Spark session):
  load-model  24 h of 1-minute samples for 20,000 leader partitions (28.8 M rows), local[2],
              default rules (1 h windows, 5 windows, 3 samples); goal < 60 s
  offsets     10 M `__consumer_offsets` records (offset commits, 0.1% tombstones, 0.05% corrupt,
              plus group metadata records), local[2]; goal > 200 k records/s
  sweep       N simulations (classic/consumer x assignors x static, seeds) on local[1] and local[2]
  --cluster   the offsets job on a standalone cluster (a master and --workers N workers of 2/N
              cores, default one 2-core worker, on 127.0.0.1, tests/spark_cluster.py) and on
              local[2], alternating, same input; prints the ratio

Inputs are generated with numpy/pyarrow (not Spark), once, under --data (default /tmp). Wall
times include reading the input and writing every output; not JVM start-up.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
BENCHMARKS = ROOT / "BENCHMARKS.md"
SECTION = "bench/pipeline.py"

from _pipeline_inputs import gen_records, gen_samples  # noqa: E402

# ---- jobs, each run in a child process ------------------------------------------------


def child(job: str, args: argparse.Namespace) -> dict:
    from kafka_rebalance.pipeline.session import get_spark

    conf = dict(kv.split("=", 1) for kv in args.conf)
    spark = get_spark(args.master, args.shuffle_partitions, f"bench-{job}", conf=conf)
    spark.range(1).count()  # JVM and session up before the clock starts
    t0 = time.perf_counter()
    if job == "load-model":
        from kafka_rebalance.pipeline.load_model import run_load_model

        summary = run_load_model(spark, args.input, args.out).summary
        summary.pop("not_ready_partitions", None)
    elif job == "offsets":
        from kafka_rebalance.pipeline.offsets import run_offsets

        summary = run_offsets(spark, args.input, args.out)
    else:
        from kafka_rebalance.pipeline.sweep import run_sweep

        summary = run_sweep(spark, args.input, args.out)
        summary.pop("by_variant", None)
    summary["wall_s"] = time.perf_counter() - t0
    spark.stop()
    return summary


def run_child(
    job: str,
    master: str,
    inp: Path,
    out: Path,
    shuffle: int,
    env: dict | None = None,
    conf: list[str] | tuple[str, ...] = (),
) -> dict:
    cmd = [
        sys.executable,
        __file__,
        "--child",
        job,
        "--master",
        master,
        "--input",
        str(inp),
        "--out",
        str(out),
        "--shuffle-partitions",
        str(shuffle),
    ]
    for kv in conf:
        cmd += ["--conf", kv]
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env=env or dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"),
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{job} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def sweep_grid(path: Path, n: int) -> None:
    seeds = max(1, n // 8)
    grid = {
        "base": {
            "name": "bench",
            "seed": 1,
            "duration_ms": 600_000,
            "protocol": "classic",
            "group": {"id": "bench", "assignors": ["range"]},
            "topics": [{"name": "t", "partitions": 24, "produce_rate": 240}],
            "members": {"count": 6},
            "events": [
                {"at_ms": 120_000, "kind": "rolling_restart", "down_ms": 10_000, "every_ms": 60_000}
            ],
        },
        "grid": {
            "protocol": ["classic", "consumer"],
            "assignor": ["range", "cooperative-sticky", "uniform"],
            "static_membership": [False, True],
            "seeds": seeds,
        },
    }
    path.write_text(json.dumps(grid))


def load_avg() -> str:
    try:
        return ", ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def write_section(text: str) -> None:
    from kafka_rebalance.io_util import atomic_write_text

    start, end = f"<!-- {SECTION}:start -->", f"<!-- {SECTION}:end -->"
    current = BENCHMARKS.read_text(encoding="utf-8") if BENCHMARKS.exists() else "# Benchmarks\n"
    if start in current and end in current:
        new = (
            current[: current.index(start)]
            + text.strip()
            + current[current.index(end) + len(end) :]
        )
    else:
        new = current.rstrip() + "\n\n" + text.strip() + "\n"
    atomic_write_text(BENCHMARKS, new)


def _conf(args) -> list[str]:
    """--conf pairs for the jobs, plus Spark's event log when --event-log names a folder."""
    conf = list(args.conf)
    if args.event_log:
        Path(args.event_log).mkdir(parents=True, exist_ok=True)
        conf += [
            "spark.eventLog.enabled=true",
            "spark.eventLog.compress=false",
            f"spark.eventLog.dir=file://{Path(args.event_log).resolve()}",
        ]
    return conf


def cluster_vs_local(args) -> int:
    """The offsets job on a standalone cluster and on local[2], alternating runs on one input."""
    import statistics
    import tempfile

    sys.path.insert(0, str(ROOT / "tests"))
    import spark_cluster

    data = Path(args.data)
    recs = data / f"records-{args.records}"
    if not recs.exists():
        info = gen_records(recs, args.records)
        (recs / "_info.json").write_text(json.dumps(info))
    home = Path(tempfile.mkdtemp(prefix="bench-spark-cluster-"))
    cores = args.worker_cores or max(1, 2 // args.workers)
    cluster = spark_cluster.start(home, cores=cores, memory="4g", workers=args.workers)
    print(f"standalone: {args.workers} worker(s) of {cores} core(s)", file=sys.stderr)
    label = f"standalone ({args.workers} worker(s), {cores} core(s) each)"
    runs: list[tuple[int, str, dict, str]] = []  # (run, master, summary, load)
    same: list[bool] = []
    try:
        for i in range(1, args.repeat + 1):
            for name, master, env in (
                ("local[2]", "local[2]", None),
                ("standalone", cluster.url, cluster.env()),
            ):
                before = load_avg()
                out = data / f"out-offsets-{name[:5]}"
                r = run_child("offsets", master, recs, out, 8, env, _conf(args))
                load = f"{before} -> {load_avg()}"
                runs.append((i, name, r, load))
                print(
                    f"{name}: {r['records']:,} records in {r['wall_s']:.1f} s "
                    f"(load {load}; phases {r.get('phases_s')})",
                    file=sys.stderr,
                )
            same.append(same_outputs(data / "out-offsets-local", data / "out-offsets-stand"))
    finally:
        cluster.stop()
        import shutil

        shutil.rmtree(home, ignore_errors=True)
    times = {n: [r["wall_s"] for _, m, r, _ in runs if m == n] for n in ("local[2]", "standalone")}
    med = {k: statistics.median(v) for k, v in times.items()}
    print(
        "| run | master | wall (s) | plan | decode + commits | latest / group metadata / quarantine "
        "| rebalances | load before -> after |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for i, name, r, load in runs:
        ph = r.get("phases_s", {})
        cells = [
            f"{ph.get(k, 0):.1f}"
            for k in ("plan", "decode_commits", "latest_group_metadata_quarantine", "rebalances")
        ]
        shown = label if name == "standalone" else name
        print(f"| {i} | {shown} | {r['wall_s']:.1f} | {' | '.join(cells)} | {load} |")
    pairs = [s / loc for s, loc in zip(times["standalone"], times["local[2]"])]
    print(
        f"\nMedians of {args.repeat}: standalone {med['standalone']:.1f} s, local[2] "
        f"{med['local[2]']:.1f} s: standalone / local[2] = {med['standalone'] / med['local[2]']:.2f}; "
        f"pair by pair {', '.join(f'{x:.2f}' for x in pairs)}. Outputs identical in "
        f"{sum(same)} of {len(same)} pairs."
    )
    return 0 if all(same) else 1


def same_outputs(a: Path, b: Path) -> bool:
    """Whether two offsets outputs hold the same tables: schema and rows (order-free), every table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = sorted(p.name for p in a.glob("*.parquet"))
    if names != sorted(p.name for p in b.glob("*.parquet")):
        print(f"different tables: {names} vs {sorted(p.name for p in b.glob('*.parquet'))}")
        return False
    for name in names:
        ta, tb = pq.read_table(a / name), pq.read_table(b / name)
        keys = [(f.name, "ascending") for f in ta.schema if not pa.types.is_nested(f.type)]
        if ta.schema != tb.schema or not ta.sort_by(keys).equals(tb.sort_by(keys)):
            print(f"{name} differs between {a} and {b}", file=sys.stderr)
            return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--partitions", type=int, default=20_000)
    ap.add_argument("--hours", type=int, default=24)
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--sweep", type=int, default=16, help="simulations in the sweep")
    ap.add_argument("--data", default="/tmp/kafka-rebalance-bench")
    ap.add_argument("--only", choices=("load-model", "offsets", "sweep"), action="append")
    ap.add_argument("--write", action="store_true", help="put the section into BENCHMARKS.md")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run offsets this many times; the row shows the median",
    )
    ap.add_argument(
        "--cluster", action="store_true", help="offsets on a standalone cluster vs local[2]"
    )
    ap.add_argument("--workers", type=int, default=1, help="--cluster: workers (default 1)")
    ap.add_argument("--worker-cores", type=int, help="--cluster: cores per worker (default 2/N)")
    ap.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for every job's session (repeatable)",
    )
    ap.add_argument(
        "--event-log",
        metavar="DIR",
        help="--cluster: write Spark's event logs here (bench/spark_events.py reads them)",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--master", default="local[2]", help=argparse.SUPPRESS)
    ap.add_argument("--input", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--shuffle-partitions", type=int, default=8, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        summary = child(args.child, args)
        print(json.dumps(summary, default=str))
        return 0
    if args.workers < 1 or (args.worker_cores is not None and args.worker_cores < 1):
        ap.error(
            f"--workers/--worker-cores: must be at least 1, got {args.workers}/{args.worker_cores}"
        )
    if args.cluster:
        return cluster_vs_local(args)

    data = Path(args.data)
    jobs = args.only or ["load-model", "offsets", "sweep"]
    data.mkdir(parents=True, exist_ok=True)
    cache = data / "results.json"  # so --only re-measures one job and keeps the others' rows
    results: dict[str, dict] = json.loads(cache.read_text()) if cache.exists() and args.only else {}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load_start = load_avg()
    if "load-model" in jobs:
        samples = data / f"samples-{args.partitions}x{args.hours}h"
        if not samples.exists():
            t0 = time.perf_counter()
            rows = gen_samples(samples, args.partitions, args.hours)
            print(
                f"generated {rows:,} sample rows in {time.perf_counter() - t0:.1f} s",
                file=sys.stderr,
            )
        rows = args.partitions * args.hours * 60
        r = run_child("load-model", "local[2]", samples, data / "out-load-model", 8)
        r["rows"] = rows
        results["load-model"] = r
        print(
            f"load-model: {rows:,} rows in {r['wall_s']:.1f} s = {rows / r['wall_s']:,.0f} rows/s",
            file=sys.stderr,
        )
    if "offsets" in jobs:
        recs = data / f"records-{args.records}"
        if not recs.exists():
            t0 = time.perf_counter()
            info = gen_records(recs, args.records)
            (recs / "_info.json").write_text(json.dumps(info))
            print(
                f"generated {info['records']:,} records in {time.perf_counter() - t0:.1f} s",
                file=sys.stderr,
            )
        runs = []
        for _ in range(args.repeat):
            before = load_avg()
            r = run_child("offsets", "local[2]", recs, data / "out-offsets", 8)
            r["load"] = f"{before} -> {load_avg()}"
            runs.append(r)
            print(
                f"offsets: {r['records']:,} records in {r['wall_s']:.1f} s = {r['records'] / r['wall_s']:,.0f} "
                f"records/s (load {r['load']}; phases {r.get('phases_s')})",
                file=sys.stderr,
            )
        r = sorted(runs, key=lambda x: x["wall_s"])[len(runs) // 2]  # the median run
        r["runs"] = [(x["wall_s"], x["load"]) for x in runs]
        results["offsets"] = r
    if "sweep" in jobs:
        grid = data / f"grid-{args.sweep}.json"
        data.mkdir(parents=True, exist_ok=True)
        sweep_grid(grid, args.sweep)
        for master in ("local[1]", "local[2]"):
            r = run_child("sweep", master, grid, data / f"out-sweep-{master[6]}", 2)
            results[f"sweep {master}"] = r
            print(
                f"sweep {master}: {r['scenarios']} simulations in {r['wall_s']:.1f} s = "
                f"{r['simulations_per_minute']:.1f}/min",
                file=sys.stderr,
            )
    cache.write_text(json.dumps(results, default=str))
    text = section(args, results, started, load_start, load_avg())
    print(text)
    if args.write:
        write_section(text)
    return 0


def section(args, results: dict, started: str, load_start: str, load_end: str) -> str:
    cmd = (
        "`.venv/bin/python bench/pipeline.py"
        + (
            ""
            if (args.partitions, args.hours, args.records, args.sweep)
            == (20_000, 24, 10_000_000, 16)
            else f" --partitions {args.partitions} --hours {args.hours} --records {args.records} --sweep {args.sweep}"
        )
        + " --write`"
    )
    lines = [
        f"<!-- {SECTION}:start -->",
        "## Pipeline (`bench/pipeline.py`)",
        "",
        f"Command: {cmd}  ",
        f"Run {started} on {platform.machine()} with {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"PySpark local mode, driver memory {os.environ.get('KR_SPARK_DRIVER_MEMORY', '4g')}; load average "
        f"{load_start} at start and {load_end} at the end (the machine is shared with other jobs, so times are noisy "
        "and pessimistic).",
        "",
        "Each job runs in a fresh process with its own JVM; the wall time covers the job itself (reading the "
        "input, every pass, writing every output), not JVM start-up. Inputs are generated with numpy/pyarrow.",
        "",
        "| job | master | input | wall time | throughput | goal | notes |",
        "|---|---|---|---|---|---|---|",
    ]
    if "load-model" in results:
        r = results["load-model"]
        lines.append(
            f"| load-model | local[2] | {r['rows']:,} sample rows ({args.partitions:,} leader partitions x "
            f"{args.hours} h of 1-minute samples) | {r['wall_s']:.1f} s | {r['rows'] / r['wall_s']:,.0f} rows/s | "
            f"< 60 s | ready={r['ready']}, {r['valid_partitions']:,}/{r['partitions']:,} valid, {r['windows']} windows |"
        )
    if "offsets" in results:
        r = results["offsets"]
        lines.append(
            f"| offsets | local[2] | {r['records']:,} `__consumer_offsets` records | {r['wall_s']:.1f} s | "
            f"{r['records'] / r['wall_s']:,.0f} records/s | > 200,000 records/s | {r['commits']:,} commits, "
            f"{r['group_metadata']:,} group metadata, {r['rebalances']:,} episodes, {r['quarantined']:,} quarantined; "
            + ", ".join(f"{k} {v:.1f} s" for k, v in r.get("phases_s", {}).items())
            + (
                "; median of " + ", ".join(f"{w:.1f} s (load {la})" for w, la in r["runs"])
                if len(r.get("runs", [])) > 1
                else ""
            )
            + " |"
        )
    for master in ("local[1]", "local[2]"):
        key = f"sweep {master}"
        if key in results:
            r = results[key]
            lines.append(
                f"| sweep | {master} | {r['scenarios']} simulations (10 simulated minutes, 6 members, rolling restart) | "
                f"{r['wall_s']:.1f} s | {r['simulations_per_minute']:.1f} simulations/min | - | {r['failed']} failed |"
            )
    if "sweep local[1]" in results and "sweep local[2]" in results:
        s = (
            results["sweep local[2]"]["simulations_per_minute"]
            / results["sweep local[1]"]["simulations_per_minute"]
        )
        lines += ["", f"Sweep scaling local[1] -> local[2]: {s:.2f}x."]
    lines.append(f"<!-- {SECTION}:end -->")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
