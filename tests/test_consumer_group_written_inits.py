"""The KIP-848 values' hand-written `__init__` and `__reduce__` repeat their dataclass fields (review 7
D1/D7): a mypyc build runs the written `__init__` (its native class's constructor) and the sources run
`slot_init`'s, made from the fields; both pickle through `value_reduce`, the fields in order. So the
written `__init__` of every value class, read from its source with `ast`, must take the fields'
names in their order, with their defaults (a default factory's field: `_NOT_GIVEN`, stored through
`_or_dict`), their annotations (a factory's: Any), and store each field once, in order; and its
`__reduce__` must be `value_reduce`'s. This runs on any install (the test comparing the classes of a
build with the sources', tests/test_consumer_group_slot_init.py, needs a build): a field added or a
default changed on one side only fails everywhere.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
from pathlib import Path
from types import ModuleType

import pytest

from kafka_rebalance import group, native
from kafka_rebalance.group import consumer_group_member, consumer_group_model

PURE = native.sources_of("kafka_rebalance.group", group.CONSUMER_MODULES)
MODULES = (PURE["consumer_group_model"], PURE["consumer_group_member"])
INSTALLED = {m.__name__: m for m in (consumer_group_model, consumer_group_member)}  # (a build's)


def _written(module: ModuleType) -> dict[str, ast.ClassDef]:
    """Each dataclass of the module's source, by name, as written."""
    tree = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
    return {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        and any("dataclass" in ast.unparse(d) for d in node.decorator_list)
    }


def _method(node: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    found = [f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == name]
    return found[0] if found else None


def _mismatches(node: ast.ClassDef, cls: type, namespace: dict) -> list[str]:
    """How the written `__init__` and `__reduce__` of `node` differ from `cls`'s fields ([]: not)."""
    fields = dataclasses.fields(cls)
    init, reduce = _method(node, "__init__"), _method(node, "__reduce__")
    if init is None or reduce is None:
        return ["no written __init__ or __reduce__"]
    out = []
    if ast.unparse(reduce.body[-1]) != "return value_reduce(self)":
        out.append(f"__reduce__ is not value_reduce's: {ast.unparse(reduce.body[-1])}")
    a = init.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
        out.append("__init__ takes more than the fields")
    params = a.args[1:]
    names = [p.arg for p in params]
    if names != [f.name for f in fields]:
        return [*out, f"__init__ takes {names}, the fields are {[f.name for f in fields]}"]
    defaults = dict(zip(names[len(names) - len(a.defaults) :], a.defaults))
    for f, p in zip(fields, params):
        given = defaults.get(f.name)
        factory = f.default_factory is not dataclasses.MISSING
        annotation = ast.unparse(p.annotation) if p.annotation else None
        if annotation != ("Any" if factory else str(f.type)):
            out.append(f"{f.name}: annotated {annotation}, the field is {f.type}")
        if f.default is not dataclasses.MISSING:
            value = None if given is None else eval(ast.unparse(given), namespace)  # noqa: S307
            if given is None or type(value) is not type(f.default) or value != f.default:
                out.append(f"{f.name}: default {ast.unparse(given) if given else None}")
        elif factory:
            if given is None or ast.unparse(given) != "_NOT_GIVEN" or f.default_factory is not dict:
                out.append(f"{f.name}: a factory's default is not _NOT_GIVEN (and _or_dict)")
        elif given is not None:
            out.append(f"{f.name}: a default the field does not have")
    stores = [
        (ast.unparse(s.targets[0]), ast.unparse(s.value))
        for s in init.body
        if isinstance(s, ast.Assign)
    ]
    want = [
        (
            f"self.{f.name}",
            f"_or_dict({f.name})" if f.default_factory is not dataclasses.MISSING else f.name,
        )
        for f in fields
    ]
    if stores != want or len(stores) != len(init.body):
        out.append(f"__init__ stores {stores}, not each field once in order")
    return out


CASES = [(module, name, node) for module in MODULES for name, node in _written(module).items()]


def test_every_value_class_is_read() -> None:
    names = {name for _, name, _ in CASES}
    assert len(CASES) == 15 and {"ConsumerGroup", "ConsumerGroupMember", "ConsumerMember"} <= names


@pytest.mark.parametrize(("module", "name", "node"), CASES, ids=[c[1] for c in CASES])
def test_the_written_init_and_reduce_repeat_the_fields(module, name, node) -> None:
    cls = getattr(module, name)
    assert _mismatches(node, cls, vars(module)) == []
    # value_reduce: the constructor and the fields in order, whatever build is installed too
    installed = getattr(INSTALLED[module.__name__], name)  # the build's class, or the sources'
    for c, model in ((cls, MODULES[0]), (installed, consumer_group_model)):
        assert [(f.name, repr(f.default)) for f in dataclasses.fields(c)] == [
            (f.name, repr(f.default)) for f in dataclasses.fields(cls)
        ]
        required = [
            f
            for f in dataclasses.fields(c)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
        value = c(*[_required_sample(f.name, model) for f in required])
        rebuild, args = value.__reduce__()
        assert rebuild is c
        assert args == tuple(getattr(value, f.name) for f in dataclasses.fields(c))
        assert rebuild(*args) == value == copy.deepcopy(value)


def _required_sample(name: str, model: ModuleType) -> object:
    """A value for a field without a default, of its declared type (both legs check it)."""
    frozensets = ("target", "revoke", "assign", "assigned", "pending_revocation")
    if name in frozensets:
        return frozenset()
    if name in ("member_epoch", "group_epoch", "assignment_epoch", "deadline_ms"):
        return 1
    if name == "state":
        return model.MemberState.STABLE
    if name == "subscribed_topics":
        return ("t",)
    return f"{name}-1"


@pytest.mark.parametrize(
    "edit",
    [
        "a default changed",
        "a field added to the fields only",
        "two parameters swapped",
        "a store left out",
        "an annotation changed",
        "another __reduce__",
    ],
)
def test_a_difference_on_either_side_is_found(edit: str) -> None:
    """The comparison is not vacuous: each kind of drift of ConsumerGroupMember's written code, or
    of its fields, is reported."""
    module = MODULES[0]
    node = copy.deepcopy(_written(module)["ConsumerGroupMember"])
    cls = module.ConsumerGroupMember
    init, reduce = _method(node, "__init__"), _method(node, "__reduce__")
    assert init is not None and reduce is not None
    if edit == "a default changed":
        init.args.defaults[0] = ast.Constant(1)
    elif edit == "a field added to the fields only":
        cls = dataclasses.make_dataclass(
            "M", [(f.name, f.type, f) for f in dataclasses.fields(cls)] + [("extra", "int", 0)]
        )
    elif edit == "two parameters swapped":
        p = init.args.args
        p[2], p[3] = p[3], p[2]
    elif edit == "a store left out":
        init.body.pop()
    elif edit == "an annotation changed":
        init.args.args[2].annotation = ast.Name("float")
    else:
        reduce.body[-1] = ast.parse("return (type(self), ())").body[0]
    assert _mismatches(node, cls, vars(module)) != []
