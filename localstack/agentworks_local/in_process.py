"""The stack's own AWS calls reach the embedded endpoint without a socket.

The handlers, the scheduler and moto's Step Functions runner live in the same process as
the embedded AWS endpoint. Over HTTP each of their calls paid for a TCP connection and a
server thread (werkzeug closes every connection after one answer): about 8 ms a DynamoDB
call, against about 3 ms for the same request handed to the same WSGI app in process.
So botocore's `before-send` event hands every request for the endpoint's address to the
app directly: the same app, the same journal in front of it, the same bytes back; only the
socket is gone. Anything outside the process (the CLI, a test, `aws --endpoint-url`) still
reaches the endpoint over HTTP.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterable, Mapping
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

WsgiApp = Callable[..., Iterable[bytes]]

_LOOPBACK = frozenset({"127.0.0.1", "localhost"})
_DYNAMODB_TARGET = "DynamoDB_20120810."
_UNIQUE_ID = "agentworks-in-process-aws"


def wsgi_environ(
    method: str, path: str, query: str, headers: Mapping[str, Any], body: bytes, host: str
) -> dict[str, Any]:
    """The WSGI environ werkzeug's server would build for this request."""
    from moto.core.request import (
        PRESERVED_HEADER_NAMES_ENVIRON_KEY,
        environ_key_for_header,
        should_preserve_original_header_name,
    )

    server_name, _, server_port = host.partition(":")
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path or "/",
        "QUERY_STRING": query,
        "SERVER_NAME": server_name,
        "SERVER_PORT": server_port or "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": host,
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    preserved: dict[str, str] = {}
    for name, value in headers.items():
        text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
        key = environ_key_for_header(name)
        if "_" in name and not should_preserve_original_header_name(name):
            continue  # werkzeug's server drops these too (an X_Foo could spoof an X-Foo)
        if should_preserve_original_header_name(name):
            preserved.setdefault(key, name)
        environ[key] = text
    environ["CONTENT_LENGTH"] = str(len(body))
    environ[PRESERVED_HEADER_NAMES_ENVIRON_KEY] = preserved
    return environ


def call_app(app: WsgiApp, environ: dict[str, Any]) -> tuple[int, list[tuple[str, str]], bytes]:
    """(status, headers, body) of one request; an exception is a 500, as a server gives."""
    answer: dict[str, Any] = {}

    def start_response(status: str, headers: Any, exc_info: Any = None) -> None:
        answer.update(status=status, headers=list(headers))

    try:
        result = app(environ, start_response)
        try:
            body = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
    except Exception as error:  # the server's answer to an app that failed
        message = f"internal error in the local AWS endpoint: {type(error).__name__}: {error}"
        return 500, [("Content-Type", "text/plain")], message.encode()
    return int(str(answer["status"]).split(" ", 1)[0]), answer["headers"], body


class DynamoDBDirect:
    """WSGI: DynamoDB's JSON API goes straight to moto's DynamoDB handler, as moto's in-memory
    mode calls it; everything else to moto's server app. Flask's routing, request and
    response objects were a quarter of a local DynamoDB call (2.1 ms a GetItem, 1.6 without)
    and add nothing to a JSON API with one URL."""

    def __init__(self, app: WsgiApp) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if not str(environ.get("HTTP_X_AMZ_TARGET", "")).startswith(_DYNAMODB_TARGET):
            return self.app(environ, start_response)
        from moto.core.request import Request
        from moto.dynamodb.responses import DynamoHandler
        from moto.moto_api import recorder

        request = Request(environ)
        recorder._record_request(request)
        # moto answers DynamoDB's errors as (status, headers, body) too; anything it raises
        # reaches call_app's 500, as it reaches the server's through Flask.
        status, headers, body = DynamoHandler.dispatch(
            request, request.raw_url, dict(request.headers)
        )
        data = body.encode("utf-8") if isinstance(body, str) else bytes(body)
        pairs = headers.items() if isinstance(headers, Mapping) else headers
        start_response(f"{status} {_reason(status)}", [(str(k), str(v)) for k, v in pairs])
        return [data]


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


class InProcessTransport:
    """botocore `before-send` handler: requests for `url`'s port on loopback go to `app`."""

    def __init__(self, app: WsgiApp, url: str) -> None:
        self.app = app
        self.port = urlsplit(url).port

    def attach(self, session: Any) -> None:
        """Serves the requests of `session`'s clients created from now on (boto3 or botocore)."""
        events = session.events
        events.unregister("before-send", unique_id=_UNIQUE_ID)
        events.register("before-send", self, unique_id=_UNIQUE_ID)

    def __call__(self, request: Any, **_: Any) -> Any:
        target = urlsplit(request.url)
        if target.hostname not in _LOOPBACK or target.port != self.port:
            return None  # not ours: botocore sends it as usual
        from botocore.awsrequest import AWSResponse, HTTPHeaders
        from moto.core.botocore_stubber import MockRawResponse

        environ = wsgi_environ(
            request.method, target.path, target.query, request.headers, _body(request),
            target.netloc,
        )  # fmt: skip
        status, headers, body = call_app(self.app, environ)
        answer = HTTPHeaders()
        for name, value in headers:
            answer[name] = value
        return AWSResponse(request.url, status, answer, MockRawResponse(body))


def _body(request: Any) -> bytes:
    body = request.body
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, bytes | bytearray):
        return bytes(body)
    data = body.read()  # a file-like body (an S3 upload)
    if hasattr(body, "seek"):
        body.seek(0)  # a retry reads it again
    return data if isinstance(data, bytes) else str(data).encode("utf-8")


def install(app: WsgiApp, url: str) -> InProcessTransport:
    """Every botocore session made from now on, and boto3's default one, sends the requests
    for `url` to `app` in process."""
    import boto3
    import botocore.handlers

    transport = InProcessTransport(app, url)
    botocore.handlers.BUILTIN_HANDLERS[:] = [
        entry for entry in botocore.handlers.BUILTIN_HANDLERS if not _ours(entry)
    ]
    botocore.handlers.BUILTIN_HANDLERS.append(("before-send", transport))
    if boto3.DEFAULT_SESSION is not None:  # made before: its handlers are already set
        transport.attach(boto3.DEFAULT_SESSION)
    return transport


def uninstall() -> None:
    """Sessions made from now on send over HTTP again (a stopped stack's port may be
    reused by another server in the same process)."""
    import boto3
    import botocore.handlers

    botocore.handlers.BUILTIN_HANDLERS[:] = [
        entry for entry in botocore.handlers.BUILTIN_HANDLERS if not _ours(entry)
    ]
    if boto3.DEFAULT_SESSION is not None:
        boto3.DEFAULT_SESSION.events.unregister("before-send", unique_id=_UNIQUE_ID)


def _ours(entry: tuple[Any, ...]) -> bool:
    return len(entry) > 1 and isinstance(entry[1], InProcessTransport)
