"""§8 `bedrock` adapter on botocore's Stubber (never the network): answers, the tool-use
loop with write_result (F6), human_feedback (F7), errors and the loop bound."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from agentworks.crews.adapters.base import AdapterError, TurnRequest
from agentworks.crews.adapters.bedrock import BedrockAdapter, build_messages, prices_for, validate

MODEL = "us.anthropic.claude-3-5-haiku-20241022-v1:0"  # priced 0.80 / 4.00 USD per M tokens
SCHEMA = {"type": "object", "properties": {"summary": {"type": "string"}}}


@pytest.fixture
def bedrock() -> Iterator[tuple[Any, Stubber]]:
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def adapter(client: Any, **settings: Any) -> BedrockAdapter:
    return BedrockAdapter({"type": "bedrock", "model_id": MODEL, **settings}, lambda: client)


def reply(content: list[dict[str, Any]], stop: str, tokens: tuple[int, int]) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {
            "inputTokens": tokens[0],
            "outputTokens": tokens[1],
            "totalTokens": sum(tokens),
        },
        "metrics": {"latencyMs": 12},
    }


def tool_use(tool_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"toolUse": {"toolUseId": tool_id, "name": name, "input": args}}


def summarize_call(**fields: Any) -> TurnRequest:
    return TurnRequest(
        crew_name="legal",
        instructions="You summarize contracts.",
        settings={},
        kind="function",
        prompt="Summarize: the tenant pays monthly.",
        function="summarize",
        args={"text": "the tenant pays monthly"},
        **fields,
    )


def tool_names(config: dict[str, Any]) -> set[str]:
    return {tool["toolSpec"]["name"] for tool in config["tools"]}


def test_s8_plain_answer_is_the_final_text_with_cost(bedrock):
    client, stubber = bedrock
    request = TurnRequest(
        crew_name="legal",
        instructions="You answer questions about contracts.",
        settings={},
        kind="message",
        prompt="What is clause 4?",
    )
    stubber.add_response(
        "converse",
        reply([{"text": "Clause 4 is about rent."}], "end_turn", (1000, 500)),
        {
            "modelId": MODEL,
            "system": [{"text": ANY}],
            "messages": [{"role": "user", "content": [{"text": "What is clause 4?"}]}],
            "toolConfig": ANY,
            "inferenceConfig": {"maxTokens": 256, "temperature": 0.1},
        },
    )
    turn = adapter(client, max_tokens=256, temperature=0.1).run_turn(request)
    assert turn.final_text == "Clause 4 is about rent."
    assert not turn.has_result and turn.question is None
    assert turn.cost_usd == pytest.approx(1000 * 0.8e-6 + 500 * 4e-6)


def test_f6_tool_use_round_trip_writes_the_result_and_files(bedrock):
    client, stubber = bedrock
    first = [
        {"text": "Writing the summary."},
        tool_use("t1", "write_file", {"path": "notes/summary.md", "content": "# Rent"}),
        tool_use("t2", "write_result", {"result": {"summary": "monthly rent"}}),
    ]
    seen: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.bedrock-runtime.Converse",
        lambda params, **_: seen.append({"tools": tool_names(params["toolConfig"])}),
    )
    stubber.add_response("converse", reply(first, "tool_use", (800, 100)))
    stubber.add_response(
        "converse",
        reply([{"text": "Done: monthly rent."}], "end_turn", (900, 20)),
        {
            "modelId": MODEL,
            "system": ANY,
            "toolConfig": ANY,
            "messages": [
                {"role": "user", "content": [{"text": "Summarize: the tenant pays monthly."}]},
                {"role": "assistant", "content": first},
                {
                    "role": "user",
                    "content": [
                        {"toolResult": {"toolUseId": "t1", "content": [{"text": ANY}]}},
                        {
                            "toolResult": {
                                "toolUseId": "t2",
                                "content": [{"text": "Result recorded."}],
                            }
                        },
                    ],
                },
            ],
        },
    )
    turn = adapter(client).run_turn(summarize_call(output_schema=SCHEMA))
    assert turn.final_text == "Done: monthly rent."
    assert turn.has_result and turn.result == {"summary": "monthly rent"}
    assert turn.files == {"notes/summary.md": b"# Rent"}
    assert turn.progress == ["Writing the summary.", "wrote notes/summary.md"]
    assert turn.cost_usd == pytest.approx(1700 * 0.8e-6 + 120 * 4e-6)
    assert seen[0]["tools"] == {"human_feedback", "write_file", "write_result"}


def test_f6_output_schema_is_in_the_system_prompt_and_write_result_only_with_a_schema(bedrock):
    client, stubber = bedrock
    captured: list[dict[str, Any]] = []
    client.meta.events.register(
        "provide-client-params.bedrock-runtime.Converse",
        lambda params, **_: captured.append(params),
    )
    stubber.add_response("converse", reply([{"text": "a"}], "end_turn", (1, 1)))
    stubber.add_response("converse", reply([{"text": "b"}], "end_turn", (1, 1)))
    adapter(client).run_turn(summarize_call(output_schema=SCHEMA))
    adapter(client).run_turn(summarize_call())
    with_schema, without = captured
    system = with_schema["system"][0]["text"]
    assert system.startswith("You summarize contracts.")
    assert '"summary"' in system and "write_result" in system
    assert "write_result" not in tool_names(without["toolConfig"])


def test_f6_write_result_without_a_schema_is_refused_to_the_model(bedrock):
    client, stubber = bedrock
    stubber.add_response(
        "converse", reply([tool_use("t1", "write_result", {"result": {}})], "tool_use", (1, 1))
    )
    stubber.add_response(
        "converse",
        reply([{"text": "ok"}], "end_turn", (1, 1)),
        {
            "modelId": MODEL,
            "system": ANY,
            "toolConfig": ANY,
            "messages": [
                ANY,
                ANY,
                {
                    "role": "user",
                    "content": [
                        {
                            "toolResult": {
                                "toolUseId": "t1",
                                "content": [
                                    {
                                        "text": "Error: unknown tool 'write_result'. "
                                        "Available: human_feedback, write_file."
                                    }
                                ],
                            }
                        }
                    ],
                },
            ],
        },
    )
    turn = adapter(client).run_turn(summarize_call())
    assert turn.final_text == "ok" and not turn.has_result


def test_f7_human_feedback_ends_the_turn_with_a_question(bedrock):
    client, stubber = bedrock
    content = [
        {"text": "I need to check."},
        tool_use("q1", "human_feedback", {"question": "Which lease?"}),
    ]
    stubber.add_response("converse", reply(content, "tool_use", (100, 10)))
    turn = adapter(client).run_turn(summarize_call(output_schema=SCHEMA))
    assert turn.question == "Which lease?"
    assert turn.final_text is None and not turn.has_result
    assert turn.cost_usd > 0
    # the Stubber fixture asserts no second converse call was queued or made


def test_f7_the_answer_and_the_correction_reach_the_model_as_user_turns():
    request = summarize_call(
        answer="The 2024 lease.",
        correction="'summary' is a required property",
        history=(
            {"role": "assistant", "content": "Earlier draft."},
            {"role": "user", "content": "Try again."},
            {"role": "user", "content": ""},
        ),
    )
    messages = build_messages(request)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    texts = [block["text"] for block in messages[-1]["content"]]
    assert texts[0] == "Try again."
    assert texts[1] == "Summarize: the tenant pays monthly."
    assert "The 2024 lease." in texts[2]
    assert "'summary' is a required property" in texts[3] and "write_result" in texts[3]


def test_s8_bedrock_client_error_becomes_an_adapter_error_with_a_hint(bedrock):
    client, stubber = bedrock
    stubber.add_client_error(
        "converse",
        service_error_code="AccessDeniedException",
        service_message="You don't have access to the model.",
        http_status_code=403,
    )
    with pytest.raises(AdapterError) as failed:
        adapter(client).run_turn(summarize_call())
    text = str(failed.value)
    assert MODEL in text and "AccessDeniedException" in text
    assert "You don't have access to the model." in text and "bedrock:InvokeModel" in text


def test_s8_tool_loop_is_bounded_by_max_turns(bedrock):
    client, stubber = bedrock
    for n in range(2):
        body = [tool_use(f"t{n}", "write_file", {"path": f"f{n}.txt", "content": "x"})]
        stubber.add_response("converse", reply(body, "tool_use", (1, 1)))
    with pytest.raises(AdapterError, match=r"after 2 Converse calls \(max_turns\)"):
        adapter(client, max_turns=2).run_turn(summarize_call())


def test_s8_unsafe_file_paths_are_refused_to_the_model(bedrock):
    client, stubber = bedrock
    body = [tool_use("t1", "write_file", {"path": "../../etc/passwd", "content": "x"})]
    stubber.add_response("converse", reply(body, "tool_use", (1, 1)))
    stubber.add_response("converse", reply([{"text": "sorry"}], "end_turn", (1, 1)))
    turn = adapter(client).run_turn(summarize_call())
    assert turn.files == {} and turn.final_text == "sorry"


def test_s8_guardrail_stop_fails_the_turn(bedrock):
    client, stubber = bedrock
    stubber.add_response("converse", reply([{"text": "blocked"}], "guardrail_intervened", (1, 1)))
    with pytest.raises(AdapterError, match="guardrail_intervened"):
        adapter(client).run_turn(summarize_call())


def test_s8_prices_match_inference_profiles_and_allow_overrides():
    assert prices_for(MODEL) == (0.80, 4.00)
    assert prices_for("arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0") == (
        0.06,
        0.24,
    )
    assert prices_for("mistral.unknown-model") == (0.0, 0.0)
    assert prices_for("x", {"input_per_million": 1, "output_per_million": 2}) == (1.0, 2.0)


@pytest.mark.parametrize(
    ("settings", "problem"),
    [
        ({}, "'model_id' is required"),
        ({"model_id": MODEL, "max_turns": 0}, "'max_turns' must be an integer from 1 to 100"),
        ({"model_id": MODEL, "max_tokens": True}, "'max_tokens' must be an integer"),
        ({"model_id": MODEL, "temperature": 3}, "'temperature' must be a number from 0 to 1"),
        ({"model_id": MODEL, "model": "x"}, "unknown setting 'model'"),
        ({"model_id": MODEL, "pricing": {"input_per_million": 1}}, "needs 'output_per_million'"),
    ],
)
def test_s8_invalid_bedrock_settings_are_reported(settings, problem):
    problems = validate({"type": "bedrock", **settings})
    assert any(problem in text for text in problems), problems


def test_s8_a_cut_answer_is_kept_and_flagged_in_progress(bedrock):
    client, stubber = bedrock
    stubber.add_response("converse", reply([{"text": "The lease is"}], "max_tokens", (1, 1)))
    turn = adapter(client).run_turn(summarize_call())
    assert turn.final_text == "The lease is"
    assert turn.progress == ["the answer was cut at max_tokens"]
