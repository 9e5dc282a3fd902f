"""`--command-config` properties to kafka-python arguments (no broker: see test_security_live.py)."""

from __future__ import annotations

import base64
import json
import ssl

import pytest

from kafka_rebalance.errors import InputError
from kafka_rebalance.kafka.client_config import client_kwargs, jaas_options
from kafka_rebalance.kafka.oauth import unsecured_jws


def test_sasl_scram_with_a_continued_jaas_line_and_numbers() -> None:
    from kafka_rebalance.kafka.properties import parse_properties

    props = parse_properties(
        "# client.properties\n"
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism = SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="alice" password="s3cr=t\\\\\\"x";\n'
        "request.timeout.ms: 5000\n"
    )
    kw = client_kwargs(props)
    assert kw == {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "alice",
        "sasl_plain_password": 's3cr=t"x',
        "request_timeout_ms": 5000,
    }


def test_jaas_options_need_a_module_a_flag_and_a_semicolon() -> None:
    assert jaas_options('a.B required k="v w" n=1;', "f") == ("a.B", {"k": "v w", "n": "1"})
    for bad in ('username="x";', "a.B required k=v"):
        with pytest.raises(InputError) as err:
            jaas_options(bad, "f")
        assert err.value.field == "sasl.jaas.config"


def test_ssl_gives_one_context_checking_host_names_by_default(tmp_path) -> None:
    kw = client_kwargs({"security.protocol": "SSL"})
    assert isinstance(kw["ssl_context"], ssl.SSLContext) and kw["ssl_context"].check_hostname
    kw = client_kwargs({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": ""})
    assert not kw["ssl_context"].check_hostname
    with pytest.raises(InputError) as err:
        client_kwargs(
            {"security.protocol": "SSL", "ssl.truststore.location": str(tmp_path / "none.jks")}
        )
    assert err.value.field == "ssl.truststore.location"
    (tmp_path / "junk.jks").write_bytes(
        b"\xfe\xed\xfe\xed\x00\x00\x00\x02\x00\x00\x00\x00" + b"\x00" * 20
    )
    with pytest.raises(InputError, match="password was incorrect") as err:
        client_kwargs(
            {
                "security.protocol": "SSL",
                "ssl.truststore.location": str(tmp_path / "junk.jks"),
                "ssl.truststore.password": "x",
            }
        )
    assert err.value.field == "ssl.truststore.password"


def test_oauthbearer_needs_an_endpoint_or_an_unsecured_subject() -> None:
    base = {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}
    with pytest.raises(InputError) as err:
        client_kwargs({**base, "sasl.jaas.config": "x.OAuthBearerLoginModule required;"})
    assert err.value.field == "sasl.oauthbearer.token.endpoint.url"
    with pytest.raises(InputError, match="clientSecret"):
        client_kwargs(
            {
                **base,
                "sasl.oauthbearer.token.endpoint.url": "http://127.0.0.1:1/t",
                "sasl.jaas.config": 'x.OAuthBearerLoginModule required clientId="c";',
            }
        )
    kw = client_kwargs(
        {
            **base,
            "sasl.jaas.config": 'x.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="me" '
            'extension_traceId="t1";',
        }
    )
    provider = kw["sasl_oauth_token_provider"]
    header, claims, sig = provider.token().split(".")
    pad = lambda s: s + "=" * (-len(s) % 4)  # noqa: E731
    assert json.loads(base64.urlsafe_b64decode(pad(header))) == {"alg": "none"}
    doc = json.loads(base64.urlsafe_b64decode(pad(claims)))
    assert doc["sub"] == "me" and doc["exp"] - doc["iat"] == 3600 and sig == ""
    assert provider.extensions() == {"traceId": "t1"}
    assert unsecured_jws({"unsecuredLoginStringClaim_sub": "x"}, now=0).count(".") == 2


def test_unknown_protocol_and_mechanism_name_the_property() -> None:
    with pytest.raises(InputError) as err:
        client_kwargs({"security.protocol": "TLS"})
    assert err.value.field == "security.protocol"
    with pytest.raises(InputError) as err:
        client_kwargs({"security.protocol": "SASL_SSL", "sasl.mechanism": "KERBEROS"})
    assert err.value.field == "sasl.mechanism"
