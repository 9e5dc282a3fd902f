# The native member's requests and JoinGroup metadata (native_member_messages.pyx), as C calls for
# native_world_client.pyx.
from libc.stdint cimport int64_t

cpdef object subscription_c(object topics, object owned, object generation, object rack,
                            object user_data, object owned_idx)
cpdef object heartbeat_request_c(object client, object member_id, object generation,
                                 object instance_id)
cpdef object join_request_c(object client, object member_id, object protocols,
                            object session_timeout_ms, object rebalance_timeout_ms,
                            object instance_id)
cpdef object sync_request_c(object client, object member_id, object generation,
                            object instance_id, object protocol_type, object protocol_name,
                            object assignments)
cpdef object cooperative_user_data(int64_t generation)
cpdef object tp_topic(object tp)
cpdef object tp_partition(object tp)
cpdef object member_subscription_c(object member_id, object topics, object owned,
                                   object generation, object rack, object instance_id)
