from __future__ import annotations

from typing import Any

import pytest

# A real MCP server on 127.0.0.1 (issue 28's attached-server tests).
from tests.support.a2a_test_agent import a2a_agent  # noqa: F401
from tests.support.handlers import Api

# Autouse: after each test on the moto stack, every AWS call its handlers made must be
# allowed by their roles in the SAM-translated template (fails naming the call).
from tests.support.iam_guard import iam_guard  # noqa: F401
from tests.support.mcp_test_server import mcp_server  # noqa: F401


@pytest.fixture
def api(stack: Any) -> Api:
    return Api()


class Agents:
    """Creates connections through the admin API and registers names with them."""

    def __init__(self, stack: Any, api: Api) -> None:
        self.stack, self.api = stack, api

    def connection(
        self, name: str, scopes: list[str] | None = None, token: str | None = None
    ) -> dict:
        body: dict[str, Any] = {"name": name}
        if scopes is not None:
            body["scopes"] = scopes
        reply = self.api("POST", "/v1/connections", token or self.stack.admin_token, body)
        assert reply.status == 201, reply.body
        return reply.body

    def named(self, name: str) -> str:
        """A connection that registered `name`; returns its token."""
        token = self.connection(f"{name}-conn")["token"]
        reply = self.api("POST", "/v1/agents", token, {"agent_name": name})
        assert reply.status == 200, reply.body
        return token


@pytest.fixture
def agents(stack: Any, api: Api) -> Agents:
    return Agents(stack, api)
