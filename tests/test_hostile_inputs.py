"""Hostile inputs (issue 17): huge, deep, non-finite and aliased JSON/YAML, control characters in
names, a JSON result holding NaN, a write past the file-size limit.

Each CLI case runs the real command and asserts: the exit code, one error line naming the file
and what is wrong, no traceback, and no output file created.
"""

from __future__ import annotations

import errno
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_rebalance import cli, io_util
from kafka_rebalance.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
EVIL = "t\x1b]0;owned\x07\x1b[31m\x9b2J"  # retitles and recolours a terminal printed raw
BOMB = (
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "name: [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
)

# (file suffix, content, what the error line must say)
HOSTILE = {
    "deep-json": (".json", "[" * 100_000 + "]" * 100_000, "nested deeper than 100"),
    "deep-101-json": (
        ".json",
        '{"topics": ' + "[" * 101 + "]" * 101 + "}",
        "nested deeper than 100",
    ),
    "bigint-json": (".json", '{"rounds": ' + "9" * 5000 + "}", "field 'rounds': integer of 5000"),
    "nan-json": (".json", '{"topics": [{"name": "t", "partitions": NaN}]}', "topics[0].partitions"),
    "inf-json": (".json", '{"rounds": Infinity}', "field 'rounds': inf is not a finite"),
    "overflow-json": (".json", '{"rounds": 1e999}', "field 'rounds': inf is not a finite"),
    "ninf-json": (".json", '{"a": {"b": [1, -Infinity]}}', "field 'a.b[1]': -inf"),
    "deep-yaml": (".yaml", "[" * 100_000 + "]" * 100_000, "nested deeper than 100"),
    "bigint-yaml": (".yaml", "rounds: " + "9" * 5000 + "\n", "field 'rounds': integer of 5000"),
    "nan-yaml": (".yaml", "topics:\n  - {name: t, partitions: .nan}\n", "topics[0].partitions"),
    "inf-yaml": (".yaml", "rounds: -.inf\n", "field 'rounds': -inf is not a finite"),
    "bomb-yaml": (".yaml", BOMB, "YAML alias *a"),
}
JSON_ONLY = {k: v for k, v in HOSTILE.items() if v[0] == ".json"}


def _commands(tmp: Path, f: Path) -> dict[str, list[str]]:
    """Every command reading a user's JSON/YAML, with `f` as that input and outputs under `tmp`."""
    return {
        "assign": ["assign", "--strategy", "range", str(f)],
        "simulate": ["simulate", "--events-out", str(tmp / "out" / "events.jsonl"), str(f)],
        "pipeline-sweep": ["pipeline", "sweep", "--out", str(tmp / "out"), str(f)],
        "report": ["report", "--out", str(tmp / "out" / "r.html"), str(f)],
        "cluster-describe": ["cluster", "describe", "--snapshot", str(f)],
        "cluster-plan": [
            "cluster",
            "plan",
            "--snapshot",
            str(f),
            "--output",
            str(tmp / "out" / "p.json"),
        ],
        "cluster-skew": ["cluster", "skew", "--snapshot", str(f)],
        "cluster-elect": [
            "cluster",
            "elect",
            "--snapshot",
            str(f),
            "--output",
            str(tmp / "out" / "e.json"),
        ],
        "cluster-generate": [
            "cluster",
            "generate",
            "--snapshot",
            str(ROOT / "examples" / "cluster.json"),
            "--topics-to-move-json-file",
            str(f),
            "--broker-list",
            "0,1,2",
            "--output",
            str(tmp / "out" / "g.json"),
        ],
    }


