"""`kafka-rebalance simulate`: JSON output, event log files, --compare, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_rebalance.cli import main
from sim_native_runs import require_native_build

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_json(capsys, *argv) -> dict:
    rc = main(["simulate", *argv, "--format", "json"])
    out = capsys.readouterr().out
    assert rc == 0
    return json.loads(out)


def test_json_summary_has_schema_fields(capsys):
    s = run_json(capsys, str(EXAMPLES / "coordinator-failover.yaml"))
    for key in (
        "rebalances",
        "generation",
        "unavailable_partition_ms",
        "member_paused_ms",
        "partitions_moved",
        "revocations",
        "records",
        "lag",
        "timeline",
    ):
        assert key in s
    assert set(s["records"]) >= {"produced", "processed", "duplicates", "lost"}
    assert set(s["lag"]) >= {"max", "final"}
    assert s["rebalances"] == 1


@pytest.mark.parametrize(
    "name",
    [
        "rolling-restart",
        "scale-out",
        "crash",
        "slow-consumer",
        "partition-growth",
        "coordinator-failover",
    ],
)
def test_examples_run(capsys, name):
    s = run_json(capsys, str(EXAMPLES / f"{name}.yaml"))
    assert s["records"]["produced"] > 0 and s["rebalances"] >= 1


def test_events_out_jsonl_and_parquet(tmp_path, capsys):
    jl = tmp_path / "ev.jsonl"
    run_json(capsys, str(EXAMPLES / "crash.yaml"), "--events-out", str(jl))
    rows = [json.loads(x) for x in jl.read_text().splitlines()]
    assert rows and set(rows[0]) == {
        "ts_ms",
        "group",
        "member",
        "kind",
        "generation",
        "partitions",
        "detail",
    }
    commits = [r for r in rows if r["kind"] == "commit"]
    d = json.loads(commits[0]["detail"])
    assert {"topic", "partition", "offset", "metadata", "generation"} <= set(d)
    pq = tmp_path / "ev.parquet"
    run_json(capsys, str(EXAMPLES / "crash.yaml"), "--events-out", str(pq))
    import pyarrow.parquet as pqm

    t = pqm.read_table(pq)
    assert t.num_rows == len(rows)
    assert t.column_names == [
        "ts_ms",
        "group",
        "member",
        "kind",
        "generation",
        "partitions",
        "detail",
    ]


def test_compare_json(capsys):
    out = run_json(
        capsys, str(EXAMPLES / "rolling-restart.yaml"), "--compare", "eager,cooperative,static"
    )
    assert list(out["compare"]) == ["eager", "cooperative", "static"]
    assert out["compare"]["static"]["rebalances"] < out["compare"]["eager"]["rebalances"]


def test_compare_table(capsys):
    rc = main(["simulate", str(EXAMPLES / "crash.yaml"), "--compare", "eager,static"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "eager" in out and "static" in out and "rebalances" in out


def test_bad_file_reports_field(tmp_path, capsys):
    f = tmp_path / "bad.yaml"
    f.write_text("duration_ms: 1000\ntopics: []\nmembers: {count: 1}\n")
    rc = main(["simulate", str(f), "--format", "json"])
    err = capsys.readouterr().err
    assert rc == 2 and "topics" in err and str(f) in err


def test_unknown_compare_variant(capsys):
    rc = main(["simulate", str(EXAMPLES / "crash.yaml"), "--compare", "eager,bogus"])
    assert rc == 2 and "bogus" in capsys.readouterr().err


# --core: the simulator core (docs/sim-native.md, "How the choice is made")


def _simulate(capsys, *argv) -> tuple[int, str, str]:
    rc = main(["simulate", *argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


@pytest.mark.parametrize("fmt", ["json", "table"])
def test_core_native_writes_what_core_reference_writes(tmp_path, capsys, fmt):
    """A scenario the native core claims: stdout and the event log are byte for byte the
    reference's; which core ran is on stderr."""
    require_native_build()
    scenario = str(EXAMPLES / "rolling-restart.yaml")
    written = {}
    for core in ("native", "reference"):
        events = tmp_path / f"{core}.jsonl"
        rc, out, err = _simulate(
            capsys, scenario, "--core", core, "--format", fmt, "--events-out", str(events)
        )
        assert rc == 0
        assert err == f"kafka-rebalance simulate: core {core}\n"
        written[core] = (out, events.read_bytes())
    assert written["native"] == written["reference"]
    assert written["native"][1].count(b"\n") > 100  # the event log has rows


def test_core_native_refuses_a_scenario_it_does_not_claim(capsys):
    rc, out, err = _simulate(capsys, str(EXAMPLES / "crash.yaml"), "--core", "native")
    assert rc == 2 and out == ""
    assert "'--core'" in err and "the native core does not claim this scenario: crash events" in err


def test_core_native_with_compare_names_the_variant_refused(capsys):
    require_native_build()
    rc, _, err = _simulate(
        capsys,
        str(EXAMPLES / "rolling-restart.yaml"),
        "--compare",
        "eager,static",
        "--core",
        "native",
    )
    assert rc == 2
    assert "variant static: the native core does not claim this scenario" in err
    assert "static membership" in err


def test_core_auto_says_why_the_reference_ran(capsys):
    rc, _, err = _simulate(
        capsys, str(EXAMPLES / "crash.yaml"), "--core", "auto", "--format", "json"
    )
    assert rc == 0
    assert err == (
        "kafka-rebalance simulate: core reference"
        " (the native core does not claim this scenario: crash events)\n"
    )


def test_without_core_nothing_is_noted(capsys):
    rc, out, err = _simulate(capsys, str(EXAMPLES / "crash.yaml"), "--format", "json")
    assert rc == 0 and json.loads(out)["rebalances"] >= 1 and err == ""


def test_an_unknown_core_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["simulate", str(EXAMPLES / "crash.yaml"), "--core", "fast"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--core" in err and "invalid choice: 'fast'" in err


def test_core_is_in_the_help(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--help"])
    assert exc.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--core {auto,native,reference}" in out and "(default: the native core" in out
