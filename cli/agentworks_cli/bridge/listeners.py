"""One push-channel stream per attachment (docs/push.md): connect, catch up from the saved
positions, read what each notice names, ping inside API Gateway's idle timeout, and
reconnect with backoff capped at 30 s — catching up again, so an outage loses nothing."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from agentworks_cli.bridge.intake import Intake
from agentworks_cli.bridge.journal import Attachment, Journal
from agentworks_cli.bridge.push_client import BACKOFF_MAX_SECONDS, notices, open_channel


class Listener(threading.Thread):
    def __init__(
        self,
        attachment: Attachment,
        journal: Journal,
        intake: Intake,
        push_url: str,
        token: str,
        after_connect: Callable[[], object],
        warn: Callable[[str], None],
    ) -> None:
        super().__init__(name=f"bridge-{attachment.agent_name}", daemon=True)
        self.attachment = attachment
        self._journal = journal
        self._intake = intake
        self._url = f"{push_url.rstrip('/')}/?{urlencode({'agent_name': attachment.agent_name})}"
        self._token = token
        self._after_connect = after_connect
        self._warn = warn
        self.stopping = threading.Event()
        self.connected = threading.Event()
        self._socket: Any = None

    def _still_attached(self) -> bool:
        current = self._journal.attachment(self.attachment.session)
        return current is not None and current.state == "attached"

    def run(self) -> None:
        pause = 1.0
        while not self.stopping.is_set() and self._still_attached():
            try:
                with open_channel(self._url, self._token) as socket:
                    self._socket = socket
                    self.connected.set()
                    pause = 1.0
                    self._intake.catch_up(self.attachment)
                    self._after_connect()
                    for notice in notices(socket):
                        if self.stopping.is_set():
                            return
                        self._intake.on_notice(self.attachment, notice)
            except Exception as error:  # an outage, a restart, the 2-hour limit
                self.connected.clear()
                if self.stopping.is_set():
                    return
                self._warn(f"{self.attachment.agent_name}: push channel down ({error}); retrying")
            self.stopping.wait(pause)
            pause = min(pause * 2, BACKOFF_MAX_SECONDS)

    def stop(self) -> None:
        self.stopping.set()
        if self._socket is not None:
            self._socket.close()
