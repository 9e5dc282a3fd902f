"""How the KIP-848 values are built and rebuilt: `replace` without per-call introspection,
`slot_init` (a faster `__init__` for an interpreted frozen slots dataclass, refusing the argument
types a mypyc build's native class refuses) and `value_reduce` (their pickling, the same whether a
class is interpreted or a mypyc build's native class).

Split out of consumer_group_model (which re-exports these names) to keep that module to the values.
"""

from __future__ import annotations

from dataclasses import MISSING, fields
from operator import attrgetter
from types import MemberDescriptorType
from typing import Any, TypeVar

from . import COMPILED_MODULES
from .type_names import type_name

_T = TypeVar("_T")
_LAYOUT: dict[type, tuple[Any, dict[str, int]]] = {}


def replace(obj: _T, **changes: Any) -> _T:
    """dataclasses.replace for this package's frozen dataclasses (all fields in __init__), without
    its per-call field introspection: a heartbeat replaces a member or the group several times."""
    cls = type(obj)
    layout = _LAYOUT.get(cls)
    if layout is None:
        names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
        get = attrgetter(*names) if len(names) > 1 else (lambda o, n=names[0]: (getattr(o, n),))
        layout = _LAYOUT[cls] = (get, {n: i for i, n in enumerate(names)})
    values = layout[0](obj)
    if changes:
        values = list(values)
        at = layout[1]
        for k, v in changes.items():
            values[at[k]] = v
    return cls(*values)


_C = TypeVar("_C", bound=type)


