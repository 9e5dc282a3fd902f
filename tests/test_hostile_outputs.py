"""Hostile outputs and execute inputs (issue 17, classes 7, 8, 9): every output path is checked
before any work, nothing is written on a refusal, and `cluster execute`'s flags, client
properties and state file are refused with one line naming the file or flag, the field and the
value, never a traceback (the state file's cases: tests/test_hostile_state_file.py).

Each CLI case asserts: the exit code, one error line naming the flag or file, no traceback, and
the folder holding the outputs unchanged (no file created, changed or removed).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hostile_cli import ROOT, SNAPSHOT, one_line_error, tree
from kafka_rebalance import cli

# -- class 8: output paths checked before anything is written -----------------------------------


def _outputs_cases(w: Path) -> dict[str, tuple[list[str], tuple[str, ...]]]:
    """name -> (argv, words the error line must hold); `w` holds old.json, a folder d/ and a file f."""
    snap = str(SNAPSHOT)
    plan = ["cluster", "plan", "--snapshot", snap]
    return {
        "plan-election-output-is-a-folder": (
            [*plan, "--output", str(w / "p.json"), "--election-output", str(w / "d")],
            ("--election-output", str(w / "d"), "is a directory"),
        ),
        "plan-output-is-a-folder": (
            [*plan, "--output", str(w / "d"), "--election-output", str(w / "e.json")],
            ("--output", "is a directory"),
        ),
        "plan-output-parent-is-a-file": (
            [*plan, "--output", str(w / "f" / "p.json")],
            ("--output", str(w / "f"), "is not a folder"),
        ),
        "plan-two-outputs-one-path": (
            [
                *plan,
                "--output",
                str(w / "p.json"),
                "--election-output",
                str(w / "x" / ".." / "p.json"),
            ],
            ("--election-output", "also the output of --output"),
        ),
        "plan-output-trailing-slash": (
            [*plan, "--output", str(w / "new") + "/"],
            ("--output", "is a directory"),
        ),
        "elect-output-is-a-folder": (
            ["cluster", "elect", "--snapshot", snap, "--output", str(w / "d")],
            ("--output", "is a directory"),
        ),
        "generate-output-is-a-folder": (
            [
                "cluster",
                "generate",
                "--snapshot",
                snap,
                "--broker-list",
                "0,1,2",
                "--topics-to-move-json-file",
                str(w / "topics.json"),
                "--output",
                str(w / "d"),
            ],
            ("--output", "is a directory"),
        ),
        "describe-output-parent-is-a-file": (
            ["cluster", "describe", "--snapshot", snap, "--output", str(w / "f" / "s.json")],
            ("--output", "is not a folder"),
        ),
        "report-out-is-a-folder": (
            ["report", str(w / "old.json"), "--out", str(w / "d")],
            ("--out", "is a directory"),
        ),
        "execute-output-dir-is-a-file": (
            [
                "cluster",
                "execute",
                "--reassignment-json-file",
                str(w / "plan.json"),
                "--snapshot",
                snap,
                "--output-dir",
                str(w / "f"),
            ],
            ("--output-dir", "is a file"),
        ),
        "execute-state-file-is-a-folder": (
            [
                "cluster",
                "execute",
                "--reassignment-json-file",
                str(w / "plan.json"),
                "--bootstrap-server",
                "127.0.0.1:1",
                "--state-file",
                str(w / "d"),
                "--execute",
            ],
            ("--state-file", "is a directory"),
        ),
        "simulate-events-out-is-a-folder": (
            [
                "simulate",
                str(ROOT / "examples" / "crash.yaml"),
                "--events-out",
                str(w / "d") + ".parquet",
            ],
            ("--events-out", "is a directory"),
        ),
        "demo-out-is-a-file": (["demo", "--out", str(w / "f")], ("--out", "is a file")),
        "demo-out-holds-other-files": (
            ["demo", "--out", str(w / "d")],
            ("--out", "not a demo's results"),
        ),
        "demo-out-parent-is-a-file": (
            ["demo", "--out", str(w / "f" / "demo")],
            ("--out", "is not a folder"),
        ),
    }


OUTPUT_CASES = sorted(_outputs_cases(Path("/w")))


def _workdir(tmp_path: Path) -> Path:
    w = tmp_path / "w"
    (w / "d").mkdir(parents=True)
    (w / "d.parquet").mkdir()
    (w / "d" / "keep.txt").write_text("a file of the user's\n")
    (w / "f").write_text("a plain file\n")
    (w / "old.json").write_text(SNAPSHOT.read_text())
    (w / "topics.json").write_text('{"version": 1, "topics": [{"topic": "topic-00000"}]}')
    plan = {
        "version": 1,
        "partitions": [{"topic": "orders", "partition": 0, "replicas": [1, 2, 0]}],
    }
    (w / "plan.json").write_text(json.dumps(plan))
    return w


@pytest.mark.parametrize("case", OUTPUT_CASES)
def test_bad_output_path_refused_before_anything_is_written(case, tmp_path, capsys):
    w = _workdir(tmp_path)
    argv, says = _outputs_cases(w)[case]
    before = tree(tmp_path)
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    one_line_error(rc, 2, err, *says)
    assert out == ""
    assert tree(tmp_path) == before


def test_read_only_output_folder_is_refused_before_work(tmp_path, capsys, monkeypatch):
    """A read-only file system (seen by statvfs) is the run's failure (exit 1), found before work."""
    from kafka_rebalance import io_publish

    class RO:
        f_flag = os.ST_RDONLY

    monkeypatch.setattr(io_publish.os, "statvfs", lambda p: RO())
    out = tmp_path / "p.json"
    rc = cli.main(["cluster", "plan", "--snapshot", str(SNAPSHOT), "--output", str(out)])
    one_line_error(rc, 1, capsys.readouterr().err, str(out), "Read-only file system")
    assert list(tmp_path.iterdir()) == []


