"""The bridge's private local socket: one JSON request line, one JSON answer line.

The socket lives in the bridge's folder (0700) and is itself 0600: only the person's own
processes (their hooks) reach it. Hooks connect here and nowhere else.
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAX_REQUEST_BYTES = 1024 * 1024


def ask(path: Path, request: dict[str, Any], timeout: float = 10.0) -> dict[str, Any] | None:
    """The bridge's answer, or None when no bridge listens there (it is not running)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(timeout)
            client.connect(str(path))
            client.sendall(json.dumps(request).encode() + b"\n")
            data = b""
            while not data.endswith(b"\n"):
                chunk = client.recv(65536)
                if not chunk:
                    break
                data += chunk
    except (FileNotFoundError, ConnectionRefusedError):
        return None
    answer = json.loads(data) if data.strip() else {}
    return answer if isinstance(answer, dict) else {}


class _Handler(socketserver.StreamRequestHandler):
    server: LocalSocketServer

    def handle(self) -> None:
        line = self.rfile.readline(MAX_REQUEST_BYTES)
        try:
            request = json.loads(line)
            answer = self.server.respond(request) if isinstance(request, dict) else {}
        except Exception as error:  # one bad request must not stop the bridge
            answer = {"error": f"{type(error).__name__}: {error}"}
        self.wfile.write(json.dumps(answer).encode() + b"\n")


class LocalSocketServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: Path, respond: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        path.unlink(missing_ok=True)  # a socket left by a bridge that died
        self.respond = respond
        old = os.umask(0o177)  # the socket is created 0600
        try:
            super().__init__(str(path), _Handler)
        finally:
            os.umask(old)
        self.path = path
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.serve_forever, name="bridge-socket", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.path.unlink(missing_ok=True)
