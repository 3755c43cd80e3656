"""§8 `lambda` adapter on botocore's Stubber: the payload a user's function receives, its
answer as final text / result (F6) / question (F7) / files, and its failures. Issue 23:
the function serves only the account its `agentworks:account` tag names."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from agentworks.crews.adapters.base import AdapterError, TurnRequest
from agentworks.crews.adapters.function_bindings import BindingUnknown, FunctionBindings
from agentworks.crews.adapters.lambda_adapter import LambdaAdapter, unqualified, validate
from tests.support.clock import FakeClock

ARN = "arn:aws:lambda:us-east-1:123456789012:function:agentworks-agent-contract"
ACCOUNT = "acct_01A"


class TaggedFunctions:
    """GetFunction of a Lambda whose functions carry these tags (None: no such function)."""

    def __init__(self, tags: dict[str, str] | None = None, error: str | None = None) -> None:
        self.tags, self.error = tags, error
        self.reads: list[str] = []

    def get_function(self, FunctionName: str) -> dict[str, Any]:
        from botocore.exceptions import ClientError

        self.reads.append(FunctionName)
        if self.error or self.tags is None:
            code = self.error or "ResourceNotFoundException"
            raise ClientError({"Error": {"Code": code, "Message": code}}, "GetFunction")
        answer: dict[str, Any] = {"Configuration": {"FunctionName": FunctionName}}
        if self.tags:
            answer["Tags"] = self.tags
        return answer


def bound(account: str = ACCOUNT) -> FunctionBindings:
    return FunctionBindings(lambda: TaggedFunctions({"agentworks:account": account}))


@pytest.fixture
def lambda_stub() -> Iterator[tuple[Any, Stubber, list[dict[str, Any]]]]:
    client = boto3.client(
        "lambda",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    sent: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.lambda.Invoke", lambda params, **_: sent.append(dict(params))
    )
    with Stubber(client) as stubber:
        yield client, stubber, sent
        stubber.assert_no_pending_responses()


def body(value: Any) -> StreamingBody:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return StreamingBody(io.BytesIO(raw), len(raw))


def invoked(payload: Any, **extra: Any) -> dict[str, Any]:
    return {"StatusCode": 200, "Payload": body(payload), **extra}


def adapter(
    client: Any, bindings: FunctionBindings | None = None, **settings: Any
) -> LambdaAdapter:
    return LambdaAdapter(
        {"type": "lambda", "function_name": ARN, **settings}, lambda: client, bindings or bound()
    )


def call(**fields: Any) -> TurnRequest:
    return TurnRequest(
        crew_name="legal",
        instructions="You summarize.",
        settings={},
        kind="function",
        prompt="Summarize the lease.",
        function="summarize",
        args={"text": "lease"},
        output_schema={"type": "object"},
        history=({"role": "user", "content": "hi"},),
        **{"account_id": ACCOUNT, **fields},
    )


def test_s8_the_function_receives_the_turn_and_its_result_is_the_call_result(lambda_stub):
    client, stubber, sent = lambda_stub
    stubber.add_response("invoke", invoked({"final_text": "done", "result": {"summary": "x"}}))
    turn = adapter(client, qualifier="live").run_turn(call(correction="bad"))
    assert turn.final_text == "done"
    assert turn.has_result and turn.result == {"summary": "x"}
    params = sent[0]
    assert params["FunctionName"] == ARN and params["Qualifier"] == "live"
    assert params["InvocationType"] == "RequestResponse"
    assert json.loads(params["Payload"]) == {
        "crew_name": "legal",
        "kind": "function",
        "prompt": "Summarize the lease.",
        "function": "summarize",
        "args": {"text": "lease"},
        "answer": None,
        "correction": "bad",
        "instructions": "You summarize.",
        "output_schema": {"type": "object"},
        "history": [{"role": "user", "content": "hi"}],
    }


def test_f6_a_null_result_is_still_a_result(lambda_stub):
    client, stubber, _ = lambda_stub
    stubber.add_response("invoke", invoked({"result": None}))
    turn = adapter(client).run_turn(call())
    assert turn.has_result and turn.result is None and turn.final_text == ""


def test_f7_a_question_raises_a_pending_input(lambda_stub):
    client, stubber, sent = lambda_stub
    stubber.add_response("invoke", invoked({"question": "Which lease?"}))
    turn = adapter(client).run_turn(call())
    assert turn.question == "Which lease?"
    assert turn.final_text is None and not turn.has_result
    assert "Qualifier" not in sent[0]


def test_f6_files_come_back_as_bytes_and_unsafe_paths_fail(lambda_stub):
    client, stubber, _ = lambda_stub
    stubber.add_response("invoke", invoked({"final_text": "ok", "files": {"a/b.md": "é"}}))
    stubber.add_response("invoke", invoked({"files": {"/etc/passwd": "x"}}))
    assert adapter(client).run_turn(call()).files == {"a/b.md": "é".encode()}
    with pytest.raises(AdapterError, match="needs a relative path"):
        adapter(client).run_turn(call())


def test_s8_function_error_fails_the_turn_with_the_functions_message(lambda_stub):
    client, stubber, _ = lambda_stub
    error = {"errorMessage": "KeyError: 'text'", "errorType": "KeyError", "stackTrace": []}
    stubber.add_response("invoke", invoked(error, FunctionError="Unhandled"))
    with pytest.raises(AdapterError) as failed:
        adapter(client).run_turn(call())
    assert str(failed.value) == f"Lambda function {ARN} failed: KeyError: KeyError: 'text'"


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (["not", "an", "object"], "must answer a JSON object"),
        (b"not json", "invalid JSON"),
        (b"", "it answered NoneType"),
        ({"final_text": 5}, "'final_text' must be a string"),
    ],
)
def test_s8_answers_that_are_not_an_object_fail_the_turn(lambda_stub, payload, problem):
    client, stubber, _ = lambda_stub
    stubber.add_response("invoke", invoked(payload))
    with pytest.raises(AdapterError, match=problem):
        adapter(client).run_turn(call())


def test_s8_invoke_client_error_becomes_an_adapter_error(lambda_stub):
    client, stubber, _ = lambda_stub
    stubber.add_client_error(
        "invoke",
        service_error_code="ResourceNotFoundException",
        service_message="Function not found",
        http_status_code=404,
    )
    with pytest.raises(AdapterError, match="ResourceNotFoundException: Function not found"):
        adapter(client).run_turn(call())


def test_s8_lambda_settings_need_a_function_name():
    assert validate({"type": "lambda", "function_name": "agentworks-agent-f"}) == []
    assert any("'function_name' is required" in p for p in validate({"type": "lambda"}))
    assert any(
        "'qualifier'" in p
        for p in validate({"type": "lambda", "function_name": "agentworks-agent-f", "qualifier": 1})
    )


@pytest.mark.parametrize(
    "reference",
    [
        "agentworks-agent-summarizer",
        "agentworks-agent-summarizer:live",
        "123456789012:function:agentworks-agent-summarizer",
        "arn:aws:lambda:eu-west-1:123456789012:function:agentworks-agent-summarizer:7",
    ],
)
def test_s8_lambda_adapter_accepts_the_names_its_role_may_invoke(reference):
    assert validate({"type": "lambda", "function_name": reference}) == []


@pytest.mark.parametrize(
    "reference",
    [
        "summarizer",
        "agentworks-agent-",
        "agentworks-api",
        "arn:aws:lambda:us-east-1:123456789012:function:billing:agentworks-agent-x",
        "123456789012:function:other-agentworks-agent-x",
    ],
)
def test_s8_lambda_adapter_refuses_names_outside_its_role(reference):
    """template.yaml lets the step runner invoke only agentworks-agent-*: the adapter says so
    when the Crew is defined, and never calls Lambda with another name."""
    problems = validate({"type": "lambda", "function_name": reference})
    assert len(problems) == 1 and "only invoke functions named 'agentworks-agent-*'" in problems[0]

    def no_client() -> None:
        raise AssertionError("a refused function name must not reach Lambda")

    with pytest.raises(AdapterError, match="agentworks-agent-"):
        LambdaAdapter({"type": "lambda", "function_name": reference}, no_client, bound())


def refuses_to_invoke() -> Any:
    raise AssertionError("a function not bound to the account must not be invoked")


@pytest.mark.parametrize(
    "functions",
    [
        TaggedFunctions({"agentworks:account": "acct_OTHER"}),  # another account's
        TaggedFunctions({"team": "x"}),  # untagged for any account
        TaggedFunctions({}),
        TaggedFunctions(None),  # no such function
        TaggedFunctions(error="AccessDeniedException"),  # outside the role
    ],
)
def test_issue23_a_function_not_bound_to_the_account_is_never_invoked(functions):
    bindings = FunctionBindings(lambda: functions)
    lambda_adapter = LambdaAdapter(
        {"type": "lambda", "function_name": ARN + ":live"}, refuses_to_invoke, bindings
    )
    with pytest.raises(AdapterError) as refused:
        lambda_adapter.run_turn(call())
    # One answer whatever the reason: unknown and unauthorized look alike.
    assert str(refused.value) == (
        "lambda adapter: function 'agentworks-agent-contract' is not available to this "
        "account: it does not exist or is not bound to it (the operator binds a function "
        "with its tag agentworks:account=<account id>)"
    )
    assert functions.reads == [ARN]  # the function's own tags, not its alias's


def test_issue23_a_turn_without_an_account_is_refused():
    with pytest.raises(AdapterError, match="not available to this account"):
        LambdaAdapter(
            {"type": "lambda", "function_name": ARN}, refuses_to_invoke, bound("")
        ).run_turn(call(account_id=""))


def test_issue23_the_binding_is_read_again_after_the_cache_window():
    clock = FakeClock(start=1_000.0)
    functions = TaggedFunctions({"agentworks:account": ACCOUNT})
    bindings = FunctionBindings(lambda: functions, clock, ttl_seconds=60)
    assert bindings.may_use(ACCOUNT, "agentworks-agent-f")
    functions.tags = {"agentworks:account": "acct_OTHER"}  # the operator re-tags it
    clock.advance(59)
    assert bindings.may_use(ACCOUNT, "agentworks-agent-f")  # still the container's read
    clock.advance(2)
    assert not bindings.may_use(ACCOUNT, "agentworks-agent-f")
    assert bindings.may_use("acct_OTHER", "agentworks-agent-f")
    assert functions.reads == ["agentworks-agent-f"] * 2


def test_issue23_a_throttled_read_is_neither_a_yes_nor_a_no():
    bindings = FunctionBindings(lambda: TaggedFunctions(error="TooManyRequestsException"))
    with pytest.raises(BindingUnknown):
        bindings.may_use(ACCOUNT, "agentworks-agent-f")
    lambda_adapter = LambdaAdapter(
        {"type": "lambda", "function_name": ARN}, refuses_to_invoke, bindings
    )
    with pytest.raises(AdapterError, match="TooManyRequestsException; try again"):
        lambda_adapter.run_turn(call())


@pytest.mark.parametrize(
    ("reference", "function"),
    [
        ("agentworks-agent-f", "agentworks-agent-f"),
        ("agentworks-agent-f:live", "agentworks-agent-f"),
        ("123456789012:function:agentworks-agent-f:3", "123456789012:function:agentworks-agent-f"),
        (ARN + ":live", ARN),
    ],
)
def test_issue23_tags_are_read_from_the_function_not_its_alias(reference, function):
    assert unqualified(reference) == function


def test_s8_the_name_prefix_is_the_stacks(monkeypatch):
    """Issue 23: a stack named `staging` may invoke `staging-agent-*` only (its grants say
    the same), so another stack's `agentworks-agent-*` is refused when the adapter is saved."""
    monkeypatch.setenv("AGENT_FUNCTION_PREFIX", "staging-agent-")
    assert validate({"type": "lambda", "function_name": "staging-agent-f"}) == []
    [problem] = validate({"type": "lambda", "function_name": "agentworks-agent-f"})
    assert "only invoke functions named 'staging-agent-*'" in problem