class _Factory:
    """A default_factory field's parameter left out (shown as dataclasses shows it)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


_NOT_GIVEN: Any = _Factory()


# The argument checks of a mypyc build's native `__init__` (its wrapper's, from each parameter's
# annotation): a builtin (str, int, bool, tuple[X, ...], frozenset[X]) as CPython's Py*_Check (a
# subclass passes, a bool is an int); a class of the group's compiled set (an enum, a value) as
# PyObject_TypeCheck; `X | None` also takes None. Both look at the value's real type, so the sources
# test `issubclass(type(x), T)`: `isinstance` also believes an object's `__class__`, which may lie. A name from outside the compiled set (Errors,
# TopicPartition, Mapping) is Any to mypyc (--follow-imports=skip): not checked, as Any.
_BUILTIN_CHECKS: dict[str, type] = {
    "str": str,
    "int": int,
    "bool": bool,
    "tuple": tuple,
    "frozenset": frozenset,
}
_COMPILED_PREFIX = __name__.rpartition(".")[0] + "."


def _check_of(annotation: object, namespace: dict[str, Any], where: str) -> tuple | None:
    """(the class, None allowed, mypyc's expected-type words) for a parameter's annotation (a
    string: these modules use `from __future__ import annotations`), or None if mypyc checks
    nothing (Any). Another shape is refused, so no annotation goes unchecked by mistake."""
    parts = str(annotation).split(" | ")
    optional = parts[-1] == "None" and len(parts) == 2
    if optional:
        parts = parts[:1]
    if len(parts) != 1:
        raise TypeError(f"{where}: slot_init has no check for {annotation!r}")
    base, _, args = parts[0].partition("[")
    if base in _BUILTIN_CHECKS:
        if base == "tuple" and args and not args.endswith(", ...]"):  # mypyc checks each item
            raise TypeError(f"{where}: slot_init has no check for {annotation!r}")
        cls, words = _BUILTIN_CHECKS[base], base
    else:
        if base not in namespace:
            raise TypeError(f"{where}: slot_init has no check for {annotation!r}")
        found = namespace[base]
        module = getattr(found, "__module__", "")
        compiled = isinstance(found, type) and module.startswith(_COMPILED_PREFIX)
        if not compiled or module[len(_COMPILED_PREFIX) :] not in COMPILED_MODULES:
            return None  # Any to mypyc
        if args:  # a generic class of the compiled set: not one of these values' fields
            raise TypeError(f"{where}: slot_init has no check for {annotation!r}")
        cls, words = found, f"{module}.{found.__qualname__}"
    return cls, optional, f"{words} or None" if optional else words


def _refuse(checks: tuple, values: tuple) -> None:
    """The TypeError a native class raises, for the first argument of a wrong type (the generated
    `__init__` calls this only when one is)."""
    for (cls, optional, words), value in zip(checks, values):
        if not (issubclass(type(value), cls) or (optional and value is None)):
            raise TypeError(f"{words} object expected; got {type_name(value)}")


def slot_init(cls: _C) -> _C:
    """Give a frozen slots dataclass an `__init__` that stores each field through its slot's own
    setter (bound once) instead of `object.__setattr__`: the same parameters, defaults and
    default factories, the same values, about half the cost (a heartbeat builds several of these
    values). It refuses what a mypyc build's `__init__` refuses (the types of the `__init__` the
    class body wrote, else of its fields), with the same TypeError: one isinstance per checked
    argument. Everything else stays the dataclass's (eq, hash, repr, frozen, replace, pickling)."""
    if hasattr(cls, "__post_init__"):  # the generated __init__ would not call it
        raise TypeError(f"{cls.__name__}: slot_init does not run __post_init__")
    written = vars(cls).get("__init__")
    hints = getattr(written, "__annotations__", {})
    namespace = getattr(written, "__globals__", {})
    params, body, ns = [], [], {"_NOT_GIVEN": _NOT_GIVEN, "_refuse": _refuse}
    tests, checked, checks = [], [], []
    for i, f in enumerate(fields(cls)):
        slot = cls.__dict__[f.name]
        if not f.init or not isinstance(slot, MemberDescriptorType):
            raise TypeError(f"{cls.__name__}.{f.name}: not a slot set by __init__")
        ns[f"_set{i}"] = slot.__set__
        check = _check_of(hints.get(f.name, f.type), namespace, f"{cls.__name__}.{f.name}")
        if check is not None:
            ns[f"_type{i}"] = check[0]
            test = f"issubclass(type({f.name}), _type{i})"
            tests.append(f"({f.name} is None or {test})" if check[1] else test)
            checked.append(f.name)
            checks.append(check)
        if f.default is not MISSING:
            ns[f"_default{i}"] = f.default
            params.append(f"{f.name}=_default{i}")
        elif f.default_factory is not MISSING:
            ns[f"_factory{i}"] = f.default_factory
            params.append(f"{f.name}=_NOT_GIVEN")
            body.append(f"    if {f.name} is _NOT_GIVEN:\n        {f.name} = _factory{i}()")
        else:
            params.append(f.name)
        body.append(f"    _set{i}(self, {f.name})")
    if tests:  # before any field is stored, as the native wrapper checks before its body runs
        ns["_checks"] = tuple(checks)
        values = ", ".join(checked) + ("," if len(checked) == 1 else "")
        body.insert(0, f"    if not ({' and '.join(tests)}):\n        _refuse(_checks, ({values}))")
    exec(f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body) + "\n", ns)  # noqa: S102
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    # the dataclass's own (each field's type), whatever `__init__` the class body wrote
    init.__annotations__ = {**{f.name: f.type for f in fields(cls)}, "return": None}
    setattr(cls, "__init__", init)  # noqa: B010
    return cls


def value_reduce(value: Any) -> tuple:
    """`__reduce__` of this package's frozen dataclasses: rebuilt through the constructor from the
    fields in order. Pickling, `copy` and `deepcopy` then give an equal value whether the class is
    interpreted or a native class of a mypyc build (whose own `__setstate__` would set a frozen
    field and raise FrozenInstanceError)."""
    cls = type(value)
    return cls, tuple([getattr(value, f.name) for f in fields(cls)])


def fast_inits(*classes: type) -> None:
    """`slot_init` for each of `classes` that is interpreted (the sources); the native classes of a
    mypyc build store their fields directly already (and their type is immutable)."""
    for cls in classes:
        if all(isinstance(vars(cls).get(f.name), MemberDescriptorType) for f in fields(cls)):
            slot_init(cls)