# snapshots, Kafka's reassignment JSON and report.json are JSON only
JSON_READERS = {
    "cluster-describe",
    "cluster-plan",
    "cluster-skew",
    "cluster-elect",
    "cluster-generate",
    "report",
}
CASES = [
    (cmd, kind)
    for cmd in (
        "assign",
        "simulate",
        "pipeline-sweep",
        "report",
        "cluster-describe",
        "cluster-plan",
        "cluster-skew",
        "cluster-elect",
        "cluster-generate",
    )
    for kind in (JSON_ONLY if cmd in JSON_READERS else HOSTILE)
]


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize(("cmd", "kind"), CASES, ids=[f"{c}-{k}" for c, k in CASES])
def test_hostile_file_exits_2_with_one_line(cmd, kind, tmp_path, capsys):
    suffix, content, says = HOSTILE[kind]
    f = tmp_path / f"hostile{suffix}"
    if cmd == "report":
        f = tmp_path / "report.json"  # report reads RESULTS/report.json
    f.write_text(content, encoding="utf-8")
    rc, out, err = _run(_commands(tmp_path, f)[cmd], capsys)
    lines = err.strip().splitlines()
    assert rc == 2, err
    assert len(lines) == 1, err
    assert str(f) in lines[0] and says in lines[0], lines[0]
    assert "Traceback" not in err and out == ""
    assert not (tmp_path / "out").exists()


def test_case_count():
    # 9 commands: 3 read JSON or YAML (12 cases each), 6 read JSON only (7 cases each)
    assert len(HOSTILE) == 12 and len(JSON_ONLY) == 7
    assert len(CASES) == 3 * 12 + 6 * 7 == 78


def test_alias_bomb_refused_quickly(tmp_path):
    f = tmp_path / "bomb.yaml"
    f.write_text(BOMB)
    with pytest.raises(InputError, match=r"alias \*a at line 2"):
        io_util.read_structured(f)


def test_depth_100_is_accepted_101_refused(tmp_path):
    ok, bad = tmp_path / "ok.json", tmp_path / "bad.json"
    ok.write_text("[" * 100 + "]" * 100)
    bad.write_text("[" * 101 + "]" * 101)
    assert io_util.read_structured(ok) is not None
    with pytest.raises(InputError, match="nested deeper than 100"):
        io_util.read_structured(bad)


def test_ordinary_documents_unchanged(tmp_path):
    doc = {"a": [1, -2, 3.5, "x", None, True], "b": {"c": 2**63 - 1}}
    for suffix in (".json", ".yaml"):
        f = tmp_path / f"d{suffix}"
        f.write_text(json.dumps(doc))  # JSON is YAML
        assert io_util.read_structured(f) == doc


_json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=5),
    st.integers(min_value=-(10**150), max_value=10**150),
    st.floats(allow_nan=True, allow_infinity=True),
)


@settings(max_examples=150, deadline=None)
@given(
    doc=st.recursive(
        _json_leaf,
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
        max_leaves=20,
    ),
    wrap=st.integers(min_value=0, max_value=130),
    yaml=st.booleans(),
)
def test_read_structured_parses_or_refuses(tmp_path_factory, doc, wrap, yaml):
    """Any nesting and any number: the document comes back equal, or InputError; never another exception."""
    d = tmp_path_factory.mktemp("p")
    text = "[" * wrap + json.dumps(doc) + "]" * wrap
    f = d / ("x.yaml" if yaml else "x.json")
    f.write_text(text)
    try:
        got = io_util.read_structured(f)
    except InputError as exc:
        assert str(f) in str(exc)
        return
    for _ in range(wrap):
        got = got[0]
    if not yaml:  # YAML reads some JSON strings differently (not this property's concern)
        assert json.dumps(got) == json.dumps(doc)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_json_writers_never_emit_nan(x):
    text = io_util.dumps_json({"x": [x, {"y": x}]})
    assert "NaN" not in text and "Infinity" not in text
    want = x if math.isfinite(x) else None
    assert json.loads(text, parse_constant=lambda c: pytest.fail(c)) == {"x": [want, {"y": want}]}


def test_atomic_write_json_and_emit_write_null_for_nan(tmp_path, capsys):
    from kafka_rebalance.output import emit

    io_util.atomic_write_json(tmp_path / "r.json", {"v": float("nan"), "w": 1.5})
    assert json.loads((tmp_path / "r.json").read_text()) == {"v": None, "w": 1.5}
    emit({"v": float("inf")}, "json")
    assert capsys.readouterr().out == '{"v": null}\n'


