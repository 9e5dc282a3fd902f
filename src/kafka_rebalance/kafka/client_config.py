"""`--command-config` / `--admin.config`: a Java client's properties as kafka-python keyword arguments.

The file is read as `java.util.Properties` reads it (kafka/properties.py) and its values are
trimmed, as Kafka's ConfigDef does. What is understood:

* security: `security.protocol` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL);
* SSL: `ssl.truststore.{location,password,type,certificates}`,
  `ssl.keystore.{location,password,type,key,certificate.chain}`, `ssl.key.password` with store
  types JKS (Kafka's default), PKCS12 and PEM (kafka/keystores.py builds one SSLContext),
  `ssl.endpoint.identification.algorithm` (Kafka's default `https` checks the host name; empty
  turns it off), `ssl.enabled.protocols`;
* SASL: `sasl.mechanism` (Kafka's default GSSAPI), `sasl.jaas.config` for PLAIN and
  SCRAM-SHA-256/512 (`username`, `password`), OAUTHBEARER (kafka/oauth.py: client credentials or
  unsecured), GSSAPI (`sasl.kerberos.service.name`);
* numbers of AdminClientConfig, checked as Kafka checks them (wording of its ConfigException);
* `client.id`.

Anything else is ignored, as a Java client ignores unknown properties (it only logs them),
except other clients' names for the SSL stores (`ssl.cafile`, `ssl.ca.location`, ...): a file
of those would connect without its certificates, so each is refused naming the Java property.
A binary file (a NUL byte) is refused as not a properties file (kafka/properties.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..errors import InputError
from .properties import load_properties

_NUMERIC: dict[str, tuple[str, int | None, str | None]] = {
    "request.timeout.ms": ("INT", 0, "request_timeout_ms"),
    "default.api.timeout.ms": ("INT", 0, None),
    "metadata.max.age.ms": ("LONG", 0, "metadata_max_age_ms"),
    "send.buffer.bytes": ("INT", -1, "send_buffer_bytes"),
    "receive.buffer.bytes": ("INT", -1, "receive_buffer_bytes"),
    "reconnect.backoff.ms": ("LONG", 0, "reconnect_backoff_ms"),
    "reconnect.backoff.max.ms": ("LONG", 0, "reconnect_backoff_max_ms"),
    "retry.backoff.ms": ("LONG", 0, "retry_backoff_ms"),
    "retry.backoff.max.ms": ("LONG", 0, None),
    "socket.connection.setup.timeout.ms": ("LONG", None, None),
    "socket.connection.setup.timeout.max.ms": ("LONG", None, None),
    "connections.max.idle.ms": ("LONG", None, "connections_max_idle_ms"),
    "retries": ("INT", 0, None),
    "metrics.sample.window.ms": ("LONG", 0, "metrics_sample_window_ms"),
    "metrics.num.samples": ("INT", 1, "metrics_num_samples"),
}
_BITS = {"INT": 31, "LONG": 63}
DEFAULT_SASL_MECHANISM = "GSSAPI"  # SaslConfigs.DEFAULT_SASL_MECHANISM
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
_SSL_PROTOCOLS = ("SSL", "SASL_SSL")
# Other clients' names for the stores (kafka-python, librdkafka): a Java client ignores them, so a
# file of them would connect without its certificates; refused with the Java property to use.
FOREIGN_SSL = {
    "ssl.cafile": "ssl.truststore.type=PEM and ssl.truststore.location",
    "ssl.ca.location": "ssl.truststore.type=PEM and ssl.truststore.location",
    "ssl.certfile": "ssl.keystore.type=PEM and ssl.keystore.location (key and chain in one file)",
    "ssl.certificate.location": "ssl.keystore.type=PEM and ssl.keystore.location (key and chain "
    "in one file)",
    "ssl.keyfile": "ssl.keystore.type=PEM and ssl.keystore.location (key and chain in one file)",
    "ssl.key.location": "ssl.keystore.type=PEM and ssl.keystore.location (key and chain in one "
    "file)",
}


def _number(key: str, value: str, source: str) -> int:
    """ConfigDef.parseType for INT/LONG, with Kafka's ConfigException wording."""
    kind, least, _ = _NUMERIC[key]
    text = value.strip()
    if (
        not re.fullmatch(r"[+-]?[0-9]+", text)
        or not -(2 ** _BITS[kind]) <= int(text) < 2 ** _BITS[kind]
    ):
        raise InputError(
            f"Invalid value {value} for configuration {key}: Not a number of type {kind}",
            source=source,
            field=key,
        )
    n = int(text)
    if least is not None and n < least:
        raise InputError(
            f"Invalid value {value} for configuration {key}: Value must be at least {least}",
            source=source,
            field=key,
        )
    return n


