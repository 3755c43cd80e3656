"""What the a2a adapter says and reads, word for word (issue 30 §2): the task text an
external A2A agent receives for a message turn and a function call, how each of the
agent's end states becomes the turn's answer, question or error, and the error's words
(never a header or secret). The adapter's traffic is driven end to end in
tests/integration/test_a2a_adapter.py."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.types.a2a_pb2 import Artifact, Message, Part, Task, TaskState, TaskStatus
from google.protobuf.struct_pb2 import Value

from agentworks.crews.adapters.a2a_agent import SESSION_PREFIX, _outcome, _said, _task_text
from agentworks.crews.adapters.base import AdapterError, TurnRequest

SCHEMA = {"type": "object", "properties": {"summary": {"type": "string"}}}


def _request(kind: str = "message", **fields: Any) -> TurnRequest:
    return TurnRequest(crew_name="contracts", instructions="", settings={}, kind=kind,  # type: ignore[arg-type]
                       prompt="Summarize clause 7.", **fields)  # fmt: skip


def _task(state: int, said: str = "", artifacts: list[Artifact] | None = None) -> Task:
    status = TaskStatus(state=state)  # type: ignore[arg-type]
    if said:
        status.message.CopyFrom(Message(role="ROLE_AGENT", parts=[Part(text=said)]))  # type: ignore[arg-type]
    return Task(id="task-7", context_id="ctx", status=status, artifacts=artifacts or [])


def _data(value: dict[str, Any]) -> Part:
    data = Value()
    data.struct_value.update(value)
    return Part(data=data)


# ---- the task text ----


def test_a_message_turn_sends_its_prompt_and_a_persons_answer_after_it() -> None:
    assert _task_text(_request()) == "Summarize clause 7."
    answered = _task_text(_request(answer="Only the first paragraph."))
    assert answered == (
        "Summarize clause 7.\n\nA person answered the pending question:\nOnly the first paragraph."
    )


def test_a_function_call_is_described_without_the_reply_instructions() -> None:
    text = _task_text(_request("function", function="summarize", args={"text": "t"}))
    assert text == (
        "Please carry out a call of the function `summarize` for Crew `contracts`.\n\n"
        'Arguments (JSON):\n{\n  "text": "t"\n}\n\n'
        "Deliver the result: your answer as text."
    )
    schema = _task_text(_request("function", function="summarize", args={}, output_schema=SCHEMA))
    assert schema.endswith(
        "Deliver the result, with a text that is only a JSON value matching this JSON Schema "
        '(it is validated):\n{\n  "properties": {\n    "summary": {\n      "type": "string"'
        '\n    }\n  },\n  "type": "object"\n}'
    )


# ---- the agent's end states ----


def test_a_completed_task_answers_its_artifacts_text_and_its_first_data_part() -> None:
    artifact = Artifact(
        artifact_id="a", parts=[Part(text="Done."), _data({"summary": "s", "n": 2})]
    )
    result = _outcome(_task(TaskState.TASK_STATE_COMPLETED, artifacts=[artifact]),
                      _request(output_schema=SCHEMA))  # fmt: skip
    assert result.final_text == "Done."
    assert (result.result, result.has_result) == ({"summary": "s", "n": 2}, True)
    assert isinstance(result.result["n"], int)  # a whole number stays one (not 2.0)
    assert result.progress == ["A2A task task-7: TASK_STATE_COMPLETED"]


def test_a_completed_task_without_a_schema_answers_text_only() -> None:
    artifact = Artifact(artifact_id="a", parts=[_data({"summary": "s"})])
    result = _outcome(_task(TaskState.TASK_STATE_COMPLETED, "All done.", [artifact]), _request())
    assert (result.final_text, result.has_result, result.result) == ("All done.", False, None)
    empty = _outcome(_task(TaskState.TASK_STATE_COMPLETED), _request())
    assert empty.final_text is None


def test_a_task_that_needs_input_is_the_calls_question_on_the_same_task() -> None:
    asked = _outcome(_task(TaskState.TASK_STATE_INPUT_REQUIRED, "Which clause?"), _request())
    assert asked.question == "Which clause?"
    assert asked.session_id == SESSION_PREFIX + "task-7"
    assert asked.progress == ["A2A task task-7: TASK_STATE_INPUT_REQUIRED"]
    silent = _outcome(_task(TaskState.TASK_STATE_INPUT_REQUIRED), _request())
    assert silent.question == "The A2A agent needs more input."


@pytest.mark.parametrize(
    ("state", "words"),
    [
        (TaskState.TASK_STATE_FAILED, "The A2A agent failed"),
        (TaskState.TASK_STATE_REJECTED, "The A2A agent rejected the task"),
        (TaskState.TASK_STATE_CANCELED, "The A2A agent cancelled the task"),
        (
            TaskState.TASK_STATE_AUTH_REQUIRED,
            "The A2A agent needs authentication this adapter cannot give",
        ),
        (TaskState.TASK_STATE_UNSPECIFIED, "The A2A agent answered TASK_STATE_UNSPECIFIED"),
    ],
)
def test_every_other_end_is_the_turns_error_in_words(state: int, words: str) -> None:
    with pytest.raises(AdapterError) as plain:
        _outcome(_task(state), _request())
    assert str(plain.value) == words + "."
    with pytest.raises(AdapterError) as told:
        _outcome(_task(state, "out of credits"), _request())
    assert str(told.value) == words + ": out of credits"


# ---- an error's words ----


def test_an_errors_words_are_its_first_line_bounded_and_never_a_header() -> None:
    assert _said(OSError("connection reset\nsecret detail")) == "connection reset"
    assert _said(OSError("x" * 300)) == "x" * 200
    assert _said(TimeoutError()) == "TimeoutError"
    assert _said(ValueError("bad Authorization: Bearer abc")) == "ValueError"
