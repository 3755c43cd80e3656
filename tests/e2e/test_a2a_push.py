"""A2A push notification configs (issue 30 §1) with the a2a-sdk client against the local
stack, on both bindings: a config is created, read (its credentials never shown), listed
and deleted; another account's task refuses byte for byte and stores nothing; refused URLs
and the per-task limit; and delivery: the stack's stream poller feeds the notifier, which
POSTs the task to a local receiver as the SDK's own sender would (a StreamResponse, read
here with the SDK's proto, not the product's code), signed as conversation webhooks are.

The receiver listens on 127.0.0.1: this module's stack runs with
`--allow-loopback-webhooks`, the option that lets a local receiver in (no other address
rule changes: a private address and plain http elsewhere stay refused)."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from a2a.helpers.proto_helpers import get_data_parts, new_data_part, new_text_part
from a2a.types.a2a_pb2 import (
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    Message,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotFoundError,
)
from google.protobuf.json_format import Parse

from agentworks import limits
from tests.e2e.conftest import LOOPBACK, LocalStack, http, running_local_stack
from tests.e2e.test_a2a import (
    BINDINGS,
    a2a_client,
    a2a_http,
    call_message,
    connection,
    create_crew,
    create_crew_named,
    follow,
    second_account_admin,
    send,
)
from tests.support.webhook_receiver import Receiver, webhook_receiver

pytestmark = pytest.mark.e2e

HOOK = "https://hooks.example.com/a2a"  # public, never sent to: its task never changes state


@pytest.fixture(scope="module")
def local_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    with running_local_stack(tmp_path_factory, LOOPBACK) as stack:
        yield stack


def config(task_id: str, config_id: str = "", url: str = HOOK, **fields: Any) -> Any:
    return TaskPushNotificationConfig(task_id=task_id, id=config_id, url=url, **fields)


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_config_is_created_read_listed_and_deleted(local_stack: LocalStack, binding: str) -> None:
    crew = create_crew(local_stack)
    token = connection(local_stack)

    async def scenario() -> None:
        async with a2a_client(local_stack, token, crew, binding) as (client, card):
            assert card.capabilities.push_notifications is True
            # It asks and waits: no state change while the configs are handled.
            task = await send(client, call_message("confirm", {"action": "deploy"}), False)
            assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            secret = AuthenticationInfo(scheme="Bearer", credentials="s3cret")
            created = await client.create_task_push_notification_config(
                config(task.id, "ops", token="tok-1", authentication=secret)
            )
            assert (created.id, created.task_id, created.url) == ("ops", task.id, HOOK)
            assert created.token == "tok-1"
            assert created.authentication.scheme == "Bearer"
            assert created.authentication.credentials == ""  # a secret: never shown
            # No id: the task's (the SDK's default).
            default = await client.create_task_push_notification_config(config(task.id))
            assert default.id == task.id

            got = await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task.id, id="ops")
            )
            assert got == created
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task.id)
            )
            assert sorted(c.id for c in listed.configs) == sorted(["ops", task.id])
            assert all(not c.authentication.credentials for c in listed.configs)

            # The same id again replaces it.
            await client.create_task_push_notification_config(
                config(task.id, "ops", url=HOOK + "/v2")
            )
            got = await client.get_task_push_notification_config(
                GetTaskPushNotificationConfigRequest(task_id=task.id, id="ops")
            )
            assert got.url == HOOK + "/v2" and not got.token

            await client.delete_task_push_notification_config(
                DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="ops")
            )
            with pytest.raises(TaskNotFoundError):
                await client.get_task_push_notification_config(
                    GetTaskPushNotificationConfigRequest(task_id=task.id, id="ops")
                )
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task.id)
            )
            assert [c.id for c in listed.configs] == [task.id]

    anyio.run(scenario)


def test_refused_urls_and_the_limit_per_task(local_stack: LocalStack) -> None:
    crew = create_crew(local_stack)
    token = connection(local_stack)

    async def scenario() -> None:
        async with a2a_client(local_stack, token, crew, BINDINGS[0]) as (client, _card):
            task = await send(client, call_message("confirm", {"action": "drop"}), False)
            for url, why in [
                ("https://10.0.0.1/hook", "private address"),
                ("https://169.254.169.254/latest", "link-local address"),
                ("http://93.184.215.14/hook", "http:// only to this machine"),
                ("ftp://hooks.example.com/x", "an https:// URL is needed"),
            ]:
                with pytest.raises(InvalidParamsError) as refused:
                    await client.create_task_push_notification_config(config(task.id, url=url))
                assert why in str(refused.value), (url, refused.value)
            half = AuthenticationInfo(scheme="Bearer")
            with pytest.raises(InvalidParamsError):
                await client.create_task_push_notification_config(
                    config(task.id, authentication=half)
                )

            for i in range(limits.A2A_PUSH_CONFIGS_PER_TASK):  # up to the limit: stored
                await client.create_task_push_notification_config(config(task.id, f"c{i}"))
            with pytest.raises(InvalidParamsError) as past:
                await client.create_task_push_notification_config(config(task.id, "one-more"))
            assert f"at most {limits.A2A_PUSH_CONFIGS_PER_TASK}" in str(past.value)
            # Replacing one at the limit is no new one.
            await client.create_task_push_notification_config(config(task.id, "c0"))
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task.id)
            )
            assert len(listed.configs) == limits.A2A_PUSH_CONFIGS_PER_TASK

    anyio.run(scenario)


def test_another_accounts_task_refuses_byte_for_byte_and_stores_nothing(
    local_stack: LocalStack, tmp_path: Path
) -> None:
    crew = create_crew(local_stack)
    token = connection(local_stack)

    async def a_task() -> str:
        async with a2a_client(local_stack, token, crew, BINDINGS[0]) as (client, _card):
            return (await send(client, call_message("confirm", {"action": "x"}), False)).id

    task_id = anyio.run(a_task)
    other_admin = second_account_admin(local_stack, tmp_path / "other.json")
    create_crew_named(local_stack, crew, other_admin)
    other = connection(local_stack, other_admin)
    unknown = "call_" + "0" * 26
    base = f"{local_stack.url}/a2a/{crew}"

    def rest(task: str) -> tuple[int, Any]:
        return a2a_http("POST", f"{base}/tasks/{task}/pushNotificationConfigs", other,
                        {"url": HOOK, "id": "theirs"})  # fmt: skip

    def rpc(method: str, task: str) -> tuple[int, Any]:
        params = {"taskId": task, "url": HOOK, "id": "theirs"}
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return a2a_http("POST", base, other, body)

    theirs, never = rest(task_id), rest(unknown)
    assert theirs[0] == never[0] == 404
    assert json.dumps(theirs[1]) == json.dumps(never[1])
    for method in (
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
    ):
        refused = rpc(method, task_id)
        assert refused[1]["error"]["code"] == -32001, refused  # TaskNotFound
        assert json.dumps(refused) == json.dumps(rpc(method, unknown)), method

    async def owners_configs() -> list[str]:
        async with a2a_client(local_stack, token, crew, BINDINGS[0]) as (client, _card):
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task_id)
            )
            return [c.id for c in listed.configs]

    assert anyio.run(owners_configs) == []


def test_a_request_task_has_no_push_configs(local_stack: LocalStack) -> None:
    crew = create_crew(local_stack)
    token = connection(local_stack)
    body = {"jsonrpc": "2.0", "id": 1, "method": "CreateTaskPushNotificationConfig",
            "params": {"taskId": "msg_x", "url": HOOK}}  # fmt: skip
    status, answer = a2a_http("POST", f"{local_stack.url}/a2a/{crew}", token, body)
    assert status == 200 and answer["error"]["code"] == -32003, answer  # not supported


def _received_tasks(receiver: Receiver) -> list[Any]:
    """The bodies as the SDK reads them: its StreamResponse proto (independent of ours)."""
    found = []
    for got in list(receiver.received):
        response = Parse(got.body.decode(), StreamResponse())
        assert response.HasField("task")
        found.append(response.task)
    return found


def _wait_for_state(receiver: Receiver, state: int, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = [t for t in _received_tasks(receiver) if t.status.state == state]
        if done:
            return done[0]
        time.sleep(0.1)
    raise AssertionError(f"no {TaskState.Name(state)} notification: {receiver.received}")


def test_a_state_change_is_posted_to_the_config_signed(local_stack: LocalStack) -> None:
    crew = create_crew(local_stack)
    token = connection(local_stack)
    status, webhook_key, _ = http(
        "GET", f"{local_stack.url}/v1/workflows/webhook-key", token=local_stack.admin_token
    )
    assert status == 200, webhook_key
    key = str(webhook_key["key"])

    with webhook_receiver() as receiver:

        async def scenario() -> str:
            async with a2a_client(local_stack, token, crew, BINDINGS[1]) as (client, _card):
                task = await send(client, call_message("confirm", {"action": "ship"}), False)
                assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
                secret = AuthenticationInfo(scheme="Bearer", credentials="receiver-pass")
                await client.create_task_push_notification_config(
                    config(task.id, "mine", receiver.url, token="tok-42", authentication=secret)
                )
                [(request_id, _q)] = get_data_parts(task.status.message.parts)[0].items()
                answer = Message(
                    message_id=uuid.uuid4().hex,
                    role=Role.ROLE_USER,
                    task_id=task.id,
                    parts=[new_data_part({request_id: "yes"})],
                )
                await send(client, answer)
                await follow(client, task.id, {TaskState.TASK_STATE_COMPLETED})
                return task.id

        task_id = anyio.run(scenario)
        done = _wait_for_state(receiver, TaskState.TASK_STATE_COMPLETED)
        assert done.id == task_id
        assert get_data_parts(done.artifacts[0].parts) == [{"confirmed": "yes"}]
        # Each change once, in order: the answer set it running, then it succeeded.
        states = [t.status.state for t in _received_tasks(receiver)]
        assert states == [TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]
        got = receiver.received[-1]
        assert got.header("X-A2A-Notification-Token") == "tok-42"
        assert got.header("Authorization") == "Bearer receiver-pass"
        assert got.header("Content-Type") == "application/json"
        # Signed as conversation webhooks are: t=…,v1=HMAC-SHA256(key, "t.body").
        parts = dict(p.split("=", 1) for p in got.header("X-AgentWorks-Signature").split(","))
        expected = hmac.new(
            key.encode(), parts["t"].encode() + b"." + got.body, hashlib.sha256
        ).hexdigest()
        assert parts["v1"] == expected


def test_send_message_registers_the_config_it_carries(local_stack: LocalStack) -> None:
    """SendMessage's configuration.taskPushNotificationConfig is stored on the call it
    starts; on a request in a conversation it is refused before anything is sent."""
    crew = create_crew(local_stack)
    token = connection(local_stack)

    async def scenario() -> None:
        async with a2a_client(local_stack, token, crew, BINDINGS[0]) as (client, _card):
            request = SendMessageRequest(message=call_message("confirm", {"action": "go"}))
            request.configuration.return_immediately = True
            request.configuration.task_push_notification_config.CopyFrom(
                config("", "with-send", token="tok-s")
            )
            [answer] = [r async for r in client.send_message(request)]
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=answer.task.id)
            )
            assert [(c.id, c.token) for c in listed.configs] == [("with-send", "tok-s")]

            text = SendMessageRequest(
                message=Message(
                    message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=[new_text_part("hi")]
                )
            )
            text.configuration.task_push_notification_config.CopyFrom(config(""))
            with pytest.raises(PushNotificationNotSupportedError):
                [r async for r in client.send_message(text)]

            refused = SendMessageRequest(message=call_message("confirm", {"action": "no"}))
            refused.configuration.task_push_notification_config.CopyFrom(
                config("", url="https://10.1.2.3/x")
            )
            with pytest.raises(InvalidParamsError):
                [r async for r in client.send_message(refused)]

    anyio.run(scenario)