def jaas_options(value: str, source: str) -> tuple[str, dict[str, str]]:
    """(login module class, options) of a one-module `sasl.jaas.config` (JaasConfig's grammar)."""
    m = re.match(r"\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\b(.*)", value, re.S)
    if not m:
        raise InputError(
            "expected '<LoginModule> required key=\"value\" ...;'",
            source=source,
            field="sasl.jaas.config",
        )
    rest = m.group(3).strip()
    if not rest.endswith(";"):
        raise InputError(
            "the JAAS configuration must end with ';'", source=source, field="sasl.jaas.config"
        )
    options: dict[str, str] = {}
    for om in re.finditer(r'([\w.$-]+)\s*=\s*(?:"((?:\\.|[^"\\])*)"|([^\s;"]+))', rest[:-1]):
        raw = om.group(2) if om.group(2) is not None else om.group(3)
        options[om.group(1)] = re.sub(r"\\(.)", r"\1", raw)
    return m.group(1), options


def _sasl(kw: dict, props: Mapping[str, str], source: str) -> None:
    from kafka.sasl import SASL_MECHANISMS

    if kw.get("security_protocol") not in _SASL_PROTOCOLS:
        return
    mechanism = kw.setdefault("sasl_mechanism", DEFAULT_SASL_MECHANISM)
    given = "sasl.mechanism" in props
    said = (
        f"sasl.mechanism={mechanism}"
        if given
        else f"no sasl.mechanism (Kafka's default is {mechanism})"
    )
    if mechanism not in SASL_MECHANISMS or mechanism == "AWS_MSK_IAM":
        raise InputError(
            f"unknown SASL mechanism {mechanism!r} (supported: GSSAPI, PLAIN, SCRAM-SHA-256, "
            "SCRAM-SHA-512, OAUTHBEARER)",
            source=source,
            field="sasl.mechanism",
        )
    jaas = props.get("sasl.jaas.config", "").strip()
    options = jaas_options(jaas, source)[1] if jaas else {}
    if mechanism == "GSSAPI":
        import platform

        try:
            if platform.system() != "Windows":
                import gssapi  # noqa: F401
        except ImportError:
            raise InputError(
                f"{said} with security.protocol={kw['security_protocol']}: Kerberos needs the Python "
                "package 'gssapi', which is not installed; install it (pip install gssapi) or set "
                "sasl.mechanism to PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER",
                source=source,
                field="sasl.mechanism",
            ) from None
        if options.get("serviceName"):
            kw.setdefault("sasl_kerberos_service_name", options["serviceName"])
    elif mechanism == "OAUTHBEARER":
        from .oauth import make_token_provider

        kw["sasl_oauth_token_provider"] = make_token_provider(options, props, source)
    else:
        if "username" not in options or "password" not in options:
            raise InputError(
                f"{said} needs a username and a password: sasl.jaas.config=... "
                'required username="..." password="...";',
                source=source,
                field="sasl.jaas.config",
            )
        kw["sasl_plain_username"] = options["username"]
        kw["sasl_plain_password"] = options["password"]


