"""A local stand-in for API Gateway's HTTP API: routes from template.yaml and payload-2.0
proxy integrations. (Authentication happens in the functions themselves, as deployed.)

`Gateway` turns one request into events and a response (no sockets, so it can be tested
directly); `GatewayServer` is the threaded HTTP server around it. Long polls hold a thread
for up to 25 s, so every connection gets its own thread.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import json
import secrets
import socket
import socketserver
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import IO, Any
from urllib.parse import parse_qsl, unquote, urlsplit

from agentworks_local.handlers import (
    LOCAL_ACCOUNT_ID,
    FunctionError,
    FunctionHost,
    HandlerMissing,
)
from agentworks_local.template import load_template, resources_of_type

# HTTP API's own payload limit; bigger requests never reach a function.
MAX_BODY_BYTES = 10 * 1024 * 1024
# Bodies up to this size are read and dropped before a 413; bigger ones get the connection closed.
_DRAIN_LIMIT = 64 * 1024 * 1024
LOCAL_API_ID = "local"

# Listen backlog: connections the kernel holds before the accept loop takes them. The
# socketserver default (5) made bursts of concurrent clients (60 racing senders) wait for
# SYN retransmits or get reset; the kernel still caps it at net.core.somaxconn.
LISTEN_BACKLOG = 128

_TEXT_TYPES = ("json", "xml", "javascript", "x-www-form-urlencoded", "yaml", "graphql")
# HTTP's methods (RFC 9110, and PATCH): routed as API Gateway routes them. Anything else
# (QUERY, FOO …) is answered by the gateway itself.
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT")
_SERVED_METHODS = "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS"


# -- routes -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    method: str  # GET, POST … or ANY
    path: str  # "/v1/{proxy+}", "/mcp", or "$default"
    function: str  # logical id of the integration's function

    @property
    def key(self) -> str:
        return "$default" if self.path == "$default" else f"{self.method} {self.path}"

    def match(self, method: str, path: str) -> tuple[tuple[int, int, int], dict[str, str]] | None:
        """(priority, path parameters) when the route takes this request; None otherwise."""
        if self.method not in ("ANY", method):
            return None
        if self.path == "$default":
            return (0, 0, 0), {}
        wanted = self.path.strip("/").split("/")
        given = path.strip("/").split("/")
        params: dict[str, str] = {}
        literals = 0
        for index, part in enumerate(wanted):
            if part.startswith("{") and part.endswith("+}"):
                rest = given[index:]
                if not rest or rest == [""]:
                    return None
                params[part[1:-2]] = unquote("/".join(rest))
                # HTTP API prefers exact routes, then variables, then greedy variables.
                return (1, literals, int(self.method != "ANY")), params
            if index >= len(given):
                return None
            if part.startswith("{") and part.endswith("}"):
                if not given[index]:
                    return None
                params[part[1:-1]] = unquote(given[index])
            elif part == given[index]:
                literals += 1
            else:
                return None
        if len(given) != len(wanted):
            return None
        exact = int(not params)
        return (2 + exact, literals, int(self.method != "ANY")), params


def routes_from_template(template: dict[str, Any] | None = None) -> list[Route]:
    """Every HttpApi event of every function."""
    template = template if template is not None else load_template()
    routes = []
    for logical_id, resource in resources_of_type(template, "AWS::Serverless::Function").items():
        for event in ((resource.get("Properties") or {}).get("Events") or {}).values():
            if event.get("Type") != "HttpApi":
                continue
            properties = event.get("Properties") or {}
            routes.append(
                Route(
                    method=str(properties.get("Method", "ANY")).upper(),
                    path=str(properties.get("Path", "$default")),
                    function=logical_id,
                )
            )
    return routes


def select_route(
    routes: list[Route], method: str, path: str
) -> tuple[Route, dict[str, str]] | None:
    best: tuple[tuple[int, int, int], Route, dict[str, str]] | None = None
    for route in routes:
        found = route.match(method, path)
        if found and (best is None or found[0] > best[0]):
            best = (found[0], route, found[1])
    return (best[1], best[2]) if best else None


# -- requests, events and responses ----------------------------------------------------


@dataclass
class Request:
    method: str
    target: str  # request target as sent: path and query
    headers: list[tuple[str, str]]
    body: bytes = b""
    source_ip: str = "127.0.0.1"
    protocol: str = "HTTP/1.1"


@dataclass
class Response:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""


def gateway_message(status: int, message: str) -> Response:
    """HTTP API's own answers ({"message": …}), e.g. 404 Not Found, 413 Too Large."""
    body = json.dumps({"message": message}).encode()
    return Response(status, [("Content-Type", "application/json")], body)