def test_plan_writes_both_outputs_into_new_folders(tmp_path, capsys):
    p, e = tmp_path / "a" / "b" / "p.json", tmp_path / "c" / "e.json"
    argv = ["cluster", "plan", "--snapshot", str(SNAPSHOT), "--output", str(p)]
    assert cli.main([*argv, "--election-output", str(e), "--format", "json"]) == 0
    capsys.readouterr()
    assert json.loads(p.read_text())["version"] == 1 and "partitions" in json.loads(e.read_text())
    hidden = [x for x in tmp_path.rglob(".*")]
    assert hidden == []


# -- class 7: cluster execute ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "flag, value",
    [
        ("--poll-interval", "inf"),
        ("--poll-interval", "nan"),
        ("--poll-interval", "-1"),
        ("--poll-interval", "0"),
        ("--poll-interval", "1e300"),
        ("--poll-interval", "-inf"),
        ("--batch-timeout", "inf"),
        ("--batch-timeout", "nan"),
        ("--throttle", str(2**63)),
        ("--max-moves", str(2**31)),
        ("--timeout", str(2**40)),
    ],
)
def test_execute_numbers_refused_before_anything_is_submitted(flag, value, tmp_path, capsys):
    """Checked before the cluster is contacted (127.0.0.1:1 would fail with exit 1)."""
    w = _workdir(tmp_path)
    before = tree(tmp_path)
    argv = [
        "cluster",
        "execute",
        "--reassignment-json-file",
        str(w / "plan.json"),
        "--bootstrap-server",
        "127.0.0.1:1",
        "--execute",
        f"{flag}={value}",
    ]
    rc = cli.main(argv)
    one_line_error(rc, 2, capsys.readouterr().err, flag)
    assert tree(tmp_path) == before