def _ssl(kw: dict, props: Mapping[str, str], source: str) -> None:
    from .keystores import build_context, read_pem, read_store

    if kw.get("security_protocol") not in _SSL_PROTOCOLS:
        return
    key_password = props.get("ssl.key.password")
    trusted: list[bytes] | None = None
    trust_where = key_where = (source, "")
    ttype = props.get("ssl.truststore.type", "JKS")
    if props.get("ssl.truststore.certificates"):
        trust_where = (source, "ssl.truststore.certificates")
        trusted = read_pem(
            props["ssl.truststore.certificates"], None, source, "ssl.truststore.certificates"
        )[1]
    elif props.get("ssl.truststore.location"):
        trust_where = (props["ssl.truststore.location"], "ssl.truststore.location")
        keys, certs = read_store(
            ttype,
            props["ssl.truststore.location"],
            props.get("ssl.truststore.password"),
            None,
            "ssl.truststore",
        )
        trusted = certs + [c for k in keys for c in k.chain[-1:]]
    key = None
    if props.get("ssl.keystore.key"):
        key_where = (source, "ssl.keystore.key")
        pem = props["ssl.keystore.key"] + "\n" + props.get("ssl.keystore.certificate.chain", "")
        keys = read_pem(pem, key_password, source, "ssl.keystore.key")[0]
        key = keys[0] if keys else None
    elif props.get("ssl.keystore.location"):
        key_where = (props["ssl.keystore.location"], "ssl.keystore.location")
        keys, _ = read_store(
            props.get("ssl.keystore.type", "JKS"),
            props["ssl.keystore.location"],
            props.get("ssl.keystore.password"),
            key_password,
            "ssl.keystore",
        )
        if not keys:
            raise InputError(
                "the key store holds no private key",
                source=props["ssl.keystore.location"],
                field="ssl.keystore.location",
            )
        key = keys[0]
    algorithm = props.get("ssl.endpoint.identification.algorithm", "https")
    protocols = tuple(
        p.strip() for p in props.get("ssl.enabled.protocols", "").split(",") if p.strip()
    )
    kw["ssl_context"] = build_context(
        trusted, key, algorithm.lower() == "https", protocols, trust_where, key_where
    )
    kw["ssl_check_hostname"] = algorithm.lower() == "https"


def client_kwargs(props: Mapping[str, str], source: str = "--command-config") -> dict:
    """kafka-python keyword arguments for the client properties we understand."""
    props = {k: v.strip() for k, v in props.items()}
    for key, java in FOREIGN_SSL.items():
        if key in props:
            raise InputError(
                f"{key}={props[key]} is not a Java client property (Kafka's tools ignore it); "
                f"use {java}",
                source=source,
                field=key,
            )
    kw: dict = {}
    for key, value in props.items():
        if key in _NUMERIC:
            n = _number(key, value, source)
            target = _NUMERIC[key][2]
            if target and not (key.endswith("buffer.bytes") and n == -1):
                kw[target] = n  # -1 is the OS default: kafka-python's None
        elif key == "security.protocol":
            kw["security_protocol"] = value.upper()
        elif key == "sasl.mechanism":
            kw["sasl_mechanism"] = value
        elif key == "client.id":
            kw["client_id"] = value
        elif key == "sasl.kerberos.service.name":
            kw["sasl_kerberos_service_name"] = value
    if "security_protocol" in kw and kw["security_protocol"] not in PROTOCOLS:
        raise InputError(
            f"unknown security.protocol {kw['security_protocol']!r} ({', '.join(PROTOCOLS)})",
            source=source,
            field="security.protocol",
        )
    _sasl(kw, props, source)
    _ssl(kw, props, source)
    return kw


def load_client_config(path: str | None) -> dict:
    """The kafka-python keyword arguments of a `--command-config` file (none without a file)."""
    if not path:
        return {}
    return client_kwargs(load_properties(path), source=path)
