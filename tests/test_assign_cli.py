"""`kafka-rebalance assign`: JSON shape, table rendering, bad input -> exit 2 naming file and field."""

from __future__ import annotations

import json

import pytest

from kafka_rebalance.cli import main

SCENARIO = {
    "topics": [
        {"name": "orders", "partitions": 6, "rf": 2, "racks": ["a", "b", "c"]},
        {"name": "audit", "partitions": 3},
    ],
    "members": [
        {
            "id": "c1",
            "topics": ["orders", "audit"],
            "rack": "a",
            "owned": [["orders", 0], ["orders", 1]],
            "generation": 3,
        },
        {"id": "c0", "topics": ["orders"], "rack": "b"},
        {"id": "c2", "topics": ["orders", "audit"]},
    ],
    "rounds": 2,
}


def _write(tmp_path, doc, name="scenario.json") -> str:
    p = tmp_path / name
    p.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return str(p)


def _run(capsys, argv):
    rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "uniform", "server-range"])
def test_json_shape(tmp_path, capsys, strategy):
    path = _write(tmp_path, SCENARIO)
    rc, out, err = _run(capsys, ["assign", path, "--strategy", strategy, "--format", "json"])
    assert rc == 0, err
    doc = json.loads(out)  # exactly one JSON object on stdout
    assert doc["strategy"] == strategy
    assert len(doc["rounds"]) == 2
    for rnd in doc["rounds"]:
        assert set(rnd) == {"assignment", "stats"}
        assert set(rnd["assignment"]) == {"c1", "c0", "c2"}
        seen = [tuple(tp) for tps in rnd["assignment"].values() for tp in tps]
        assert all(isinstance(t, str) and isinstance(p, int) for t, p in seen)
        assert len(seen) == len(set(seen)) == 9
        st = rnd["stats"]
        assert st["partitions"] == 9 and st["assigned"] == 9 and st["held_back"] == 0
        assert st["members"] == {m: len(tps) for m, tps in rnd["assignment"].items()}
        assert st["balance"]["min"] == min(st["members"].values())
        assert st["balance"]["max"] == max(st["members"].values())
        assert st["kept"] + st["moved"] + st["new"] == st["assigned"]
    # round two is fed from round one: every strategy (range too: it is deterministic) keeps all 9
    assert doc["rounds"][1]["stats"]["kept"] == 9


def test_rounds_flag_overrides_file(tmp_path, capsys):
    path = _write(tmp_path, SCENARIO)
    rc, out, _ = _run(
        capsys, ["assign", path, "--strategy", "roundrobin", "--rounds", "3", "--format", "json"]
    )
    assert rc == 0 and len(json.loads(out)["rounds"]) == 3


def test_stats_values(tmp_path, capsys):
    """roundrobin on t[0..3] (racks x,y,x,y): a gets t-0,t-2, b gets t-1,t-3."""
    doc = {
        "topics": [{"name": "t", "partitions": 4, "rf": 1, "racks": ["x", "y"]}],
        "members": [
            {
                "id": "a",
                "topics": ["t"],
                "owned": [["t", 0], ["t", 1]],
                "generation": 1,
                "rack": "x",
            },
            {"id": "b", "topics": ["t"], "rack": "x"},
        ],
    }
    path = _write(tmp_path, doc)
    rc, out, _ = _run(capsys, ["assign", path, "--strategy", "roundrobin", "--format", "json"])
    assert rc == 0
    rnd = json.loads(out)["rounds"][0]
    assert rnd["assignment"] == {"a": [["t", 0], ["t", 2]], "b": [["t", 1], ["t", 3]]}
    st = rnd["stats"]
    assert st["members"] == {"a": 2, "b": 2}
    assert st["balance"] == {"min": 2, "max": 2, "spread": 0}
    assert (st["kept"], st["moved"], st["new"], st["revoked"], st["held_back"]) == (1, 1, 2, 1, 0)
    assert st["rack_mismatches"] == 2  # b (rack x) holds t-1 and t-3, whose only replica is on y


