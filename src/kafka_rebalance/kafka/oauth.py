"""SASL/OAUTHBEARER tokens for kafka-python, from the properties a Java client would use.

Two ways, as Kafka's own login callback handlers:

* client credentials (KIP-768, `OAuthBearerLoginCallbackHandler`): POST
  `grant_type=client_credentials[&scope=...]` to `sasl.oauthbearer.token.endpoint.url` with HTTP
  basic auth `clientId:clientSecret` (each URL-encoded, as Kafka's HttpAccessTokenRetriever does)
  and use the `access_token` of the JSON answer;
* unsecured (`OAuthBearerUnsecuredLoginCallbackHandler`, Kafka's default, for tests and
  development): an unsigned JWS (`alg: none`) with `sub` from `unsecuredLoginStringClaim_sub`.

The token is kept until a minute before it expires (its `exp` claim, else `expires_in`).
"""

from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping

from ..errors import InputError


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _exp_of(token: str) -> float | None:
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        return float(claims["exp"])
    except (IndexError, ValueError, KeyError, TypeError):
        return None


def unsecured_jws(options: Mapping[str, str], now: float | None = None) -> str:
    """What OAuthBearerUnsecuredLoginCallbackHandler makes from the JAAS options."""
    now = time.time() if now is None else now
    sub_name = options.get("unsecuredLoginPrincipalClaimName", "sub")
    lifetime = float(options.get("unsecuredLoginLifetimeSeconds", "3600"))
    claims: dict = {
        "iat": now,
        "exp": now + lifetime,
        sub_name: options["unsecuredLoginStringClaim_sub"],
    }
    for key, value in options.items():
        if key.startswith("unsecuredLoginStringClaim_") and key != "unsecuredLoginStringClaim_sub":
            claims[key[len("unsecuredLoginStringClaim_") :]] = value
        elif key.startswith("unsecuredLoginNumberClaim_"):
            claims[key[len("unsecuredLoginNumberClaim_") :]] = float(value)
        elif key.startswith("unsecuredLoginListClaim_") and value:
            sep, rest = value[0], value[1:]
            claims[key[len("unsecuredLoginListClaim_") :]] = [x for x in rest.split(sep) if x]
    header = _b64url(json.dumps({"alg": "none"}).encode())
    return f"{header}.{_b64url(json.dumps(claims).encode())}."


def _provider_base():
    from kafka.sasl.oauth import AbstractTokenProvider

    return AbstractTokenProvider


def make_token_provider(
    options: Mapping[str, str], props: Mapping[str, str], source: str
):  # -> kafka.sasl.oauth.AbstractTokenProvider
    """A kafka-python token provider for these JAAS options and client properties."""
    url = props.get("sasl.oauthbearer.token.endpoint.url", "").strip()
    extensions = {
        k[len("extension_") :]: v for k, v in options.items() if k.startswith("extension_")
    }
    if url:
        for need in ("clientId", "clientSecret"):
            if not options.get(need):
                raise InputError(
                    f'OAUTHBEARER with sasl.oauthbearer.token.endpoint.url needs {need}="..." '
                    "in sasl.jaas.config",
                    source=source,
                    field="sasl.jaas.config",
                )
        fetch = _client_credentials(url, options, props, source)
    elif options.get("unsecuredLoginStringClaim_sub"):

        def fetch() -> tuple[str, float | None]:
            token = unsecured_jws(options)
            return token, _exp_of(token)
    else:
        raise InputError(
            "OAUTHBEARER needs sasl.oauthbearer.token.endpoint.url with clientId and clientSecret "
            'in sasl.jaas.config (client credentials), or unsecuredLoginStringClaim_sub="..."',
            source=source,
            field="sasl.oauthbearer.token.endpoint.url",
        )
    base = _provider_base()

    class TokenProvider(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            self._token: str | None = None
            self._expires = 0.0

        def token(self) -> str:
            if self._token is None or time.time() > self._expires - 60:
                token, exp = fetch()
                self._token, self._expires = token, exp if exp is not None else time.time() + 3600
            return self._token

        def extensions(self) -> dict:
            return dict(extensions)

    return TokenProvider()


def _client_credentials(
    url: str, options: Mapping[str, str], props: Mapping[str, str], source: str
):
    timeout_ms = props.get("sasl.login.read.timeout.ms") or props.get(
        "sasl.login.connect.timeout.ms"
    )
    timeout = float(timeout_ms) / 1000 if timeout_ms and timeout_ms.strip().isdigit() else 10.0
    q = urllib.parse.quote
    basic = base64.b64encode(
        f"{q(options['clientId'], safe='')}:{q(options['clientSecret'], safe='')}".encode()
    ).decode()
    body = "grant_type=client_credentials"
    if options.get("scope"):
        body += "&scope=" + q(options["scope"], safe="")

    def fetch() -> tuple[str, float | None]:
        req = urllib.request.Request(
            url,
            data=body.encode(),
            headers={
                "Authorization": f"Basic {basic}",
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                answer = json.loads(resp.read().decode())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise InputError(
                f"cannot get an OAuth token from {url}: {exc}",
                source=source,
                field="sasl.oauthbearer.token.endpoint.url",
            ) from None
        token = answer.get("access_token") if isinstance(answer, dict) else None
        if not token:
            raise InputError(
                f"the token endpoint {url} answered without access_token",
                source=source,
                field="sasl.oauthbearer.token.endpoint.url",
            )
        exp = _exp_of(token)
        if exp is None and isinstance(answer.get("expires_in"), int | float):
            exp = time.time() + float(answer["expires_in"])
        return token, exp

    return fetch
