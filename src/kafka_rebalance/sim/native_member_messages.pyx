# cython: language_level=3
"""The native classic member's requests and JoinGroup metadata, built without a Python call each
(docs/sim-native.md, natcoop3): the twins of `member_rebalance`'s builders (`heartbeat_request`,
`join_request`, `sync_request`, `subscription`), which stay the reference.

- A request is a NamedTuple: what its generated `__new__` returns is `tuple.__new__(cls, fields)`,
  here `native_checked.new_tuple_of` (the class's allocator, the fields stored in order).
- A Subscription is a frozen slots dataclass without `__post_init__`: `object.__new__` and each
  slot set in field order, here `native_checked.new_object` and `set_fresh_slot` (as the slot
  descriptor's `__set__` writes an empty slot; structmember.c, T_OBJECT_EX). At import the class must still be that (its fields, in order,
  writable object slots; no `__post_init__`, object's `__new__`): else the module refuses to load
  and the reference runs.
- cooperative-sticky's user data: the last `encode_cooperative_user_data` kept, by generation.

- The leader's side: a TopicPartition's `topic` and `partition` read, and a MemberSubscription
  built (`world_core.member_subscription`), through the getset descriptors attribute lookup finds
  on those classes (the compiled `model_fields` bases'), called directly: what `getattr` and the
  descriptor's `__set__` call after finding them, for an object of exactly that class. Without
  those descriptors (a pure install) the reference's Python paths run.

tests/test_sim_native_join_metadata.py compares each builder with its class and every
JoinGroupRequest of a run with the reference's.
"""

from cpython.object cimport PyObject
from libc.stdint cimport int64_t

from .native_checked cimport new_object, new_tuple_of, set_fresh_slot, slot_offset

from dataclasses import fields as _fields

from ..assign.userdata import encode_cooperative_user_data
from ..group.classic_messages import HeartbeatRequest, JoinGroupRequest, SyncGroupRequest
from ..model import MemberSubscription, TopicPartition
from .subscription import Subscription
from .world_core import member_subscription

cdef extern from "Python.h":
    ctypedef object (*getter)(object, void*)
    ctypedef int (*setter)(object, object, void*) except -1
    ctypedef struct PyGetSetDef:
        const char* name
        getter get
        setter set
        const char* doc
        void* closure
    ctypedef struct PyGetSetDescrObject:
        PyGetSetDef* d_getset

cdef object _JOIN_PROTOCOL_TYPE = JoinGroupRequest._field_defaults["protocol_type"]
cdef object _JOIN_REASON = JoinGroupRequest._field_defaults["reason"]
SUBSCRIPTION_FIELDS = ("topics", "owned", "generation", "rack", "user_data", "owned_idx")


if (
    tuple([f.name for f in _fields(Subscription)]) != SUBSCRIPTION_FIELDS
    or hasattr(Subscription, "__post_init__")
    or Subscription.__new__ is not object.__new__
):
    raise ImportError("Subscription is not the slots dataclass native_member_messages builds")
cdef Py_ssize_t _S_TOPICS = slot_offset(Subscription, "topics")
cdef Py_ssize_t _S_OWNED = slot_offset(Subscription, "owned")
cdef Py_ssize_t _S_GENERATION = slot_offset(Subscription, "generation")
cdef Py_ssize_t _S_RACK = slot_offset(Subscription, "rack")
cdef Py_ssize_t _S_USER_DATA = slot_offset(Subscription, "user_data")
cdef Py_ssize_t _S_OWNED_IDX = slot_offset(Subscription, "owned_idx")


cpdef object subscription_c(object topics, object owned, object generation, object rack,
                            object user_data, object owned_idx):
    """`member_rebalance.subscription(...)`: the same Subscription, its slots set in field order."""
    s = new_object(Subscription)
    set_fresh_slot(s, _S_TOPICS, topics)
    set_fresh_slot(s, _S_OWNED, owned)
    set_fresh_slot(s, _S_GENERATION, generation)
    set_fresh_slot(s, _S_RACK, rack)
    set_fresh_slot(s, _S_USER_DATA, user_data)
    set_fresh_slot(s, _S_OWNED_IDX, owned_idx)
    return s


cpdef object heartbeat_request_c(object client, object member_id, object generation,
                                 object instance_id):
    """`member_rebalance.heartbeat_request(...)`."""
    return new_tuple_of(HeartbeatRequest, (client, member_id, generation, instance_id))


