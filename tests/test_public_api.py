"""The public API: `import kafka_rebalance` is cheap, every name in `__all__` resolves, and each
result's `to_json()` is what the matching command prints with `--format json`."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import kafka_rebalance as kr
from kafka_rebalance.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def test_all_is_the_export_table_and_the_type_checking_imports():
    assert sorted(kr.__all__) == sorted(kr._EXPORTS)
    tree = ast.parse((ROOT / "src/kafka_rebalance/__init__.py").read_text(encoding="utf-8"))
    typed = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom)
                typed.update(a.asname or a.name for a in imp.names)
    assert typed == set(kr.__all__)


def test_every_public_name_resolves_and_functions_say_what_they_do():
    import inspect

    for name in kr.__all__:
        value = getattr(kr, name)
        if inspect.isfunction(value):
            assert value.__doc__, name


def test_no_public_name_is_shadowed_by_a_subpackage():
    """`kafka_rebalance.X` for a submodule X is the module once imported: a public X would vanish."""
    src = ROOT / "src/kafka_rebalance"
    modules = {p.stem for p in src.glob("*.py")} | {p.name for p in src.iterdir() if p.is_dir()}
    assert not set(kr.__all__) & modules
    import kafka_rebalance.cli  # noqa: F401  (imports most submodules)

    for name in kr.__all__:
        assert not inspect_is_module(getattr(kr, name)), name


def inspect_is_module(x: object) -> bool:
    import types

    return isinstance(x, types.ModuleType)


def test_import_is_cheap():
    code = (
        "import sys, kafka_rebalance as kr; "
        "heavy = [m for m in ('pyspark', 'pyarrow', 'numpy', 'pandas', 'confluent_kafka', 'kafka', "
        "'plotly', 'rich') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError):
        kr.no_such_thing  # noqa: B018


def cli_json(capsys, *argv: str) -> dict:
    rc = main([*argv, "--format", "json"])
    out = capsys.readouterr().out
    assert rc == 0, out
    return json.loads(out)


def test_assign_matches_the_command(capsys):
    import yaml

    doc = yaml.safe_load((EXAMPLES / "group.yaml").read_text(encoding="utf-8"))
    for strategy in ("range", "cooperative-sticky", "uniform"):
        got = kr.assign_partitions(doc, strategy).to_json()
        assert got == cli_json(
            capsys, "assign", str(EXAMPLES / "group.yaml"), "--strategy", strategy
        )


def test_assign_takes_the_dataclasses_too():
    spec = kr.GroupSpec(
        topics={"t": kr.TopicMetadata("t", 3)},
        members=(
            kr.MemberSubscription("a", ("t",), owned=(kr.TopicPartition("t", 2),)),
            kr.MemberSubscription("b", ("t",)),
        ),
    )
    res = kr.assign_partitions(spec, "sticky")
    assert len(res.rounds) == 1
    assigned = sorted(tp for tps in res.rounds[0].assignment.values() for tp in tps)
    assert assigned == [kr.TopicPartition("t", i) for i in range(3)]
    assert kr.TopicPartition("t", 2) in res.rounds[0].assignment["a"]  # sticky keeps what a owned


def test_cluster_operations_match_the_commands(capsys):
    path = str(EXAMPLES / "cluster.json")
    snap = kr.load_snapshot(path)
    assert kr.describe(snap).to_json() == cli_json(
        capsys, "cluster", "describe", "--snapshot", path
    )
    assert kr.skew(snap).to_json() == cli_json(capsys, "cluster", "skew", "--snapshot", path)
    assert kr.elect(snap).to_json() == cli_json(capsys, "cluster", "elect", "--snapshot", path)
    assert kr.auto_elect(snap, "kraft").to_json() == cli_json(
        capsys, "cluster", "elect", "--snapshot", path, "--auto", "kraft"
    )
    assert kr.generate(snap, seed=3).to_json() == cli_json(
        capsys, "cluster", "generate", "--snapshot", path, "--seed", "3"
    )
    got = kr.plan(snap, kr.Mode.FULL, compare_generate=True, seed=1).to_json()
    assert got == cli_json(
        capsys, "cluster", "plan", "--snapshot", path, "--compare-generate", "--seed", "1"
    )


def test_plan_bad_parameter_names_the_parameter():
    snap = kr.load_snapshot(EXAMPLES / "cluster.json")
    with pytest.raises(kr.InputError) as exc:
        kr.plan(snap, "add-brokers", [], compare_generate=True, seed=1 << 63)
    assert exc.value.field == "seed"


def test_simulate_and_compare_match_the_command(capsys):
    import yaml

    path = EXAMPLES / "crash.yaml"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert kr.simulate(doc).to_json() == cli_json(capsys, "simulate", str(path))
    assert kr.compare(doc, ["eager", "consumer"]).to_json() == cli_json(
        capsys, "simulate", str(path), "--compare", "eager,consumer"
    )


def test_decode_offsets_record_prints_as_kafka_does():
    from kafka_rebalance.group.records import encode_record, offset_commit_record

    key, value = encode_record(offset_commit_record("g", "t", 3, 42, commit_timestamp=1000))
    rec = kr.decode_offsets_record(key, value)
    assert rec.record.value.offset == 42
    assert rec.to_json()["key"]["data"] == {"group": "g", "topic": "t", "partition": 3}
    assert rec.to_json()["value"]["data"]["offset"] == 42
