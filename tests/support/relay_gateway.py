"""A real HTTP listener in front of the test stack's API function: relay code runs in a
process of its own and calls the platform over HTTP, as it does on AWS."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from types import SimpleNamespace
from typing import Any

from agentworks_local.gateway import Gateway, GatewayServer
from tests.support.handlers import invoke_function


class _Host:
    """What the gateway asks of the local function host, over the tests' handlers; each
    invocation inside `around()` when given (the bench tags the requests it makes)."""

    output = SimpleNamespace(path=None)

    def __init__(self, around: Callable[[], AbstractContextManager[Any]] | None) -> None:
        self._around = around or nullcontext

    def invoke(self, function: str, event: dict[str, Any]) -> Any:
        with self._around():
            return invoke_function(function, event)

    def spec(self, function: str) -> Any:
        return SimpleNamespace(timeout_seconds=29)


@contextmanager
def serving(
    services: Any, around: Callable[[], AbstractContextManager[Any]] | None = None
) -> Iterator[str]:
    """Serves the API on a free loopback port; the relay host calls it back there."""
    gateway = Gateway(_Host(around), warn=lambda line: None)  # type: ignore[arg-type]
    server = GatewayServer("127.0.0.1", 0, gateway, log=io.StringIO())  # no request log
    server.server_activate()
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    url = f"http://127.0.0.1:{server.port}"
    host = services.relays.host
    before, host.api_url = host.api_url, url
    try:
        yield url
    finally:
        host.api_url = before
        server.shutdown()
        server.server_close()
