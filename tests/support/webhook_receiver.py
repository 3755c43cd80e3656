"""A local HTTP receiver of notifyUrl webhooks: keeps every request it got (headers and
body), answering 200 — or 500 while told to fail, as a broken receiver would, or 302 to
another URL.

It listens on 127.0.0.1, which outbound URLs may reach only with the local stack's option
(`agentworks dev --allow-loopback-webhooks`): a test using it asks for the
`allow_loopback_webhooks` fixture (tests/conftest.py), the same switch for the handlers."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes

    def header(self, name: str) -> str:
        """HTTP header names are case-insensitive (urllib sends `X-agentworks-signature`)."""
        found = {k.lower(): v for k, v in self.headers.items()}
        return found[name.lower()]

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    url: str
    failing: bool = False
    redirect: str = ""  # answer 302 to this URL
    received: list[Received] = field(default_factory=list)

    def wait_for(self, event: str, timeout: float = 30) -> Received:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for got in list(self.received):
                if got.json.get("event") == event:
                    return got
            time.sleep(0.02)
        raise AssertionError(f"no {event} webhook in {timeout} s: {self.received}")


@contextmanager
def webhook_receiver() -> Iterator[Receiver]:
    receiver = Receiver(url="")
    path = f"/hooks/agentworks-{uuid.uuid4().hex}"  # its own, whatever port it is given

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path != path:  # another test's stack, retrying to a port given out again
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            receiver.received.append(Received(dict(self.headers.items()), body))
            self.send_response(500 if receiver.failing else 302 if receiver.redirect else 200)
            if receiver.redirect:
                self.send_header("Location", receiver.redirect)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}{path}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
