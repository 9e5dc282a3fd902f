"""Formatter output, checked against the expectations of Kafka's own formatter tests at the mirrored commit."""

from __future__ import annotations

import dataclasses

import pytest

from kafka_rebalance.group.formatter import (
    format_group_metadata,
    format_offsets,
    format_offsets_legacy,
    json_string,
)
from kafka_rebalance.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    RecordDecodeError,
    encode_key,
    encode_value,
)

OC_KEY = OffsetCommitKey("group-id", "foo", 1, version=0)
OC_VALUE = OffsetCommitValue(100, "metadata", 1234, leader_epoch=10, expire_timestamp=-1)
GM_KEY = GroupMetadataKey("group-id")
MEMBER = MemberMetadata(
    "member-1", "client-1", "host-1", 1500, b"\x00\x01", b"\x01\x02", 1000, "group-instance-1"
)
GM_VALUE = GroupMetadataValue("consumer", 1, "range", "leader", (MEMBER,), 1234)


def ocv(version: int) -> bytes:
    return encode_value(dataclasses.replace(OC_VALUE, version=version))


def gmv(version: int) -> bytes:
    return encode_value(dataclasses.replace(GM_VALUE, version=version))


OC_KEY_V0 = encode_key(OC_KEY)
GM_KEY_V2 = encode_key(GM_KEY)
KEY_DATA = '{"group":"group-id","topic":"foo","partition":1}'


@pytest.mark.parametrize(
    "value_version,data",
    [
        (0, '{"offset":100,"metadata":"metadata","commitTimestamp":1234}'),
        (1, '{"offset":100,"metadata":"metadata","commitTimestamp":1234,"expireTimestamp":-1}'),
        (2, '{"offset":100,"metadata":"metadata","commitTimestamp":1234}'),
        (3, '{"offset":100,"leaderEpoch":10,"metadata":"metadata","commitTimestamp":1234}'),
        (4, '{"offset":100,"leaderEpoch":10,"metadata":"metadata","commitTimestamp":1234}'),
    ],
)
def test_offsets_formatter_per_value_version(value_version, data):
    expected = f'{{"key":{{"version":0,"data":{KEY_DATA}}},"value":{{"version":{value_version},"data":{data}}}}}'
    assert format_offsets(OC_KEY_V0, ocv(value_version)) == expected


def test_offsets_formatter_unknown_versions_nulls_and_group_records():
    assert (
        format_offsets(b"\x00\x0a" + OC_KEY_V0[2:], b"\x00\x0a" + ocv(4)[2:])
        == '{"key":{"version":10,"data":"unknown"},"value":{"version":10,"data":"unknown"}}'
    )
    assert format_offsets(b"\x00\x05" + OC_KEY_V0[2:], ocv(4)) == (
        '{"key":{"version":5,"data":"unknown"},"value":{"version":4,"data":{"offset":100,"leaderEpoch":10,'
        '"metadata":"metadata","commitTimestamp":1234}}}'
    )
    assert (
        format_offsets(OC_KEY_V0, b"\x00\x05" + ocv(4)[2:])
        == f'{{"key":{{"version":0,"data":{KEY_DATA}}},"value":{{"version":5,"data":"unknown"}}}}'
    )
    assert (
        format_offsets(OC_KEY_V0, None)
        == f'{{"key":{{"version":0,"data":{KEY_DATA}}},"value":null}}'
    )
    assert format_offsets(None, ocv(1)) == (
        '{"key":null,"value":{"version":1,"data":{"offset":100,'
        '"metadata":"metadata","commitTimestamp":1234,"expireTimestamp":-1}}}'
    )
    assert format_offsets(None, None) == '{"key":null,"value":null}'
    assert format_offsets(GM_KEY_V2, gmv(2)) == ""


MEMBER_V0 = (
    '{"memberId":"member-1","clientId":"client-1","clientHost":"host-1","sessionTimeout":1500,'
    '"subscription":"AAE=","assignment":"AQI="}'
)
MEMBER_V1 = (
    '{"memberId":"member-1","clientId":"client-1","clientHost":"host-1","rebalanceTimeout":1000,'
    '"sessionTimeout":1500,"subscription":"AAE=","assignment":"AQI="}'
)
MEMBER_V3 = (
    '{"memberId":"member-1","groupInstanceId":"group-instance-1","clientId":"client-1",'
    '"clientHost":"host-1","rebalanceTimeout":1000,"sessionTimeout":1500,"subscription":"AAE=",'
    '"assignment":"AQI="}'
)
HEAD = '"protocolType":"consumer","generation":1,"protocol":"range","leader":"leader"'


