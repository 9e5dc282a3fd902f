"""The classic group on both legs, the installed build (mypyc native classes) and the sources (plain
classes), where the two could differ beyond the fingerprints: copy, deepcopy and pickle (a copy
taken mid-rebalance answers the same calls with the same effects as the original)."""

from __future__ import annotations

import ast
import copy
import pickle
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from compiled_legs import no_compiled_leg
from kafka_rebalance import group, native
from kafka_rebalance.group import classic_group
from kafka_rebalance.group import classic_messages as messages
from kafka_rebalance.group.classic_messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    ScheduleTimer,
    SyncGroupRequest,
)
from kafka_rebalance.group.classic_state import ClassicGroupState as S
from kafka_rebalance.group.classic_values import MemberSnapshot
from kafka_rebalance.group.errors import Errors

NAMES = group.CLASSIC_MODULES
PURE = native.sources_of("kafka_rebalance.group", NAMES)


def _leg(leg: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    if leg == "pure":  # the sources under their own names, as a pure install has them (pickle)
        for name, module in PURE.items():
            monkeypatch.setitem(sys.modules, f"kafka_rebalance.group.{name}", module)
            monkeypatch.setattr(group, name, module, raising=False)  # not imported yet: set
        assert all(module.__file__.endswith(".py") for module in PURE.values())
        return PURE["classic_group"]
    if not group.CLASSIC_COMPILED:
        no_compiled_leg("the classic group has no fresh compiled build: only the pure leg ran")
    for name in NAMES:  # every module of the set runs its build (classic_group imports them all)
        assert native.is_fresh_build(getattr(group, name).__file__), name
    return classic_group


def _fire_due(g: Any, timers: dict, fx: list, until: int) -> None:
    for e in fx:
        if isinstance(e, ScheduleTimer):
            timers[e.key] = (e.deadline_ms, e.payload)
    while due := sorted((d, k) for k, (d, _) in timers.items() if d <= until):
        d, k = due[0]
        _, payload = timers.pop(k)
        _fire_due(g, timers, g.on_timer(k, payload, d), until)


def _completing_rebalance(mod: ModuleType) -> tuple[Any, list[str]]:
    """Three dynamic members joined; the join barrier completed, no SyncGroup yet."""
    g = mod.ClassicGroup("g", member_id_salt="s")
    timers: dict = {}
    ids = []
    for i in range(3):
        req = JoinGroupRequest(f"c{i}", "", (("range", f"m{i}"),), 45_000, 60_000)
        (resp,) = [e for e in g.join(req, i) if isinstance(e, JoinGroupResponse)]
        ids.append(resp.member_id)
        _fire_due(g, timers, g.join(req._replace(member_id=resp.member_id), i), i)
    _fire_due(g, timers, [], 10_000)
    assert g.state is S.COMPLETING_REBALANCE
    return g, ids


def _next_calls(g: Any, ids: list[str]) -> list:
    """The leader's SyncGroup, the others', a heartbeat each, then a new member's join."""
    gen = g.generation_id
    out = [
        g.sync(SyncGroupRequest("c0", g.leader_id, gen, assignments={m: m for m in ids}), 10_001)
    ]
    out += [g.sync(SyncGroupRequest(f"c{i}", m, gen), 10_002) for i, m in enumerate(ids)]
    out += [g.heartbeat(HeartbeatRequest(f"c{i}", m, gen), 10_003) for i, m in enumerate(ids)]
    new = JoinGroupRequest("c9", "", (("range", "m9"),), 45_000, 60_000)
    out.append(g.join(new, 10_004))
    (resp,) = [e for e in out[-1] if isinstance(e, JoinGroupResponse)]
    out.append(g.join(new._replace(member_id=resp.member_id), 10_005))
    out.append((g.state, g.generation_id, g.leader_id, g.snapshot(), sorted(g.members)))
    return out


@pytest.mark.parametrize("leg", ["pure", "compiled"])
def test_a_copy_taken_mid_rebalance_answers_like_the_original(
    leg: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mod = _leg(leg, monkeypatch)
    g, ids = _completing_rebalance(mod)
    shallow = copy.copy(g)
    assert type(shallow) is mod.ClassicGroup and shallow is not g
    assert shallow.members is g.members and shallow.snapshot() == g.snapshot()
    copies = [copy.deepcopy(g), pickle.loads(pickle.dumps(g)), pickle.loads(pickle.dumps(g, 2))]
    for c in copies:
        assert type(c) is mod.ClassicGroup and c is not g and c.members is not g.members
        assert c.snapshot() == g.snapshot() and c.state is g.state
    expected = _next_calls(g, ids)
    assert expected[-1][0] is S.PREPARING_REBALANCE  # the new member's join started a rebalance
    for c in copies:
        assert _next_calls(c, ids) == expected


@pytest.mark.parametrize("leg", ["pure", "compiled"])
def test_a_member_copies_and_pickles(leg: str, monkeypatch: pytest.MonkeyPatch) -> None:
    mod = _leg(leg, monkeypatch)
    g, ids = _completing_rebalance(mod)
    m = g.members[ids[0]]
    assert type(m) is mod.ClassicGroupMember
    for c in (copy.copy(m), copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert type(c) is type(m) and c is not m
        for name in PURE["classic_member"].ClassicGroupMember.__slots__:
            assert getattr(c, name) == getattr(m, name), name
    for value in (g.config, g.snapshot()):  # frozen values (compiled dataclasses on the build)
        assert copy.deepcopy(value) == value == pickle.loads(pickle.dumps(value))


def test_the_state_list_names_every_attribute() -> None:
    """The source's attributes are what __reduce__ carries (the build's classes have no __dict__)."""
    g, _ = _completing_rebalance(PURE["classic_group"])
    assert sorted(vars(g)) == sorted(PURE["classic_group_base"]._FIELDS)


# ---------------------------------------------------------------- times and timeouts are ints


class _FakeInt:
    """Claims to be an int through `__class__` (isinstance believes it; PyLong_Check does not)."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return int


# the value and mypyc's name of its type (a tuple with its items' types: "tuple[" for an empty one)
NOT_INTS = [
    (5.5, "float"),
    (None, "None"),
    ("5", "str"),
    ((1,), "tuple[int]"),
    ((), "tuple["),
    (_FakeInt(), f"{__name__}._FakeInt"),
]


def _not_int_error(call: Any) -> str:
    with pytest.raises(TypeError) as raised:
        call()
    return str(raised.value)


@pytest.mark.parametrize("leg", ["pure", "compiled"])
@pytest.mark.parametrize(("value", "name"), NOT_INTS)
def test_a_time_that_is_not_an_int_is_refused_alike(
    leg: str, value: object, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build's typed signatures refuse it (mypyc's TypeError); the source refuses the same."""
    mod = _leg(leg, monkeypatch)
    want = f"int object expected; got {name}"
    assert _not_int_error(lambda: mod.ClassicGroup("g", now_ms=value)) == want
    g, ids = _completing_rebalance(mod)
    gen = g.generation_id
    join = JoinGroupRequest("c0", ids[0], (("range", "m0"),), 45_000, 60_000)
    calls = [
        lambda: g.join(join, value),
        lambda: g.join(join._replace(session_timeout_ms=value), 1),
        lambda: g.join(join._replace(rebalance_timeout_ms=value), 1),
        lambda: g.join(join._replace(session_timeout_ms=1, rebalance_timeout_ms=value), 1),
        lambda: g.sync(SyncGroupRequest("c0", ids[0], gen), value),
        lambda: g.heartbeat(HeartbeatRequest("c0", ids[0], gen), value),
        lambda: g.leave(LeaveGroupRequest("c0", ((ids[0], None),)), value),
        lambda: g.on_timer(("heartbeat", ids[0]), None, value),
        lambda: g.handle(HeartbeatRequest("c0", ids[0], gen), value),
        lambda: g.mark_dead(value),
        lambda: mod.ClassicGroupMember("m", None, "c", value, 1, "consumer", ()),
        lambda: mod.ClassicGroupMember("m", None, "c", 1, value, "consumer", ()),
    ]
    snap = g.snapshot()
    for i, call in enumerate(calls):
        assert _not_int_error(call) == want, i
    assert g.snapshot() == snap and g.state is S.COMPLETING_REBALANCE  # refused before any change


@pytest.mark.parametrize("leg", ["pure", "compiled"])
def test_a_numpy_time_is_refused_alike(leg: str, monkeypatch: pytest.MonkeyPatch) -> None:
    np = pytest.importorskip("numpy")
    mod = _leg(leg, monkeypatch)
    g, ids = _completing_rebalance(mod)
    call = lambda: g.heartbeat(HeartbeatRequest("c0", ids[0], g.generation_id), np.int64(5))  # noqa: E731
    assert _not_int_error(call) == "int object expected; got numpy.int64"


# ------------------------------------------------- effects built with tuple.__new__ (new_tuple)


def _new_tuple_uses() -> list[tuple[str, int, int]]:
    """(type, fields given, line) of each `new_tuple(T, (...))` in the classic group's sources; a
    name for the fields is followed to its tuple in the same function."""
    uses = []
    for name in NAMES:
        tree = ast.parse(Path(PURE[name].__file__).read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            tuples = {
                t.id: a.value
                for a in ast.walk(fn)
                if isinstance(a, ast.Assign) and isinstance(a.value, ast.Tuple)
                for t in a.targets
                if isinstance(t, ast.Name)
            }
            for call in ast.walk(fn):
                if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "new_tuple":
                    kind, fields = call.args
                    if isinstance(fields, ast.Name):
                        fields = tuples[fields.id]
                    assert isinstance(kind, ast.Name) and isinstance(fields, ast.Tuple)
                    uses.append((kind.id, len(fields.elts), call.lineno))
    return uses


def test_each_new_tuple_gives_every_field() -> None:
    """tuple.__new__ does not check a NamedTuple's field count: the sources must."""
    uses = _new_tuple_uses()
    assert {kind for kind, _, _ in uses} >= {
        "HeartbeatResponse",
        "JoinGroupMember",
        "JoinGroupResponse",
        "ScheduleTimer",
        "SyncGroupResponse",
    }
    for kind, given, line in uses:
        assert given == len(getattr(messages, kind)._fields), (kind, line)


def _tuples(value: Any) -> Iterator[tuple]:
    if isinstance(value, tuple):
        if hasattr(type(value), "_fields"):
            yield value
        for item in value:
            yield from _tuples(item)


@pytest.mark.parametrize("leg", ["pure", "compiled"])
def test_the_effects_equal_their_named_tuples_built_by_name(
    leg: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every effect (and response member) of a rebalance equals the NamedTuple built from its
    fields by name, and each error field holds an error: no field short, none misplaced."""
    mod = _leg(leg, monkeypatch)
    g, ids = _completing_rebalance(mod)
    seen = set()
    effects = _next_calls(g, ids)[:-1]
    for i, m in enumerate(ids):  # the rejoins complete the join the new member started
        effects.append(
            g.join(JoinGroupRequest(f"c{i}", m, (("range", f"m{i}"),), 45_000, 60_000), 10_010)
        )
    assert g.state is S.COMPLETING_REBALANCE
    for fx in effects:
        for e in (t for effect in fx for t in _tuples(effect)):
            t = type(e)
            seen.add(t.__name__)
            assert len(e) == len(t._fields) and t(**e._asdict()) == e, e
            if "error" in t._fields:
                assert isinstance(e.error, Errors), e
            if t is ScheduleTimer:
                assert isinstance(e.deadline_ms, int) and isinstance(e.key, tuple), e
    assert seen >= {
        "SyncGroupResponse",
        "HeartbeatResponse",
        "ScheduleTimer",
        "JoinGroupResponse",
        "JoinGroupMember",
    }


@pytest.mark.parametrize("leg", ["pure", "compiled"])
def test_a_new_config_renews_the_session_timeouts_join_accepts(
    leg: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mod = _leg(leg, monkeypatch)
    g = mod.ClassicGroup("g")
    req = JoinGroupRequest("c0", "", (("range", "m0"),), 5_000, 60_000)
    (before,) = [e for e in g.join(req, 0) if isinstance(e, JoinGroupResponse)]
    assert before.error is Errors.INVALID_SESSION_TIMEOUT  # below the default 6 s
    g.config = mod.ClassicGroupConfig(min_session_timeout_ms=1_000)
    (after,) = [e for e in g.join(req, 0) if isinstance(e, JoinGroupResponse)]
    assert after.error is Errors.MEMBER_ID_REQUIRED
    assert copy.deepcopy(g).config == g.config


@pytest.mark.parametrize("leg", ["pure", "compiled"])
def test_the_snapshot_equals_its_members_built_by_their_constructor(
    leg: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """snapshot() fills each MemberSnapshot's slots directly (its dataclass __init__ is interpreted):
    the same value, field by field, as the constructor gives, still frozen, hashed and pickled alike."""
    mod = _leg(leg, monkeypatch)
    g, ids = _completing_rebalance(mod)
    gen = g.generation_id
    g.sync(SyncGroupRequest("c0", g.leader_id, gen, assignments={m: (ord(m[-1]),) for m in ids}), 1)
    g.join(JoinGroupRequest("c7", "", (("range", "m7"),), 30_000, 50_000, "static-7"), 2)
    snap = g.snapshot()
    assert [m.member_id for m in snap.members] == list(g.members)
    for got, m in zip(snap.members, g.members.values(), strict=True):
        fields = (m.member_id, m.group_instance_id, m.client_id, m.rebalance_timeout_ms)
        fields += (m.session_timeout_ms, m.protocols, m.assignment)
        built = type(got)(*fields)
        assert type(got) is MemberSnapshot
        assert [getattr(got, f) for f in got.__slots__] == list(fields)
        assert got == built and hash(got) == hash(built) and repr(got) == repr(built)
        assert pickle.loads(pickle.dumps(got)) == built
        with pytest.raises(AttributeError):
            got.member_id = "x"  # type: ignore[misc]
    assert any(m.group_instance_id == "static-7" for m in snap.members)
    assert any(m.assignment for m in snap.members)
