"""Small API steps the e2e tests share: make a named agent, read an inbox to its end."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from agentworks import limits
from tests.e2e.conftest import LocalStack, http


def api(local_stack: LocalStack, method: str, path: str, token: str, body: Any = None) -> Any:
    """(status, body, headers) of one request to the stack."""
    return http(method, f"{local_stack.url}{path}", token=token, body=body)


def named_agent(local_stack: LocalStack, name: str) -> str:
    """A new connection (default scopes) that registered `name`; its token."""
    status, created, _ = api(
        local_stack, "POST", "/v1/connections", local_stack.admin_token, {"name": f"{name}-conn"}
    )
    assert status == 201, created
    status, registered, _ = api(
        local_stack, "POST", "/v1/agents", created["token"], {"agent_name": name}
    )
    assert status == 200, registered
    return str(created["token"])


def read_pages(local_stack: LocalStack, token: str, where: dict[str, str]) -> list[Any]:
    """Every message of an inbox or a mailbox (`where`), page by page, through the API."""
    messages: list[Any] = []
    after: str | None = None
    while True:
        query = {**where, "limit": str(limits.PAGE_MAX)}
        if after is not None:
            query["after"] = after
        status, page, _ = api(local_stack, "GET", f"/v1/messages?{urlencode(query)}", token)
        assert status == 200, page
        if not page["messages"]:
            return messages
        messages += page["messages"]
        after = page["next_cursor"]


def read_all(local_stack: LocalStack, token: str, inbox_id: str) -> list[str]:
    """Every message id of one inbox."""
    return [m["message_id"] for m in read_pages(local_stack, token, {"inbox_id": inbox_id})]


def seq_of(message_id: str) -> int:
    # msg_<conversation ULID><receiving side><10-digit seq> (agentworks.ids.MessageRef).
    return int(message_id[-10:])
