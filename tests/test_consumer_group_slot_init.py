"""`consumer_group_model.slot_init`: the KIP-848 values built by a faster `__init__` are the values
the dataclass's own `__init__` builds; and a mypyc build's native values are the sources' values.

Every frozen slots dataclass of the KIP-848 state machine gets it where it is interpreted (the
sources: `fast_inits`; a heartbeat builds several). Each is compared here with a twin made by
`dataclasses.make_dataclass` from the same fields (the dataclass's own `__init__`): the same
signature, the same fields from positional, keyword and left-out arguments (default factories
called once per value), the same errors, and the values stay frozen, hashable and picklable.
A compiled build's classes are native (their hand-written `__init__` stores each field): built from
the same arguments they give the sources' values (the same repr, field by field), and stay values.
Both refuse an argument of another type than its parameter declares with the same TypeError
(review 7 F7): the build's wrapper checks it, the sources' `slot_init` checks the same.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle

import numpy as np
import pytest

from compiled_legs import no_compiled_leg
from kafka_rebalance import group, native
from kafka_rebalance.group import consumer_group_member as cgm
from kafka_rebalance.group import consumer_group_model as model
from kafka_rebalance.group.errors import Errors
from kafka_rebalance.model import TopicPartition

# the sources, whichever build runs: slot_init is theirs (a native class's type is immutable)
PURE = native.sources_of("kafka_rebalance.group", group.CONSUMER_MODULES)
PURE_MODEL, PURE_CGM = PURE["consumer_group_model"], PURE["consumer_group_member"]


def _value_classes(*modules) -> list[type]:
    return [
        obj
        for module in modules
        for obj in vars(module).values()
        if isinstance(obj, type)
        and dataclasses.is_dataclass(obj)
        and obj.__module__ == module.__name__
    ]


CLASSES = _value_classes(PURE_MODEL, PURE_CGM)


def _twin(cls: type) -> type:
    """The same dataclass, with the dataclass's own __init__."""
    return dataclasses.make_dataclass(
        cls.__name__,
        [(f.name, f.type, f) for f in dataclasses.fields(cls)],
        frozen=True,
        slots=True,
    )


def _fields(obj: object) -> tuple:
    return tuple(getattr(obj, f.name) for f in dataclasses.fields(obj))  # type: ignore[arg-type]


def _typed_sample(annotation: str, i: int, mod, client) -> object:
    """A value of the field's declared type (both legs check the types they store), one per `i`
    (a bool alternates), so that a field stored in another's place shows."""
    tp = TopicPartition("t", i)
    samples = {
        "str": f"s{i}",
        "int": 7 + i,
        "bool": i % 2 == 0,
        "MemberState": mod.MemberState.UNREVOKED_PARTITIONS,
        "ClientState": client.ClientState.RECONCILING,
        "Errors": Errors.FENCED_MEMBER_EPOCH,
    }
    base = annotation.removesuffix(" | None")
    if base in samples:
        return samples[base]
    if base.startswith("frozenset["):
        return frozenset({tp})  # (one: a set's repr follows its insertion history)
    if base.startswith("tuple[str"):
        return (f"t{i}", "u")
    if base.startswith("tuple[TopicPartition"):
        return (tp,)
    if base.startswith("Mapping["):
        return {f"k{i}": i}
    if base == "Reconciliation":
        return None
    raise AssertionError(f"no sample for {annotation}")


