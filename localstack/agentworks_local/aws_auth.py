"""The embedded AWS endpoint answers only requests signed with the stack's own keys.

moto accepts any signature, or none: anything on this machine that found the port (relay
code reads /proc/net/tcp) could scan every account's identity table, read the signing
secret or reset the whole state through /moto-api/. So the stack makes a key pair at each
start, gives it to its own process and to the admin config (mode 0600), and the socket
answers a request only when its SigV4 signature verifies against that pair, as AWS does.
The stack's own calls reach moto in process (in_process.py) and never pass through here.
"""

from __future__ import annotations

import datetime as dt
import hmac
import io
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

WsgiApp = Callable[..., Iterable[bytes]]

_AUTHORIZATION = re.compile(
    r"AWS4-HMAC-SHA256\s+Credential=(?P<key>[^/,\s]+)/(?P<date>\d{8})/(?P<region>[^/,\s]+)/"
    r"(?P<service>[^/,\s]+)/aws4_request,\s*SignedHeaders=(?P<headers>[^,\s]+),\s*"
    r"Signature=(?P<signature>[0-9a-f]{64})\s*$"
)
MAX_CLOCK_SKEW = dt.timedelta(minutes=15)  # AWS's own window (RequestTimeTooSkewed)
_REFUSAL = (
    b'{"__type": "UnrecognizedClientException", "message": "The embedded AWS of the '
    b"AgentWorks local stack answers only requests signed with the stack's own keys "
    b'(aws_access_key_id and aws_secret_access_key in its admin config)."}'
)


@dataclass(frozen=True)
class StackKeys:
    access_key_id: str
    secret_access_key: str

    @classmethod
    def generate(cls) -> StackKeys:
        return cls("ASIALOCAL" + secrets.token_hex(6).upper(), secrets.token_urlsafe(30))


class SignedOnly:
    """WSGI middleware: the wrapped app sees only requests signed with `keys`."""

    def __init__(self, app: WsgiApp, keys: StackKeys) -> None:
        self.app = app
        self.keys = keys

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if not self.verifies(environ):
            headers = [("Content-Type", "application/x-amz-json-1.0")]
            start_response("403 Forbidden", [*headers, ("Content-Length", str(len(_REFUSAL)))])
            return [_REFUSAL]
        return self.app(environ, start_response)

    def verifies(self, environ: dict[str, Any]) -> bool:
        match = _AUTHORIZATION.match(str(environ.get("HTTP_AUTHORIZATION", "")))
        if match is None or not hmac.compare_digest(match["key"], self.keys.access_key_id):
            return False
        headers = _headers(environ)
        stamp = headers.get("x-amz-date", "")
        try:
            signed_at = dt.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)
        except ValueError:
            return False
        if abs(dt.datetime.now(dt.UTC) - signed_at) > MAX_CLOCK_SKEW or stamp[:8] != match["date"]:
            return False
        expected = self._signature(environ, headers, match, stamp)
        return hmac.compare_digest(expected, match["signature"])

    def _signature(
        self, environ: dict[str, Any], headers: dict[str, str], match: re.Match[str], stamp: str
    ) -> str:
        from botocore.auth import S3SigV4Auth, SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        signed = match["headers"].split(";")
        body = b""
        if "x-amz-content-sha256" not in headers:  # else the header is the payload's hash
            body = _read_body(environ)
        raw_path = str(environ.get("RAW_URI") or environ.get("REQUEST_URI") or "/")
        request = AWSRequest(
            method=str(environ.get("REQUEST_METHOD", "GET")),
            url=f"http://{headers.get('host', '')}{raw_path}",
            data=body,
            headers={name: value for name, value in headers.items() if name in signed},
        )
        request.context["timestamp"] = stamp
        credentials = Credentials(self.keys.access_key_id, self.keys.secret_access_key)
        signer_class = S3SigV4Auth if match["service"] == "s3" else SigV4Auth
        signer = signer_class(credentials, match["service"], match["region"])
        canonical = signer.canonical_request(request)
        return str(signer.signature(signer.string_to_sign(request, canonical), request))


def _headers(environ: dict[str, Any]) -> dict[str, str]:
    """The request's headers by lower-case name (werkzeug's view of the WSGI environ)."""
    from werkzeug.datastructures import EnvironHeaders

    return {name.lower(): value for name, value in EnvironHeaders(environ).items()}


def _read_body(environ: dict[str, Any]) -> bytes:
    """The body, read once and put back for the app."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    environ["wsgi.input"] = io.BytesIO(body)
    return bytes(body)
