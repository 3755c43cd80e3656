"""The bridge process: its journal, its local socket and a listener per attachment.

One per computer: the folder's lock file holds its pid, and a second start says which
process already runs. `agentworks bridge start` runs this in the background.
"""

from __future__ import annotations

import fcntl
import os
import sys
import threading
from pathlib import Path
from typing import Any, TextIO

from agentworks_cli.bridge.journal import Attachment, Journal
from agentworks_cli.bridge.listeners import Listener
from agentworks_cli.bridge.local_socket import LocalSocketServer
from agentworks_cli.bridge.runner import Runner, load_settings
from agentworks_cli.bridge.server_api import ApiServer
from agentworks_cli.bridge.service import Bridge
from agentworks_cli.client import CliError

DEFAULT_HOME = Path("~/.agentworks/bridge")
HOME_ENV = "AGENTWORKS_BRIDGE_HOME"
OUTBOX_EVERY_SECONDS = 2.0
RUNNER_STOP_SECONDS = 8.0  # within `bridge stop`'s wait: the CLI stopped, the step told


def bridge_home() -> Path:
    return Path(os.environ.get(HOME_ENV) or DEFAULT_HOME).expanduser()


def socket_path(home: Path) -> Path:
    return home / "bridge.sock"


class BridgeProcess:
    def __init__(self, home: Path, person_config: str, log: TextIO = sys.stderr) -> None:
        self.home = home
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(home, 0o700)
        self._lock = open(home / "bridge.lock", "a+")  # noqa: SIM115 (held for the life)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.seek(0)
            other = self._lock.read().strip() or "another process"
            raise CliError(
                f"a bridge already runs here (pid {other}); `agentworks bridge stop`"
            ) from None
        self._lock.seek(0)
        self._lock.truncate()
        self._lock.write(str(os.getpid()))
        self._lock.flush()
        self._log = log
        self._servers: dict[str, ApiServer] = {}
        self.journal = Journal(home / "journal.sqlite3")
        self.bridge = Bridge(self.journal, self._server_of, person_config, self._listen)
        self.listeners: dict[str, Listener] = {}
        self.socket = LocalSocketServer(socket_path(home), self.bridge.handle)
        self.stopping = threading.Event()
        # Runs cli workflow steps with the person's login, once they opted in (--runner).
        settings = load_settings(home)
        self.runner = None
        if settings is not None and settings.enabled:
            self.runner = Runner(self._server_of(person_config), settings, self._warn)
            self.bridge.runner_status = self.runner.status

    def _server_of(self, who: Attachment | str) -> ApiServer:
        path = who if isinstance(who, str) else who.config_path
        if path not in self._servers:
            self._servers[path] = ApiServer(path)
        return self._servers[path]

    def _warn(self, line: str) -> None:
        print(line, file=self._log, flush=True)

    def _listen(self, attachment: Attachment) -> None:
        running = self.listeners.get(attachment.session)
        if running is not None and running.is_alive():
            return
        server = self._server_of(attachment)
        if not server.push_url:
            self._warn(f"{attachment.agent_name}: no push_url in its config; hooks still work")
            return
        listener = Listener(
            attachment, self.journal, self.bridge.intake, server.push_url,
            str(server.client.token), self.bridge.flush_outbox, self._warn,
        )  # fmt: skip
        self.listeners[attachment.session] = listener
        listener.start()

    def start(self) -> None:
        for attachment in self.journal.attachments():
            if attachment.state == "attached":
                self._listen(attachment)
        self.socket.start()
        if self.runner is not None:
            self.runner.start()

    def run(self) -> None:
        """Until `stopping` is set (SIGTERM, Ctrl-C): the outbox retried meanwhile."""
        self.start()
        self._warn(f"bridge running (pid {os.getpid()}); socket {socket_path(self.home)}")
        while not self.stopping.wait(OUTBOX_EVERY_SECONDS):
            try:
                self.bridge.flush_outbox()
            except Exception as error:
                self._warn(f"outbox: {error}")
        self.stop()

    def stop(self) -> None:
        if self.runner is not None:
            self.runner.stop()  # a running CLI is stopped and reported as such
            self.runner.join(RUNNER_STOP_SECONDS)
        self.socket.stop()
        for listener in self.listeners.values():
            listener.stop()
        self.journal.close()
        self._lock.close()


def status_lines(answer: dict[str, Any]) -> list[str]:
    lines = runner_lines(answer.get("runner"))
    for a in answer.get("attachments", []):
        counts = ", ".join(f"{n} {state}" for state, n in sorted(a["messages"].items())) or "none"
        lines.append(
            f"{a['agent_name']:<20} {a['state']:<9} {a['route']:<6} {a['session']}  ({counts})"
        )
        if a.get("hooks") and a["hooks"] != "ok":
            lines.append(f"  hooks: {a['hooks']}")
    return lines if answer.get("attachments") else [*lines, "no attachments"]


def runner_lines(runner: dict[str, Any] | None) -> list[str]:
    """Whether this bridge runs cli workflow steps, with what, where and what it does now."""
    if not runner:
        return ["runner: off (`agentworks bridge start --runner` runs cli workflow steps here)"]
    found = ", ".join(
        f"{command} ({path})" if path else f"{command} (not found)"
        for command, path in runner["commands"].items()
    )
    job = runner.get("job")
    doing = f"running {job['command']} for step {job['step']} of {job['run_id']}" if job else "idle"
    lines = [
        f"runner: on as {runner['name']} in {runner['workdir']}",
        f"  {found}; {doing}; {runner['turns_run']} turns run",
    ]
    if runner.get("last_error"):
        lines.append(f"  last error: {runner['last_error']}")
    return lines
