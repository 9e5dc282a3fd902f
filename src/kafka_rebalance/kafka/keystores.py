"""Kafka's SSL key and trust stores (PEM, JKS, PKCS12) turned into one `ssl.SSLContext`.

A Java client reads `ssl.keystore.*` / `ssl.truststore.*` with the JDK's KeyStore; Python's `ssl`
reads PEM only. So the stores are read here and handed to OpenSSL as PEM (a private key goes
through a 0600 file in a private temporary directory that is removed at once):

* PEM: `*.location` names a file with the key and certificate chain (key store) or the
  certificates (trust store), or `ssl.keystore.key` / `ssl.keystore.certificate.chain` /
  `ssl.truststore.certificates` hold the PEM text itself, as Kafka allows (KIP-651);
* PKCS12: read with `cryptography`;
* JKS: the JDK's own format, read here (the store's SHA-1 integrity check, and the JDK
  KeyProtector's SHA-1 stream for private keys). As the JDK since 9 does for a store typed JKS,
  a PKCS12 file is accepted too. JCEKS is not.

Errors name the property (`ssl.keystore.password`, ...) and the store file.
"""

from __future__ import annotations

import hashlib
import os
import re
import ssl
import struct
import tempfile
from dataclasses import dataclass

from ..errors import InputError

JKS_MAGIC = 0xFEEDFEED
JCEKS_MAGIC = 0xCECECECE
# The JDK's KeyProtector algorithm (sun.security.provider.KeyProtector).
_KEY_PROTECTOR_OID = bytes.fromhex("2b060104012a02110101")  # 1.3.6.1.4.1.42.2.17.1.1


@dataclass(frozen=True)
class KeyMaterial:
    """A private key (PKCS#8 DER) with its certificate chain (DER, leaf first)."""

    key_der: bytes
    chain: tuple[bytes, ...]


# ---------------------------------------------------------------------------
# JKS


def _utf(buf: bytes, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">H", buf, pos)
    pos += 2
    return buf[pos : pos + n].decode("utf-8", "replace"), pos + n


def _der(buf: bytes, pos: int) -> tuple[int, bytes, int]:
    """(tag, content, next position) of one DER element."""
    tag = buf[pos]
    length = buf[pos + 1]
    pos += 2
    if length & 0x80:
        k = length & 0x7F
        length = int.from_bytes(buf[pos : pos + k], "big")
        pos += k
    return tag, buf[pos : pos + length], pos + length


def _password_bytes(password: str) -> bytes:
    return password.encode("utf-16-be")


def _jks_unprotect(encrypted_info: bytes, password: str, where: str, field: str) -> bytes:
    """The PKCS#8 key inside a JKS private-key entry (EncryptedPrivateKeyInfo, KeyProtector)."""
    _tag, seq, _ = _der(encrypted_info, 0)
    _tag, alg, pos = _der(seq, 0)
    _tag, oid, _ = _der(alg, 0)
    if oid != _KEY_PROTECTOR_OID:
        raise InputError(
            "a JKS private key protected by another algorithm (JCEKS?) is not supported",
            source=where,
            field=field,
        )
    _tag, data, _ = _der(seq, pos)
    salt, enc, check = data[:20], data[20:-20], data[-20:]
    pw = _password_bytes(password)
    stream = bytearray()
    digest = salt
    while len(stream) < len(enc):
        digest = hashlib.sha1(pw + digest).digest()
        stream += digest
    plain = bytes(a ^ b for a, b in zip(enc, stream))
    if hashlib.sha1(pw + plain).digest() != check:
        raise InputError(
            "Cannot recover key: wrong key password", source=where, field="ssl.key.password"
        )
    return plain


