"""The a2a-sdk client (protocol 1.0) against the local stack's `/a2a` over HTTP, on both
bindings (issue 30 §1): discover a Crew's card, call a function by data part, follow the
task to COMPLETED with its artifact, answer an INPUT_REQUIRED question, list the caller's
tasks — one record with the HTTP API, and another account's task unknown byte for byte."""

from __future__ import annotations

import copy
import json
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.helpers.proto_helpers import get_data_parts, new_data_part, new_text_part
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import (
    InvalidParamsError,
    TaskNotCancelableError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict

from tests.e2e.conftest import LocalStack, http
from tests.e2e.test_cli_messages import Cli
from tests.integration.crew_support import CONTRACTS

pytestmark = pytest.mark.e2e

TIMEOUT = 60.0
BINDINGS = [TransportProtocol.JSONRPC.value, TransportProtocol.HTTP_JSON.value]
IDENTITY_TABLE = "agentworks-IdentityTable"


@pytest.fixture(autouse=True)
def _no_proxy_for_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def connection(local_stack: LocalStack, admin_token: str | None = None) -> str:
    status, body, _ = http(
        "POST",
        f"{local_stack.url}/v1/connections",
        token=admin_token or local_stack.admin_token,
        body={
            "name": f"a2a-{uuid.uuid4().hex[:8]}",
            "scopes": ["functions:call", "functions:read", "messages:send", "messages:read"],
        },
    )
    assert status == 201, body
    return str(body["token"])


def a2a_http(
    method: str, url: str, token: str | None = None, body: Any = None, version: str = "1.0"
) -> tuple[int, Any]:
    """One request as any A2A client sends it (its version header), raw."""
    headers = {"A2A-Version": version} if version else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    answer = httpx.request(method, url, json=body, headers=headers, timeout=30.0)
    return answer.status_code, answer.json() if answer.content else None


def second_account_admin(local_stack: LocalStack, config: Path) -> str:
    """`agentworks bootstrap` of another account on the same stack; its admin's token."""
    cli = Cli(local_stack)
    admin = json.loads(local_stack.admin_config.read_text())
    cli.env.update(
        AWS_ENDPOINT_URL=admin["aws_endpoint_url"],
        AWS_ACCESS_KEY_ID=admin["aws_access_key_id"],
        AWS_SECRET_ACCESS_KEY=admin["aws_secret_access_key"],
        AWS_DEFAULT_REGION=admin["aws_region"],
    )
    cli.ok("bootstrap", "--identity-table", IDENTITY_TABLE, "--url", local_stack.url,
           "--account-name", "other", config=config)  # fmt: skip
    return str(json.loads(config.read_text())["token"])


def create_crew(local_stack: LocalStack, admin_token: str | None = None) -> str:
    return create_crew_named(local_stack, f"contracts-{uuid.uuid4().hex[:8]}", admin_token)


def create_crew_named(local_stack: LocalStack, name: str, admin_token: str | None = None) -> str:
    definition = copy.deepcopy(CONTRACTS)
    definition["name"] = name
    status, body, _ = http(
        "POST",
        f"{local_stack.url}/v1/crews",
        token=admin_token or local_stack.admin_token,
        body=definition,
    )
    assert status == 201, body
    return name


@asynccontextmanager
async def a2a_client(
    local_stack: LocalStack, token: str, crew: str, binding: str, streaming: bool = False
) -> AsyncIterator[tuple[Client, AgentCard]]:
    async with httpx.AsyncClient(
        headers={"Authorization": f"Bearer {token}"}, timeout=30.0
    ) as transport:
        resolver = A2ACardResolver(transport, f"{local_stack.url}/a2a/{crew}")
        card = await resolver.get_agent_card()
        config = ClientConfig(
            streaming=streaming, httpx_client=transport, supported_protocol_bindings=[binding]
        )
        client = ClientFactory(config).create(card)
        try:
            yield client, card
        finally:
            await client.close()


def call_message(function: str, args: dict[str, Any], **fields: Any) -> Message:
    return Message(
        message_id=uuid.uuid4().hex,
        role=Role.ROLE_USER,
        parts=[new_data_part({"function": function, "args": args})],
        **fields,
    )


async def send(client: Client, message: Message, return_immediately: bool = True) -> Task:
    request = SendMessageRequest(message=message)
    request.configuration.return_immediately = return_immediately
    responses = [r async for r in client.send_message(request)]
    assert len(responses) == 1 and responses[0].HasField("task"), responses
    return responses[0].task


async def follow(client: Client, task_id: str, until: set[int]) -> Task:
    deadline = time.monotonic() + TIMEOUT
    while True:
        task = await client.get_task(GetTaskRequest(id=task_id))
        if task.status.state in until:
            return task
        assert time.monotonic() < deadline, task
        await anyio.sleep(0.2)


def raw_state(task: Task) -> str:
    return str(MessageToDict(task.metadata)["agentworks"]["state"])


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_crew_is_an_a2a_agent_whose_function_call_is_a_task(
    local_stack: LocalStack, binding: str
) -> None:
    crew = create_crew(local_stack)
    token = connection(local_stack)

    async def scenario() -> None:
        async with a2a_client(local_stack, token, crew, binding) as (client, card):
            assert card.name == crew
            assert {s.id for s in card.skills} == {"summarize", "confirm"}
            summarize = next(s for s in card.skills if s.id == "summarize")
            assert '"required":["text"]' in summarize.description
            assert json.loads(summarize.examples[0]) == {
                "function": "summarize",
                "args": {"text": "…"},
            }
            assert {i.protocol_binding for i in card.supported_interfaces} == set(BINDINGS)
            assert card.security_schemes["bearer"].http_auth_security_scheme.scheme == "bearer"
            assert card.capabilities.streaming is True

            task = await send(client, call_message("summarize", {"text": "Either party."}))
            assert task.status.state in (
                TaskState.TASK_STATE_SUBMITTED,
                TaskState.TASK_STATE_WORKING,
                TaskState.TASK_STATE_COMPLETED,
            )
            assert task.id.startswith("call_") and task.context_id == task.id
            done = await follow(client, task.id, {TaskState.TASK_STATE_COMPLETED})
            assert raw_state(done) == "succeeded"
            [artifact] = done.artifacts
            assert get_data_parts(artifact.parts) == [{"summary": "Either party."}]

            # One record: the HTTP API reads the same call.
            status, body, _ = http("GET", f"{local_stack.url}/v1/calls/{task.id}", token=token)
            assert status == 200 and body["result"] == {"summary": "Either party."}

            listed = await client.list_tasks(ListTasksRequest(include_artifacts=True))
            assert task.id in [t.id for t in listed.tasks]
            completed = await client.list_tasks(
                ListTasksRequest(status=TaskState.TASK_STATE_COMPLETED)
            )
            assert all(t.status.state == TaskState.TASK_STATE_COMPLETED for t in completed.tasks)
            assert not any(t.artifacts for t in completed.tasks)

    anyio.run(scenario)


@pytest.mark.parametrize("binding", BINDINGS)
def test_an_input_required_task_is_answered_by_a_data_part_keyed_by_its_request_id(
    local_stack: LocalStack, binding: str
) -> None:
    crew = create_crew(local_stack)
    token = connection(local_stack)

    async def scenario() -> None:
        async with a2a_client(local_stack, token, crew, binding) as (client, _card):
            # Without returnImmediately the send waits until the task asks.
            task = await send(
                client, call_message("confirm", {"action": "deploy"}), return_immediately=False
            )
            assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, task
            [asked] = get_data_parts(task.status.message.parts)
            [(request_id, question)] = asked.items()
            assert question == "Proceed with deploy?"

            answer = Message(
                message_id=uuid.uuid4().hex,
                role=Role.ROLE_USER,
                task_id=task.id,
                parts=[new_data_part({request_id: "yes"})],
            )
            answered = await send(client, answer, return_immediately=False)
            assert answered.status.state == TaskState.TASK_STATE_COMPLETED, answered
            assert get_data_parts(answered.artifacts[0].parts) == [{"confirmed": "yes"}]

    anyio.run(scenario)


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_task_streams_its_changes_as_a_long_poll(local_stack: LocalStack, binding: str) -> None:
    """SendStreamingMessage and SubscribeToTask through the SDK's streaming client: the
    task as sent, then at each change of its state until it ends or asks (HTTP API sends
    the events together when the poll ends)."""
    crew = create_crew(local_stack)
    token = connection(local_stack)

    async def scenario() -> None:
        async with a2a_client(local_stack, token, crew, binding, streaming=True) as (client, _):
            request = SendMessageRequest(message=call_message("confirm", {"action": "ship"}))
            events = [r async for r in client.send_message(request)]
            tasks = [e.task for e in events if e.HasField("task")]
            assert len(tasks) == len(events) >= 2, events
            assert tasks[-1].status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert len({t.status.state for t in tasks}) == len(tasks)  # a change each
            [asked] = get_data_parts(tasks[-1].status.message.parts)
            [request_id] = asked
            watched = [r async for r in client.subscribe(SubscribeToTaskRequest(id=tasks[-1].id))]
            assert [w.task.status.state for w in watched] == [tasks[-1].status.state]  # asks
            reply = new_data_part({request_id: "yes"})
            answer = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER,
                             task_id=tasks[-1].id, parts=[reply])  # fmt: skip
            answered = [r async for r in client.send_message(SendMessageRequest(message=answer))]
            assert answered[-1].task.status.state == TaskState.TASK_STATE_COMPLETED, answered
            ended = client.subscribe(SubscribeToTaskRequest(id=tasks[-1].id))
            with pytest.raises(UnsupportedOperationError, match="already ended"):
                [r async for r in ended]

    anyio.run(scenario)


