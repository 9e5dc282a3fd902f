"""`--command-config` against a real broker with SSL and SASL listeners, and log-dir moves (JBOD).

One single-node cluster for the module (`--log-dirs 2`) with four listeners: PLAINTEXT (to set it
up), SSL with client authentication required, SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256/512 and
OAUTHBEARER (the broker's unsecured validator; our client gets its token from a client-credentials
endpoint served by the test). Certificates are made here with `cryptography`; the JKS stores with
the JDK's keytool (skipped without it).
"""

from __future__ import annotations

import base64
import datetime
import json
import shutil
import socket
import subprocess
import threading
import uuid
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(300)]
PASSWORD = "store-secret"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_pki(d: Path) -> dict[str, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def cert(name, key, issuer_name, issuer_key, ca=False, san=None):
        b = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(issuer_name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if san:
            b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
        return b.sign(issuer_key, hashes.SHA256())

    import ipaddress

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test-ca")])
    ca = cert("test-ca", ca_key, ca_name, ca_key, ca=True)
    srv_key = ec.generate_private_key(ec.SECP256R1())
    srv = cert(
        "localhost",
        srv_key,
        ca_name,
        ca_key,
        san=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))],
    )
    cli_key = ec.generate_private_key(ec.SECP256R1())
    cli = cert("client", cli_key, ca_name, ca_key)
    pem = serialization.Encoding.PEM
    enc = serialization.BestAvailableEncryption(PASSWORD.encode())
    out = {
        "ca.pem": ca.public_bytes(pem),
        "server.p12": pkcs12.serialize_key_and_certificates(b"server", srv_key, srv, [ca], enc),
        "client.p12": pkcs12.serialize_key_and_certificates(b"client", cli_key, cli, [ca], enc),
        "trust.p12": pkcs12.serialize_key_and_certificates(b"ca", None, None, [ca], enc),
        "client.pem": cli_key.private_bytes(pem, serialization.PrivateFormat.PKCS8, enc)
        + cli.public_bytes(pem)
        + ca.public_bytes(pem),
    }
    paths = {}
    for name, data in out.items():
        (d / name).write_bytes(data)
        paths[name] = d / name
    return paths


@pytest.fixture(scope="module")
def secure_kafka(tmp_path_factory):
    import real_kafka as rk

    reason = rk.unavailable_reason()
    if reason is not None or not (rk.KAFKA_HOME / "start-kafka.sh").exists():
        pytest.skip(reason or "no ../shared/kafka to start a cluster with extra listeners")
    d = tmp_path_factory.mktemp("pki")
    pki = make_pki(d)
    plain, ctrl, ssl_port, sasl = free_port(), free_port(), free_port(), free_port()
    lsn = "listener.name.sasl_plaintext"
    props = (
        f"listeners=PLAINTEXT://127.0.0.1:{plain},CONTROLLER://127.0.0.1:{ctrl},"
        f"SSL://127.0.0.1:{ssl_port},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{ssl_port},"
        f"SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,"
        "SASL_PLAINTEXT:SASL_PLAINTEXT",
        f"ssl.keystore.location={pki['server.p12']}",
        "ssl.keystore.type=PKCS12",
        f"ssl.keystore.password={PASSWORD}",
        f"ssl.key.password={PASSWORD}",
        f"ssl.truststore.location={pki['ca.pem']}",
        "ssl.truststore.type=PEM",
        "ssl.client.auth=required",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        f"{lsn}.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
        'required user_alice="alice-secret";',
        f"{lsn}.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
        f"{lsn}.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
        f"{lsn}.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer."
        'OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="broker";',
    )
    cluster = rk.start(
        brokers=1,
        props=props,
        log_dirs=2,
        args=("--ports", str(plain), "--controller-port", str(ctrl)),
    )
    try:
        # one credential per user and request (DuplicateResourceException otherwise)
        for user, cred in (
            ("bob", "SCRAM-SHA-256=[iterations=4096,password=bob-256]"),
            ("carol", "SCRAM-SHA-512=[password=carol-512]"),
        ):
            made = cluster.tool(
                "kafka-configs.sh", "--bootstrap-server", f"127.0.0.1:{plain}", "--alter",
                "--add-config", cred, "--entity-type", "users", "--entity-name", user, check=False,
            )  # fmt: skip
            assert made.returncode == 0, made.stdout + made.stderr
        yield {
            "cluster": cluster,
            "plain": f"127.0.0.1:{plain}",
            "ssl": f"127.0.0.1:{ssl_port}",
            "sasl": f"127.0.0.1:{sasl}",
            "pki": pki,
            "dir": d,
        }
    finally:
        cluster.stop()


