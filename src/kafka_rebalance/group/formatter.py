"""Print `__consumer_offsets` records exactly as Kafka's console formatters do.

At the mirrored Kafka commit, `OffsetsMessageFormatter` and
`GroupMetadataMessageFormatter` (tools/.../consumer/, both ApiMessageFormatter)
print one compact Jackson JSON object per record, with no trailing newline:

    {"key":{"version":1,"data":{"group":"g","topic":"t","partition":0}},
     "value":{"version":3,"data":{"offset":5,"leaderEpoch":-1,"metadata":"","commitTimestamp":1000}}}

- a null key or value prints `null`; an unknown key or value version prints
  `"data":"unknown"`;
- the offsets formatter prints nothing for GroupMetadata keys, the group
  formatter nothing for OffsetCommit keys (their key JSON is a NullNode);
- fields appear in schema order, only those present in the version;
  `bytes` fields are base64 (Jackson's BinaryNode); strings are escaped as
  Jackson escapes them (short escapes for \\b \\t \\n \\f \\r, `\\u00XX` with
  upper-case hex for other control characters, non-ASCII written as is).

Kafka <= 3.x printed offsets as text (`[group,topic,partition]::OffsetAndMetadata(
offset=.., leaderEpoch=Optional[..], metadata=.., commitTimestamp=.., expireTimestamp=None)`,
tombstones as `::NULL`, one per line); `format_offsets_legacy` reproduces that.

API: format_offsets(key, value) -> str, format_group_metadata(key, value) -> str,
format_offsets_legacy(key, value) -> str. Inputs are raw bytes (or None);
errors on malformed data propagate as RecordDecodeError, as Kafka's formatter
would throw.
"""

from __future__ import annotations

import base64
import struct

from .records import (
    GROUP_METADATA_KEY_VERSION,
    GROUP_METADATA_VALUE_VERSIONS,
    OFFSET_COMMIT_KEY_VERSIONS,
    OFFSET_COMMIT_VALUE_VERSIONS,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordDecodeError,
    decode_key,
    decode_value,
)

_UNKNOWN = '"unknown"'
_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
}


def json_string(s: str) -> str:
    """A JSON string literal as Jackson writes it."""
    out = ['"']
    for ch in s:
        esc = _SHORT_ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _opt_string(s: str | None) -> str:
    return "null" if s is None else json_string(s)


def _b64(b: bytes) -> str:
    return '"' + base64.b64encode(b).decode("ascii") + '"'


def _obj(pairs: list[tuple[str, str]]) -> str:
    return "{" + ",".join(f"{json_string(k)}:{v}" for k, v in pairs) + "}"


def offset_commit_value_json(v: OffsetCommitValue) -> str:
    pairs = [("offset", str(v.offset))]
    if v.version >= 3:
        pairs.append(("leaderEpoch", str(v.leader_epoch)))
    pairs += [("metadata", json_string(v.metadata)), ("commitTimestamp", str(v.commit_timestamp))]
    if v.version == 1:
        pairs.append(("expireTimestamp", str(v.expire_timestamp)))
    return _obj(pairs)


def group_metadata_value_json(v: GroupMetadataValue) -> str:
    pairs = [
        ("protocolType", json_string(v.protocol_type)),
        ("generation", str(v.generation)),
        ("protocol", _opt_string(v.protocol)),
        ("leader", _opt_string(v.leader)),
    ]
    if v.version >= 2:
        pairs.append(("currentStateTimestamp", str(v.current_state_timestamp)))
    members = []
    for m in v.members:
        mp = [("memberId", json_string(m.member_id))]
        if v.version >= 3:
            mp.append(("groupInstanceId", _opt_string(m.group_instance_id)))
        mp += [("clientId", json_string(m.client_id)), ("clientHost", json_string(m.client_host))]
        if v.version >= 1:
            mp.append(("rebalanceTimeout", str(m.rebalance_timeout)))
        mp += [
            ("sessionTimeout", str(m.session_timeout)),
            ("subscription", _b64(m.subscription)),
            ("assignment", _b64(m.assignment)),
        ]
        members.append(_obj(mp))
    pairs.append(("members", "[" + ",".join(members) + "]"))
    return _obj(pairs)


