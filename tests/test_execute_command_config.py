"""`cluster execute --command-config`: Kafka's SASL default (GSSAPI without a mechanism), bad
properties named with the file, property and value, and the numeric properties mapped to
kafka-python's settings."""

from __future__ import annotations

import pytest

from execute_cli import (
    execute_cmd,
    run_cli,
    write_plan,
)
from kafka_rebalance.errors import InputError


def test_sasl_without_a_mechanism_defaults_to_gssapi_as_kafka_does(monkeypatch, tmp_path, capsys):
    import sys
    import types

    from kafka_rebalance.kafka.admin import admin_kwargs

    props = {"security.protocol": "SASL_SSL", "sasl.kerberos.service.name": "kafka"}
    monkeypatch.setitem(
        sys.modules, "gssapi", types.ModuleType("gssapi")
    )  # as if the package were installed
    assert admin_kwargs(props)["sasl_mechanism"] == "GSSAPI"
    monkeypatch.setitem(sys.modules, "gssapi", None)  # not installed: import fails
    with pytest.raises(InputError, match="gssapi") as err:
        admin_kwargs(props, source="client.properties")
    assert (err.value.source, err.value.field) == ("client.properties", "sasl.mechanism")
    # Through the CLI: exit 2 and a message naming the file and the property, no KeyError traceback.
    cfg = tmp_path / "client.properties"
    cfg.write_text("security.protocol=SASL_SSL\n")
    plan = write_plan(tmp_path, [{"topic": "orders", "partition": 0, "replicas": [2, 1, 3]}])
    for extra in ([], ["--execute", "--state-file", str(tmp_path / "st.json")]):
        assert (
            run_cli(
                execute_cmd(
                    plan, "--bootstrap-server", "127.0.0.1:1", "--command-config", str(cfg), *extra
                )
            )
            == 2
        )
        cap = capsys.readouterr()
        msg = " ".join((cap.out + cap.err).split())
        assert (
            f"{cfg}: field 'sasl.mechanism'" in msg and "GSSAPI" in msg and "Traceback" not in msg
        )


@pytest.mark.parametrize(
    "props, field, words",
    [
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"},
            "sasl.jaas.config",
            "username",
        ),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "KERBEROS"},
            "sasl.mechanism",
            "unknown",
        ),
        (
            {"request.timeout.ms": "30s"},
            "request.timeout.ms",
            "Invalid value 30s for configuration request.timeout.ms: Not a number of type INT",
        ),
        ({"request.timeout.ms": "-5"}, "request.timeout.ms", "Value must be at least 0"),
        ({"request.timeout.ms": "3000000000"}, "request.timeout.ms", "Not a number of type INT"),
        ({"metadata.max.age.ms": "1.5"}, "metadata.max.age.ms", "Not a number of type LONG"),
        ({"default.api.timeout.ms": "soon"}, "default.api.timeout.ms", "Not a number of type INT"),
        ({"retry.backoff.ms": ""}, "retry.backoff.ms", "Not a number of type LONG"),
    ],
)
def test_bad_command_config_names_the_file_property_and_value(props, field, words):
    from kafka_rebalance.kafka.admin import admin_kwargs

    with pytest.raises(InputError) as err:
        admin_kwargs(props, source="c.properties")
    assert (err.value.source, err.value.field) == (
        "c.properties",
        field,
    ) and words in err.value.message


def test_numeric_command_config_properties_map_to_kafka_python():
    from kafka_rebalance.kafka.admin import admin_kwargs

    kw = admin_kwargs(
        {
            "request.timeout.ms": " 5000 ",
            "metadata.max.age.ms": "+60000",
            "send.buffer.bytes": "-1",
            "receive.buffer.bytes": "65536",
            "retries": "3",
            "security.protocol": "sasl_plaintext",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": 'x required username="u" password="p";',
        }
    )
    assert kw == {
        "request_timeout_ms": 5000,
        "metadata_max_age_ms": 60000,
        "receive_buffer_bytes": 65536,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": "u",
        "sasl_plain_password": "p",
    }
