"""The `a2a` adapter: a Crew's function or a workflow step hands its turn to an external A2A
agent (issue 30 §2), through the a2a-sdk client on the binding the agent's card prefers.

Settings::

    adapter:
      type: a2a
      card_url: https://agents.example.com/.well-known/agent-card.json
      skill: review            # optional: a skill its card lists (sent in the metadata)
      auth_secret: partner     # optional: Secrets Manager <prefix><account>/partner, a JSON
                               # object of headers ({"Authorization": "Bearer …"})
      timeout_seconds: 120     # how long a turn follows the task (at most 280)

A turn sends one message (a function's task in words and its arguments as a data part;
a message's text) and follows the task with GetTask, the pause doubling from 0.5 s to 5 s:
COMPLETED is the answer (its artifacts' text, and their first data part as the result),
INPUT_REQUIRED the step's question (the answer goes back to the same task on the next
turn), FAILED, REJECTED or CANCELED the turn's failure. Past `timeout_seconds`, or when the
call or run is cancelled meanwhile, the task is cancelled at the agent. Every request goes
through the outbound rules (agentworks.outbound): https, no private addresses.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews.adapters import settings_checks as checks
from agentworks.crews.adapters.base import AdapterError, AwaitedTask, TurnRequest, TurnResult
from agentworks.crews.adapters.mailbox import handoff_message
from agentworks.json_input import whole_numbers
from agentworks.outbound.urls import RefusedUrl, parse

SETTINGS_KEYS = ("type", "card_url", "skill", "auth_secret", "timeout_seconds")
CARD_PATH = "/.well-known/agent-card.json"
# The session a question leaves for the next turn: the agent's task that asked it.
SESSION_PREFIX = "a2a-task:"
# …and a task the tick follows: "a2a-follow:<deadline ms>:<task id>" (the next turn reads it).
FOLLOW_PREFIX = "a2a-follow:"
# The push notification config a waiting call or step registers with the agent (one a task:
# each wait's replaces the one before).
WATCH_CONFIG_ID = "agentworks-wait"
# The task states of an agent still at work (the SDK's enum values, read without importing
# it: the module loads before the SDK is needed).
WORKING = (0, 1, 2)  # UNSPECIFIED, SUBMITTED, WORKING
# Reads a secret's JSON by its name under this account's prefix (None when there is none).
SecretReader = Callable[[str, str], dict[str, str] | None]


def validate(settings: dict[str, Any]) -> list[str]:
    where = "a2a adapter"
    problems = checks.unknown_keys(settings, SETTINGS_KEYS, where)
    problems += checks.required_str(settings, "card_url", where)
    problems += checks.optional_str(settings, "skill", where)
    problems += checks.optional_str(settings, "auth_secret", where)
    problems += checks.optional_int(
        settings, "timeout_seconds", where, 1, limits.A2A_TURN_TIMEOUT_MAX_SECONDS
    )
    card_url = settings.get("card_url")
    if isinstance(card_url, str) and card_url:
        try:
            parse(card_url)
        except RefusedUrl as refused:
            problems.append(f"{where}: 'card_url' is refused: {refused}")
    return problems


class A2aAdapter:
    def __init__(
        self, settings: dict[str, Any], secrets: SecretReader, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        problems = validate(settings)
        if problems:
            raise AdapterError("; ".join(problems))
        self._card_url = str(settings["card_url"])
        self._skill = settings.get("skill")
        self._secret = settings.get("auth_secret")
        self._timeout = float(
            settings.get("timeout_seconds", limits.A2A_TURN_TIMEOUT_DEFAULT_SECONDS)
        )
        self._secrets = secrets
        self._clock = clock  # the platform's: a task's deadline outlives the turn

    def run_turn(self, request: TurnRequest) -> TurnResult:
        headers = self._headers(request.account_id)
        try:
            return asyncio.run(self._turn(request, headers))
        except AdapterError:
            raise
        except Exception as failed:  # the agent's or the network's: a failed turn
            raise AdapterError(f"The A2A agent could not be reached: {_said(failed)}") from None

    def _headers(self, account_id: str) -> dict[str, str]:
        if not self._secret:
            return {}
        headers = self._secrets(account_id, str(self._secret))
        if headers is None:
            raise AdapterError(
                f"The a2a adapter's auth_secret {self._secret!r} was not found: store the "
                "agent's headers as a JSON object in Secrets Manager under this account's "
                "a2a-agents prefix (docs/a2a.md)."
            )
        return headers

    async def _turn(self, request: TurnRequest, headers: dict[str, str]) -> TurnResult:
        from a2a.types.a2a_pb2 import GetTaskRequest, SendMessageRequest

        from agentworks.outbound.async_transport import checked_client

        async with checked_client(headers, limits.A2A_REQUEST_TIMEOUT_SECONDS) as http:
            client, _card = await self._client(http)
            followed = followed_task(request.session_id)
            if followed is not None:  # the tick saw the task end (or its time run out)
                deadline_ms, task_id = followed
                task = await client.get_task(GetTaskRequest(id=task_id))
                return await self._follow(client, task, request, deadline_ms)
            send = SendMessageRequest(message=self._message(request))
            send.configuration.return_immediately = True
            [answer] = [r async for r in client.send_message(send)]
            if answer.HasField("message"):  # the agent answered without a task
                return TurnResult(final_text=_text(answer.message.parts))
            deadline_ms = self._now_ms() + int(self._timeout * 1000)
            return await self._follow(client, answer.task, request, deadline_ms)

    async def _client(self, http: Any) -> tuple[Any, Any]:
        """The a2a client on the binding the agent's card prefers, and the card (read anew,
        so a changed agent is followed)."""
        from a2a.client import A2ACardResolver, ClientConfig, ClientFactory

        base, path = _card_location(self._card_url)
        card = await A2ACardResolver(http, base, path).get_agent_card()
        if self._skill and self._skill not in {s.id for s in card.skills}:
            raise AdapterError(f"The A2A agent's card lists no skill {self._skill!r}.")
        config = ClientConfig(streaming=False, polling=True, httpx_client=http)
        return ClientFactory(config).create(card), card

    def _message(self, request: TurnRequest) -> Any:
        from a2a.helpers.proto_helpers import new_data_part, new_text_part
        from a2a.types.a2a_pb2 import Message, Role

        turn = f"{request.session_id or 'new'}-{request.answer is not None}-{time.time_ns()}"
        message = Message(message_id=f"agentworks-{turn}", role=Role.ROLE_USER)
        continued = (request.session_id or "").removeprefix(SESSION_PREFIX)
        if request.session_id != continued and request.answer is not None:
            message.task_id = continued  # the answer to the question the task asked
            message.parts.append(new_text_part(request.answer))
        else:
            message.parts.append(new_text_part(_task_text(request)))
            if request.kind == "function":
                data = {"function": request.function, "args": request.args or {}}
                message.parts.append(new_data_part(data))
        if self._skill:
            message.metadata.update({"skill": self._skill})
        return message

    async def _follow(
        self, client: Any, task: Any, request: TurnRequest, deadline_ms: int
    ) -> TurnResult:
        """Reads the task until it ends, asks, runs out of time (cancelled at the agent) or
        outlasts this turn's A2A_TURN_FOLLOW_SECONDS (then the tick follows it)."""
        from a2a.types.a2a_pb2 import CancelTaskRequest, GetTaskRequest, TaskState

        started = time.monotonic()
        turn_ends = started + limits.A2A_TURN_FOLLOW_SECONDS
        time_ends = started + (deadline_ms - self._now_ms()) / 1000  # the task's, in this turn
        pause = limits.A2A_POLL_FIRST_SECONDS
        while task.status.state in WORKING:
            stopped = request.cancelled is not None and request.cancelled()
            if stopped or time.monotonic() + pause > time_ends:
                await client.cancel_task(CancelTaskRequest(id=task.id))
                if stopped:
                    raise AdapterError("The run was cancelled; so was the A2A agent's task.")
                raise AdapterError(
                    f"The A2A agent's task did not finish within {self._timeout:g} s; it was "
                    "cancelled."
                )
            if time.monotonic() + pause > turn_ends:
                state = TaskState.Name(task.status.state)
                return TurnResult(
                    awaited_task=AwaitedTask(task.id, deadline_ms),
                    session_id=f"{FOLLOW_PREFIX}{deadline_ms}:{task.id}",
                    progress=[f"A2A task {task.id}: {state}; waiting for it to end"],
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, limits.A2A_POLL_MAX_SECONDS)
            task = await client.get_task(GetTaskRequest(id=task.id))
        return _outcome(task, request)

    def _now_ms(self) -> int:
        return int(self._clock.now() * 1000)

    # ---- what the tick asks while a call or step waits (agentworks.external_tasks) ----

    def task_working(self, account_id: str, task_id: str) -> bool:
        """Whether the agent's task is still submitted or working (not ended, not asking)."""
        from a2a.types.a2a_pb2 import GetTaskRequest

        async def read(client: Any, card: Any) -> bool:
            task = await client.get_task(GetTaskRequest(id=task_id))
            return bool(task.status.state in WORKING)

        return bool(self._with_client(account_id, read))

    def cancel_task(self, account_id: str, task_id: str) -> None:
        """Cancels the task at the agent (its call or run ended while it worked)."""
        from a2a.types.a2a_pb2 import CancelTaskRequest

        async def cancel(client: Any, card: Any) -> None:
            await client.cancel_task(CancelTaskRequest(id=task_id))

        self._with_client(account_id, cancel)

    def watch_task(self, account_id: str, task_id: str, url: str, token: str) -> bool:
        """Asks the agent to notify `url` (with `token`) of the task's changes, when its
        card offers push notifications; one config per task, replaced by the next wait's.
        False when the agent offers none (the tick alone reads the task)."""
        from a2a.types.a2a_pb2 import TaskPushNotificationConfig

        async def watch(client: Any, card: Any) -> bool:
            if not card.capabilities.push_notifications:
                return False
            config = TaskPushNotificationConfig(
                id=WATCH_CONFIG_ID, task_id=task_id, url=url, token=token
            )
            await client.create_task_push_notification_config(config)
            return True

        return bool(self._with_client(account_id, watch))

    def _with_client(self, account_id: str, use: Callable[[Any, Any], Any]) -> Any:
        from agentworks.outbound.async_transport import checked_client

        headers = self._headers(account_id)

        async def run() -> Any:  # the tick's reads: short, so one agent cannot hold it
            async with checked_client(headers, limits.A2A_TICK_REQUEST_TIMEOUT_SECONDS) as http:
                return await use(*await self._client(http))

        return asyncio.run(run())