@pytest.mark.parametrize(
    "version,data",
    [
        (0, f'{{{HEAD},"members":[{MEMBER_V0}]}}'),
        (1, f'{{{HEAD},"members":[{MEMBER_V1}]}}'),
        (2, f'{{{HEAD},"currentStateTimestamp":1234,"members":[{MEMBER_V1}]}}'),
        (3, f'{{{HEAD},"currentStateTimestamp":1234,"members":[{MEMBER_V3}]}}'),
        (4, f'{{{HEAD},"currentStateTimestamp":1234,"members":[{MEMBER_V3}]}}'),
    ],
)
def test_group_metadata_formatter_per_value_version(version, data):
    assert (
        format_group_metadata(GM_KEY_V2, gmv(version))
        == f'{{"key":{{"version":2,"data":{{"group":"group-id"}}}},"value":{{"version":{version},"data":{data}}}}}'
    )


def test_group_metadata_formatter_edges():
    assert (
        format_group_metadata(b"\x00\x0a" + GM_KEY_V2[2:], b"\x00\x0a" + gmv(4)[2:])
        == '{"key":{"version":10,"data":"unknown"},"value":{"version":10,"data":"unknown"}}'
    )
    assert (
        format_group_metadata(GM_KEY_V2, None)
        == '{"key":{"version":2,"data":{"group":"group-id"}},"value":null}'
    )
    assert format_group_metadata(None, gmv(4)).startswith(
        '{"key":null,"value":{"version":4,"data":{'
    )
    assert format_group_metadata(None, None) == '{"key":null,"value":null}'
    assert format_group_metadata(OC_KEY_V0, ocv(4)) == ""
    null_proto = dataclasses.replace(GM_VALUE, protocol=None, leader=None, members=(), version=3)
    assert '"protocol":null,"leader":null' in format_group_metadata(
        GM_KEY_V2, encode_value(null_proto)
    )


def test_jackson_string_escaping():
    assert json_string('a"b\\c\n\t\x01\x1f/é') == '"a\\"b\\\\c\\n\\t\\u0001\\u001F/é"'


def test_truncated_value_raises():
    with pytest.raises(RecordDecodeError):
        format_offsets(OC_KEY_V0, ocv(3)[:-3])


def test_legacy_text_format():
    assert format_offsets_legacy(OC_KEY_V0, ocv(3)) == (
        "[group-id,foo,1]::OffsetAndMetadata(offset=100, leaderEpoch=Optional[10], metadata=metadata, "
        "commitTimestamp=1234, expireTimestamp=None)\n"
    )
    v1 = encode_value(OffsetCommitValue(7, "", 5, expire_timestamp=99, version=1))
    assert format_offsets_legacy(OC_KEY_V0, v1) == (
        "[group-id,foo,1]::OffsetAndMetadata(offset=7, leaderEpoch=Optional.empty, metadata=, "
        "commitTimestamp=5, expireTimestamp=Some(99))\n"
    )
    assert format_offsets_legacy(OC_KEY_V0, None) == "[group-id,foo,1]::NULL\n"
    assert format_offsets_legacy(GM_KEY_V2, gmv(3)) == ""


def test_output_is_json_that_matches_the_decoded_record():
    import base64
    import json

    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=80, deadline=None)
    @given(
        st.text(max_size=12),
        st.integers(-(2**63), 2**63 - 1),
        st.integers(0, 4),
        st.binary(max_size=8),
    )
    def check(text, offset, version, blob):
        v = OffsetCommitValue(offset, text, 5, leader_epoch=3, version=version)
        doc = json.loads(
            format_offsets(encode_key(OffsetCommitKey(text, text, 2)), encode_value(v))
        )
        assert doc["key"]["data"] == {"group": text, "topic": text, "partition": 2}
        assert doc["value"]["data"]["offset"] == offset and doc["value"]["data"]["metadata"] == text
        member = dataclasses.replace(MEMBER, member_id=text, subscription=blob)
        g = dataclasses.replace(GM_VALUE, members=(member,), version=version)
        doc = json.loads(format_group_metadata(GM_KEY_V2, encode_value(g)))
        m = doc["value"]["data"]["members"][0]
        assert m["memberId"] == text and base64.b64decode(m["subscription"]) == blob

    check()