def write_props(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def connects(bootstrap: str, config: str) -> set[int]:
    from kafka_rebalance.kafka.admin import KafkaAdmin

    with KafkaAdmin(bootstrap, config, request_timeout_ms=15000) as admin:
        return admin.live_brokers()


def keytool(*args: str) -> None:
    subprocess.run(["keytool", *args], check=True, capture_output=True, timeout=120)


def test_ssl_with_pem_pkcs12_and_jks_stores(secure_kafka, tmp_path):
    pki, bs = secure_kafka["pki"], secure_kafka["ssl"]
    # PEM: CA file and an encrypted PKCS#8 key with its chain (Kafka's PEM key store file).
    pem = write_props(
        tmp_path / "pem.properties",
        "security.protocol=SSL\nssl.truststore.type=PEM\n"
        f"ssl.truststore.location={pki['ca.pem']}\nssl.keystore.type=PEM\n"
        f"ssl.keystore.location={pki['client.pem']}\nssl.key.password={PASSWORD}\n",
    )
    assert connects(bs, pem) == {1}
    # PKCS12 key and trust stores.
    p12 = write_props(
        tmp_path / "p12.properties",
        "security.protocol=SSL\n"
        f"ssl.truststore.type=PKCS12\nssl.truststore.location={pki['trust.p12']}\n"
        f"ssl.truststore.password={PASSWORD}\n"
        f"ssl.keystore.type=PKCS12\nssl.keystore.location={pki['client.p12']}\n"
        f"ssl.keystore.password={PASSWORD}\n",
    )
    assert connects(bs, p12) == {1}
    # JKS (Kafka's default type), made by the JDK's keytool.
    if shutil.which("keytool") is None:
        pytest.skip("no keytool: JKS stores not made")
    jks_key, jks_trust = tmp_path / "client.jks", tmp_path / "trust.jks"
    keytool(
        "-importkeystore", "-srckeystore", str(pki["client.p12"]), "-srcstoretype", "PKCS12",
        "-srcstorepass", PASSWORD, "-destkeystore", str(jks_key), "-deststoretype", "JKS",
        "-deststorepass", PASSWORD, "-destkeypass", PASSWORD, "-noprompt",
    )  # fmt: skip
    keytool(
        "-importcert", "-noprompt", "-alias", "ca", "-file", str(pki["ca.pem"]),
        "-keystore", str(jks_trust), "-storetype", "JKS", "-storepass", PASSWORD,
    )  # fmt: skip
    assert jks_key.read_bytes()[:4] == b"\xfe\xed\xfe\xed"
    jks = write_props(
        tmp_path / "jks.properties",
        "security.protocol=SSL\n"
        f"ssl.truststore.location={jks_trust}\nssl.truststore.password={PASSWORD}\n"
        f"ssl.keystore.location={jks_key}\nssl.keystore.password={PASSWORD}\n"
        f"ssl.key.password={PASSWORD}\n",
    )
    assert connects(bs, jks) == {1}
    # A wrong store password is bad input naming the file and the property (exit 2 from the CLI).
    from kafka_rebalance.cli import main as cli_main

    bad = write_props(
        tmp_path / "bad.properties",
        f"security.protocol=SSL\nssl.truststore.location={jks_trust}\n"
        "ssl.truststore.password=wrong\n",
    )
    assert cli_main(["cluster", "describe", "--bootstrap-server", bs, "--command-config", bad]) == 2
    # The whole CLI over SSL.
    assert cli_main(["cluster", "describe", "--bootstrap-server", bs, "--command-config", jks]) == 0


class TokenEndpoint(BaseHTTPRequestHandler):
    """A client-credentials token endpoint handing out unsecured JWTs (the broker validates those)."""

    seen: list[dict] = []

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers["Content-Length"])).decode()
        auth = base64.b64decode(self.headers["Authorization"].split()[1]).decode()
        TokenEndpoint.seen.append({"body": body, "auth": auth})
        if auth != "my-client:my%20secret":
            self.send_response(401)
            self.end_headers()
            return
        from kafka_rebalance.kafka.oauth import unsecured_jws

        token = unsecured_jws({"unsecuredLoginStringClaim_sub": "my-client"})
        data = json.dumps({"access_token": token, "token_type": "bearer", "expires_in": 3600})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data.encode())

    def log_message(self, *args):
        pass


