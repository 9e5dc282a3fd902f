"""TopicPartition and MemberSubscription keep their public behaviour on their compiled storage.

Both are frozen dataclasses whose fields live in `model_fields` (compiled by mypyc when the
install can, so the assignors' kernels read them directly). Whatever the build, they must behave
as the slotted frozen dataclasses they were: same equality, hashing, ordering, repr, signature,
defaults, frozenness, no instance dict, values kept as given (no conversion), the same pickle
bytes at protocols 2-5 (the reference bytes below were written by the slotted dataclasses), and
a pickle round trip at every protocol. Run against the installed build, and against the pure
storage loaded from source.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import inspect
import pickle
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from compiled_legs import no_compiled_leg
from kafka_rebalance import model, model_fields, native
from kafka_rebalance.model import MemberSubscription, TopicPartition

# pickle.dumps(..., 4) of TopicPartition("t", 1) and of MemberSubscription("c1", ("t", "u"),
# (TopicPartition("t", 1),), 3) as slotted frozen dataclasses (before model_fields existed)
TP_PICKLE_4 = (
    b"\x80\x04\x95:\x00\x00\x00\x00\x00\x00\x00\x8c\x15kafka_rebalance.model\x94\x8c\x0eTopicPartition"
    b"\x94\x93\x94)\x81\x94]\x94(\x8c\x01t\x94K\x01eb."
)
MEMBER_PICKLE_4 = (
    b"\x80\x04\x95n\x00\x00\x00\x00\x00\x00\x00\x8c\x15kafka_rebalance.model\x94\x8c\x12"
    b"MemberSubscription\x94\x93\x94)\x81\x94]\x94(\x8c\x02c1\x94\x8c\x01t\x94\x8c\x01u\x94\x86\x94"
    b"h\x00\x8c\x0eTopicPartition\x94\x93\x94)\x81\x94]\x94(h\x06K\x01eb\x85\x94K\x03NNeb."
)


def _pure_model() -> ModuleType:
    """model.py over the pure-Python storage (model_fields' source), under another name."""
    fields_spec = importlib.util.spec_from_file_location(
        "kafka_rebalance._fields_pure", Path(model_fields.__file__).with_name("model_fields.py")
    )
    assert fields_spec is not None and fields_spec.loader is not None
    pure_fields = importlib.util.module_from_spec(fields_spec)
    fields_spec.loader.exec_module(pure_fields)
    spec = importlib.util.spec_from_file_location(
        "kafka_rebalance._model_pure", Path(model.__file__)
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved = native.load
    native.load = lambda _m: pure_fields  # type: ignore[assignment]
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        native.load = saved
    assert module.TopicPartition.__mro__[1] is pure_fields.PartitionFields
    return module


PURE = _pure_model()
MODELS = [pytest.param(model, id="installed"), pytest.param(PURE, id="pure")]


def test_installed_storage_is_compiled_when_built() -> None:
    if not native.is_fresh_build(model_fields.__file__):
        no_compiled_leg("model_fields is not compiled: only the pure storage was checked")
    assert TopicPartition.__mro__[1] is model_fields.PartitionFields
    assert MemberSubscription.__mro__[1] is model_fields.MemberFields


@pytest.mark.parametrize("m", MODELS)
def test_values(m: ModuleType) -> None:
    tp, mem = m.TopicPartition, m.MemberSubscription
    a = tp("t", 1)
    assert repr(a) == "TopicPartition(topic='t', partition=1)" and str(a) == "t-1"
    assert a == tp("t", 1) and a != tp("t", 2) and a != ("t", 1)
    assert hash(a) == hash(("t", 1))
    assert sorted([tp("b", 0), tp("a", 2), tp("a", 1)]) == [tp("a", 1), tp("a", 2), tp("b", 0)]
    assert not hasattr(a, "__dict__")
    assert tp.__match_args__ == ("topic", "partition")
    assert str(inspect.signature(tp)) == "(topic: 'str', partition: 'int') -> None"
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.topic = "u"
    with pytest.raises(TypeError):
        tp("t")
    # values are kept as given, never converted or refused
    n = tp("t", np.int64(3))
    assert type(n.partition) is np.int64 and n == tp("t", 3)
    assert tp("t", True).partition is True
    assert tp(7, "x").topic == 7
    assert dataclasses.replace(a, partition=5) == tp("t", 5)
    assert dataclasses.astuple(a) == ("t", 1)
    member = mem("c1", ["t", "u"], [a], 3)
    assert member.topics == ("t", "u") and member.owned == (a,)
    assert (member.generation, member.rack, member.instance_id) == (3, None, None)
    assert mem("x", ()).owned == () and mem("x", ()).generation == -1
    assert repr(member) == (
        "MemberSubscription(member_id='c1', topics=('t', 'u'), owned=(TopicPartition(topic='t', "
        "partition=1),), generation=3, rack=None, instance_id=None)"
    )
    assert hash(member) == hash(mem("c1", ("t", "u"), (tp("t", 1),), 3))
    assert not hasattr(member, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        member.owned = ()
    with pytest.raises(TypeError):
        mem("only-id")
    assert [f.name for f in dataclasses.fields(mem)] == list(mem.__match_args__)
    # the C-level field stores are the classes' own attributes, as with slots (tpcache, sticky)
    for cls, name in ((tp, "topic"), (tp, "partition"), (mem, "owned")):
        assert hasattr(cls.__dict__[name], "__set__")


def test_pickle_bytes_are_the_slotted_dataclasses() -> None:
    a = TopicPartition("t", 1)
    member = MemberSubscription("c1", ("t", "u"), (a,), 3)
    assert pickle.dumps(a, 4) == TP_PICKLE_4
    assert pickle.dumps(member, 4) == MEMBER_PICKLE_4
    assert pickle.loads(TP_PICKLE_4) == a and pickle.loads(MEMBER_PICKLE_4) == member


@pytest.mark.parametrize("m", MODELS)
@given(
    topic=st.text(max_size=5),
    partition=st.integers(-(2**40), 2**40),
    rack=st.none() | st.text(max_size=3),
)
def test_round_trips(m: ModuleType, topic: str, partition: int, rack: str | None) -> None:
    a = m.TopicPartition(topic, partition)
    member = m.MemberSubscription("id", (topic,), (a, a), partition, rack, None)
    for obj in (a, member):
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            back = pickle.loads(pickle.dumps(obj, protocol))
            assert back == obj and type(back) is type(obj)
        assert copy.copy(obj) == obj and copy.deepcopy(obj) == obj