def test_control_characters_escaped_in_tables():
    from rich.console import Console

    from kafka_rebalance.textfmt import print_table

    console = Console(record=True, width=100, force_terminal=False)
    print_table(console, None, ["topic", "member"], [(EVIL, "m\x1b[2J\x9b1"), ("plain", None)])
    out = console.export_text()
    assert "t\\x1b]0;owned\\x07\\x1b[31m\\x9b2J" in out and "m\\x1b[2J\\x9b1" in out
    assert not any(c in out for c in "\x1b\x07\x9b")
    narrow = Console(record=True, width=20, force_terminal=False)  # the vertical layout
    print_table(narrow, None, ["topic", "member", "owner", "x"], [(EVIL, EVIL, EVIL, EVIL)])
    assert not any(c in narrow.export_text() for c in "\x1b\x07\x9b")


def test_control_characters_escaped_in_error_lines(tmp_path, capsys):
    snap = json.loads((ROOT / "examples" / "cluster.json").read_text())
    for p in snap["partitions"]:
        p["topic"] = EVIL  # duplicate partitions: the error names the topic
    f = tmp_path / "s\x1b[1m.json"
    f.write_text(json.dumps(snap))
    rc, out, err = _run(["cluster", "skew", "--snapshot", str(f)], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "s\\x1b[1m.json" in err and "t\\x1b]0;owned" in err
    assert not any(c in err for c in "\x1b\x07\x9b")
    missing = tmp_path / "no\x1b[2Jsuch.json"
    rc, out, err = _run(["assign", "--strategy", "range", str(missing)], capsys)
    assert rc == 2 and "\x1b" not in err and "no\\x1b[2Jsuch.json" in err


def test_json_output_keeps_names_exact(capsys):
    from kafka_rebalance.output import emit

    emit({"topic": EVIL}, "json")
    out = capsys.readouterr().out
    assert "\x1b" not in out and json.loads(out) == {"topic": EVIL}


SCENARIO = str(ROOT / "examples" / "crash.yaml")
SNAPSHOT = str(ROOT / "examples" / "cluster.json")
WRITERS = {
    "cluster-describe-output": (
        ["cluster", "describe", "--snapshot", SNAPSHOT, "--format", "json", "--output"],
        "snap.json",
    ),
    "cluster-plan-output": (["cluster", "plan", "--snapshot", SNAPSHOT, "--output"], "plan.json"),
    "simulate-events-jsonl": (["simulate", SCENARIO, "--events-out"], "ev.jsonl"),
    "simulate-events-parquet": (["simulate", SCENARIO, "--events-out"], "ev.parquet"),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_file_size_limit_exit_1_names_path_leaves_nothing(writer, tmp_path):
    """A write that fails mid-file (RLIMIT_FSIZE: EFBIG, as ENOSPC would): exit 1, the user's path, no file."""
    argv, name = WRITERS[writer]
    out = tmp_path / name
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "from kafka_rebalance import cli\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))\n"
        f"sys.exit(cli.main({[*argv, str(out)]!r}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(out) in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EIO])
def test_full_disk_in_the_shared_writer_exit_1(code, tmp_path, capsys, monkeypatch):
    """The disk fills at fsync (as ENOSPC comes on a real disk): exit 1, the user's path, no file."""

    def full(fd):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(io_util.os, "fsync", full)
    out = tmp_path / "plan.json"
    rc, _, err = _run(["cluster", "plan", "--snapshot", SNAPSHOT, "--output", str(out)], capsys)
    assert rc == 1 and err.strip() == f"kafka-rebalance cluster: error: {out}: {os.strerror(code)}"
    assert list(tmp_path.iterdir()) == []


def test_read_only_output_folder_exit_1(tmp_path, capsys, monkeypatch):
    from kafka_rebalance import io_publish

    real_open = os.open

    def read_only(path, *a, **k):
        if ".kr-" in str(path):  # the writer's temporary beside the target
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, *a, **k)

    monkeypatch.setattr(io_publish.os, "open", read_only)
    out = tmp_path / "plan.json"
    rc, _, err = _run(["cluster", "plan", "--snapshot", SNAPSHOT, "--output", str(out)], capsys)
    assert rc == 1 and len(err.strip().splitlines()) == 1 and "Read-only file system" in err
    assert list(tmp_path.iterdir()) == []


def test_every_command_help_renders():
    """`-h` on any command prints help, never a traceback (a bare % in a help string did)."""
    import argparse

    seen = 0
    todo = [cli.build_parser()]
    while todo:
        parser = todo.pop()
        assert parser.format_help()
        seen += 1
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo.extend(action.choices.values())
    assert seen > 20
