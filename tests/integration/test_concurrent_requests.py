"""Concurrent requests through one loaded API function (the local stack serves each request
on its own thread): each acts as its own principal and keeps its own request state (A3, A4)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tests.support.handlers import Api


def test_racing_requests_never_see_each_others_principal(stack: Any) -> None:
    api = Api()
    tokens = {}
    for name in ("one", "two", "three", "four"):
        created = api("POST", "/v1/connections", stack.admin_token, {"name": name}).body
        tokens[created["connection_id"]] = created["token"]
    asked = [conn for conn in tokens for _ in range(15)]

    def whoami(connection_id: str) -> tuple[str, int, Any]:
        reply = api("GET", "/v1/whoami", tokens[connection_id])
        return connection_id, reply.status, reply.body

    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(whoami, asked))
    assert [status for _, status, _ in answers] == [200] * len(asked)
    assert all(body["connection_id"] == wanted for wanted, _, body in answers)


def test_racing_creates_each_get_their_own_status(stack: Any) -> None:
    """A route's status code (201) comes from its own request state, not another's."""
    api = Api()

    def create(index: int) -> int:
        reply = api("POST", "/v1/connections", stack.admin_token, {"name": f"c{index}"})
        whoami = api("GET", "/v1/whoami", stack.admin_token)
        assert whoami.status == 200
        return reply.status

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert set(pool.map(create, range(24))) == {201}
