"""Concurrent requests through one loaded API function (the local stack serves each request
on its own thread): each acts as its own principal and keeps its own request state (A3, A4)."""

from __future__ import annotations

from collections import Counter
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


# The first requests after a cold start, released together: the document and one request of
# each of several groups (each includes its group into the shared resolver on the way).
FIRST_REQUESTS = (
    ("/v1/openapi.json", None),
    ("/v1/whoami", "connection_id"),
    ("/v1/openapi.json", None),
    ("/v1/crews", "crews"),
    ("/v1/adapters", "adapters"),
    ("/v1/openapi.json", None),
    ("/v1/webhooks", "webhooks"),
    ("/v1/workflow-definitions", "workflows"),
    ("/v1/openapi.json", None),
    ("/api/relays", "relays"),
    ("/v1/agents", "agents"),
    ("/v1/openapi.json", None),
)
ROUNDS = 12


def test_first_requests_to_several_groups_and_the_document_race_safely(stack: Any) -> None:
    """Issue 23: lazy route groups under concurrency. Each round is a fresh resolver (the
    module reloaded, as a new container): every thread waits at a barrier, then sends its
    first request; every answer is the route's own (200, its body), never a 500."""
    import importlib
    import json
    import threading

    from agentworks.http_api import app as module
    from tests.support.handlers import http_event

    token = stack.admin_token
    events = [
        http_event("GET", path, token=None if key is None else token)
        for path, key in FIRST_REQUESTS
    ]
    failures: list[str] = []
    try:
        for _ in range(ROUNDS):
            fresh = importlib.reload(module)
            start = threading.Barrier(len(events))
            answers: list[Any] = [None] * len(events)

            def first(
                index: int, fresh: Any = fresh, start: Any = start, answers: Any = answers
            ) -> None:
                start.wait()
                answers[index] = fresh.resolve(dict(events[index]), None)

            threads = [threading.Thread(target=first, args=(i,)) for i in range(len(events))]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            for (path, key), answer in zip(FIRST_REQUESTS, answers, strict=True):
                body = json.loads(answer["body"])
                wanted = "paths" if key is None else key
                if answer["statusCode"] != 200 or wanted not in body:
                    failures.append(f"{path} {answer['statusCode']}")
    finally:
        importlib.reload(module)  # a resolver no thread raced, for the tests that follow
    total = ROUNDS * len(events)
    assert not failures, f"{len(failures)} of {total} answers failed: {Counter(failures)}"
