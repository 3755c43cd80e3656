"""Reading and writing A2A message parts the way every task of this product uses them: a
question is a data part `{request_id: question}` (and its text), an answer a data part
`{request_id: answer}`, metadata a Struct."""

from __future__ import annotations

from typing import Any

from a2a.helpers.proto_helpers import get_data_parts, new_data_part, new_text_part
from a2a.types.a2a_pb2 import Message, Role
from google.protobuf.json_format import ParseDict
from google.protobuf.struct_pb2 import Struct


def agent_message(task_id: str, context_id: str, key: str, texts: list[str]) -> Message:
    """A status message of the agent's: lines of text (an error, a reason)."""
    return Message(
        message_id=f"{task_id}-{key}",
        context_id=context_id,
        task_id=task_id,
        role=Role.ROLE_AGENT,
        parts=[new_text_part(t) for t in texts],
    )


def question_message(task_id: str, context_id: str, questions: dict[str, str]) -> Message:
    """The questions a task waits on: one data part keyed by request id, then their text."""
    message = agent_message(
        task_id, context_id, f"asks-{'-'.join(sorted(questions))}", list(questions.values())
    )
    message.parts.insert(0, new_data_part(questions))
    return message


def answers_in(message: Message) -> dict[str, str]:
    """`{request_id: answer}` from a message's data parts (text answers as they are)."""
    answers: dict[str, str] = {}
    for data in get_data_parts(message.parts):
        if isinstance(data, dict):
            answers.update(
                {
                    str(k): v if isinstance(v, str) else str(whole_numbers(v))
                    for k, v in data.items()
                }
            )
    return answers


def whole_numbers(value: Any) -> Any:
    """A data part's numbers arrive as doubles (google.protobuf.Value): 3.0 is read as 3,
    so an `integer` in a function's input schema accepts what the caller sent."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    return value


def struct(value: dict[str, Any]) -> Struct:
    return ParseDict(value, Struct())
