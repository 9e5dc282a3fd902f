"""Where a Spark application's time went, per stage, from its event log (spark.eventLog.enabled).

    .venv/bin/python bench/spark_events.py EVENT_LOG_FILE_OR_DIR [...]

For each stage: tasks, wall time (submission to completion), and the tasks' summed
scheduler delay (launch - submission of the stage, for the first wave), executor
deserialisation, run time, GC, result serialisation and getting-result time, the
longest task, and the gaps between stages (driver time: planning, the driver's own
work between jobs). Used to find why the offsets job is slower on a standalone cluster
than on local[N] (issue 18); `bench/pipeline.py --event-log DIR` writes the logs.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict


def summarise(path: str) -> list[str]:
    stages: dict[int, dict] = {}
    tasks: dict[int, list[dict]] = defaultdict(list)
    jobs: dict[int, dict] = {}
    app_start = app_end = None
    with open(path) as f:
        for line in f:
            e = json.loads(line)
            ev = e["Event"]
            if ev == "SparkListenerApplicationStart":
                app_start = e["Timestamp"]
            elif ev == "SparkListenerApplicationEnd":
                app_end = e["Timestamp"]
            elif ev == "SparkListenerJobStart":
                jobs[e["Job ID"]] = {"start": e["Submission Time"], "stages": e["Stage IDs"]}
            elif ev == "SparkListenerJobEnd":
                jobs[e["Job ID"]]["end"] = e["Completion Time"]
            elif ev == "SparkListenerStageCompleted":
                info = e["Stage Info"]
                stages[info["Stage ID"]] = {
                    "name": info["Stage Name"],
                    "tasks": info["Number of Tasks"],
                    "submitted": info.get("Submission Time"),
                    "completed": info.get("Completion Time"),
                }
            elif ev == "SparkListenerTaskEnd":
                info, m = e["Task Info"], e.get("Task Metrics") or {}
                tasks[e["Stage ID"]].append(
                    {
                        "launch": info["Launch Time"],
                        "finish": info["Finish Time"],
                        "getting": info.get("Getting Result Time", 0),
                        "host": info.get("Executor ID"),
                        "deser": m.get("Executor Deserialize Time", 0),
                        "run": m.get("Executor Run Time", 0),
                        "gc": m.get("JVM GC Time", 0),
                        "ser": m.get("Result Serialization Time", 0),
                        "result": m.get("Result Size", 0),
                        "read": (m.get("Input Metrics") or {}).get("Records Read", 0),
                        "written": (m.get("Output Metrics") or {}).get("Records Written", 0),
                    }
                )
    out = [
        f"{path}: application {((app_end or 0) - (app_start or 0)) / 1000:.1f} s",
        "stage | tasks | wall s | sched delay s (sum) | deser s | run s | gc s | ser s | "
        "getting-result s | max task s | result KiB | executors | name",
    ]
    prev_end = None
    for sid in sorted(stages, key=lambda s: stages[s]["submitted"] or 0):
        st, ts = stages[sid], tasks[sid]
        sub, done = st["submitted"] or 0, st["completed"] or 0
        if prev_end is not None:
            out.append(f"   (driver gap {(sub - prev_end) / 1000:.2f} s)")
        prev_end = done
        delay = sum(
            max(0, (t["finish"] - t["launch"]) - t["run"] - t["deser"] - t["ser"]) for t in ts
        )
        out.append(
            " | ".join(
                [
                    str(sid),
                    str(len(ts)),
                    f"{(done - sub) / 1000:.2f}",
                    f"{delay / 1000:.2f}",
                    f"{sum(t['deser'] for t in ts) / 1000:.2f}",
                    f"{sum(t['run'] for t in ts) / 1000:.2f}",
                    f"{sum(t['gc'] for t in ts) / 1000:.2f}",
                    f"{sum(t['ser'] for t in ts) / 1000:.2f}",
                    f"{sum((t['finish'] - t['getting']) if t['getting'] else 0 for t in ts) / 1000:.2f}",
                    f"{max(((t['finish'] - t['launch']) for t in ts), default=0) / 1000:.2f}",
                    f"{sum(t['result'] for t in ts) / 1024:.0f}",
                    ",".join(sorted({str(t["host"]) for t in ts})),
                    st["name"][:60],
                ]
            )
        )
    return out


def main(argv: list[str]) -> int:
    from pathlib import Path

    files = []
    for a in argv:  # a log file, an eventlog_v2_* folder or a folder of them
        p = Path(a)
        files += sorted(p.rglob("events_*")) if p.is_dir() else [p]
    for p in map(str, files):
        print("\n".join(summarise(p)))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
