"""A real HTTP listener in front of the test stack's API function: relay code runs in a
process of its own and calls the platform over HTTP, as it does on AWS."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

from agentworks_cli.localstack.gateway import Gateway, GatewayServer
from tests.support.handlers import invoke_function


class _Host:
    """What the gateway asks of the local function host, over the tests' handlers."""

    output = SimpleNamespace(path=None)

    def invoke(self, function: str, event: dict[str, Any]) -> Any:
        return invoke_function(function, event)

    def spec(self, function: str) -> Any:
        return SimpleNamespace(timeout_seconds=29)


@contextmanager
def serving(stack: Any) -> Iterator[str]:
    """Serves the stack's API on a free loopback port; the relay host calls it back there."""
    server = GatewayServer("127.0.0.1", 0, Gateway(_Host(), warn=lambda line: None))  # type: ignore[arg-type]
    server.server_activate()
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    url = f"http://127.0.0.1:{server.port}"
    host = stack.services.relays.host
    before, host.api_url = host.api_url, url
    try:
        yield url
    finally:
        host.api_url = before
        server.shutdown()
        server.server_close()