def _certs(tmp: Path) -> dict[str, Path]:
    """Store files a careless user might point a property at (PEM and JKS garbage, a wrong key)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    k1, k2 = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "x")])
    t0 = datetime.datetime(2025, 1, 1)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(k2.public_key())
        .serial_number(1)
        .not_valid_before(t0)
        .not_valid_after(t0 + datetime.timedelta(days=3650))
        .sign(k2, hashes.SHA256())
    )
    key_pem = k1.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    files = {
        "garbage": os.urandom(0) + bytes(range(256)) * 8,
        "mismatch.pem": key_pem + cert.public_bytes(serialization.Encoding.PEM),
        "keyonly.pem": key_pem,
        "b64.pem": b"-----BEGIN CERTIFICATE-----\nAAAAAAAA\n-----END CERTIFICATE-----\n",
        "trunc.jks": struct.pack(">III", 0xFEEDFEED, 2, 1) + b"\x00\x00\x00\x01\x00",
    }
    out = {}
    for n, data in files.items():
        (tmp / n).write_bytes(data)
        out[n] = tmp / n
    return out


PROPS_CASES = {
    # name: (properties, (file the error names: "props" or a store), key the error names)
    "truststore-pem-garbage": (
        "ssl.truststore.type=PEM\nssl.truststore.location={garbage}",
        "garbage",
        "ssl.truststore.location",
    ),
    "truststore-pem-bad-base64": (
        "ssl.truststore.type=PEM\nssl.truststore.location={b64.pem}",
        "b64.pem",
        "ssl.truststore.location",
    ),
    "truststore-pem-only-a-key": (
        "ssl.truststore.type=PEM\nssl.truststore.location={keyonly.pem}",
        "keyonly.pem",
        "ssl.truststore.location",
    ),
    "truststore-pkcs12-garbage": (
        "ssl.truststore.type=PKCS12\nssl.truststore.location={garbage}",
        "garbage",
        "ssl.truststore",
    ),
    "truststore-jks-truncated": (
        "ssl.truststore.location={trunc.jks}",
        "trunc.jks",
        "ssl.truststore.location",
    ),
    "keystore-key-does-not-match-cert": (
        "ssl.keystore.type=PEM\nssl.keystore.location={mismatch.pem}",
        "mismatch.pem",
        "ssl.keystore.location",
    ),
    "keystore-key-without-cert": (
        "ssl.keystore.type=PEM\nssl.keystore.location={keyonly.pem}",
        "keyonly.pem",
        "ssl.keystore.location",
    ),
    "truststore-certificates-inline-garbage": (
        "ssl.truststore.certificates=not a certificate",
        "props",
        "ssl.truststore.certificates",
    ),
    "kafka-python-cafile-name": (
        "ssl.cafile={garbage}",
        "props",
        "ssl.cafile",
    ),
    "truststore-missing-file": (
        "ssl.truststore.type=PEM\nssl.truststore.location={garbage}.nope",
        "garbage",
        "ssl.truststore.location",
    ),
}


@pytest.mark.parametrize("case", sorted(PROPS_CASES) + ["binary-properties"])
@pytest.mark.parametrize("command", ["execute", "describe", "group-list"])
def test_bad_command_config_one_line_naming_file_and_key(case, command, tmp_path, capsys):
    files = _certs(tmp_path)
    props = tmp_path / "client.properties"
    if case == "binary-properties":
        props.write_bytes(files["garbage"].read_bytes())
        names, key = str(props), "binary content"
    else:
        text, where, key = PROPS_CASES[case]
        for n, p in files.items():
            text = text.replace("{" + n + "}", str(p))
        props.write_text("security.protocol=SSL\n" + text + "\n")
        names = str(props) if where == "props" else str(files[where])
    plan = tmp_path / "plan.json"
    plan.write_text('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}')
    common = ["--bootstrap-server", "127.0.0.1:1", "--command-config", str(props)]
    argv = {
        "execute": [
            "cluster",
            "execute",
            "--reassignment-json-file",
            str(plan),
            "--execute",
            "--state-file",
            str(tmp_path / "st.json"),
            *common,
        ],
        "describe": ["cluster", "describe", *common],
        "group-list": ["group", "list", *common],
    }[command]
    rc = cli.main(argv)
    one_line_error(rc, 2, capsys.readouterr().err, names, key)
    assert not (tmp_path / "st.json").exists()


@settings(max_examples=60, deadline=None)
@given(body=st.binary(max_size=200), version=st.sampled_from([1, 2]), count=st.integers(0, 5))
def test_any_jks_bytes_read_or_refused(tmp_path_factory, body, version, count):
    """A store with JKS's magic and any body: keys and certificates, or InputError; nothing else."""
    from kafka_rebalance.errors import InputError
    from kafka_rebalance.kafka.keystores import read_store

    f = tmp_path_factory.mktemp("jks") / "s.jks"
    data = struct.pack(">III", 0xFEEDFEED, version, count) + body
    f.write_bytes(data + hashlib.sha1(b"").digest())
    try:
        read_store("JKS", str(f), None, "pw", "ssl.truststore")
    except InputError as exc:
        assert str(f) in str(exc)


# -- class 9: the demo checks everything before work ----------------------------------------------