def _outcome(task: Any, request: TurnRequest) -> TurnResult:
    from a2a.helpers.proto_helpers import get_data_parts
    from a2a.types.a2a_pb2 import TaskState

    state = task.status.state
    said = _text(task.status.message.parts) if task.status.HasField("message") else ""
    progress = [f"A2A task {task.id}: {TaskState.Name(state)}"]
    if state == TaskState.TASK_STATE_COMPLETED:
        parts = [p for artifact in task.artifacts for p in artifact.parts]
        data = get_data_parts(parts)
        result = TurnResult(final_text=_text(parts) or said or None, progress=progress)
        if request.output_schema is not None and data:
            result.result, result.has_result = whole_numbers(data[0]), True
        return result
    if state == TaskState.TASK_STATE_INPUT_REQUIRED:
        return TurnResult(
            question=said or "The A2A agent needs more input.",
            session_id=SESSION_PREFIX + task.id,
            progress=progress,
        )
    outcome = {
        TaskState.TASK_STATE_FAILED: "failed",
        TaskState.TASK_STATE_REJECTED: "rejected the task",
        TaskState.TASK_STATE_CANCELED: "cancelled the task",
        TaskState.TASK_STATE_AUTH_REQUIRED: "needs authentication this adapter cannot give",
    }.get(state, f"answered {TaskState.Name(state)}")
    raise AdapterError(f"The A2A agent {outcome}" + (f": {said}" if said else "."))


