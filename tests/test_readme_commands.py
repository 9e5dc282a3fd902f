"""Every example command of the README (its ```console blocks marked as examples) runs, exits 0, and prints what the README shows
(where the README marks it deterministic). Issue 12, point 8."""

from __future__ import annotations

from pathlib import Path

import pytest

from readme_examples import README, normalise, parse, run

EXAMPLES = parse(README.read_text(encoding="utf-8"))
ROOT = Path(__file__).resolve().parent.parent


def test_the_readme_has_an_example_for_every_command():
    commands = {
        " ".join(e.argv[:2]) if e.argv[0] in ("cluster", "pipeline") else e.argv[0]
        for e in EXAMPLES
    }
    assert commands >= {
        "assign",
        "simulate",
        "cluster describe",
        "cluster skew",
        "cluster elect",
        "cluster plan",
        "cluster generate",
        "cluster execute",
        "pipeline load-model",
        "pipeline offsets",
        "pipeline lag",
        "pipeline sweep",
        "report",
    }


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """One scratch folder for the module: later examples read what earlier ones wrote."""
    folder = tmp_path_factory.mktemp("readme")
    (folder / "examples").symlink_to(ROOT / "examples")
    return folder


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"line{e.line}" for e in EXAMPLES])
def test_readme_example(example, workdir, monkeypatch, request, capsys):
    if example.spark:
        request.getfixturevalue("spark")  # the session the job reuses
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("COLUMNS", "80")
    rc, out = run(example)
    err = capsys.readouterr().err
    assert rc == 0, f"README line {example.line}: {example.command} exited {rc}: {err[-2000:]}"
    if example.exact:
        assert normalise(out) == normalise(example.output), (
            f"README line {example.line}: {example.command} prints something else now; "
            "rerun `python tests/readme_examples.py --update`"
        )
