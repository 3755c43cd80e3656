"""A2A push notification configs (issue 30 §1), the parts without a table: what a config
may be, what Get/List show of it (never the credentials), the headers a notification
carries, and its body as the SDK reads it."""

from __future__ import annotations

import pytest
from a2a.types.a2a_pb2 import (
    AuthenticationInfo,
    StreamResponse,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import InvalidParamsError
from google.protobuf.json_format import Parse

from agentworks import limits
from agentworks.a2a_server.push_configs import check, shown
from agentworks.a2a_server.push_notices import TOKEN_HEADER, headers, notification
from agentworks.crews.models import CallRecord
from agentworks.push.a2a_config_store import PushConfig

HOOK = "https://hooks.example.com/a2a"


def _asked(**fields: object) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(**{"url": HOOK, **fields})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "fields",
    [
        {"id": "x" * (limits.A2A_PUSH_CONFIG_ID_MAX_CHARS + 1)},
        {"id": "a/b"},
        {"url": HOOK + "/" + "p" * limits.A2A_PUSH_URL_MAX_CHARS},
        {"url": "https://192.168.1.10/hook"},
        {"url": "http://hooks.example.com/a2a"},
        {"url": "https://user:pass@hooks.example.com/a2a"},
        {"token": "line\r\nInjected: 1"},
        {"token": "t" * (limits.A2A_PUSH_SECRET_MAX_CHARS + 1)},
        {"authentication": AuthenticationInfo(scheme="Bearer")},
        {"authentication": AuthenticationInfo(credentials="only")},
        {"authentication": AuthenticationInfo(scheme="Bearer x", credentials="c")},
    ],
)
def test_what_a_config_may_not_be(fields: dict[str, object]) -> None:
    with pytest.raises(InvalidParamsError):
        check(_asked(**fields))


def test_a_config_at_its_bounds_is_taken() -> None:
    check(
        _asked(
            id="x" * limits.A2A_PUSH_CONFIG_ID_MAX_CHARS,
            token="t" * limits.A2A_PUSH_SECRET_MAX_CHARS,
            authentication=AuthenticationInfo(scheme="Basic", credentials="dTpw"),
        )
    )


def test_what_is_shown_has_the_scheme_and_never_the_credentials() -> None:
    config = PushConfig("call_1", "ops", "acct", HOOK, "tok", "Bearer", "s3cret")
    found = shown(config)
    assert (found.id, found.task_id, found.url, found.token) == ("ops", "call_1", HOOK, "tok")
    assert found.authentication.scheme == "Bearer"
    assert "s3cret" not in str(found) and not found.authentication.credentials


def test_the_headers_of_a_notification() -> None:
    plain = headers(PushConfig("call_1", "a", "acct", HOOK), ["k"], b"{}", 1)
    assert TOKEN_HEADER not in plain and "Authorization" not in plain
    assert plain["X-AgentWorks-Signature"].startswith("t=1,v1=")
    full = PushConfig("call_1", "a", "acct", HOOK, "tok", "Bearer", "s3cret")
    sent = headers(full, ["k", "old"], b"{}", 1)
    assert sent[TOKEN_HEADER] == "tok" and sent["Authorization"] == "Bearer s3cret"
    assert sent["X-AgentWorks-Signature"].count("v1=") == 2  # a rotation: both keys


def test_the_body_is_the_sdks_stream_response_with_the_task() -> None:
    call = CallRecord(
        call_id="call_1",
        account_id="acct",
        crew_name="contracts",
        crew_id="crew_1",
        function="summarize",
        args={},
        caller_connection_id="conn",
        state="succeeded",
        created_at=1_700_000_000_000,
        updated_at=1_700_000_001_000,
        turns=1,
        result={"summary": "s"},
        has_result=True,
    )
    response = Parse(notification(call).decode(), StreamResponse())
    assert response.WhichOneof("payload") == "task"
    assert response.task.id == "call_1"
    assert response.task.status.state == TaskState.TASK_STATE_COMPLETED
