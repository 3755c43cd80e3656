"""An external A2A agent for the tests, on the a2a-sdk's own server (DefaultRequestHandler,
its in-memory task store, the JSON-RPC and HTTP+JSON routes) served by uvicorn on 127.0.0.1.

What it does with a message, by the function its data part names (or its first word):
- `summarize`: COMPLETED, the artifact `{"summary": args.text}` and a line of text;
- `confirm`: INPUT_REQUIRED ("Which environment?"); the answer sent to the same task
  COMPLETES it with `{"confirmed": answer}`;
- `broken`: FAILED with "the agent broke";
- `slow`: WORKING until the task is cancelled (the cancel is recorded);
- `later`: WORKING until the test sets `release`, then COMPLETED with `{"summary": "later"}`.
Requests without `Authorization: Bearer <token>` are refused (401). Its card offers push
notifications: a config a client registers gets each change of its task (the SDK's sender).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import uvicorn
from a2a.helpers.proto_helpers import get_data_parts, new_data_part, new_task, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    TaskUpdater,
)
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    TaskState,
)
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send


@dataclass
class A2aTestAgent:
    url: str  # its base URL (the card is at url + /.well-known/agent-card.json)
    token: str
    messages: list[Message] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)  # task ids
    unauthorized: int = 0
    slow_started: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)  # ends `later`
    registered: list[Any] = field(default_factory=list)  # push notification configs set

    @property
    def card_url(self) -> str:
        return f"{self.url}/.well-known/agent-card.json"

    def wait_cancelled(self, timeout: float = 10) -> str:
        deadline = time.monotonic() + timeout
        while not self.cancelled:
            assert time.monotonic() < deadline, "the task was never cancelled"
            time.sleep(0.05)
        return self.cancelled[0]


class _Executor(AgentExecutor):
    def __init__(self, state: A2aTestAgent) -> None:
        self._state = state

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None and context.task_id and context.context_id
        self._state.messages.append(context.message)
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        task = context.current_task
        if task is None:  # the SDK wants the task before any update of it
            await event_queue.enqueue_event(
                new_task(context.task_id, context.context_id, TaskState.TASK_STATE_SUBMITTED)
            )
        await updater.start_work()
        calls = [d for d in get_data_parts(context.message.parts) if isinstance(d, dict)]
        # A function call's data part names the work; a message's first word does.
        words = context.get_user_input().split()
        function = calls[0].get("function") if calls else (words[0] if words else None)
        if task is not None:  # an answer to the question `confirm` asked
            answer = context.get_user_input()
            await updater.add_artifact([new_data_part({"confirmed": answer})], name="result")
            await updater.complete()
        elif function == "summarize":
            text = str(calls[0]["args"]["text"])
            await updater.add_artifact(
                [new_data_part({"summary": text}), new_text_part(f"Summarized: {text}")],
                name="result",
            )
            await updater.complete()
        elif function == "confirm":
            await updater.requires_input(
                updater.new_agent_message([new_text_part("Which environment?")])
            )
        elif function == "broken":
            await updater.failed(updater.new_agent_message([new_text_part("the agent broke")]))
        elif function == "later":
            while not self._state.release.is_set():
                await asyncio.sleep(0.02)
            await updater.add_artifact(
                [new_data_part({"summary": "later"}), new_text_part("Done later")], name="result"
            )
            await updater.complete()
        elif function == "slow":
            self._state.slow_started.set()
            await asyncio.Event().wait()  # until the task is cancelled
        else:
            await updater.reject(updater.new_agent_message([new_text_part("unknown work")]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id and context.context_id
        self._state.cancelled.append(context.task_id)
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class _RecordedConfigs(InMemoryPushNotificationConfigStore):
    """The SDK's config store, keeping what clients registered for the tests to read."""

    def __init__(self, state: A2aTestAgent) -> None:
        super().__init__()
        self._state = state

    async def set_info(self, task_id: str, config: Any, context: Any) -> Any:
        self._state.registered.append(config)
        return await super().set_info(task_id, config, context)


class _Gate:
    """Refuses requests without the bearer token (the card too)."""

    def __init__(self, app: Any, state: A2aTestAgent) -> None:
        self.app, self.state = app, state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            if headers.get("authorization") != f"Bearer {self.state.token}":
                self.state.unauthorized += 1
                await JSONResponse({"error": "unauthorized"}, status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _card(base: str) -> AgentCard:
    return AgentCard(
        name="partner",
        description="The tests' external A2A agent.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=base, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=base, protocol_binding="HTTP+JSON", protocol_version="1.0"),
        ],
        capabilities=AgentCapabilities(streaming=False, push_notifications=True),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[AgentSkill(id="review", name="review", description="Reviews work", tags=["x"])],
    )


@contextmanager
def a2a_test_agent(token: str = "test-a2a-bearer-51c2") -> Iterator[A2aTestAgent]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    state = A2aTestAgent(url=base, token=token)
    card = _card(base)
    # Push notifications as the SDK sends them: each change of a task to every config a
    # client registered for it (the a2a adapter registers the platform's callback URL).
    configs = _RecordedConfigs(state)
    sender = BasePushNotificationSender(httpx.AsyncClient(timeout=10), configs)
    handler = DefaultRequestHandler(
        _Executor(state), InMemoryTaskStore(), card, push_config_store=configs, push_sender=sender
    )
    app = Starlette(
        routes=[
            *create_agent_card_routes(card),
            *create_jsonrpc_routes(handler, "/"),
            *create_rest_routes(handler),
        ]
    )
    server = uvicorn.Server(uvicorn.Config(_Gate(app, state), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test A2A agent did not start")
        time.sleep(0.01)
    try:
        yield state
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture
def a2a_agent(allow_loopback_webhooks: None) -> Iterator[A2aTestAgent]:
    """The test A2A agent, reachable by the handlers (loopback allowed as `agentworks dev
    --allow-loopback-webhooks` allows it)."""
    with a2a_test_agent() as agent:
        yield agent
