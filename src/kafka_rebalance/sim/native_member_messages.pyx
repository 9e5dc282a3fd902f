# cython: language_level=3
"""The native classic member's requests and JoinGroup metadata, built without a Python call each
(docs/sim-native.md, natcoop3): the twins of `member_rebalance`'s builders (`heartbeat_request`,
`join_request`, `sync_request`, `subscription`), which stay the reference.

- A request is a NamedTuple: what its generated `__new__` returns is `tuple.__new__(cls, fields)`,
  here tuple's own tp_new over the fields.
- A Subscription is a frozen slots dataclass without `__post_init__`: `object.__new__` and each
  slot set in field order, here written as the slot descriptor's `__set__` writes it
  (structmember.c, T_OBJECT_EX). At import the class must still be that (its fields, in order,
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

from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from libc.stdint cimport int64_t

from dataclasses import fields as _fields

from ..assign.userdata import encode_cooperative_user_data
from ..group.classic_messages import HeartbeatRequest, JoinGroupRequest, SyncGroupRequest
from ..model import MemberSubscription, TopicPartition
from .subscription import Subscription
from .world_core import member_subscription

cdef extern from "structmember.h":
    ctypedef struct PyMemberDef:
        const char* name
        int type
        Py_ssize_t offset
        int flags
    enum:
        T_OBJECT_EX
        READONLY

cdef extern from "Python.h":
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member
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

cdef PyTypeObject* _TUPLE = <PyTypeObject*>tuple
cdef object _object_new = object.__new__
cdef object _JOIN_PROTOCOL_TYPE = JoinGroupRequest._field_defaults["protocol_type"]
cdef object _JOIN_REASON = JoinGroupRequest._field_defaults["reason"]
cdef type _SLOT = type(Subscription.__dict__["topics"])  # member_descriptor
SUBSCRIPTION_FIELDS = ("topics", "owned", "generation", "rack", "user_data", "owned_idx")


cdef Py_ssize_t _slot_offset(type cls, str name) except -1:
    """Where the slot `name` of `cls` sits in its instances (a writable object slot)."""
    d = cls.__dict__.get(name)
    if type(d) is not _SLOT:
        raise ImportError(f"{cls.__name__}.{name} is not a slot: native_member_messages")
    cdef PyMemberDef* m = (<PyMemberDescrObject*><PyObject*>d).d_member
    if m.type != T_OBJECT_EX or (m.flags & READONLY):
        raise ImportError(f"{cls.__name__}.{name} is not a writable object slot")
    return m.offset


if (
    tuple([f.name for f in _fields(Subscription)]) != SUBSCRIPTION_FIELDS
    or hasattr(Subscription, "__post_init__")
    or Subscription.__new__ is not object.__new__
):
    raise ImportError("Subscription is not the slots dataclass native_member_messages builds")
cdef Py_ssize_t _S_TOPICS = _slot_offset(Subscription, "topics")
cdef Py_ssize_t _S_OWNED = _slot_offset(Subscription, "owned")
cdef Py_ssize_t _S_GENERATION = _slot_offset(Subscription, "generation")
cdef Py_ssize_t _S_RACK = _slot_offset(Subscription, "rack")
cdef Py_ssize_t _S_USER_DATA = _slot_offset(Subscription, "user_data")
cdef Py_ssize_t _S_OWNED_IDX = _slot_offset(Subscription, "owned_idx")


cdef inline int _put(object obj, Py_ssize_t offset, object value) except -1:
    """The slot descriptor's __set__: the new reference in, the old one (NULL on a new object)
    released."""
    cdef PyObject** slot = <PyObject**>((<char*><PyObject*>obj) + offset)
    cdef PyObject* old = slot[0]
    Py_INCREF(value)
    slot[0] = <PyObject*>value
    Py_XDECREF(old)
    return 0


cpdef object subscription_c(object topics, object owned, object generation, object rack,
                            object user_data, object owned_idx):
    """`member_rebalance.subscription(...)`: the same Subscription, its slots set in field order."""
    s = _object_new(Subscription)
    _put(s, _S_TOPICS, topics)
    _put(s, _S_OWNED, owned)
    _put(s, _S_GENERATION, generation)
    _put(s, _S_RACK, rack)
    _put(s, _S_USER_DATA, user_data)
    _put(s, _S_OWNED_IDX, owned_idx)
    return s


cdef inline object _request(type cls, tuple values):
    """`tuple.__new__(cls, values)`: tuple's tp_new over the fields (the NamedTuple's own __new__)."""
    cdef tuple args = (values,)
    return _TUPLE.tp_new(cls, <PyObject*>args, NULL)


cpdef object heartbeat_request_c(object client, object member_id, object generation,
                                 object instance_id):
    """`member_rebalance.heartbeat_request(...)`."""
    return _request(HeartbeatRequest, (client, member_id, generation, instance_id))


cpdef object join_request_c(object client, object member_id, object protocols,
                            object session_timeout_ms, object rebalance_timeout_ms,
                            object instance_id):
    """`member_rebalance.join_request(...)`: protocol_type and reason the NamedTuple's defaults."""
    return _request(
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
    return _request(
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
