"""Run the fidelity comparison: each scenario on a real 3-broker Kafka with Java consumers and in the
simulator, side by side (see fidelity.py for the scenarios and measures).

    .venv/bin/python bench/fidelity/run.py                        # all scenarios, own cluster
    .venv/bin/python bench/fidelity/run.py --scenario join-cooperative,crash-eager
    .venv/bin/python bench/fidelity/run.py --json out.json --markdown out.md

Starts a cluster with ../shared/kafka (stopped at the end), or uses $KAFKA_BOOTSTRAP; with
$KAFKA_DIR too (start-kafka.sh's state folder) the coordinator's log is read, else generations are
those the members saw. Takes about 1 min per
scenario of wall time; the machine running it should be otherwise quiet for durations to mean much.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "src"))
sys.path.insert(0, str(HERE.parent.parent / "tests"))

import real_cluster as rc  # noqa: E402

import fidelity as fd  # noqa: E402
import real_kafka as rk  # noqa: E402

COLUMNS = (
    "scenario",
    "generations Kafka",
    "generations sim (runs)",
    "members/gen Kafka / sim",
    "moves (revoked/assigned) Kafka",
    "moves sim (runs equal to Kafka's)",
    "duration Kafka",
    "duration sim (median, range)",
    "duplicates Kafka",
    "duplicates sim (median, range)",
)


def _gens(sims: list[fd.Measures]) -> str:
    c: dict[int, int] = {}
    for s in sims:
        c[s.generations] = c.get(s.generations, 0) + 1
    return ", ".join(f"{g} ({n})" for g, n in sorted(c.items()))


def _ms(x: float | None) -> str:
    return "n/a" if x is None else f"{x / 1000:,.1f} s"


def _spread(values: list, fmt) -> str:
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return "n/a"
    mid = vals[len(vals) // 2]
    return f"{fmt(mid)} ({fmt(vals[0])} to {fmt(vals[-1])})"


def row(name: str, real: fd.Measures, sims: list[fd.Measures]) -> list[str]:
    moves = " ".join(f"{r}/{a}" for r, a in real.moves) or "-"
    same = sum(s.moves == real.moves for s in sims)
    mg = " ".join(map(str, real.members_per_generation)) or "-"
    ms = " ".join(map(str, sims[0].members_per_generation)) or "-"
    return [
        name,
        str(real.generations),
        _gens(sims),
        f"{mg} / {ms}",
        moves,
        f"{same} of {len(sims)}",
        _ms(real.duration_ms),
        _spread([s.duration_ms for s in sims], _ms),
        f"{real.duplicates:,}",
        _spread([s.duplicates for s in sims], lambda v: f"{v:,}"),
    ]


def markdown(rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def simulate_runs(
    sc: fd.Scenario, t_event: int, runs: int, starts: dict[str, int] | None = None
) -> list[fd.Measures]:
    """Run i: seed i, the event i/runs of a heartbeat interval after the real run's (fd.outcomes).
    `starts`: when each member came up in the real run (crash scenarios, fd.crash_starts); their
    heartbeat and auto-commit phases then follow from those, and the event is the real run's."""
    step = 0 if starts else fd.heartbeat_ms(sc) // runs
    return [fd.run_sim(sc, t_event, i + 1, phase_ms=i * step, starts=starts) for i in range(runs)]


def _moves(moves) -> str:
    return " ".join(f"{r}/{a}" for r, a in moves) or "-"


def outcome_table(known: dict, stored: dict, names: list[str], runs: int) -> str:
    """Per scenario with several Kafka runs stored: each (generations, moves) Kafka gave, and how many
    of the simulator's runs give it."""
    out = ["| scenario | generations | moves (revoked/assigned) | Kafka runs | simulator runs |"]
    out.append("|---|---|---|---|---|")
    for n in names:
        kruns = stored.get(n, {}).get("kafka_runs")
        if not kruns:
            continue
        sim = fd.outcomes(known[n], stored[n]["t_event_ms"], runs)
        kafka = collections.Counter(
            (k["generations"], tuple(map(tuple, k["moves"]))) for k in kruns
        )
        for g, mv in sorted(set(kafka) | set(sim), key=lambda o: (-kafka[o], -sim[o], o)):
            out.append(
                f"| {n} | {g} | {_moves(mv)} | {kafka[(g, mv)]} of {len(kruns)} | "
                f"{sim[(g, mv)]} of {runs} |"
            )
    return "\n".join(out)


