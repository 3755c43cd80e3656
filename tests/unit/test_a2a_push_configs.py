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
from agentworks.a2a_server.push_notices import (
    TOKEN_HEADER,
    changed_calls,
    headers,
    notification,
)
from agentworks.crews.call_store import CallStore
from agentworks.crews.models import CallRecord
from agentworks.push.a2a_config_store import PushConfig

HOOK = "https://hooks.example.com/a2a"


def _asked(**fields: object) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(**{"url": HOOK, **fields})  # type: ignore[arg-type]


_SECRET_RULE = (
    f"at most {limits.A2A_PUSH_SECRET_MAX_CHARS} characters, no control characters "
    "(it is sent in a header)."
)
_ID_RULE = f"id: at most {limits.A2A_PUSH_CONFIG_ID_MAX_CHARS} letters, digits and . _ : -"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"id": "x" * (limits.A2A_PUSH_CONFIG_ID_MAX_CHARS + 1)}, _ID_RULE),
        ({"id": "a/b"}, _ID_RULE),
        (
            {"url": HOOK + "/" + "p" * (limits.A2A_PUSH_URL_MAX_CHARS - len(HOOK))},
            f"url: at most {limits.A2A_PUSH_URL_MAX_CHARS} characters.",
        ),
        ({"url": "https://192.168.1.10/hook"}, "url: "),
        ({"url": "http://hooks.example.com/a2a"}, "url: "),
        ({"url": "https://user:pass@hooks.example.com/a2a"}, "url: "),
        ({"token": "line\r\nInjected: 1"}, f"token: {_SECRET_RULE}"),
        ({"token": "t" * (limits.A2A_PUSH_SECRET_MAX_CHARS + 1)}, f"token: {_SECRET_RULE}"),
        (
            {"authentication": AuthenticationInfo(scheme="Bearer\n", credentials="c")},
            f"authentication.scheme: {_SECRET_RULE}",
        ),
        (
            {"authentication": AuthenticationInfo(scheme="Basic", credentials="c\x7f")},
            f"authentication.credentials: {_SECRET_RULE}",
        ),
        (
            {"authentication": AuthenticationInfo(scheme="Bearer")},
            "authentication needs both a scheme and credentials.",
        ),
        (
            {"authentication": AuthenticationInfo(credentials="only")},
            "authentication needs both a scheme and credentials.",
        ),
        (
            {"authentication": AuthenticationInfo(scheme="Bearer x", credentials="c")},
            "authentication.scheme: one word (Bearer, Basic …).",
        ),
    ],
)
def test_what_a_config_may_not_be(fields: dict[str, object], message: str) -> None:
    """Each refusal names its field and its rule (a URL's names what the outbound rules
    refused after `url: `)."""
    with pytest.raises(InvalidParamsError) as refused:
        check(_asked(**fields))
    if message.endswith(": "):
        assert refused.value.message.startswith(message)
        assert len(refused.value.message) > len(message)
    else:
        assert refused.value.message == message


def test_a_config_at_its_bounds_is_taken() -> None:
    check(
        _asked(
            url=HOOK + "/" + "p" * (limits.A2A_PUSH_URL_MAX_CHARS - len(HOOK) - 1),
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
    assert plain.keys() == {"Content-Type", "User-Agent", "X-AgentWorks-Signature"}
    assert plain["Content-Type"] == "application/json"
    assert plain["User-Agent"] == "AgentWorks-A2A-Push/1"
    assert plain["X-AgentWorks-Signature"].startswith("t=1,v1=")
    # A scheme without credentials is never stored (check refuses it); were it, no header.
    half = headers(PushConfig("call_1", "a", "acct", HOOK, "", "Bearer", ""), ["k"], b"{}", 1)
    assert "Authorization" not in half
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


def _modify(pk: str, old_state: str, new_state: str) -> dict[str, object]:
    """A stream record of a call item whose state went from one to the other, its images
    as CallStore writes them."""
    call_id = pk.removeprefix("CALL#")

    def image(state: str) -> dict[str, object]:
        record = CallRecord(call_id=call_id, account_id="acct", crew_name="c", crew_id="crew_1",
                            function="f", args={}, caller_connection_id="conn", state=state,
                            created_at=1, updated_at=1)  # fmt: skip
        return CallStore(None, "work")._item(record, 1) | {"pk": {"S": pk}}  # type: ignore[arg-type]

    return {
        "eventName": "MODIFY",
        "dynamodb": {
            "Keys": {"pk": {"S": pk}, "sk": {"S": "META"}},
            "OldImage": image(old_state),
            "NewImage": image(new_state),
        },
    }


def test_a_batch_yields_each_state_change_past_the_records_it_skips() -> None:
    records = [
        _modify("CALL#call_same", "running", "running"),  # no state change
        _modify("CONV#call_other", "running", "succeeded"),  # not a call
        _modify("CALL#call_1", "running", "succeeded"),
        _modify("CALL#call_2", "queued", "running"),
    ]
    assert [c.call_id for c in changed_calls(records)] == ["call_1", "call_2"]