def test_a_resent_message_recovers_its_task(local_stack: LocalStack) -> None:
    """The message id is the call's submission_id (F4): the same message twice, one call."""
    crew = create_crew(local_stack)
    token = connection(local_stack)

    async def scenario() -> None:
        async with a2a_client(local_stack, token, crew, BINDINGS[0]) as (client, _card):
            message = call_message("summarize", {"text": "Once."})
            first = await send(client, message)
            again = await send(client, message)
            assert again.id == first.id

    anyio.run(scenario)


def test_bad_calls_are_refused_as_invalid_params(local_stack: LocalStack) -> None:
    crew = create_crew(local_stack)
    token = connection(local_stack)
    url = f"{local_stack.url}/a2a/{crew}"

    def rpc(params: dict[str, Any]) -> dict[str, Any]:
        status, body = a2a_http(
            "POST",
            url,
            token,
            {"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": params},
        )
        assert status == 200, body
        return dict(body["error"])

    def message(*parts: dict[str, Any]) -> dict[str, Any]:
        return {"message": {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": parts}}

    wrong_args = rpc(message({"data": {"function": "summarize", "args": {"text": 42}}}))
    assert wrong_args["code"] == -32602 and "input schema" in wrong_args["message"]
    no_function = rpc(message({"data": {"function": "nope", "args": {}}}))
    assert no_function["code"] == -32602 and "has no function 'nope'" in no_function["message"]
    nothing = rpc(message({"data": [1, 2]}))
    assert nothing["code"] == -32602 and "data part" in nothing["message"]
    empty_text = rpc(message({"text": ""}))
    assert empty_text["code"] == -32602, empty_text


def test_another_accounts_task_is_unknown_byte_for_byte(
    local_stack: LocalStack, tmp_path: Path
) -> None:
    """A task id of another account, on an agent of the same name, reads exactly like an id
    that never existed — on both bindings."""
    crew = create_crew(local_stack)
    token = connection(local_stack)

    async def a_task() -> str:
        async with a2a_client(local_stack, token, crew, BINDINGS[0]) as (client, _card):
            return (await send(client, call_message("summarize", {"text": "Mine."}))).id

    task_id = anyio.run(a_task)
    other_admin = second_account_admin(local_stack, tmp_path / "other.json")
    create_crew_named(local_stack, crew, other_admin)  # the same agent name, their own
    other_token = connection(local_stack, other_admin)
    unknown = "call_" + "0" * 26

    def as_other(method: str, path: str, body: Any = None) -> tuple[int, Any]:
        return a2a_http(method, f"{local_stack.url}/a2a/{crew}{path}", other_token, body)

    theirs = as_other("GET", f"/tasks/{task_id}")
    never = as_other("GET", f"/tasks/{unknown}")
    assert theirs[0] == never[0] == 404
    assert json.dumps(theirs[1]) == json.dumps(never[1])

    def rpc(task: str) -> Any:
        return as_other(
            "POST", "", {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task}}
        )

    assert rpc(task_id) == rpc(unknown)


def test_another_accounts_conversation_lists_no_tasks_byte_for_byte(
    local_stack: LocalStack, tmp_path: Path
) -> None:
    crew = create_crew(local_stack)
    token = connection(local_stack)

    async def a_request() -> str:
        async with a2a_client(local_stack, token, crew, BINDINGS[0]) as (client, _card):
            text = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER,
                           parts=[new_text_part("What does clause 7 say?")])  # fmt: skip
            return (await send(client, text)).context_id

    context = anyio.run(a_request)
    other_admin = second_account_admin(local_stack, tmp_path / "other.json")
    create_crew_named(local_stack, crew, other_admin)
    other_token = connection(local_stack, other_admin)

    def listed(context_id: str) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks",
                "params": {"contextId": context_id}}  # fmt: skip
        return a2a_http("POST", f"{local_stack.url}/a2a/{crew}", other_token, body)

    theirs, never = listed(context), listed("ibx_" + "0" * 26 + "a")
    assert theirs == never and theirs[1]["result"]["tasks"] == [], theirs


