"""Lambda sends SIGTERM before it retires an environment only when an extension is
registered: the API function registers one that subscribes to nothing and writes the read
tally at SIGTERM. Shown against a stand-in Runtime API, in a real process that is sent
SIGTERM; and off Lambda nothing is registered."""

from __future__ import annotations

import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from agentworks import shutdown

CHILD = """
import sys
from pathlib import Path
from agentworks import shutdown
out = Path(sys.argv[1])
shutdown.on_shutdown(lambda: 1 / 0)  # a failing callback stops no other
shutdown.on_shutdown(lambda: out.write_text("flushed"))
print(shutdown.enable_in_lambda(), flush=True)
sys.stdin.read()  # wait to be sent SIGTERM
"""


class RuntimeApi(http.server.BaseHTTPRequestHandler):
    seen: list[tuple[str, str, dict[str, str], Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append(("POST", self.path, dict(self.headers), body))
        self.send_response(200)
        self.send_header("Lambda-Extension-Identifier", "ext-123")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def do_GET(self) -> None:
        self.seen.append(("GET", self.path, dict(self.headers), None))
        threading.Event().wait(30)  # /event/next with no event subscribed: no answer

    def log_message(self, *_: Any) -> None:
        pass


def test_registers_an_extension_and_runs_the_callbacks_at_sigterm(tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RuntimeApi)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {**os.environ, "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{server.server_port}"}
    out = tmp_path / "flushed.txt"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(out)],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "True"
        assert not out.exists()
        deadline = time.monotonic() + 10
        while len(RuntimeApi.seen) < 2:  # the extension's thread asks for its next event
            assert time.monotonic() < deadline, RuntimeApi.seen
            time.sleep(0.01)
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=10) == 0
    finally:
        child.kill()
        server.shutdown()
    assert out.read_text() == "flushed"
    register, waiting = RuntimeApi.seen[0], RuntimeApi.seen[1]
    assert register[:2] == ("POST", "/2020-01-01/extension/register")
    assert register[2]["Lambda-Extension-Name"] == shutdown.EXTENSION_NAME
    assert register[3] == {"events": []}
    assert waiting[:2] == ("GET", "/2020-01-01/extension/event/next")
    assert waiting[2]["Lambda-Extension-Identifier"] == "ext-123"


def test_off_lambda_nothing_is_registered() -> None:
    assert shutdown.enable_in_lambda({}) is False
    assert signal.getsignal(signal.SIGTERM) is not shutdown._on_sigterm


def test_an_unreachable_runtime_api_leaves_the_function_as_it_was() -> None:
    assert shutdown.enable_in_lambda({"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9"}) is False
    assert signal.getsignal(signal.SIGTERM) is not shutdown._on_sigterm
