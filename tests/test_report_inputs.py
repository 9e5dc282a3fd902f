"""`kafka-rebalance report PATH` for any JSON output of the toolkit, or a folder of them (issue 12,
point 7): each kind is recognised, rendered with its file named in every chart title, numbers in
fixed point, brokers in numeric order; the page never scrolls sideways at 390 or 1280 px."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from chromium_check import CHROMIUM, page_width_at, render_status, screenshot_at
from kafka_rebalance.cli import main
from kafka_rebalance.report.inputs import kind_of

ROOT = Path(__file__).resolve().parent.parent
EX = ROOT / "examples"

# pipeline summaries in the shapes docs/formats.md section 5 gives (the jobs need Spark)
LAG = {
    "lag_rows": 144,
    "groups": {
        "orders-app": {
            "status": "WARN",
            "complete": 1.0,
            "total_lag": 3039,
            "partitions": 12,
            "maxlag": {"topic": "orders", "partition": 3, "current_lag": 300, "status": "WARN"},
        }
    },
    "partitions_evaluated": 12,
    "quarantined": 0,
    "evaluated_at_ms": 1_767_225_960_000,
}
SWEEP = {
    "scenarios": 2,
    "ok": 2,
    "failed": 0,
    "skipped": 0,
    "wall_s": 12.5,
    "by_variant": [
        {
            "protocol": "classic",
            "assignor": "range",
            "unavailable_partition_ms": 232_800.0,
            "member_paused_ms": 32_200.0,
            "runs": 1,
        },
        {
            "protocol": "consumer",
            "assignor": "uniform",
            "unavailable_partition_ms": 171_000.0,
            "member_paused_ms": 30.0,
            "runs": 1,
        },
    ],
}
LOAD_MODEL = {
    "partitions": 36,
    "valid_partitions": 36,
    "ready": True,
    "windows": 5,
    "window_ms": 3_600_000,
}
OFFSETS = {"records": 837, "commits": 834, "offset_tombstones": 0, "rebalances": 3}


def _cli_json(capsys, argv: list[str]) -> dict:
    rc = main([*argv, "--format", "json"])
    assert rc == 0, argv
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """One file of every kind the report reads, as the toolkit writes them."""
    import contextlib
    import io

    folder = tmp_path_factory.mktemp("outputs")
    snap = str(EX / "cluster.json")
    runs = {
        "skew.json": ["cluster", "skew", "--snapshot", snap],
        "describe.json": ["cluster", "describe", "--snapshot", snap],
        "plan.json": ["cluster", "plan", "--snapshot", snap, "--mode", "leaders"],
        "execute.json": [
            "cluster",
            "execute",
            "--snapshot",
            snap,
            "--reassignment-json-file",
            str(EX / "plan.json"),
        ],
        "simulate.json": ["simulate", str(EX / "crash.yaml")],
        "compare.json": ["simulate", str(EX / "crash.yaml"), "--compare", "eager,consumer"],
    }
    for name, argv in runs.items():
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main([*argv, "--format", "json"]) == 0, argv
        (folder / name).write_text(buf.getvalue())
    (folder / "reassignment.json").write_text((EX / "plan.json").read_text())
    (folder / "snapshot.json").write_text((EX / "cluster.json").read_text())
    for name, doc in (
        ("lag.json", LAG),
        ("sweep.json", SWEEP),
        ("load-model.json", LOAD_MODEL),
        ("offsets.json", OFFSETS),
    ):
        (folder / name).write_text(json.dumps(doc))
    return folder


KINDS = {
    "skew.json": "skew",
    "describe.json": "describe",
    "plan.json": "plan",
    "execute.json": "execute",
    "simulate.json": "simulate",
    "compare.json": "report",
    "reassignment.json": "reassignment",
    "snapshot.json": "snapshot",
    "lag.json": "lag",
    "sweep.json": "sweep",
    "load-model.json": "load-model",
    "offsets.json": "offsets",
}


def _figures(page: str) -> list[dict]:
    """The plotly figures the page draws (its `var specs = [[id, figure], ...]`)."""
    body = page[page.index("var specs = [") + len("var specs = ") : page.index(";\n  var rendered")]
    return [fig for _, fig in json.loads(body)]


CHARTED = {"skew", "plan", "execute", "report", "reassignment", "snapshot", "sweep"}


def _visible(page: str) -> str:
    """The page without its scripts (plotly.js and the figure JSON)."""
    return re.sub(r"<script[^>]*>.*?</script>", "", page, flags=re.S)


@pytest.mark.parametrize("name", sorted(KINDS))
def test_each_output_is_recognised_and_rendered(outputs, capsys, name):
    doc = json.loads((outputs / name).read_text())
    assert kind_of(doc) == KINDS[name]
    out = outputs / f"{name}.html"
    assert main(["report", str(outputs / name), "--out", str(out)]) == 0
    capsys.readouterr()
    page = out.read_text()
    titles = [f["layout"]["title"]["text"] for f in _figures(page)]
    assert all(name in t for t in titles), titles  # every chart names its input
    assert bool(titles) == (KINDS[name] in CHARTED), titles
    visible = _visible(page)
    assert not re.search(r"\d[eE][+-]\d", visible)
    for bad in (">None<", ">True<", ">False<", "{'", "['"):
        assert bad not in visible, bad


def test_brokers_sort_numerically_and_no_load_is_na(tmp_path, capsys):
    doc = {
        "brokers": [{"id": b} for b in (10, 2, 1)],
        "partitions": [
            {"topic": "t", "partition": p, "replicas": [r], "leader": r, "isr": [r]}
            for p, r in enumerate((10, 2, 1, 10, 2, 1, 10, 2, 1, 10, 2))
        ],
    }
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))
    assert main(["report", str(path)]) == 0
    capsys.readouterr()
    visible = _visible((tmp_path / "snap.report.html").read_text())
    first_cells = re.findall(r"<tr><td>(\d+)</td><td>-</td>", visible)
    assert first_cells == ["1", "2", "10"]
    assert "no load data" in visible and ">n/a<" in visible


def test_a_json_that_is_no_toolkit_output_is_bad_input(tmp_path, capsys):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"hello": 1}))
    assert main(["report", str(path)]) == 2
    err = capsys.readouterr().err
    assert "other.json" in err and "hello" in err
    assert not (tmp_path / "other.report.html").exists()


def test_a_folder_of_outputs(outputs, capsys):
    (outputs / "notes.json").write_text("[1, 2]")
    assert main(["report", str(outputs), "--format", "json"]) == 0
    page = Path(json.loads(capsys.readouterr().out)["report"]).read_text()
    visible = _visible(page)
    for title in (
        "Broker skew: skew.json",
        "Reassignment plan: reassignment.json",
        "Plan execution (dry run): execute.json",
        "Lag: lag.json",
        "Sweep: sweep.json",
        "Load model: load-model.json",
        "Simulation: simulate.json",
    ):
        assert title in visible, title
    assert "notes.json" in visible  # listed as not read


@pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)"
)
def test_the_page_never_scrolls_sideways(outputs, tmp_path, capsys):
    assert main(["report", str(outputs), "--out", str(tmp_path / "all.html")]) == 0
    capsys.readouterr()
    page = tmp_path / "all.html"
    status = render_status(page, tmp_path / "profile")
    assert status["done"] and status["errors"] == []
    assert status["rendered"] == status["expected"] >= 7
    shots = ROOT / "out"
    for width in (390, 1280):
        m = page_width_at(page, tmp_path / "profile", width)
        assert m["innerwidth"] == width and m["rendered"] == m["expected"]
        assert m["scrollwidth"] <= m["innerwidth"], m  # no horizontal scroll
        screenshot_at(page, tmp_path / "profile", shots / f"report-{width}px.png", width, 2400)


def test_a_wrong_typed_field_of_a_recognised_output_is_named_with_its_value(tmp_path):
    """A hand-edited simulate result whose timeline is an object: the error names field and value."""
    from kafka_rebalance.errors import InputError
    from kafka_rebalance.report.build import write_report
    from kafka_rebalance.report.trace import failing_field

    doc = {"rebalances": 1, "unavailable_partition_ms": 0, "records": {}, "timeline": {"a": 1}}
    f = tmp_path / "sim.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(InputError) as err:
        write_report(f, tmp_path / "out" / "r.html")
    assert err.value.field == "timeline" and '{"a": 1}' in err.value.message
    assert str(f) in str(err.value.source)
    assert not (tmp_path / "out").exists()

    # the tracer names list elements and nested keys, and stays out of a build that succeeds
    def build(d):
        return [x["n"] + 1 for x in d["rows"]]

    assert failing_field(build, {"rows": [{"n": 1}, {"n": "2"}]}) == ("rows[1].n", "2")
    assert failing_field(build, {"rows": [{"n": 1}]}) is None