def test_the_card_and_tasks_need_a_token_and_an_a2a_version(local_stack: LocalStack) -> None:
    crew = create_crew(local_stack)
    token = connection(local_stack)
    card_url = f"{local_stack.url}/a2a/{crew}/.well-known/agent-card.json"
    status, body, _ = http("GET", card_url)
    assert status == 401 and body["error"]["code"] == "unauthenticated"
    status, missing, _ = http("GET", f"{local_stack.url}/a2a/nope-{uuid.uuid4().hex[:6]}/"
                              ".well-known/agent-card.json", token=token)  # fmt: skip
    assert status == 404 and missing["error"]["code"] == "unavailable"
    status, listing, _ = http("GET", f"{local_stack.url}/a2a", token=token)
    assert status == 200 and crew in [a["name"] for a in listing["agents"]]
    # The SDK's rule: a request without A2A-Version is a 0.3 request, not served here.
    status, old = a2a_http(
        "POST",
        f"{local_stack.url}/a2a/{crew}",
        token,
        {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "call_x"}},
        version="",
    )
    assert status == 200 and old["error"]["code"] == -32009, old


@pytest.mark.parametrize("binding", BINDINGS)
def test_text_is_a_request_in_a_conversation_with_the_crew(
    local_stack: LocalStack, binding: str
) -> None:
    """Text alone asks the Crew in a conversation: the task is the request, its reply the
    artifact; a follow-up with the task's contextId continues the same conversation."""
    crew = create_crew(local_stack)
    token = connection(local_stack)

    async def scenario() -> None:
        async with a2a_client(local_stack, token, crew, binding) as (client, _card):
            message = Message(
                message_id=uuid.uuid4().hex,
                role=Role.ROLE_USER,
                parts=[new_text_part("What does clause 7 say?")],
            )
            task = await send(client, message)
            assert task.id.startswith("msg_") and task.context_id.startswith("ibx_")
            done = await follow(client, task.id, {TaskState.TASK_STATE_COMPLETED})
            assert [p.text for p in done.artifacts[0].parts] == ["Clause 7 covers termination."]
            assert raw_state(done) == "answered"

            follow_up = Message(
                message_id=uuid.uuid4().hex,
                role=Role.ROLE_USER,
                context_id=task.context_id,
                parts=[new_text_part("And clause 9?")],
            )
            second = await send(client, follow_up, return_immediately=False)
            assert second.context_id == task.context_id and second.id != task.id
            assert second.status.state == TaskState.TASK_STATE_COMPLETED, second
            conversation = MessageToDict(second.metadata)["agentworks"]["conversation_id"]
            assert conversation == MessageToDict(done.metadata)["agentworks"]["conversation_id"]
            status, body, _ = http("GET", f"{local_stack.url}/v1/conversations/{conversation}",
                                   token=token)  # fmt: skip
            assert status == 200 and len(body["requests"]) == 2
            # ListTasks with the conversation's contextId lists its requests, newest first.
            listed = await client.list_tasks(ListTasksRequest(context_id=task.context_id))
            assert [t.id for t in listed.tasks] == [second.id, task.id]
            answered = ListTasksRequest(
                context_id=task.context_id, status=TaskState.TASK_STATE_WORKING
            )
            assert list((await client.list_tasks(answered)).tasks) == []

    anyio.run(scenario)