def resimulate(args: argparse.Namespace, known: dict, names: list[str]) -> int:
    try:
        stored = json.loads(args.from_json.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        print(f"error: --from-json {args.from_json}: {e}", file=sys.stderr)
        return 2
    rows = []
    for n in names:
        if n not in stored:
            continue
        k = stored[n]["kafka"]
        real = fd.Measures(
            k["generations"],
            k["members_per_generation"],
            k["partitions_per_generation"],
            [tuple(m) for m in k["moves"]],
            k["duration_ms"],
            k["duplicates"],
        )
        sims = simulate_runs(
            known[n], stored[n]["t_event_ms"], args.seeds, fd.crash_starts(known[n], stored[n])
        )
        rows.append(row(n, real, sims))
    table = markdown(rows)
    print(table)
    if args.outcomes:
        print(outcome_table(known, stored, names, args.outcomes))
    if args.markdown:
        args.markdown.write_text(table + "\n", encoding="utf-8")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--scenario",
        default="all",
        help="comma-separated names, or all: " + ", ".join(s.name for s in fd.SCENARIOS),
    )
    ap.add_argument(
        "--seeds",
        type=int,
        default=10,
        help="simulator runs per scenario (the real run is one): run i has seed i and the event i/N "
        "of a heartbeat interval later",
    )
    ap.add_argument(
        "--outcomes",
        type=int,
        default=0,
        metavar="N",
        help="with --from-json: also each (generations, moves) of the stored Kafka runs beside how many "
        "of N simulator runs give it",
    )
    ap.add_argument(
        "--json", type=Path, help="write every measure and the raw callbacks/log lines here"
    )
    ap.add_argument("--markdown", type=Path, help="write the table as markdown here")
    ap.add_argument(
        "--from-json",
        type=Path,
        metavar="FILE",
        help="no broker: take the Kafka side from an earlier --json FILE and run only the simulator again",
    )
    args = ap.parse_args()
    known = {s.name: s for s in fd.SCENARIOS}
    names = list(known) if args.scenario == "all" else args.scenario.split(",")
    for n in names:
        if n not in known:
            print(
                f"error: --scenario: unknown scenario {n!r} (known: {', '.join(known)})",
                file=sys.stderr,
            )
            return 2
    if args.from_json:
        return resimulate(args, known, names)
    reason = rk.unavailable_reason()
    if reason:
        print(f"error: {reason}", file=sys.stderr)
        return 1
    cluster = rk.external() if os.environ.get("KAFKA_BOOTSTRAP") else rk.start(brokers=3)
    # an external cluster's state folder (start-kafka.sh's $KAFKA_DIR) gives its coordinator's log too
    state_dir = Path(os.environ["KAFKA_DIR"]) if os.environ.get("KAFKA_DIR") else cluster.state_dir
    rows: list[list[str]] = []
    out: dict = {}
    try:
        for n in names:
            sc = known[n]
            real, t_event, raw = rc.run_real(
                sc,
                cluster.bootstrap,
                rk.KAFKA_HOME,
                state_dir,
                lambda *a: cluster.tool(
                    "kafka-topics.sh", "--bootstrap-server", cluster.bootstrap, *a
                ),
            )
            starts = fd.crash_starts(sc, {"member_start_ms": real.extra["member_start_ms"]})
            sims = simulate_runs(sc, t_event, args.seeds, starts)
            rows.append(row(n, real, sims))
            print(markdown(rows[-1:]).splitlines()[-1], flush=True)
            out[n] = {
                "kafka": real.to_json(),
                "simulator": [s.to_json() for s in sims],
                "t_event_ms": t_event,
                "member_start_ms": real.extra["member_start_ms"],
                "raw": raw,
            }
    except subprocess.CalledProcessError as e:
        print(f"error: {e.cmd[0]} failed: {e.stderr}", file=sys.stderr)
        return 1
    finally:
        cluster.stop()
    table = markdown(rows)
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n", encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