def _version(buf: bytes, part: str) -> int:
    if len(buf) < 2:
        raise RecordDecodeError("could not read version (truncated)", part=part)
    return struct.unpack_from(">h", buf)[0]


def _envelope(
    key_json: str | None, key_version: int | None, value_json: str | None, value_version: int | None
) -> str:
    k = "null" if key_json is None else f'{{"version":{key_version},"data":{key_json}}}'
    v = "null" if value_json is None else f'{{"version":{value_version},"data":{value_json}}}'
    return f'{{"key":{k},"value":{v}}}'


def format_offsets(key: bytes | None, value: bytes | None) -> str:
    """OffsetsMessageFormatter.writeTo output for one record ("" when it prints nothing)."""
    key_json = kv = None
    if key is not None:
        kv = _version(key, "key")
        if kv == GROUP_METADATA_KEY_VERSION:
            decode_key(key)  # Kafka parses the key before discarding it
            return ""
        if kv in OFFSET_COMMIT_KEY_VERSIONS:
            k = decode_key(key)
            assert isinstance(k, OffsetCommitKey)
            key_json = _obj(
                [
                    ("group", json_string(k.group)),
                    ("topic", json_string(k.topic)),
                    ("partition", str(k.partition)),
                ]
            )
        else:
            key_json = _UNKNOWN
    value_json = vv = None
    if value is not None:
        vv = _version(value, "value")
        if vv in OFFSET_COMMIT_VALUE_VERSIONS:
            decoded = decode_value(0, value)
            assert isinstance(decoded, OffsetCommitValue)
            value_json = offset_commit_value_json(decoded)
        else:
            value_json = _UNKNOWN
    return _envelope(key_json, kv, value_json, vv)


def format_group_metadata(key: bytes | None, value: bytes | None) -> str:
    """GroupMetadataMessageFormatter.writeTo output for one record ("" when it prints nothing)."""
    key_json = kv = None
    if key is not None:
        kv = _version(key, "key")
        if kv in OFFSET_COMMIT_KEY_VERSIONS:
            decode_key(key)  # Kafka parses the key before discarding it
            return ""
        if kv == GROUP_METADATA_KEY_VERSION:
            k = decode_key(key)
            key_json = _obj([("group", json_string(k.group))])
        else:
            key_json = _UNKNOWN
    value_json = vv = None
    if value is not None:
        vv = _version(value, "value")
        if vv in GROUP_METADATA_VALUE_VERSIONS:
            decoded = decode_value(GROUP_METADATA_KEY_VERSION, value)
            assert isinstance(decoded, GroupMetadataValue)
            value_json = group_metadata_value_json(decoded)
        else:
            value_json = _UNKNOWN
    return _envelope(key_json, kv, value_json, vv)


def format_offsets_legacy(key: bytes | None, value: bytes | None) -> str:
    """Kafka <= 3.x `kafka.coordinator.group.GroupMetadataManager.OffsetsMessageFormatter` line
    (with its trailing newline); "" for null keys and non-offset records."""
    if key is None:
        return ""
    k = decode_key(key)
    if not isinstance(k, OffsetCommitKey):
        return ""
    head = f"[{k.group},{k.topic},{k.partition}]::"
    if value is None:
        return head + "NULL\n"
    v = decode_value(k.version, value)
    assert isinstance(v, OffsetCommitValue)
    epoch = "Optional.empty" if v.leader_epoch == -1 else f"Optional[{v.leader_epoch}]"
    expire = "None" if v.expire_timestamp == -1 else f"Some({v.expire_timestamp})"
    return (
        head + f"OffsetAndMetadata(offset={v.offset}, leaderEpoch={epoch}, metadata={v.metadata}, "
        f"commitTimestamp={v.commit_timestamp}, expireTimestamp={expire})\n"
    )