def test_every_value_class_has_it():
    assert len(CLASSES) >= 15
    for cls in CLASSES:
        assert vars(cls)["__init__"].__qualname__ == f"{cls.__qualname__}.__init__"
        assert "_set0" in vars(cls)["__init__"].__code__.co_names or not dataclasses.fields(cls)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_same_values_as_the_dataclass_init(cls):
    twin = _twin(cls)
    fields = dataclasses.fields(cls)
    assert str(inspect.signature(cls)) == str(inspect.signature(twin))
    args = [_typed_sample(str(f.type), i, PURE_MODEL, PURE_CGM) for i, f in enumerate(fields)]
    assert _fields(cls(*args)) == _fields(twin(*args)) == tuple(args)
    kwargs = {f.name: a for f, a in zip(fields, args)}
    assert _fields(cls(**kwargs)) == tuple(args)
    required = {
        f.name: a
        for f, a in zip(fields, args)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    a, b = cls(**required), twin(**required)
    assert _fields(a) == _fields(b)
    for f in fields:
        if f.default_factory is not dataclasses.MISSING:  # a new one per value
            assert getattr(a, f.name) is not getattr(cls(**required), f.name)
    if required:
        with pytest.raises(TypeError) as ours:
            cls()
        with pytest.raises(TypeError) as theirs:
            twin()
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(TypeError):
        cls(*args, "one too many")
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(a, fields[0].name, "changed")


@pytest.mark.parametrize("leg", ["pure", "installed"])
def test_values_stay_values(leg: str):
    mod, client = (PURE_MODEL, PURE_CGM) if leg == "pure" else (model, cgm)
    tps = frozenset({TopicPartition("t", 1), TopicPartition("t", 2)})
    m = mod.ConsumerGroupMember("m1", 3, assigned=tps)
    assert m == mod.ConsumerGroupMember("m1", 3, assigned=frozenset(sorted(tps)))
    assert hash(m) == hash(mod.ConsumerGroupMember("m1", 3, assigned=tps))
    # (the sources loaded beside a build are not importable by name: pickled where installed)
    dumped = pickle.loads if leg == "installed" else (lambda v: v)
    dump = pickle.dumps if leg == "installed" else (lambda v: v)
    assert dumped(dump(m)) == m
    rebuild, fields = m.__reduce__()
    assert rebuild is type(m) and rebuild(*fields) == m  # value_reduce: the fields in order
    assert copy.copy(m) == m and copy.deepcopy(m) == m
    assert dataclasses.replace(m, member_epoch=4).member_epoch == 4
    assert mod.replace(m, member_epoch=5) == dataclasses.replace(m, member_epoch=5)
    g = mod.ConsumerGroup("g")
    assert g.members == {} and g.members is not mod.ConsumerGroup("g").members
    assert dumped(dump(g)) == g and copy.deepcopy(g) == g
    assert repr(client.ConsumerMember("g", ("t",))).startswith("ConsumerMember(group_id='g'")
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.member_epoch = 4  # type: ignore[misc]


NATIVE_CLASSES = _value_classes(model, cgm)


@pytest.mark.parametrize("cls", NATIVE_CLASSES, ids=lambda c: c.__name__)
def test_a_compiled_builds_values_are_the_sources_values(cls):
    """The native class built from the same arguments as its source class: the same fields (the
    same repr), the same defaults and new default factories, equal to itself rebuilt, hashable,
    pickled, copied and replaced as a value, frozen."""
    if not group.CONSUMER_COMPILED:
        no_compiled_leg("the KIP-848 group has no fresh compiled build: its sources run")
    mod = model if cls.__module__ == model.__name__ else cgm
    pure_mod = PURE_MODEL if mod is model else PURE_CGM
    pure = getattr(pure_mod, cls.__name__)
    assert not native.is_fresh_build(pure_mod.__file__) and native.is_fresh_build(mod.__file__)
    fields = dataclasses.fields(cls)
    types = [str(f.type) for f in dataclasses.fields(pure)]  # (the build's are the classes)
    assert [f.name for f in fields] == [f.name for f in dataclasses.fields(pure)]

    def args(m, c):
        return [_typed_sample(t, i, m, c) for i, t in enumerate(types)]

    value = cls(*args(model, cgm))
    assert repr(value) == repr(pure(*args(PURE_MODEL, PURE_CGM)))
    kwargs = {f.name: a for f, a in zip(fields, args(model, cgm))}
    assert cls(**kwargs) == value
    if not any(str(t).startswith("Mapping[") for t in types):  # (a group holds dicts)
        assert hash(cls(**kwargs)) == hash(value)
    required = [
        f.name
        for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    given = {n: kwargs[n] for n in required}
    pure_given = {n: a for n, a in zip([f.name for f in fields], args(PURE_MODEL, PURE_CGM))}
    left_out = cls(**given)
    assert repr(left_out) == repr(pure(**{n: pure_given[n] for n in required}))
    for f in fields:
        if f.default_factory is not dataclasses.MISSING:  # a new one per value
            assert getattr(left_out, f.name) is not getattr(cls(**given), f.name)
    for again in (pickle.loads(pickle.dumps(value)), copy.copy(value), copy.deepcopy(value)):
        assert type(again) is cls and again == value and repr(again) == repr(value)
    changed = dataclasses.replace(value, **{fields[0].name: kwargs[fields[0].name]})
    assert changed == value and model.replace(value) == value
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, fields[0].name, kwargs[fields[0].name])
    with pytest.raises(TypeError):
        cls(*args(model, cgm), "one too many")
    if required:
        with pytest.raises(TypeError):
            cls()


def test_a_post_init_is_refused() -> None:
    """The generated __init__ does not call __post_init__: a class with one is refused, not built
    without its check (review 4 F9)."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        n: int

        def __post_init__(self) -> None:
            if self.n < 0:
                raise ValueError("n < 0")

    with pytest.raises(TypeError, match="Checked: slot_init does not run __post_init__"):
        PURE_MODEL.slot_init(Checked)


# a value of another type than the parameter declares (review 7 F7), and mypyc's TypeError for it
WRONG_TYPES = [
    ("subscribed_topics", ["t"], "tuple object expected; got list"),
    ("assigned", {TopicPartition("t", 0)}, "frozenset object expected; got set"),
    ("member_epoch", 1.0, "int object expected; got float"),
    ("member_epoch", np.int64(1), "int object expected; got numpy.int64"),
    ("client_id", None, "str object expected; got None"),
    ("instance_id", 1, "str or None object expected; got int"),
    ("rebalance_deadline_ms", ("x", 1), "int or None object expected; got tuple[str, int]"),
    ("state", 0, "kafka_rebalance.group.consumer_group_model.MemberState object expected; got int"),
]
DECLARED = {
    "subscribed_topics": ("t",),
    "assigned": frozenset({TopicPartition("t", 0)}),
    "member_epoch": 1,
    "client_id": "c",
    "instance_id": "i",
    "rebalance_deadline_ms": 5,
}


def _leg(leg: str) -> tuple:
    if leg == "pure":
        return PURE_MODEL, PURE_CGM
    if not group.CONSUMER_COMPILED:
        no_compiled_leg("no fresh build of the KIP-848 group: only the sources ran")
    return model, cgm


@pytest.mark.parametrize("leg", ["pure", "compiled"])
@pytest.mark.parametrize(("name", "value", "want"), WRONG_TYPES, ids=lambda v: repr(v)[:30])
def test_a_value_of_another_type_is_refused_alike(leg: str, name: str, value: object, want: str):
    """docs/architecture.md's KIP-848 row: a field takes its declared type; the build's native
    class refuses another with mypyc's TypeError, the sources refuse the same with the same; both
    take the declared type (or a subclass of it) and give equal values from it."""
    mod, _ = _leg(leg)
    with pytest.raises(TypeError) as raised:
        mod.ConsumerGroupMember("m", **{name: value})
    assert str(raised.value) == want
    fields = dataclasses.fields(PURE_MODEL.ConsumerGroupMember)
    args = ["m", *[mod.MemberState.STABLE if f.name == "state" else f.default for f in fields[1:]]]
    args[[f.name for f in fields].index(name)] = value
    with pytest.raises(TypeError) as positional:  # the same check, passed by position
        mod.ConsumerGroupMember(*args)
    assert str(positional.value) == want
    if name in DECLARED:
        given = {name: DECLARED[name]}
        assert repr(mod.ConsumerGroupMember("m", **given)) == repr(
            PURE_MODEL.ConsumerGroupMember("m", **given)
        )


class _Tuple(tuple):
    pass


class _FakeInt:
    """Claims to be an int through `__class__`: isinstance believes it, mypyc's checks (the real
    type's) do not, and neither must the sources' `slot_init`."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return int


def _probes(mod, client) -> dict[str, object]:
    """One value of each kind the values' fields see or might be given by mistake."""
    return {
        "list": ["t"],
        "set": {TopicPartition("t", 0)},
        "dict": {},
        "float": 1.0,
        "numpy int": np.int64(1),
        "None": None,
        "str": "s",
        "int": 3,
        "bool": True,
        "Errors": Errors.NONE,  # an IntEnum: an int
        "tuple": ("a", 1),
        "tuple subclass": _Tuple(),
        "empty tuple": (),
        "fake int": _FakeInt(),
        "frozenset": frozenset(),
        "object": object(),
        "MemberState": mod.MemberState.STABLE,
        "ClientState": client.ClientState.STABLE,
        "Reconciliation": client.Reconciliation(frozenset(), frozenset(), frozenset(), 1),
    }


def _outcomes(mod, client, cls_name: str) -> dict[tuple[str, str], str]:
    """(field, probe) -> what the leg's class does with the probe in that field (the others of
    their declared types): "ok", or the TypeError's message."""
    cls = getattr(mod, cls_name, None) or getattr(client, cls_name)
    pure = getattr(PURE_MODEL, cls_name, None) or getattr(PURE_CGM, cls_name)
    fields = dataclasses.fields(pure)
    base = {f.name: _typed_sample(str(f.type), i, mod, client) for i, f in enumerate(fields)}
    out = {}
    for f in fields:
        for probe, value in _probes(mod, client).items():
            try:
                cls(**{**base, f.name: value})
                out[f.name, probe] = "ok"
            except TypeError as e:
                out[f.name, probe] = str(e)
    return out


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_field_refuses_the_same_values_on_both_legs(cls):
    """Every field of every value class, given each probe: the sources accept what the build
    accepts and refuse what it refuses, with the same message (a field typed by a class from
    outside the compiled set, Errors or a Mapping, is Any to mypyc: neither leg checks it)."""
    pure = _outcomes(PURE_MODEL, PURE_CGM, cls.__name__)
    for f in dataclasses.fields(cls):
        refused = [probe for (name, probe), v in pure.items() if name == f.name and v != "ok"]
        if str(f.type).startswith(("Mapping[", "Errors")):  # Any to mypyc
            assert refused == [], f.name
        else:
            assert "object" in refused and "list" in refused, f.name
    if not group.CONSUMER_COMPILED:
        no_compiled_leg("no fresh build of the KIP-848 group: only the sources ran")
    assert _outcomes(model, cgm, cls.__name__) == pure


def test_slot_init_refuses_an_annotation_it_has_no_check_for() -> None:
    """A type whose mypyc check slot_init does not repeat (a union of two classes, a tuple of fixed
    length: mypyc checks each item) is refused when the class is made, not left unchecked."""
    for annotation in ("int | str", "tuple[int, int]", "Unknown"):
        ns: dict = {}
        exec(  # noqa: S102 - a class with this annotation, as a module with string annotations
            "from dataclasses import dataclass\n"
            "@dataclass(frozen=True, slots=True)\n"
            f"class Odd:\n    x: {annotation!r}\n",
            ns,
        )
        with pytest.raises(TypeError, match="slot_init has no check for"):
            PURE_MODEL.slot_init(ns["Odd"])