def read_jks(
    data: bytes, store_password: str | None, key_password: str | None, where: str, prefix: str
) -> tuple[list[KeyMaterial], list[bytes]]:
    """Private-key entries and trusted certificates of a JKS store."""
    magic, version, count = struct.unpack_from(">III", data, 0)
    if magic == JCEKS_MAGIC:
        raise InputError(
            "JCEKS key stores are not supported: convert it to PKCS12 with keytool -importkeystore",
            source=where,
            field=f"{prefix}.type",
        )
    if magic != JKS_MAGIC or version not in (1, 2):
        raise InputError("not a JKS key store (Invalid keystore format)", source=where)
    if store_password is not None:
        body, digest = data[:-20], data[-20:]
        expect = hashlib.sha1(_password_bytes(store_password) + b"Mighty Aphrodite" + body).digest()
        if expect != digest:
            raise InputError(
                "Keystore was tampered with, or password was incorrect",
                source=where,
                field=f"{prefix}.password",
            )
    pos = 12
    keys: list[KeyMaterial] = []
    trusted: list[bytes] = []
    for _ in range(count):
        (tag,) = struct.unpack_from(">I", data, pos)
        pos += 4
        _alias, pos = _utf(data, pos)
        pos += 8  # creation date
        if tag == 1:
            (n,) = struct.unpack_from(">I", data, pos)
            enc = data[pos + 4 : pos + 4 + n]
            pos += 4 + n
            (chain_len,) = struct.unpack_from(">I", data, pos)
            pos += 4
            chain = []
            for _ in range(chain_len):
                if version == 2:
                    _type, pos = _utf(data, pos)
                (n,) = struct.unpack_from(">I", data, pos)
                chain.append(data[pos + 4 : pos + 4 + n])
                pos += 4 + n
            password = key_password if key_password is not None else store_password
            if password is None:
                raise InputError(
                    f"the key store holds a private key: set ssl.key.password or {prefix}.password",
                    source=where,
                    field="ssl.key.password",
                )
            keys.append(KeyMaterial(_jks_unprotect(enc, password, where, prefix), tuple(chain)))
        elif tag == 2:
            if version == 2:
                _type, pos = _utf(data, pos)
            (n,) = struct.unpack_from(">I", data, pos)
            trusted.append(data[pos + 4 : pos + 4 + n])
            pos += 4 + n
        else:
            raise InputError(f"unknown JKS entry tag {tag}", source=where)
    return keys, trusted


# ---------------------------------------------------------------------------
# PKCS12 and PEM (cryptography)


def _crypto():
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError:  # pragma: no cover - a declared dependency
        raise InputError(
            "reading PKCS12/JKS stores needs the Python package 'cryptography'"
        ) from None
    return x509, serialization, pkcs12