def test_a_message_with_nothing_to_do_is_refused_by_the_sdk_client(
    local_stack: LocalStack,
) -> None:
    crew = create_crew(local_stack)
    token = connection(local_stack)

    async def scenario() -> None:
        async with a2a_client(local_stack, token, crew, BINDINGS[1]) as (client, _card):
            message = Message(
                message_id=uuid.uuid4().hex,
                role=Role.ROLE_USER,
                parts=[new_data_part({"not": "a call"})],
            )
            with pytest.raises(InvalidParamsError, match="data part"):
                await send(client, message)

    anyio.run(scenario)


def crew_with(local_stack: LocalStack, **changes: Any) -> str:
    definition = copy.deepcopy(CONTRACTS)
    definition.update(name=f"contracts-{uuid.uuid4().hex[:8]}", **changes)
    status, body, _ = http(
        "POST", f"{local_stack.url}/v1/crews", token=local_stack.admin_token, body=definition
    )
    assert status == 201, body
    return str(definition["name"])


def test_a_requests_question_is_answered_by_a_data_part_keyed_by_its_request_id(
    local_stack: LocalStack,
) -> None:
    rules = [{"when": "deploy", "ask": "Deploy to production?", "reply": "Deploying: {answer}"}]
    crew = crew_with(local_stack, adapter={"type": "scripted", "rules": rules})
    token = connection(local_stack)

    async def scenario() -> None:
        async with a2a_client(local_stack, token, crew, BINDINGS[0]) as (client, _card):
            ask = Message(
                message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[new_text_part("deploy")]
            )
            task = await send(client, ask, return_immediately=False)
            assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, task
            [asked] = get_data_parts(task.status.message.parts)
            [(request_id, question)] = asked.items()
            assert question == "Deploy to production?"
            answer = Message(
                message_id=uuid.uuid4().hex,
                role=Role.ROLE_USER,
                task_id=task.id,
                parts=[new_data_part({request_id: "yes"})],
            )
            answered = await send(client, answer, return_immediately=False)
            assert answered.status.state == TaskState.TASK_STATE_COMPLETED, answered
            assert [p.text for p in answered.artifacts[0].parts] == ["Deploying: yes"]

    anyio.run(scenario)


