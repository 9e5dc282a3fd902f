"""The HTML report renders every plot without script errors in headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chromium_check import CHROMIUM, external_references, render_status, screenshot
from kafka_rebalance.cli import main
from kafka_rebalance.report.build import build_sections


def sample_doc() -> dict:
    return {
        "title": "test report",
        "subtitle": "fixture",
        "cards": {"replica moves": 12, "lower bound": 11},
        "broker_load": {
            "before": {"replicas": {"1": 10, "2": 2, "3": 6}, "leaders": {"1": 5, "2": 0, "3": 3}},
            "after": {"replicas": {"1": 6, "2": 6, "3": 6}, "leaders": {"1": 3, "2": 2, "3": 3}},
            "max_over_mean": {"before": {"replicas": 1.67}, "after": {"replicas": 1.0}},
        },
        "leaders": {"after restart": {"1": 5, "2": 0}, "after election": {"1": 3, "2": 2}},
        "moves": {"plan": 12, "lower bound": 11, "kafka --generate": 900},
        "ownership": {
            "eager": {
                "duration_ms": 60000,
                "stops": [{"start_ms": 10000, "end_ms": 13000}],
                "intervals": [
                    {"partition": "t-0", "member": "m0", "start_ms": 0, "end_ms": 10000},
                    {"partition": "t-0", "member": "m1", "start_ms": 13000, "end_ms": 60000},
                ],
            }
        },
        "compare": {
            "eager": {
                "rebalances": 4,
                "unavailable_partition_ms": 9000,
                "member_paused_ms": 7000,
                "records": {"duplicates": 3, "lost": 0},
            },
            "cooperative": {
                "rebalances": 6,
                "unavailable_partition_ms": 1000,
                "member_paused_ms": 0,
                "records": {"duplicates": 1, "lost": 0},
            },
        },
        "lag": {
            "series": {"g": [[0, 0], [60, 120], [120, 40]]},
            "statuses": {"columns": ["group", "status"], "rows": [["g", "OK"]]},
        },
        "sweep": {
            "columns": ["protocol", "assignor", "seed", "unavailable_partition_ms"],
            "rows": [["classic", "range", 1, 9000], ["classic", "cooperative-sticky", 1, 1000]],
            "label_columns": ["protocol", "assignor"],
        },
    }


def test_sections_cover_every_part():
    titles = [s.title for s in build_sections(sample_doc())]
    assert len(titles) == 7 and "Not in these results" not in titles
    partial = [s.title for s in build_sections({"moves": {"plan": 1}})]
    assert partial[-1] == "Not in these results"


def test_bad_results_document(tmp_path, capsys):
    (tmp_path / "report.json").write_text(json.dumps({"moves": [1, 2]}))
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "report.json" in err and "moves" in err


@pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)"
)
def test_report_renders_in_chromium(tmp_path, capsys):
    (tmp_path / "report.json").write_text(json.dumps(sample_doc()))
    assert main(["report", str(tmp_path), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    page = Path(out["report"])
    assert page.exists() and external_references(page) == []
    status = render_status(page, tmp_path / "profile")
    assert status["done"] and status["expected"] >= 7 and status["rendered"] == status["expected"]
    assert status["errors"] == []
    shot = screenshot(
        page, tmp_path / "profile", Path(__file__).parent.parent / "out" / "report-screenshot.png"
    )
    assert shot.exists() and shot.stat().st_size > 10_000


@pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (make test installs it)"
)
def test_chromium_check_catches_a_broken_page(tmp_path):
    """The check must be able to fail: a thrown error and an empty plot are both caught."""
    from kafka_rebalance.report.build import build_sections
    from kafka_rebalance.report.html import render_html

    page_html = render_html("t", "", {}, build_sections(sample_doc()))
    broken = page_html.replace("</main>", "<script>throw new Error('boom');</script></main>", 1)
    broken = broken.replace(
        "<div class='plot' id='plot-0-0'></div>",
        "<div class='plot' id='plot-0-0' style='display:none'></div>",
        1,
    )
    page = tmp_path / "broken.html"
    page.write_text(broken)
    status = render_status(page, tmp_path / "profile")
    assert any("boom" in e for e in status["errors"])
    assert status["rendered"] < status["expected"]


MALFORMED = [
    # (document, field path named in the error, bad value shown)
    ({"broker_load": {"before": "x"}}, "broker_load.before", "'x'"),
    ({"compare": {"eager": 5}}, "compare.eager", "5"),
    ({"sweep": {"rows": [[1]], "columns": "abc"}}, "sweep.columns", "'abc'"),
    ({"sweep": {"rows": [[1]], "columns": ["a", "b"]}}, "sweep.rows[0]", "[1]"),
    (
        {"sweep": {"rows": [["x", "slow"]], "columns": ["p", "unavailable_partition_ms"]}},
        "sweep.rows[0][1]",
        "'slow'",
    ),
    ({"broker_load": {"before": {"cpu": {"1": 3}}}}, "broker_load.before", "['cpu']"),
    (
        {"broker_load": {"before": {"replicas": {"1": "ten"}}}},
        "broker_load.before.replicas.1",
        "'ten'",
    ),
    (
        {"broker_load": {"before": {"replicas": {"1": 1}}, "max_over_mean": {"after": [1]}}},
        "broker_load.max_over_mean.after",
        "[1]",
    ),
    ({"leaders": {"after election": [1, 2]}}, "leaders.after election", "[1, 2]"),
    ({"moves": {"plan": "many"}}, "moves.plan", "'many'"),
    ({"moves": {"plan": 1}, "plans": ["add"]}, "plans[0]", "'add'"),
    (
        {
            "ownership": {
                "eager": {"intervals": [{"partition": "t-0", "member": "m0", "end_ms": 5}]}
            }
        },
        "ownership.eager.intervals[0].start_ms",
        "None",
    ),
    ({"ownership": {"eager": {"duration_ms": "1m"}}}, "ownership.eager.duration_ms", "'1m'"),
    ({"compare": {"eager": {"member_paused_ms": "7s"}}}, "compare.eager.member_paused_ms", "'7s'"),
    ({"compare": {"eager": {"records": 3}}}, "compare.eager.records", "3"),
    ({"lag": {"series": {"g": [[0, 1], [60]]}}}, "lag.series.g[1]", "[60]"),
    (
        {"lag": {"statuses": {"columns": ["group"], "rows": [["g", "OK"]]}}},
        "lag.statuses.rows[0]",
        "['g', 'OK']",
    ),
    ({"cards": {"moves": {"n": 1}}}, "cards.moves", "{'n': 1}"),
    ({"title": ["t"]}, "title", "['t']"),
]


@pytest.mark.parametrize("doc,field,shown", MALFORMED, ids=[m[1] for m in MALFORMED])
def test_malformed_nested_field_is_an_input_error_and_nothing_is_written(
    tmp_path, capsys, doc, field, shown
):
    """Exit 2 naming the file, the field path and the value; no traceback, and no page (an old one stays)."""
    (tmp_path / "report.json").write_text(json.dumps(doc))
    (tmp_path / "report.html").write_text("previous report")
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert str(tmp_path / "report.json") in err and f"field '{field}'" in err and shown in err, err
    assert (tmp_path / "report.html").read_text() == "previous report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.json"]


def test_optional_fields_may_be_null_and_broker_names_mixed(tmp_path, capsys):
    doc = sample_doc()
    doc.update(title=None, subtitle=None, cards=None, plans=None)
    doc["broker_load"]["max_over_mean"] = {"before": None, "after": {"replicas": 1.0}}
    doc["leaders"]["after election"] = {"1": 3, "broker-b": 2}
    doc["ownership"]["eager"]["stops"] = None
    doc["compare"]["eager"]["records"] = None
    doc["lag"]["series"]["g"][1] = [60, None]
    (tmp_path / "report.json").write_text(json.dumps(doc))
    assert main(["report", str(tmp_path), "--format", "json"]) == 0
    page = Path(json.loads(capsys.readouterr().out)["report"]).read_text()
    assert "kafka-rebalance report" in page and "broker-b" in page
    assert len(build_sections(doc)) == 7
