# The native classic world as its members and its coordinator call it (native_world_base.pyx): the
# fields they read and the methods they call, implemented by native_world.NativeWorld. Members and
# the coordinator type their world as WorldBase and cimport this file only, so no module cimports
# the world that cimports it (Cython has no circular cimports); the calls are vtable calls.
from libc.stdint cimport int64_t

from .native_engine cimport EventLoop, Handler
from .native_members cimport PartitionColumns, ProcessedTable


cdef class WorldBase(Handler):
    cdef public EventLoop loop  # native_engine's: events queued with at_c (no args tuple)
    cdef public object sc, parts, coord, rng, rand
    cdef public dict members
    cdef public tuple topic_names
    cdef public bint wants_events
    cdef public int64_t events_emitted, generation
    cdef public str pending_cause
    # the partition table: its columns (base, rate, committed) and processed intervals in C (the
    # members' poll kernels and the coordinator's commits read and write them), the partitions'
    # TopicPartitions for the JoinGroup metadata
    cdef public PartitionColumns cols
    cdef public ProcessedTable processed_table
    cdef public list p_tps

    cdef int64_t now_c(self) except? -1
    cpdef emit(self, str kind, object member=*, object generation=*, object partitions=*,
               object detail=*)
    cpdef object draw(self, tuple samples)
    cpdef send(self, object member, str kind, object req)
    cpdef to_coordinator(self, str kind, object req, object name)
    cpdef reply(self, str client, str kind, object resp)
    cpdef reply_many(self, list replies)
    cpdef commit(self, object m, object offsets, str why, bint answer=*)
    cpdef on_generation(self, int64_t generation)
    cpdef dict leader_assign(self, object m, object r)
    cpdef send_leave(self, object member, str kind, object req)
    cpdef object coordinator_retry_time(self, int64_t now, int64_t backoff)
    cpdef bint group_needs_heartbeats(self) except -1
    cpdef dict partition_counts(self)
    cpdef set_available_many(self, object ps, int64_t now, object name)
    cpdef set_unavailable_many(self, object ps, int64_t now)
    cpdef add_paused(self, object m, int64_t ms)
    cpdef revoke(self, object m, object ps, str why)
    cpdef lose(self, object m, object ps, str why)
    cpdef assigned(self, object m, object added, object owned)
    cpdef add_processed(self, int64_t done, int64_t dup)
