"""The server as the bridge uses it: the attachment's own connection (its CLI config)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentworks_cli.client import ApiClient, load_config


class ApiServer:
    def __init__(self, config_path: str) -> None:
        config = load_config(Path(config_path))
        self.client = ApiClient(config.url, config.token, config.path)
        self.push_url = config.push_url

    def read(
        self, *, agent_name: str, inbox_id: str | None, after: str | None, limit: int
    ) -> dict[str, Any]:
        query = {"agent_name": agent_name, "inbox_id": inbox_id, "after": after, "limit": limit}
        return dict(self.client.request("GET", "/v1/messages", query=query))

    def send(self, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self.client.request("POST", "/v1/messages", body=body))

    def register(
        self,
        agent_name: str,
        purpose: str | None,
        provider: str,
        allowed: list[str] | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"agent_name": agent_name, "provider": provider}
        if purpose:
            body["purpose"] = purpose
        if allowed is not None:
            body["allowed_connection_ids"] = allowed
        return dict(self.client.request("POST", "/v1/agents", body=body))

    def create_connection(self, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self.client.request("POST", "/v1/connections", body=body))

    def revoke_connection(self, connection_id: str) -> None:
        self.client.request("DELETE", f"/v1/connections/{connection_id}")

    # ---- as a runner of cli workflow steps (runner.py) ----

    def claim(self, body: dict[str, Any]) -> dict[str, Any]:
        from agentworks_cli import shapes

        answer = self.client.request("POST", "/v1/runner/claim", body=body)
        return shapes.RUNNER_CLAIM.parse(answer)

    def renew(self, job_id: str, body: dict[str, Any]) -> dict[str, Any]:
        from agentworks_cli import shapes

        answer = self.client.request("POST", f"/v1/runner/jobs/{job_id}/renew", body=body)
        return shapes.RUNNER_LEASE.parse(answer)

    def finish(self, job_id: str, body: dict[str, Any]) -> dict[str, Any]:
        from agentworks_cli import shapes

        answer = self.client.request("POST", f"/v1/runner/jobs/{job_id}/finish", body=body)
        return shapes.RUNNER_FINISHED.parse(answer)
