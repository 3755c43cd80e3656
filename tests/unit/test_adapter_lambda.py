"""§8 `lambda` adapter on botocore's Stubber: the payload a user's function receives, its
answer as final text / result (F6) / question (F7) / files, and its failures."""

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
from agentworks.crews.adapters.lambda_adapter import LambdaAdapter, validate

ARN = "arn:aws:lambda:us-east-1:123456789012:function:agentworks-agent-contract"


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


def adapter(client: Any, **settings: Any) -> LambdaAdapter:
    return LambdaAdapter({"type": "lambda", "function_name": ARN, **settings}, lambda: client)


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
        **fields,
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
        LambdaAdapter({"type": "lambda", "function_name": reference}, no_client)