@pytest.mark.parametrize("binding", BINDINGS)
def test_cancelling_a_request_task(local_stack: LocalStack, binding: str) -> None:
    """A request waiting for review is cancelled by its asker: CANCELED, and the Crew's
    conversation shows it cancelled; a second cancel is refused as not cancelable."""
    crew = crew_with(local_stack, messaging="review")
    token = connection(local_stack)

    async def scenario() -> None:
        async with a2a_client(local_stack, token, crew, binding) as (client, _card):
            ask = Message(
                message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[new_text_part("hi")]
            )
            task = await send(client, ask)
            assert task.status.state == TaskState.TASK_STATE_SUBMITTED
            assert raw_state(task) == "waiting_for_review"
            cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
            assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
            assert raw_state(cancelled) == "cancelled"
            with pytest.raises(TaskNotCancelableError):
                await client.cancel_task(CancelTaskRequest(id=task.id))

    anyio.run(scenario)


@pytest.mark.parametrize("binding", BINDINGS)
def test_cancelling_a_call_task(local_stack: LocalStack, binding: str) -> None:
    """A call waiting for an answer is cancelled over A2A: CANCELED, and the HTTP API reads
    the same call cancelled; its question can no longer be answered."""
    crew = create_crew(local_stack)
    token = connection(local_stack)

    async def scenario() -> None:
        async with a2a_client(local_stack, token, crew, binding) as (client, _card):
            task = await send(
                client, call_message("confirm", {"action": "drop"}), return_immediately=False
            )
            assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, task
            cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
            assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
            status, body, _ = http("GET", f"{local_stack.url}/v1/calls/{task.id}", token=token)
            assert status == 200 and body["state"] == "cancelled"
            with pytest.raises(TaskNotCancelableError):
                await client.cancel_task(CancelTaskRequest(id=task.id))

    anyio.run(scenario)


def test_list_tasks_pages_back_with_its_token(local_stack: LocalStack) -> None:
    """ListTasks a page at a time: the nextPageToken (the calls list's next_before) leads to
    the older tasks, none twice."""
    crew = create_crew(local_stack)
    token = connection(local_stack)

    async def scenario() -> None:
        async with a2a_client(local_stack, token, crew, BINDINGS[0]) as (client, _card):
            sent = [
                (await send(client, call_message("summarize", {"text": f"t{i}"}))).id
                for i in range(3)
            ]
            seen: list[str] = []
            request = ListTasksRequest(page_size=1)
            for _page in range(10):
                page = await client.list_tasks(request)
                seen += [t.id for t in page.tasks]
                if not page.next_page_token:
                    break
                request = ListTasksRequest(page_size=1, page_token=page.next_page_token)
            assert seen == list(reversed(sent)), (seen, sent)

    anyio.run(scenario)
