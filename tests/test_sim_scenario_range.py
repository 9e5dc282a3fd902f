"""sim/scenario.py's minimums are one table that the parser and the native core's claim both read
(note 14: `classic_native` restated them, so a new minimum in the parser would have been claimed
until a test caught it). For each table entry: the value at the minimum is taken by the parser and
claimed; one below (or not a number of its kind) is refused by the parser, naming the field, and
not claimed, naming the same field. The heartbeat rule and each event kind's own minimum likewise.
The claim's own pure checks run without the native builds (`_build` stands in)."""

from __future__ import annotations

import ast
import copy
from dataclasses import fields, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kafka_rebalance.errors import InputError
from kafka_rebalance.sim import classic_native, scenario
from kafka_rebalance.sim.scenario import parse_simulation_scenario, range_refusal

# a claimed scenario that spells out every setting the tables name
BASE: dict[str, Any] = {
    "name": "minimums",
    "seed": 3,
    "duration_ms": 90_000,
    "group": {"id": "g", "assignors": ["range"], "rebalance_timeout_ms": 20_000},
    "topics": [{"name": "t", "partitions": 6, "produce_rate": 20.0}],
    "members": {
        "processing_ms_per_record": 0.5,
        "list": [{"name": "a", "start_ms": 0}, {"name": "b", "start_ms": 100}],
    },
    "network": {"latency_ms": 1, "jitter_ms": 4},
    "simulation": {
        "poll_idle_ms": 1000,
        "poll_timeout_ms": 100,
        "lag_sample_ms": 5000,
        "processing_jitter": 0.2,
    },
    "events": [{"at_ms": 30_000, "kind": "rolling_restart", "down_ms": 2_000, "every_ms": 10_000}],
}
# where each model field is in the YAML document (the test fails on a table entry missing here)
SCENARIO_YAML = {
    "seed": ("seed",),
    "duration_ms": ("duration_ms",),
    "network_latency_ms": ("network", "latency_ms"),
    "network_jitter_ms": ("network", "jitter_ms"),
    "poll_idle_ms": ("simulation", "poll_idle_ms"),
    "poll_timeout_ms": ("simulation", "poll_timeout_ms"),
    "lag_sample_ms": ("simulation", "lag_sample_ms"),
    "processing_jitter": ("simulation", "processing_jitter"),
    "processing_ms_per_record": ("members", "processing_ms_per_record"),
}
CLAIM_BOUND = classic_native._EXACT // 4  # the claim's own 64-bit bound (tighter than int64)


def _is_number(part: str, name: str) -> bool:
    """A setting the model annotates float takes any finite number; the others ints only."""
    model = {
        "scenario": scenario.Scenario,
        "group": scenario.GroupConfig,
        "topic": scenario.TopicSpec,
        "member": scenario.MemberSpec,
        "event": scenario.SimEvent,
    }[part]
    return {f.name: f.type for f in fields(model)}[name] == "float"


def _least_taken(part: str, name: str, least: int | float) -> int | float:
    """The least value the parser and the claim both take: the table's, unless another rule of the
    parser needs more (a session timeout above the heartbeat interval; the base event's own
    minimum) or the claim's own 64-bit bound is tighter (the seed)."""
    if name == "session_timeout_ms":
        return scenario.GROUP_MINIMUM["heartbeat_interval_ms"] + 1
    kind_field, kind_least = scenario.EVENT_KIND_MINIMUM[BASE["events"][0]["kind"]]
    if part == "event" and name == kind_field:
        return max(least, kind_least)
    return least if least > -CLAIM_BOUND else -CLAIM_BOUND + 1


def _entries() -> list[tuple[str, str, int | float]]:
    out: list[tuple[str, str, int | float]] = []
    for part, table in (
        ("scenario", scenario.SCENARIO_MINIMUM),
        ("group", scenario.GROUP_MINIMUM),
        ("topic", scenario.TOPIC_MINIMUM),
        ("member", scenario.MEMBER_MINIMUM),
        ("event", scenario.EVENT_MINIMUM),
    ):
        out += [(part, name, least) for name, least in table.items()]
    return out


def _doc_with(part: str, name: str, value: Any) -> tuple[dict, str]:
    """BASE with one setting changed, and the field the parser names for it."""
    doc = copy.deepcopy(BASE)
    if name == "session_timeout_ms":  # the heartbeat interval stays below it where it can
        doc["group"]["heartbeat_interval_ms"] = 1
    if part == "scenario":
        *outer, key = SCENARIO_YAML[name]
        where = doc
        for k in outer:
            where = where[k]
        where[key] = value
        return doc, ".".join(SCENARIO_YAML[name])
    if part == "group":
        doc["group"][name] = value
        return doc, f"group.{name}"
    if part == "topic":
        doc["topics"][0][name] = value
        return doc, f"topics[0].{name}"
    if part == "member":
        doc["members"]["list"][1][name] = value
        return doc, f"members.list[1].{name}"
    doc["events"][0][name] = value
    return doc, f"events[0].{name}"


