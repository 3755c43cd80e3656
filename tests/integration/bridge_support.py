"""The bridge against the in-memory stack: its server calls go through the real API
handlers with the token of the config they name, and an outage can be switched on (what
an unreachable server looks like to the CLI: CliError with EXIT_UNREACHABLE)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworks_cli.bridge.journal import Attachment, Journal
from agentworks_cli.bridge.service import Bridge
from agentworks_cli.client import EXIT_UNREACHABLE, CliError, http_error

PERSON_SCOPES = ["admin", "messages:read", "messages:send"]


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
            raise http_error(reply.status, json.dumps(reply.body).encode())
        return reply.body

    def read(self, *, agent_name: str, inbox_id: str | None, after: str | None, limit: int) -> Any:
        query = {"agent_name": agent_name, "inbox_id": inbox_id, "after": after, "limit": limit}
        return self._call("GET", "/v1/messages", query={k: v for k, v in query.items() if v})

    def send(self, body: dict[str, Any]) -> Any:
        return self._call("POST", "/v1/messages", body=body)

    def register(
        self, agent_name: str, purpose: str | None, provider: str, allowed: list[str] | None = None
    ) -> Any:
        body: dict[str, Any] = {"agent_name": agent_name, "provider": provider}
        if purpose:
            body["purpose"] = purpose
        if allowed is not None:
            body["allowed_connection_ids"] = allowed
        return self._call("POST", "/v1/agents", body=body)

    def create_connection(self, body: dict[str, Any]) -> Any:
        return self._call("POST", "/v1/connections", body=body)

    def revoke_connection(self, connection_id: str) -> None:
        self._call("DELETE", f"/v1/connections/{connection_id}")

    # As a runner of cli workflow steps (ApiServer's claim, renew, finish).
    def claim(self, body: dict[str, Any]) -> Any:
        return self._call("POST", "/v1/runner/claim", body=body)

    def renew(self, job_id: str, body: dict[str, Any]) -> Any:
        return self._call("POST", f"/v1/runner/jobs/{job_id}/renew", body=body)

    def finish(self, job_id: str, body: dict[str, Any]) -> Any:
        return self._call("POST", f"/v1/runner/jobs/{job_id}/finish", body=body)


class Servers:
    """config path -> that config's StackServer (attachments name their config; a child
    config the bridge wrote is served with the token it holds)."""

    def __init__(self, api: Any) -> None:
        self.api = api
        self.by_config: dict[str, StackServer] = {}

    def __call__(self, who: Attachment | str) -> StackServer:
        path = who if isinstance(who, str) else who.config_path
        if path not in self.by_config:
            token = json.loads(Path(path).read_text())["token"]
            self.by_config[path] = StackServer(self.api, token)
        return self.by_config[path]

    def person(self, agents: Any, folder: Path) -> tuple[str, StackServer]:
        """A person's login (admin, as `agentworks login` saves it): its path and server."""
        token = agents.connection("person", scopes=PERSON_SCOPES)["token"]
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "person.json"
        path.write_text(json.dumps({"url": "http://in-process", "token": token}))
        self.by_config[str(path)] = StackServer(self.api, token)
        return str(path), self.by_config[str(path)]


def open_bridge(home: Path, servers: Servers, person_config: str) -> Bridge:
    return Bridge(Journal(home / "journal.sqlite3"), servers, person_config)
