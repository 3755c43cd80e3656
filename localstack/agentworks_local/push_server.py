"""The WebSocket API of template.yaml's `PushApi`, served locally (what API Gateway does).

Each upgrade request is the `$connect` route: the integration (PushFunction) gets the
event API Gateway would send and the upgrade is refused with its status and body unless it
answers 200. Each text frame is routed by `$request.body.action` (falling back to
`$default`); a route with a route response sends the integration's body back. A closed
socket is `$disconnect`. Posting goes the way it does on AWS: the notifier's
`apigatewaymanagementapi` client calls `POST /@connections/{id}` on the local gateway,
which hands the data to the live socket, or answers 410 GoneException.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from agentworks_local.gateway import Request, Response
from agentworks_local.handlers import FunctionError, FunctionHost
from agentworks_local.template import load_template, resources_of_type

STAGE = "v1"
MAX_FRAME_BYTES = 128 * 1024  # API Gateway's WebSocket message limit


def _connection_id() -> str:
    # API Gateway's look like "L0SM9cOFvHcCIhw=".
    return base64.b64encode(secrets.token_bytes(10)).decode()


def routes(template: dict[str, Any] | None = None) -> dict[str, bool]:
    """The PushApi's route keys, each with whether it answers (has a route response)."""
    template = template if template is not None else load_template()
    declared = resources_of_type(template, "AWS::ApiGatewayV2::Route")
    answering = {
        r["Properties"]["RouteId"]["Ref"]
        for r in resources_of_type(template, "AWS::ApiGatewayV2::RouteResponse").values()
    }
    return {
        route["Properties"]["RouteKey"]: logical_id in answering
        for logical_id, route in declared.items()
        if route["Properties"]["ApiId"] == {"Ref": "PushApi"}
    }


class PushServer:
    def __init__(
        self,
        host: str,
        port: int,
        functions: FunctionHost,
        warn: Callable[[str], None],
        function: str = "PushFunction",
    ) -> None:
        from websockets.sync.server import serve

        self.functions = functions
        self.function = function
        self.warn = warn
        self.routes = routes()
        self._sockets: dict[str, Any] = {}  # connectionId -> live ServerConnection
        self._opening: dict[Any, str] = {}  # websockets' connection.id -> connectionId
        self._lock = threading.Lock()
        # Binds now (a busy port is reported at start); serves once `start` runs.
        self._server = serve(
            self._session,
            host,
            port,
            process_request=self._connect,
            max_size=MAX_FRAME_BYTES,
            ping_interval=None,  # API Gateway pings no one; clients keep themselves alive
            compression=None,
        )
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.socket.getsockname()[1])

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="agentworks-push", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            # Never served (a start that failed later): shutdown() would wait for
            # serve_forever() to acknowledge, so only the listening socket is closed.
            self._server.socket.close()
            return
        self._server.shutdown()
        self._thread.join(5)

    # -- the routes -------------------------------------------------------------------

    def _event(self, route: str, ws_id: str, **extra: Any) -> dict[str, Any]:
        kind = {"$connect": "CONNECT", "$disconnect": "DISCONNECT"}.get(route, "MESSAGE")
        return {
            "requestContext": {
                "routeKey": route,
                "eventType": kind,
                "connectionId": ws_id,
                "stage": STAGE,
                "apiId": "local",
                "domainName": "127.0.0.1",
                "requestId": _connection_id(),
                "requestTimeEpoch": int(time.time() * 1000),
                "messageDirection": "IN",
            },
            "isBase64Encoded": False,
            **extra,
        }

    def _invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        try:
            answer = self.functions.invoke(self.function, event)
        except FunctionError as failure:
            self.warn(f"error: {failure}")
            return {"statusCode": 500, "body": json.dumps({"message": "Internal server error"})}
        return answer if isinstance(answer, dict) else {"statusCode": 200}

    def _connect(self, connection: Any, request: Any) -> Any:
        ws_id = _connection_id()
        query = dict(parse_qsl(urlsplit(request.path).query))
        headers = {name.lower(): value for name, value in request.headers.raw_items()}
        answer = self._invoke(
            self._event("$connect", ws_id, headers=headers, queryStringParameters=query or None)
        )
        status = int(answer.get("statusCode", 200))
        if status != 200:
            return connection.respond(status, str(answer.get("body") or ""))
        with self._lock:
            self._opening[connection.id] = ws_id
        return None

    def _session(self, connection: Any) -> None:
        with self._lock:
            ws_id = self._opening.pop(connection.id)
            self._sockets[ws_id] = connection
        try:
            for frame in connection:
                text = frame if isinstance(frame, str) else frame.decode("utf-8", "replace")
                route = self._route_of(text)
                answer = self._invoke(self._event(route, ws_id, body=text))
                if self.routes.get(route) and answer.get("body") is not None:
                    connection.send(str(answer["body"]))
        except Exception:  # a socket that breaks mid-frame is a disconnect like any other
            pass
        finally:
            with self._lock:
                self._sockets.pop(ws_id, None)
            self._invoke(self._event("$disconnect", ws_id))

    def _route_of(self, text: str) -> str:
        try:
            action = json.loads(text).get("action")
        except (ValueError, AttributeError):
            action = None
        return action if isinstance(action, str) and action in self.routes else "$default"

    # -- the management API (POST/GET/DELETE /@connections/{id}) -------------------------

    def manage(self, request: Request) -> Response:
        ws_id = unquote(urlsplit(request.target).path.removeprefix("/@connections/"))
        with self._lock:
            connection = self._sockets.get(ws_id)
        if connection is None:
            gone = [("x-amzn-ErrorType", "GoneException"), ("Content-Type", "application/json")]
            return Response(410, gone, b'{"message":null}')
        if request.method == "POST":
            try:
                connection.send(request.body.decode("utf-8", "replace"))
            except Exception:
                return Response(410, [("x-amzn-ErrorType", "GoneException")], b"{}")
        elif request.method == "DELETE":
            connection.close(1000, "closed by the server")
        return Response(200, [("Content-Type", "application/json")], b"{}")