@pytest.mark.parametrize(
    "extra, says",
    [
        (["--seed", str(2**64)], "--seed"),
        (["--seed", "-1"], "--seed"),
        (["--master", "bogus://x"], "--master"),
        (["--master", "local[0]"], "--master"),
        (["--master", "local[2"], "--master"),
        (["--master", "spark://host"], "--master"),
        (["--scale", "0"], "--scale"),
    ],
)
def test_demo_refuses_bad_flags_before_any_output(extra, says, tmp_path, capsys):
    out = tmp_path / "new" / "demo"
    rc = cli.main(["demo", "--out", str(out), *extra])
    one_line_error(rc, 2, capsys.readouterr().err, says)
    assert list(tmp_path.iterdir()) == []


def test_demo_refuses_a_bad_spark_master_from_the_environment(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPARK_MASTER", "nowhere")
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    rc = cli.main(["demo", "--out", str(tmp_path / "demo")])
    one_line_error(rc, 2, capsys.readouterr().err, "SPARK_MASTER", "nowhere")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "how, says",
    [
        (["--master", "bogus"], ("--master", "bogus")),
        (["--conf", "spark.master=nowhere"], ("spark.master", "nowhere")),
        ([], ("SPARK_MASTER", "nowhere")),
    ],
)
def test_pipeline_refuses_a_bad_spark_master_before_spark_starts(
    how, says, tmp_path, capsys, monkeypatch
):
    """The check the demo makes, shared: exit 2 naming the flag or variable, nothing written."""
    monkeypatch.setenv("SPARK_MASTER", "nowhere")
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps({"base": {}, "grid": {}}))
    rc = cli.main(["pipeline", "sweep", str(grid), "--out", str(tmp_path / "o"), *how])
    one_line_error(rc, 2, capsys.readouterr().err, *says)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grid.json"]


@pytest.mark.parametrize("out", [".", "..", "/", "CWD"])
def test_pipeline_refuses_the_current_folder_as_out(out, tmp_path, capsys, monkeypatch):
    """`--out .` used to fail with EBUSY after the whole Spark job: refused up front, exit 2."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    grid = tmp_path / "grid.json"
    base = {
        "name": "g",
        "duration_ms": 10_000,
        "group": {"id": "g", "assignors": ["range"]},
        "topics": [{"name": "t", "partitions": 2, "produce_rate": 10}],
        "members": {"count": 1},
    }
    grid.write_text(json.dumps({"base": base, "grid": {"protocol": ["classic"]}}))
    out = str(work) if out == "CWD" else out
    rc = cli.main(["pipeline", "sweep", str(grid), "--out", out, "--master", "local[1]"])
    one_line_error(rc, 2, capsys.readouterr().err, "--out", out)
    assert list(work.iterdir()) == []


@pytest.mark.parametrize(
    "master",
    [
        "local",
        "local[2]",
        "local[*]",
        "local[4,3]",
        "local-cluster[2,1,1024]",
        "spark://h:7077",
        "spark://a:7077,b:7077",
        "yarn",
        "k8s://https://k:443",
    ],
)
def test_demo_master_syntax_accepts_sparks_forms(master):
    from kafka_rebalance.commands.demo_cmd import check_master

    check_master(master, "--master")


def test_no_permission_to_write_is_refused_before_work(tmp_path, capsys, monkeypatch):
    """(As root every folder is writable: os.access stands in for a folder of another user.)"""
    from kafka_rebalance import io_publish

    locked = tmp_path / "locked"
    locked.mkdir()
    real = os.access
    monkeypatch.setattr(
        io_publish.os, "access", lambda p, m: False if Path(p) == locked else real(p, m)
    )
    out = locked / "new" / "p.json"
    rc = cli.main(["cluster", "plan", "--snapshot", str(SNAPSHOT), "--output", str(out)])
    one_line_error(rc, 2, capsys.readouterr().err, "--output", str(out), "no permission")
    assert list(locked.iterdir()) == []


def test_a_default_output_that_is_a_folder_leaves_no_temporary(tmp_path, capsys):
    """`report FILE` writes FILE.report.html beside it (no flag to check first): a folder there is
    refused at the rename, and the temporary written for it does not stay."""
    plan = tmp_path / "plan.json"
    plan.write_text('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}')
    (tmp_path / "plan.report.html").mkdir()
    before = tree(tmp_path)
    rc = cli.main(["report", str(plan)])
    one_line_error(rc, 2, capsys.readouterr().err, str(tmp_path / "plan.report.html"), "directory")
    assert tree(tmp_path) == before