def test_sasl_plain_scram_and_oauthbearer_client_credentials(secure_kafka, tmp_path, capsys):
    bs = secure_kafka["sasl"]
    jaas = "sasl.jaas.config=org.apache.kafka.common.security"
    cases = {
        "plain": f'sasl.mechanism=PLAIN\n{jaas}.plain.PlainLoginModule required username="alice" password="alice-secret";\n',
        # a continuation line and `:` as the separator, as a hand-written file may have them
        "scram256": "sasl.mechanism: SCRAM-SHA-256\n"
        f'{jaas}.scram.ScramLoginModule required \\\n    username="bob" password="bob-256";\n',
        "scram512": f'sasl.mechanism=SCRAM-SHA-512\n{jaas}.scram.ScramLoginModule required username="carol" password="carol-512";\n',
    }
    for name, text in cases.items():
        cfg = write_props(
            tmp_path / f"{name}.properties", "security.protocol=SASL_PLAINTEXT\n" + text
        )
        assert connects(bs, cfg) == {1}, name
    server = HTTPServer(("127.0.0.1", 0), TokenEndpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/token"
        cfg = write_props(
            tmp_path / "oauth.properties",
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
            "sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer."
            "OAuthBearerLoginCallbackHandler\n"
            f"sasl.oauthbearer.token.endpoint.url={url}\n"
            "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
            'required clientId="my-client" clientSecret="my secret" scope="kafka";\n',
        )
        assert connects(bs, cfg) == {1}
    finally:
        server.shutdown()
    assert TokenEndpoint.seen and TokenEndpoint.seen[0]["body"] == (
        "grant_type=client_credentials&scope=kafka"
    )
    # A wrong password is refused by the broker: named, with no traceback.
    from kafka_rebalance.cli import main as cli_main

    bad = write_props(
        tmp_path / "badpw.properties",
        "security.protocol=SASL_PLAINTEXT\n" + cases["plain"].replace("alice-secret", "nope"),
    )
    capsys.readouterr()
    rc = cli_main(["cluster", "describe", "--bootstrap-server", bs, "--command-config", bad])
    cap = capsys.readouterr()
    msg = " ".join(cap.err.split())
    assert rc == 2 and "Traceback" not in msg and "refused the credentials" in msg, msg
    assert "badpw.properties" in msg


def test_log_dir_moves_with_their_throttle_match_kafkas_tool(secure_kafka, tmp_path, capsys):
    from kafka_rebalance.cli import main as cli_main

    cluster, bs = secure_kafka["cluster"], secure_kafka["plain"]
    node = cluster.state_dir / "node-1"
    dirs = [str(node / "data-1"), str(node / "data-2")]
    topic = f"jbod-{uuid.uuid4().hex[:6]}"
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bs)
    try:
        admin.create_topics([NewTopic(topic, 2, 1)])
    finally:
        admin.close()

    def where() -> dict[int, str]:
        out = cluster.tool(
            "kafka-log-dirs.sh", "--bootstrap-server", bs, "--describe", "--topic-list", topic
        ).stdout
        doc = json.loads(next(ln for ln in out.splitlines() if ln.startswith("{")))
        return {
            int(p["partition"].rsplit("-", 1)[1]): d["logDir"]
            for b in doc["brokers"]
            for d in b["logDirs"]
            for p in d["partitions"]
            if p["partition"].startswith(topic)
        }

    import time

    from kafka_rebalance.kafka.admin import KafkaAdmin

    deadline = time.monotonic() + 30
    with KafkaAdmin(bs) as ka:
        while True:  # the broker creates the logs a moment after the topic exists
            found = ka.describe_replica_log_dirs([(topic, 0, 1), (topic, 1, 1)])
            before = {p: cur for (_t, p, _b), (cur, _f) in found.items()}
            if len(before) == 2 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    assert sorted(before) == [0, 1] and set(before.values()) <= set(dirs)
    target = {p: dirs[1] if before[p] == dirs[0] else dirs[0] for p in before}
    plan = tmp_path / "dirs.json"
    plan.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": topic, "partition": p, "replicas": [1], "log_dirs": [d]}
                    for p, d in target.items()
                ],
            }
        )
    )
    argv = ["cluster", "execute", "--bootstrap-server", bs, "--reassignment-json-file", str(plan)]
    rc = cli_main(
        [
            *argv,
            "--execute",
            "--replica-alter-log-dirs-throttle",
            "10000000",
            "--poll-interval",
            "0.2",
        ]
    )
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "The replica-alter-dir throttle limit was set to 10000000 B/s" in cap.err
    assert "Successfully started moving log directory to" in cap.err
    assert where() == target  # kafka-log-dirs.sh sees every replica in its planned dir
    theirs = cluster.tool(
        "kafka-reassign-partitions.sh", "--bootstrap-server", bs, "--reassignment-json-file",
        str(plan), "--verify", "--preserve-throttles",
    ).stdout  # fmt: skip
    assert cli_main([*argv, "--verify"]) == 0
    ours = capsys.readouterr().out
    replica_lines = lambda t: [ln for ln in t.splitlines() if "replica" in ln]  # noqa: E731
    assert replica_lines(ours) == replica_lines(theirs)
    assert f"Reassignment of replica {topic}-0-1 completed successfully." in ours