def read_pkcs12(
    data: bytes, password: str | None, where: str, prefix: str
) -> tuple[list[KeyMaterial], list[bytes]]:
    x509, serialization, pkcs12 = _crypto()
    try:
        store = pkcs12.load_pkcs12(data, password.encode() if password is not None else None)
    except ValueError as exc:
        raise InputError(
            f"cannot read the PKCS12 store (wrong password?): {exc}",
            source=where,
            field=f"{prefix}.password",
        ) from None
    keys: list[KeyMaterial] = []
    certs = [c.certificate.public_bytes(serialization.Encoding.DER) for c in store.additional_certs]
    if store.key is not None and store.cert is not None:
        der = store.key.private_bytes(
            serialization.Encoding.DER,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        chain = [store.cert.certificate.public_bytes(serialization.Encoding.DER), *certs]
        keys.append(KeyMaterial(der, tuple(chain)))
    elif store.cert is not None:
        certs.insert(0, store.cert.certificate.public_bytes(serialization.Encoding.DER))
    return keys, certs


def read_pem(
    text: str, key_password: str | None, where: str, field: str
) -> tuple[list[KeyMaterial], list[bytes]]:
    x509, serialization, _ = _crypto()
    data = text.encode()
    try:
        certs = [
            c.public_bytes(serialization.Encoding.DER)
            for c in x509.load_pem_x509_certificates(data)
        ]
    except ValueError:
        certs = []
    keys: list[KeyMaterial] = []
    block = re.search(rb"-----BEGIN ([A-Z ]*PRIVATE KEY)-----.*?-----END \1-----", data, re.S)
    if block is not None:
        try:
            key = serialization.load_pem_private_key(
                block.group(0), key_password.encode() if key_password else None
            )
        except (ValueError, TypeError) as exc:
            raise InputError(
                f"cannot read the private key: {exc}", source=where, field="ssl.key.password"
            ) from None
        der = key.private_bytes(
            serialization.Encoding.DER,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        keys.append(KeyMaterial(der, tuple(certs)))
        return keys, []
    if not certs:
        raise InputError("no PEM certificate found", source=where, field=field)
    return keys, certs


def read_store(
    kind: str,
    location: str,
    store_password: str | None,
    key_password: str | None,
    prefix: str,
) -> tuple[list[KeyMaterial], list[bytes]]:
    """(private keys with chains, trusted certificates) of one store file of type JKS/PKCS12/PEM."""
    try:
        return _read_store(kind, location, store_password, key_password, prefix)
    except (struct.error, IndexError) as exc:
        raise InputError(
            f"a truncated or corrupt {kind.upper()} store ({exc})",
            source=location,
            field=f"{prefix}.location",
        ) from None


def _read_store(
    kind: str,
    location: str,
    store_password: str | None,
    key_password: str | None,
    prefix: str,
) -> tuple[list[KeyMaterial], list[bytes]]:
    try:
        with open(location, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise InputError("file not found", source=location, field=f"{prefix}.location") from None
    except OSError as exc:
        raise InputError(
            f"cannot read: {exc.strerror or exc}", source=location, field=f"{prefix}.location"
        ) from None
    kind = kind.upper()
    if kind == "PEM":
        return read_pem(data.decode("latin-1"), key_password, location, f"{prefix}.location")
    if (
        kind == "JKS"
        and len(data) >= 4
        and struct.unpack_from(">I", data)[0]
        in (
            JKS_MAGIC,
            JCEKS_MAGIC,
        )
    ):
        return read_jks(data, store_password, key_password, location, prefix)
    if kind in ("JKS", "PKCS12"):
        return read_pkcs12(data, store_password, location, prefix)
    raise InputError(f"unknown store type {kind!r} (JKS, PKCS12 or PEM)", field=f"{prefix}.type")


# ---------------------------------------------------------------------------
# SSLContext


def _pem_cert(der: bytes) -> str:
    return ssl.DER_cert_to_PEM_cert(der)


def _pem_key(der: bytes) -> str:
    import base64

    b64 = base64.encodebytes(der).decode().replace("\n", "")
    lines = [b64[i : i + 64] for i in range(0, len(b64), 64)]
    return "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----\n"


def build_context(
    trusted: list[bytes] | None,
    key: KeyMaterial | None,
    check_hostname: bool,
    protocols: tuple[str, ...] = (),
    trust_where: tuple[str, str] = ("--command-config", "ssl.truststore.location"),
    key_where: tuple[str, str] = ("--command-config", "ssl.keystore.location"),
) -> ssl.SSLContext:
    """A client SSLContext: these CAs (None: the system's), this client key, hostname check or not.

    `trust_where` and `key_where` (file, property) name where the certificates and the key came
    from: OpenSSL's refusal of either is an InputError naming them, not a traceback.
    """
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = check_hostname
    ctx.verify_mode = ssl.CERT_REQUIRED
    # TLS 1.2 unless ssl.enabled.protocols asks for TLSv1.3 alone: a TLS 1.3 broker sends session
    # tickets after the handshake, and kafka-python closes a connection that has data to read with
    # no request in flight ("Socket EVENT_READ without in-flight-requests"), at random.
    versions = {"TLSV1.2": ssl.TLSVersion.TLSv1_2, "TLSV1.3": ssl.TLSVersion.TLSv1_3}
    chosen = [versions[p.upper()] for p in protocols if p.upper() in versions] or [
        ssl.TLSVersion.TLSv1_2
    ]
    if ssl.TLSVersion.TLSv1_2 in chosen:
        chosen = [ssl.TLSVersion.TLSv1_2]
    ctx.minimum_version = min(chosen)
    ctx.maximum_version = max(chosen)
    if trusted is None:
        ctx.load_default_certs()
    elif not trusted:
        raise InputError("no certificate found", source=trust_where[0], field=trust_where[1])
    else:
        try:
            ctx.load_verify_locations(cadata="".join(_pem_cert(c) for c in trusted))
        except (ssl.SSLError, ValueError) as exc:
            raise InputError(
                f"OpenSSL refused the certificates: {_ssl_reason(exc)}",
                source=trust_where[0],
                field=trust_where[1],
            ) from None
    if key is not None:
        tmp = tempfile.mkdtemp(prefix="kafka-rebalance-key-")
        path = os.path.join(tmp, "client.pem")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(_pem_key(key.key_der) + "".join(_pem_cert(c) for c in key.chain))
            try:
                ctx.load_cert_chain(path)
            except (ssl.SSLError, ValueError) as exc:
                what = "no certificate for the key" if not key.chain else _ssl_reason(exc)
                raise InputError(
                    f"OpenSSL refused the key and its certificate chain: {what}",
                    source=key_where[0],
                    field=key_where[1],
                ) from None
        finally:
            try:
                os.unlink(path)
            finally:
                os.rmdir(tmp)
    return ctx


def _ssl_reason(exc: Exception) -> str:
    """OpenSSL's reason (`KEY_VALUES_MISMATCH`: key values mismatch), without the C file and line."""
    reason = getattr(exc, "reason", None)
    text = str(exc.args[1] if isinstance(exc, ssl.SSLError) and len(exc.args) > 1 else exc)
    text = re.sub(r"\s*\(_ssl\.c:\d+\)", "", text)
    return f"{text} ({reason})" if reason and reason not in text else text
