"""`consumer_group_model.slot_init`: the KIP-848 values built by a faster `__init__` are the values
the dataclass's own `__init__` builds.

Every frozen slots dataclass of the KIP-848 state machine gets it (a heartbeat builds several).
Each is compared here with a twin made by `dataclasses.make_dataclass` from the same fields (the
dataclass's own `__init__`): the same signature, the same fields from positional, keyword and
left-out arguments (default factories called once per value), the same errors, and the values stay
frozen, hashable and picklable.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle

import pytest

from kafka_rebalance.group import consumer_group_member as cgm
from kafka_rebalance.group import consumer_group_model as model

CLASSES = [
    obj
    for module in (model, cgm)
    for obj in vars(module).values()
    if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == module.__name__
]


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


def _sample(i: int) -> object:
    return ("value", i)  # any hashable value: __init__ does not check types


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
    args = [_sample(i) for i in range(len(fields))]
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


def test_values_stay_values():
    m = model.ConsumerGroupMember("m1", 3, assigned=frozenset({1, 2}))
    assert m == model.ConsumerGroupMember("m1", 3, assigned=frozenset({2, 1}))
    assert hash(m) == hash(model.ConsumerGroupMember("m1", 3, assigned=frozenset({1, 2})))
    assert pickle.loads(pickle.dumps(m)) == m
    assert copy.copy(m) == m and copy.deepcopy(m) == m
    assert dataclasses.replace(m, member_epoch=4).member_epoch == 4
    g = model.ConsumerGroup("g")
    assert g.members == {} and g.members is not model.ConsumerGroup("g").members
    assert pickle.loads(pickle.dumps(g)) == g
    assert repr(cgm.ConsumerMember("g", ("t",))).startswith("ConsumerMember(group_id='g'")


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
        model.slot_init(Checked)