def followed_task(session_id: str | None) -> tuple[int, str] | None:
    """(deadline ms, task id) of the task a session follows, or None."""
    if not session_id or not session_id.startswith(FOLLOW_PREFIX):
        return None
    deadline, _, task_id = session_id.removeprefix(FOLLOW_PREFIX).partition(":")
    return int(deadline), task_id


def _card_location(card_url: str) -> tuple[str, str]:
    """(base URL, card path): a URL ending in the well-known path, or the agent's base."""
    if card_url.endswith(".json"):
        base, _, name = card_url.rpartition("/")
        if card_url.endswith(CARD_PATH):
            return card_url[: -len(CARD_PATH)], CARD_PATH
        return base, "/" + name
    return card_url.rstrip("/"), CARD_PATH


def _task_text(request: TurnRequest) -> str:
    if request.kind == "message":
        if request.answer is None:
            return request.prompt
        return f"{request.prompt}\n\nA person answered the pending question:\n{request.answer}"
    # The same words a named agent reads for a hand-off, without the reply instructions.
    return handoff_message(request).replace(
        "Deliver the result by replying as described below", "Deliver the result"
    )


def _text(parts: Any) -> str:
    return "\n".join(p.text for p in parts if p.text)


def _said(error: Exception) -> str:
    """What went wrong in words that carry no header or secret (the error's kind and its
    first line, bounded)."""
    text = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
    return text if "authorization" not in text.lower() else type(error).__name__


def secret_headers(secrets_client: Callable[[], Any], prefix: str) -> SecretReader:
    """Reads `<prefix><account_id>/<name>` (a JSON object of header names to values)."""

    def read(account_id: str, name: str) -> dict[str, str] | None:
        client = secrets_client()
        try:
            value = client.get_secret_value(SecretId=f"{prefix}{account_id}/{name}")
        except client.exceptions.ResourceNotFoundException:
            return None
        headers = json.loads(value["SecretString"])
        if not isinstance(headers, dict):
            raise AdapterError("The a2a adapter's auth_secret must hold a JSON object of headers.")
        return {str(k): str(v) for k, v in headers.items()}

    return read