def local_error(status: int, code: str, message: str) -> Response:
    """Answers only the local stack gives, in the API's error shape."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    return Response(status, [("Content-Type", "application/json")], body)


def unknown_method(method: str) -> Response:
    """A method no route serves (QUERY, FOO …): 405 in the API's error shape, not the HTTP
    server's 501 page."""
    response = local_error(
        405,
        "method_not_allowed",
        f"{method[:32]} is not a method this API serves; use {_SERVED_METHODS}.",
    )
    response.headers.append(("Allow", _SERVED_METHODS))
    return response


def _request_id() -> str:
    # HTTP API request ids look like "JKJaXmPLvHcESHA=".
    return base64.b64encode(secrets.token_bytes(10)).decode()


def _is_text(headers: dict[str, str]) -> bool:
    if headers.get("content-encoding", "identity") not in ("", "identity"):
        return False
    kind = headers.get("content-type", "").lower()
    return not kind or kind.startswith("text/") or any(t in kind for t in _TEXT_TYPES)


def build_event(
    request: Request, route: Route, path_parameters: dict[str, str], request_id: str
) -> dict[str, Any]:
    """The payload-2.0 event HTTP API gives a Lambda proxy integration."""
    split = urlsplit(request.target)
    raw_path = split.path or "/"
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in request.headers:
        name = name.lower()
        if name == "cookie":
            # HTTP API moves cookies out of the headers into their own list.
            cookies += [c.strip() for c in value.split(";") if c.strip()]
            continue
        headers[name] = f"{headers[name]},{value}" if name in headers else value
    headers.setdefault("x-forwarded-for", request.source_ip)
    headers.setdefault("x-forwarded-proto", "http")
    host = headers.get("host", "localhost")
    if ":" in host and not host.endswith("]"):
        headers.setdefault("x-forwarded-port", host.rsplit(":", 1)[1])
    headers.setdefault("x-amzn-trace-id", f"Root=1-{int(time.time()):08x}-{uuid.uuid4().hex[:24]}")
    query: dict[str, str] = {}
    for name, value in parse_qsl(split.query, keep_blank_values=True):
        query[name] = f"{query[name]},{value}" if name in query else value
    now = time.time()
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route.key,
        "rawPath": raw_path,
        "rawQueryString": split.query,
        "headers": headers,
        "requestContext": {
            "accountId": LOCAL_ACCOUNT_ID,
            "apiId": LOCAL_API_ID,
            "domainName": host,
            "domainPrefix": host.split(".", 1)[0].split(":", 1)[0],
            "http": {
                "method": request.method,
                "path": raw_path,
                "protocol": request.protocol,
                "sourceIp": request.source_ip,
                "userAgent": headers.get("user-agent", ""),
            },
            "requestId": request_id,
            "routeKey": route.key,
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "isBase64Encoded": False,
    }
    if cookies:
        event["cookies"] = cookies
    if query:
        event["queryStringParameters"] = query
    if path_parameters:
        event["pathParameters"] = path_parameters
    if request.body:
        if _is_text(headers):
            with contextlib.suppress(UnicodeDecodeError):
                event["body"] = request.body.decode("utf-8")
        if "body" not in event:
            event["body"] = base64.b64encode(request.body).decode()
            event["isBase64Encoded"] = True
    return event