cpdef object join_request_c(object client, object member_id, object protocols,
                            object session_timeout_ms, object rebalance_timeout_ms,
                            object instance_id):
    """`member_rebalance.join_request(...)`: protocol_type and reason the NamedTuple's defaults."""
    return new_tuple_of(
        JoinGroupRequest,
        (
            client, member_id, protocols, session_timeout_ms, rebalance_timeout_ms, instance_id,
            _JOIN_PROTOCOL_TYPE, _JOIN_REASON,
        ),
    )


cpdef object sync_request_c(object client, object member_id, object generation,
                            object instance_id, object protocol_type, object protocol_name,
                            object assignments):
    """`member_rebalance.sync_request(...)`."""
    return new_tuple_of(
        SyncGroupRequest,
        (client, member_id, generation, instance_id, protocol_type, protocol_name, assignments),
    )


cdef int64_t _coop_generation = 0
cdef object _coop_user_data = None


cpdef object cooperative_user_data(int64_t generation):
    """`encode_cooperative_user_data(generation)`, the last encoding kept: the bytes are a function
    of the int alone (struct.pack(">i", generation)), so the kept bytes equal a new encoding (every
    member of a rebalance encodes the same generation)."""
    global _coop_generation, _coop_user_data
    if _coop_user_data is None or generation != _coop_generation:
        _coop_user_data = encode_cooperative_user_data(generation)
        _coop_generation = generation
    return _coop_user_data


# ------------------------------------------------------------------------------ the leader's side

cdef type _GETSET = type(type.__dict__["__name__"])  # getset_descriptor
MEMBER_SUBSCRIPTION_FIELDS = ("member_id", "topics", "owned", "generation", "rack", "instance_id")


cdef PyGetSetDef* _getset(type cls, str name):
    """The getset descriptor attribute lookup finds for `name` on `cls` (the first class of its
    MRO defining it), if it is one with a getter and a setter; else NULL."""
    cdef PyGetSetDef* g
    for k in cls.__mro__:
        d = k.__dict__.get(name)
        if d is not None:
            if type(d) is not _GETSET:
                return NULL
            g = (<PyGetSetDescrObject*><PyObject*>d).d_getset
            return g if g.get != NULL and g.set != NULL else NULL
    return NULL


cdef PyGetSetDef* _TP_TOPIC = _getset(TopicPartition, "topic")
cdef PyGetSetDef* _TP_PARTITION = _getset(TopicPartition, "partition")
cdef PyGetSetDef* _MS[6]
for _i, _name in enumerate(MEMBER_SUBSCRIPTION_FIELDS):
    _MS[_i] = _getset(MemberSubscription, _name)
# True when every field above is a getset descriptor (the compiled model_fields): the fast paths
cdef bint _TP_FAST = _TP_TOPIC != NULL and _TP_PARTITION != NULL
cdef bint _MS_FAST = all([_MS[_i] != NULL for _i in range(6)])
cdef object _ms_new = MemberSubscription.__new__
TOPIC_PARTITION_FAST = _TP_FAST
MEMBER_SUBSCRIPTION_FAST = _MS_FAST


cpdef object tp_topic(object tp):
    """`tp.topic`."""
    if _TP_FAST and type(tp) is TopicPartition:
        return _TP_TOPIC.get(tp, _TP_TOPIC.closure)
    return tp.topic


cpdef object tp_partition(object tp):
    """`tp.partition`."""
    if _TP_FAST and type(tp) is TopicPartition:
        return _TP_PARTITION.get(tp, _TP_PARTITION.closure)
    return tp.partition


cpdef object member_subscription_c(object member_id, object topics, object owned,
                                   object generation, object rack, object instance_id):
    """`world_core.member_subscription(...)`: its setters called directly."""
    if not _MS_FAST:
        return member_subscription(member_id, topics, owned, generation, rack, instance_id)
    m = _ms_new(MemberSubscription)
    _MS[0].set(m, member_id, _MS[0].closure)
    _MS[1].set(m, topics if type(topics) is tuple else tuple(topics), _MS[1].closure)
    _MS[2].set(m, owned if type(owned) is tuple else tuple(owned), _MS[2].closure)
    _MS[3].set(m, generation, _MS[3].closure)
    _MS[4].set(m, rack, _MS[4].closure)
    _MS[5].set(m, instance_id, _MS[5].closure)
    return m
