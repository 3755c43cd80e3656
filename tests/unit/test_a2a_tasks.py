"""A call read as an A2A Task (agentworks.a2a_server.tasks): every state, the question as a
data part keyed by request id, the outcome as the `result` artifact, the raw state kept."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from a2a.helpers.proto_helpers import get_data_parts, new_data_part, new_text_part
from a2a.types.a2a_pb2 import Message, Role, TaskState
from google.protobuf.json_format import MessageToDict
from hypothesis import given
from hypothesis import strategies as st

from agentworks.a2a_server.call_tasks import CALL_STATES_OF, call_task
from agentworks.a2a_server.parts import answers_in, whole_numbers
from agentworks.crews.models import CallState


def status(state: str, **fields: Any) -> dict[str, Any]:
    return {
        "call_id": "call_1",
        "target": "crew:contracts",
        "function": "summarize",
        "state": state,
        "terminal": state in ("succeeded", "failed", "cancelled", "interrupted"),
        "pending_inputs": [],
        "errors": [],
        "final_text": None,
        "result": None,
        "result_file": None,
        "files": [],
        "turns": 1,
        "cost_usd": 0.0,
        "created_at": "2026-12-04T00:00:00.000Z",
        "updated_at": "2026-12-04T00:00:01.000Z",
        **fields,
    }


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ("accepted", TaskState.TASK_STATE_SUBMITTED),
        ("running", TaskState.TASK_STATE_WORKING),
        ("input_required", TaskState.TASK_STATE_INPUT_REQUIRED),
        ("succeeded", TaskState.TASK_STATE_COMPLETED),
        ("failed", TaskState.TASK_STATE_FAILED),
        ("interrupted", TaskState.TASK_STATE_FAILED),
        ("cancelled", TaskState.TASK_STATE_CANCELED),
    ],
)
def test_each_call_state_maps_and_rides_in_the_metadata(state: str, expected: int) -> None:
    task = call_task(status(state))
    assert task.status.state == expected
    assert MessageToDict(task.metadata)["agentworks"]["state"] == state
    assert task.id == task.context_id == "call_1"


def test_every_call_state_has_a_task_state() -> None:
    assert set().union(*CALL_STATES_OF.values()) == set(get_args(CallState))


def test_a_call_that_failed_before_any_turn_was_rejected() -> None:
    assert call_task(status("failed", turns=0)).status.state == TaskState.TASK_STATE_REJECTED
    assert call_task(status("failed", turns=1)).status.state == TaskState.TASK_STATE_FAILED


def test_a_pending_question_is_a_data_part_keyed_by_its_request_id() -> None:
    asked = [{"request_id": "req_1", "question": "Proceed?", "asked_at": None}]
    task = call_task(status("input_required", pending_inputs=asked))
    assert get_data_parts(task.status.message.parts) == [{"req_1": "Proceed?"}]
    assert task.status.message.role == Role.ROLE_AGENT
    assert task.status.message.task_id == "call_1"
    assert task.status.timestamp.ToJsonString() == "2026-12-04T00:00:01Z"


def test_the_outcome_is_the_result_artifact_and_errors_the_status_message() -> None:
    done = call_task(status("succeeded", result={"n": 1}, final_text="Done."))
    [artifact] = done.artifacts
    assert artifact.name == "result"
    assert get_data_parts(artifact.parts) == [{"n": 1.0}]
    assert [p.text for p in artifact.parts if p.text] == ["Done."]
    assert not call_task(status("succeeded", result={"n": 1}), include_artifacts=False).artifacts
    failed = call_task(status("failed", errors=["The adapter failed."]))
    assert [p.text for p in failed.status.message.parts] == ["The adapter failed."]
    assert not failed.artifacts


def test_files_are_named_in_the_artifacts_metadata() -> None:
    files = [{"path": "report.md", "size": 10}]
    task = call_task(status("succeeded", files=files, result_file="result.json"))
    assert MessageToDict(task.artifacts[0].metadata) == {
        "files": [{"path": "report.md", "size": 10.0}],
        "result_file": "result.json",
    }


def test_answers_are_read_from_data_parts_only() -> None:
    message = Message(
        role=Role.ROLE_USER,
        parts=[new_text_part("ignored"), new_data_part({"req_1": "yes", "req_2": 3})],
    )
    assert answers_in(message) == {"req_1": "yes", "req_2": "3"}


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**52), 2**52) | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
        ),
        max_leaves=10,
    )
)
def test_json_survives_a_data_part(value: Any) -> None:
    """A data part carries numbers as doubles: whole ones come back as the ints they were."""
    [back] = get_data_parts([new_data_part({"v": value})])
    assert whole_numbers(back) == {"v": value}


# -- a request in a conversation with a Crew, as a task -------------------------------------

CONVERSATION = "01MCC5RM00QXTAJFGYQKWTPWRS"
ASKED = f"msg_{CONVERSATION}b0000000001"  # the request went to side b (the Crew)


def detail(state: str, **fields: Any) -> Any:
    from agentworks.conversations.inbox_models import (
        ConversationAgent,
        ConversationDetail,
        ConversationMessage,
        PendingQuestion,
    )
    from agentworks.conversations.models import RequestView

    request = RequestView(
        message_id=ASKED,
        state=state,  # type: ignore[arg-type]
        label=state,
        deadline_at="2026-12-05T00:00:00.000Z",
        run_id=fields.pop("run_id", None),
        reason=fields.pop("reason", None),
        created_at="2026-12-04T00:00:00.000Z",
        updated_at="2026-12-04T00:00:02.000Z",
    )
    replies = [
        ConversationMessage(message_id=f"msg_{CONVERSATION}a000000000{i + 2}", sender="crew:c",
                            to="external", kind="reply", body=body,
                            created_at="2026-12-04T00:00:01.000Z", in_reply_to=ASKED)
        for i, body in enumerate(fields.pop("replies", []))
    ]  # fmt: skip
    questions = [PendingQuestion(**q) for q in fields.pop("questions", [])]
    return ConversationDetail(
        conversation_id=f"cnv_{CONVERSATION}",
        status="active",
        tab="active",
        tab_label="Active",
        agents=[
            ConversationAgent(
                side="a", address="external", inbox_id=f"ibx_{CONVERSATION}a", may_act=True
            ),
            ConversationAgent(
                side="b", address="crew:c", inbox_id=f"ibx_{CONVERSATION}b", may_act=False
            ),
        ],
        open_requests=[],
        runs=[],
        needs_you=0,
        runs_as_you=True,
        created_at="2026-12-04T00:00:00.000Z",
        last_activity_at="2026-12-04T00:00:00.000Z",
        messages=replies,
        requests=[request],
        questions=questions,
        **fields,
    ), request


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ("waiting_for_review", TaskState.TASK_STATE_SUBMITTED),
        ("received", TaskState.TASK_STATE_SUBMITTED),
        ("in_progress", TaskState.TASK_STATE_WORKING),
        ("answered", TaskState.TASK_STATE_COMPLETED),
        ("declined", TaskState.TASK_STATE_REJECTED),
        ("couldnt_complete", TaskState.TASK_STATE_FAILED),
        ("expired", TaskState.TASK_STATE_FAILED),
        ("cancelled", TaskState.TASK_STATE_CANCELED),
    ],
)
def test_each_request_state_maps_and_rides_in_the_metadata(state: str, expected: int) -> None:
    from agentworks.a2a_server.request_tasks import request_task

    task = request_task(*detail(state))
    assert task.status.state == expected
    assert task.id == ASKED and task.context_id == f"ibx_{CONVERSATION}a"  # the asker's inbox
    raw = MessageToDict(task.metadata)["agentworks"]
    assert raw["state"] == state and raw["conversation_id"] == f"cnv_{CONVERSATION}"
    assert task.status.timestamp.ToJsonString() == "2026-12-04T00:00:02Z"


def test_the_crews_replies_are_the_reply_artifact() -> None:
    from agentworks.a2a_server.request_tasks import request_task

    task = request_task(*detail("answered", replies=["Clause 7 covers it.", "And 8."]))
    [artifact] = task.artifacts
    assert artifact.name == "reply"
    assert [p.text for p in artifact.parts] == ["Clause 7 covers it.", "And 8."]
    assert not task.status.HasField("message")
    assert not request_task(*detail("in_progress")).artifacts


def test_a_question_of_the_requests_run_is_input_required() -> None:
    from agentworks.a2a_server.request_tasks import request_task

    asked = {"run_id": "run_1", "request_id": "req_9", "question": "Which clause?"}
    other = {"run_id": "run_2", "request_id": "req_8", "question": "Not this one"}
    task = request_task(*detail("in_progress", run_id="run_1", questions=[other, asked]))
    assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert get_data_parts(task.status.message.parts) == [{"req_9": "Which clause?"}]
    # A question of another run, or none: still working.
    assert (
        request_task(*detail("in_progress", run_id="run_3", questions=[asked])).status.state
        == TaskState.TASK_STATE_WORKING
    )


def test_why_it_ended_is_the_status_message() -> None:
    from agentworks.a2a_server.request_tasks import request_task

    task = request_task(*detail("declined", reason="Out of scope."))
    assert [p.text for p in task.status.message.parts] == ["Out of scope."]
    answered = request_task(*detail("answered", reason="Answered by a person for the agent."))
    assert not answered.status.HasField("message")


def test_the_metadata_carries_the_calls_raw_facts() -> None:
    task = call_task(status("running", turns=2, cost_usd=0.25))
    assert MessageToDict(task.metadata) == {
        "agentworks": {
            "state": "running",
            "target": "crew:contracts",
            "function": "summarize",
            "turns": 2.0,
            "cost_usd": 0.25,
            "created_at": "2026-12-04T00:00:00.000Z",
        }
    }