def lambda_response(result: Any) -> Response:
    """A payload-2.0 proxy result as HTTP; anything without statusCode is a 200 JSON body,
    as HTTP API infers it."""
    if not (isinstance(result, dict) and "statusCode" in result):
        body = json.dumps(result).encode()
        return Response(200, [("Content-Type", "application/json")], body)
    try:
        status = int(result["statusCode"])
    except (TypeError, ValueError):
        return gateway_message(500, "Internal Server Error")
    headers: list[tuple[str, str]] = []
    for name, value in (result.get("headers") or {}).items():
        if name.lower() not in ("content-length", "transfer-encoding", "connection"):
            headers.append((str(name), str(value)))
    for cookie in result.get("cookies") or []:
        headers.append(("Set-Cookie", str(cookie)))
    raw = result.get("body")
    if raw is None:
        body = b""
    elif result.get("isBase64Encoded"):
        body = base64.b64decode(raw)
    else:
        body = (raw if isinstance(raw, str) else json.dumps(raw)).encode()
    return Response(status, headers, body)


# -- the gateway -----------------------------------------------------------------------


class Gateway:
    """Routes a request to the integration's function."""

    def __init__(
        self,
        host: FunctionHost,
        routes: list[Route] | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        self.host = host
        self.routes = routes if routes is not None else routes_from_template()
        self.warn = warn or (lambda line: print(line, file=sys.stderr, flush=True))
        # The push channel's management API (push_server.PushServer.manage), when serving.
        self.manage_connections: Callable[[Request], Response] | None = None

    def handle(self, request: Request) -> Response:
        request_id = _request_id()
        try:
            response = self._handle(request, request_id)
        except Exception as error:  # a gateway bug must still answer like API Gateway would
            self.warn(f"error: local gateway failed: {type(error).__name__}: {error}")
            response = gateway_message(500, "Internal Server Error")
        response.headers.append(("apigw-requestid", request_id))
        return response

    def _handle(self, request: Request, request_id: str) -> Response:
        path = urlsplit(request.target).path or "/"
        if path.startswith("/@connections/") and self.manage_connections is not None:
            return self.manage_connections(request)
        if request.method not in HTTP_METHODS:
            return unknown_method(request.method)
        selected = select_route(self.routes, request.method, path)
        if selected is None:
            return gateway_message(404, "Not Found")
        route, path_parameters = selected
        if len(request.body) > MAX_BODY_BYTES:
            return gateway_message(413, "Request Entity Too Large")
        event = build_event(request, route, path_parameters, request_id)
        return self._integrate(route, event)

    def _integrate(self, route: Route, event: dict[str, Any]) -> Response:
        try:
            result = self._invoke(route.function, event)
        except HandlerMissing as missing:
            return local_error(
                501,
                "not_implemented",
                f"{route.function} is not available in this build of the local stack ({missing}).",
            )
        except FunctionError:
            return gateway_message(500, "Internal Server Error")
        return lambda_response(result)

    def _invoke(self, function: str, event: dict[str, Any]) -> Any:
        started = time.monotonic()
        try:
            return self.host.invoke(function, event)
        except FunctionError as failure:
            log = self.host.output.path
            where = f" (traceback in {log})" if log else ""
            self.warn(f"error: {failure}{where}")
            raise
        finally:
            elapsed = time.monotonic() - started
            limit = self.host.spec(function).timeout_seconds
            if elapsed > limit:
                # Locally the call completes; on AWS Lambda would have stopped it.
                self.warn(
                    f"warning: {function} ran {elapsed:.1f} s, over its {limit} s timeout; "
                    "on AWS it would have been stopped"
                )


# -- the HTTP server -------------------------------------------------------------------


class _TooLarge(Exception):
    pass


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive for MCP clients; every response has a length
    timeout = 120  # idle keep-alive connections give their thread back
    # Headers and body go out in two writes; with Nagle on, the body waits for the ACK of
    # the headers, which a keep-alive client delays by 40 ms: 15 requests/s at best.
    disable_nagle_algorithm = True
    server: GatewayServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line per request is written by _serve, never with bodies or tokens

    def _serve(self) -> None:
        started = time.monotonic()
        try:
            body = self._read_body()
        except _TooLarge:
            self.close_connection = True  # part of the body may still be on the wire
            response = gateway_message(413, "Request Entity Too Large")
        except ValueError:
            self.close_connection = True
            response = gateway_message(400, "Bad Request")
        else:
            request = Request(
                method=self.command,
                target=self.path,
                headers=list(self.headers.items()),
                body=body,
                source_ip=self.client_address[0],
                protocol=self.request_version,
            )
            response = self.server.gateway.handle(request)
        elapsed_ms = (time.monotonic() - started) * 1000
        path = urlsplit(self.path).path
        # Logged before answering, so a client that got its answer also finds the line.
        self.server.log_line(f"{self.command} {path} {response.status} {elapsed_ms:.0f}ms")
        self._write(response)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        length = int(self.headers.get("Content-Length") or 0)
        if length < 0:
            raise ValueError("negative Content-Length")
        if length > MAX_BODY_BYTES:
            self._discard(length)
            raise _TooLarge
        return self.rfile.read(length) if length else b""

    def _discard(self, length: int) -> None:
        # Read what the client is still sending, so it gets to read the 413 (closing with
        # unread data resets the connection); beyond a bound just close.
        if length > _DRAIN_LIMIT:
            return
        while length > 0:
            chunk = self.rfile.read(min(length, 1 << 20))
            if not chunk:
                return
            length -= len(chunk)

    def _read_chunked(self) -> bytes:
        chunks: list[bytes] = []
        total = 0
        while True:
            size = int(self.rfile.readline(1024).split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline(1024).strip():  # trailers
                    pass
                return b"".join(chunks)
            total += size
            if total > MAX_BODY_BYTES:
                self._discard(size)
                raise _TooLarge
            chunks.append(self.rfile.read(size))
            self.rfile.readline(1024)

    def _write(self, response: Response) -> None:
        try:
            self.send_response(response.status)
            for name, value in response.headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(response.body)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # TRACE too: the ANY route takes it and the function answers 405 in the API's error
    # shape (without this the server itself would answer a 501 HTML page).
    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_TRACE = _serve

    def __getattr__(self, name: str) -> Any:
        # Every other method (CONNECT, QUERY, FOO …) reaches the gateway too, which answers
        # it in the API's error shape; http.server would answer a 501 HTML page.
        if name.startswith("do_"):
            return self._serve
        raise AttributeError(name)


class GatewayServer(ThreadingHTTPServer):
    """Binds first (so a busy port is reported before anything starts), listens later."""

    daemon_threads = True  # a thread per connection, unbounded; none delays the stop
    request_queue_size = LISTEN_BACKLOG  # used by server_activate's listen()

    def __init__(self, host: str, port: int, gateway: Gateway, log: IO[str] | None = None) -> None:
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__((host, port), _RequestHandler, bind_and_activate=False)
        self.gateway = gateway
        self._log = log
        try:
            self.server_bind()
        except BaseException:
            self.server_close()
            raise

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host's FQDN, which can stall on a broken DNS.
        socketserver.TCPServer.server_bind(self)
        self.server_name = str(self.server_address[0])
        self.server_port = int(self.server_address[1])

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def log_line(self, line: str) -> None:
        stream = self._log or sys.stderr
        with contextlib.suppress(OSError, ValueError):  # a closed console must not break requests
            print(line, file=stream, flush=True)


def port_in_use(error: OSError) -> bool:
    return error.errno == errno.EADDRINUSE


def free_port_after(host: str, port: int, tries: int = 100) -> int | None:
    """The first port above `port` that `host` can listen on, and whose next one is free
    too (the push channel's, by default); None when none of `tries` is."""
    for candidate in range(port + 1, min(port + 1 + tries, 65535)):
        if _can_listen(host, candidate) and _can_listen(host, candidate + 1):
            return candidate
    return None


def _can_listen(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True