def _built_with(part: str, name: str, value: Any) -> tuple[scenario.Scenario, str]:
    """The parsed BASE with one setting replaced through the Python API, and the claim's name."""
    sc = parse_simulation_scenario(BASE)
    if name == "session_timeout_ms":  # as in _doc_with
        sc = replace(sc, group=replace(sc.group, heartbeat_interval_ms=1))
    if part == "scenario":
        return replace(sc, **{name: value}), name
    if part == "group":
        return replace(sc, group=replace(sc.group, **{name: value})), f"group.{name}"
    if part == "topic":
        return replace(sc, topics=(replace(sc.topics[0], **{name: value}),)), f"topics[0].{name}"
    if part == "member":
        members = (sc.members[0], replace(sc.members[1], **{name: value}))
        return replace(sc, members=members), f"members[1].{name}"
    return replace(sc, events=(replace(sc.events[0], **{name: value}),)), f"events[0].{name}"


@pytest.fixture(autouse=True)
def _builds_fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """The claim's last reasons are the builds' freshness and the native partition table's range
    (tests/test_sim_native_rates.py); these tests are about the others."""
    fresh = SimpleNamespace(partition_range_refusal=lambda sc: None)
    monkeypatch.setattr(classic_native, "_build", lambda: fresh)


def test_the_base_scenario_is_claimed() -> None:
    assert classic_native.native_support(parse_simulation_scenario(BASE)) is None


@pytest.mark.parametrize(("part", "name", "least"), _entries())
def test_the_claim_refuses_what_the_parser_refuses(
    part: str, name: str, least: int | float
) -> None:
    ok = _least_taken(part, name, least)
    doc, field = _doc_with(part, name, ok)
    parse_simulation_scenario(doc)  # taken
    sc, claim_name = _built_with(part, name, ok)
    assert range_refusal(sc) is None
    # the claim's own rules beside the parser's: only a group of Kafka's default size is claimed
    assert classic_native.native_support(sc) is None or (
        name,
        classic_native.native_support(sc),
    ) == (
        "group_max_size",
        "group_max_size",
    )
    number = _is_number(part, name)
    below = least / 2 if number and least > 0 else least - 1
    wrong_kind = "1" if number else least + 0.5
    for value in (below, wrong_kind, True):
        doc, field = _doc_with(part, name, value)
        with pytest.raises(InputError) as refused:
            parse_simulation_scenario(doc)
        assert refused.value.field == field, value
        sc, claim_name = _built_with(part, name, value)
        reason = classic_native.native_support(sc)
        assert reason is not None and reason.startswith(f"{claim_name} "), (value, reason)


@pytest.mark.parametrize(("kind", "rule"), sorted(scenario.EVENT_KIND_MINIMUM.items()))
def test_an_event_kinds_own_minimum_is_the_parsers(kind: str, rule: tuple[str, int]) -> None:
    name, least = rule
    sc = parse_simulation_scenario(BASE)
    event = {"at_ms": 1000, "kind": kind, "member": "a", "topic": "t", name: least}
    doc = copy.deepcopy(BASE)
    doc["events"] = [event]
    got = parse_simulation_scenario(doc)  # taken at the minimum
    assert range_refusal(got) is None
    doc["events"] = [{**event, name: least - 1}]
    with pytest.raises(InputError) as refused:
        parse_simulation_scenario(doc)
    assert refused.value.field == f"events[0].{name}"
    built = replace(sc, events=(replace(got.events[0], **{name: least - 1}),))
    assert range_refusal(built) == (
        f"events[0].{name} {least - 1} outside the scenario's range (>= {least} for {kind})"
    )
    if kind in classic_native._EVENTS:
        assert classic_native.native_support(built) == range_refusal(built)


@pytest.mark.parametrize("gap", [0, 1, 1000])
def test_the_heartbeat_rule_is_the_parsers(gap: int) -> None:
    """A heartbeat interval `gap` ms below the session timeout (0: equal) is taken by both or by
    neither."""
    sc = parse_simulation_scenario(BASE)
    hb = sc.group.session_timeout_ms - gap
    doc, _ = _doc_with("group", "heartbeat_interval_ms", hb)
    built, _ = _built_with("group", "heartbeat_interval_ms", hb)
    if gap:
        parse_simulation_scenario(doc)
        assert classic_native.native_support(built) is None
    else:
        with pytest.raises(InputError, match="lower than session_timeout_ms"):
            parse_simulation_scenario(doc)
        assert classic_native.native_support(built) == (
            "group.heartbeat_interval_ms not below group.session_timeout_ms"
        )


def _model_field(call: ast.Call) -> bool:
    """Whether a `_get` call reads a field of the model: members.count only counts the list."""
    return [getattr(a, "value", None) for a in call.args[1:3]] != ["count", "members."]


def test_every_minimum_of_the_parser_reads_the_table() -> None:
    """No literal minimum in scenario.py's parser: each `min_value=` reads one of the tables, so a
    new minimum is in the claim (`range_refusal`) too."""
    tables = {"SCENARIO_MINIMUM", "GROUP_MINIMUM", "TOPIC_MINIMUM", "MEMBER_MINIMUM"}
    tables |= {"EVENT_MINIMUM", "least"}  # `least` is a local alias of one of them
    tree = ast.parse(Path(scenario.__file__).read_text())
    seen = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_get":
            assert len(node.args) <= 6, ast.unparse(node)  # min_value passed by name only
            for kw in node.keywords:
                if kw.arg == "min_value" and _model_field(node):
                    seen += 1
                    read = kw.value
                    assert isinstance(read, (ast.Subscript, ast.Name)), ast.unparse(node)
                    base = read.value if isinstance(read, ast.Subscript) else read
                    assert isinstance(base, ast.Name), ast.unparse(node)
                    assert base.id in tables, ast.unparse(node)
    assert seen >= 15
