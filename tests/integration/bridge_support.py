"""The bridge against the in-memory stack: its server calls go through the real API
handlers with the attachment's token, and an outage can be switched on (what an
unreachable server looks like to the CLI: CliError with EXIT_UNREACHABLE)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworks_cli.bridge.journal import Attachment, Journal
from agentworks_cli.bridge.service import Bridge
from agentworks_cli.client import EXIT_UNREACHABLE, CliError, http_error


@dataclass
class StackServer:
    """One connection's view of the server, as ApiServer gives the bridge."""

    api: Any
    token: str
    down: bool = False
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    lose_next_answer: bool = False  # the request lands, the answer never arrives

    def _call(self, method: str, path: str, body: Any = None, query: Any = None) -> Any:
        self.calls.append((f"{method} {path}", dict(query or body or {})))
        if self.down:
            raise CliError("cannot reach the server (down)", EXIT_UNREACHABLE)
        reply = self.api(method, path, self.token, body=body, query=query)
        if self.lose_next_answer:
            self.lose_next_answer = False
            raise CliError("the connection dropped before the answer", EXIT_UNREACHABLE)
        if reply.status >= 400:
            raise http_error(reply.status, __import__("json").dumps(reply.body).encode())
        return reply.body

    def read(self, *, agent_name: str, inbox_id: str | None, after: str | None, limit: int) -> Any:
        query = {"agent_name": agent_name, "inbox_id": inbox_id, "after": after, "limit": limit}
        return self._call("GET", "/v1/messages", query={k: v for k, v in query.items() if v})

    def send(self, body: dict[str, Any]) -> Any:
        return self._call("POST", "/v1/messages", body=body)

    def register(self, agent_name: str, purpose: str | None, provider: str) -> Any:
        body = {"agent_name": agent_name, "provider": provider}
        return self._call(
            "POST", "/v1/agents", body=body | ({"purpose": purpose} if purpose else {})
        )


class Servers:
    """config path -> that config's StackServer (attachments name their config)."""

    def __init__(self) -> None:
        self.by_config: dict[str, StackServer] = {}

    def __call__(self, who: Attachment | str) -> StackServer:
        return self.by_config[who if isinstance(who, str) else who.config_path]


def open_bridge(home: Path, servers: Servers, person_config: str) -> Bridge:
    return Bridge(Journal(home / "journal.sqlite3"), servers, person_config)
