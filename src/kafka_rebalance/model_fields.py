"""The storage of `model.TopicPartition` and `model.MemberSubscription`, in classes mypyc compiles.

Why: the assignors' compiled kernels read every member's subscription and owned partitions, and
every owned partition's topic and number (10,000 per rebalance in a 2,000-member group). Read
from a plain Python object each is a generic attribute lookup, about 40 ns; from a compiled class
a kernel reads the field directly. The model classes (frozen dataclasses in model.py) subclass
these and add nothing but behaviour (equality, hashing, ordering, repr, pickling), so they stay
what they were.

The fields are typed `object` on purpose: the model never checked its values (a numpy integer or
a bool partition is kept as given), and a compiled `int` or `str` field would convert or refuse
them. Without a compiled build (pure install, stale build: `kafka_rebalance.native`) these are
plain classes with the same slots.
"""

from __future__ import annotations

try:
    from mypy_extensions import mypyc_attr
except ImportError:  # a pure install: the decorator only instructs mypyc

    def mypyc_attr(*_attrs: str, **_flags: object):  # type: ignore[misc]
        return lambda cls: cls


@mypyc_attr(allow_interpreted_subclasses=True)
class PartitionFields:
    """A topic and a partition number; subclassed by `model.TopicPartition`."""

    __slots__ = ("topic", "partition")

    topic: object
    partition: object


@mypyc_attr(allow_interpreted_subclasses=True)
class MemberFields:
    """A member's JoinGroup subscription; subclassed by `model.MemberSubscription`."""

    __slots__ = ("member_id", "topics", "owned", "generation", "rack", "instance_id")

    member_id: object
    topics: object
    owned: object
    generation: object
    rack: object
    instance_id: object