def test_cooperative_round_one_holds_back(tmp_path, capsys):
    """A joining member: cooperative-sticky revokes first, so round one holds partitions back."""
    doc = {
        "topics": [{"name": "t", "partitions": 4}],
        "members": [
            {"id": "a", "topics": ["t"], "owned": [["t", p] for p in range(4)], "generation": 1},
            {"id": "b", "topics": ["t"]},
        ],
        "rounds": 2,
    }
    path = _write(tmp_path, doc)
    rc, out, _ = _run(
        capsys, ["assign", path, "--strategy", "cooperative-sticky", "--format", "json"]
    )
    assert rc == 0
    first, second = (r["stats"] for r in json.loads(out)["rounds"])
    assert (
        first["held_back"] == 2
        and first["kept"] == 2
        and first["moved"] == 0
        and first["revoked"] == 2
    )
    assert second["held_back"] == 0 and second["new"] == 2 and second["balance"]["spread"] == 0


def test_yaml_input(tmp_path, capsys):
    import yaml

    path = _write(tmp_path, yaml.safe_dump(SCENARIO), "scenario.yaml")
    rc, out, _ = _run(capsys, ["assign", path, "--strategy", "range", "--format", "json"])
    assert rc == 0 and json.loads(out)["strategy"] == "range"


def test_table_runs(tmp_path, capsys):
    path = _write(tmp_path, SCENARIO)
    rc, out, _ = _run(capsys, ["assign", path, "--strategy", "roundrobin", "--format", "table"])
    assert rc == 0
    assert "c0" in out and "balance" in out and "rack mismatches" in out and "held back" in out
    assert "orders: " in out and "[" not in out


def _bad(**changes):
    doc = json.loads(json.dumps(SCENARIO))
    for _key, fn in changes.items():
        fn(doc)
    return doc


BAD = {
    "unknown topic field": (
        _bad(t=lambda d: d["topics"][0].update(colour="red")),
        "topics[0].colour",
    ),
    "negative partitions": (
        _bad(t=lambda d: d["topics"][1].update(partitions=-3)),
        "topics[1].partitions",
    ),
    "duplicate member id": (_bad(m=lambda d: d["members"][2].update(id="c1")), "members[2].id"),
    "bad owned entry": (
        _bad(m=lambda d: d["members"][0].update(owned=[["orders"]])),
        "members[0].owned[0]",
    ),
    "rounds zero": (_bad(m=lambda d: d.update(rounds=0)), "rounds"),
    "members not a list": (_bad(m=lambda d: d.update(members={"c0": []})), "members"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_exit_2(tmp_path, capsys, case):
    doc, field = BAD[case]
    path = _write(tmp_path, doc)
    rc, out, err = _run(capsys, ["assign", path, "--strategy", "range", "--format", "json"])
    assert rc == 2
    assert out == ""
    assert path in err and f"'{field}'" in err


def test_malformed_json(tmp_path, capsys):
    path = _write(tmp_path, '{"topics": [ {"name": "t", "partitions": 3,, ] }')
    rc, out, err = _run(capsys, ["assign", path, "--strategy", "range"])
    assert rc == 2 and out == ""
    assert path in err and "malformed JSON" in err and "line 1" in err


def test_missing_file(tmp_path, capsys):
    path = str(tmp_path / "absent.json")
    rc, _, err = _run(capsys, ["assign", path, "--strategy", "range"])
    assert rc == 2 and path in err and "not found" in err


def test_unknown_strategy(tmp_path, capsys):
    path = _write(tmp_path, SCENARIO)
    rc, out, err = _run(capsys, ["assign", path, "--strategy", "fastest"])
    assert rc == 2 and out == ""
    assert "'--strategy'" in err and "fastest" in err and "roundrobin" in err


def test_bad_rounds_flag(tmp_path, capsys):
    path = _write(tmp_path, SCENARIO)
    rc, _, err = _run(capsys, ["assign", path, "--strategy", "range", "--rounds", "0"])
    assert rc == 2 and "--rounds" in err
