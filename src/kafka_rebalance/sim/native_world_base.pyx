# cython: language_level=3
"""The native classic world's interface (docs/sim-native.md, M2): what its members and its
coordinator read and call, as one cdef base class (its `.pxd`) that `native_world.NativeWorld`
implements. The reference is `world_core.WorldCore` (the same names, arguments and meaning); this
class holds the shared fields and refuses every call: only a subclass is a world."""

from libc.stdint cimport int64_t


cdef class WorldBase(Handler):
    """A world's fields and calls; every method is the subclass's (WorldCore's twin)."""

    cdef int64_t now_c(self) except? -1:
        raise NotImplementedError("WorldBase.now_c")

    cpdef emit(self, str kind, object member="", object generation=None, object partitions=None,
               object detail=None):
        raise NotImplementedError("WorldBase.emit")

    cpdef object draw(self, tuple samples):
        raise NotImplementedError("WorldBase.draw")

    cpdef send(self, object member, str kind, object req):
        raise NotImplementedError("WorldBase.send")

    cpdef to_coordinator(self, str kind, object req, object name):
        raise NotImplementedError("WorldBase.to_coordinator")

    cpdef reply(self, str client, str kind, object resp):
        raise NotImplementedError("WorldBase.reply")

    cpdef reply_many(self, list replies):
        raise NotImplementedError("WorldBase.reply_many")

    cpdef commit(self, object m, object offsets, str why, bint answer=False):
        raise NotImplementedError("WorldBase.commit")

    cpdef on_generation(self, int64_t generation):
        raise NotImplementedError("WorldBase.on_generation")

    cpdef dict leader_assign(self, object m, object r):
        raise NotImplementedError("WorldBase.leader_assign")

    cpdef send_leave(self, object member, str kind, object req):
        raise NotImplementedError("WorldBase.send_leave")

    cpdef object coordinator_retry_time(self, int64_t now, int64_t backoff):
        raise NotImplementedError("WorldBase.coordinator_retry_time")

    cpdef bint group_needs_heartbeats(self) except -1:
        raise NotImplementedError("WorldBase.group_needs_heartbeats")

    cpdef dict partition_counts(self):
        raise NotImplementedError("WorldBase.partition_counts")

    cpdef set_available_many(self, object ps, int64_t now, object name):
        raise NotImplementedError("WorldBase.set_available_many")

    cpdef set_unavailable_many(self, object ps, int64_t now):
        raise NotImplementedError("WorldBase.set_unavailable_many")

    cpdef add_paused(self, object m, int64_t ms):
        raise NotImplementedError("WorldBase.add_paused")

    cpdef revoke(self, object m, object ps, str why):
        raise NotImplementedError("WorldBase.revoke")

    cpdef lose(self, object m, object ps, str why):
        raise NotImplementedError("WorldBase.lose")

    cpdef assigned(self, object m, object added, object owned):
        raise NotImplementedError("WorldBase.assigned")

    cpdef add_processed(self, int64_t done, int64_t dup):
        raise NotImplementedError("WorldBase.add_processed")
