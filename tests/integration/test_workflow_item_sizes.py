"""Workflow items stay under DynamoDB's 400 KB item limit with every bound at its maximum at
once (issue 8), counted as DynamoDB counts and written through the real stores to the local
stack, which refuses an oversized item as AWS does; what outgrows an item (a session's
turns) goes to S3 and comes back whole."""

from __future__ import annotations

import json
from typing import Any

from agentworks import limits
from agentworks.workflows.definition import parse_workflow
from agentworks.workflows.records import Notification, RunRecord, StepRecord
from agentworks.workflows.run_store import RunStore
from tests.support.item_size import item_size

WIDE = "😀"  # 4 bytes of UTF-8, one character
ESCAPED = "\x01"  # 6 bytes inside JSON
MAX = limits.DYNAMODB_ITEM_MAX_BYTES


def _store(stack: Any) -> RunStore:
    return stack.services.workflows.runs._runs  # type: ignore[no-any-return]


def _largest_definition() -> dict[str, Any]:
    """A definition of exactly WORKFLOW_DEFINITION_MAX_BYTES as sent."""
    steps = [
        {"label": f"{'s' * 60}{i:02d}", "adapter": "a" * 64, "prompt": WIDE * 20_000}
        for i in range(3)
    ]
    data: dict[str, Any] = {"workflowId": "w" * 64, "cacheKey": "k" * 64, "input": {},
                            "stages": [{"label": "x" * 64, "steps": steps}]}  # fmt: skip

    def size() -> int:
        return len(json.dumps(data, ensure_ascii=False).encode())

    while size() < limits.WORKFLOW_DEFINITION_MAX_BYTES:  # variables of at most 20k each
        name = f"PAD{len(data['input'])}"
        data["input"][name] = ""
        room = limits.WORKFLOW_DEFINITION_MAX_BYTES - size()
        data["input"][name] = "p" * min(room, limits.WORKFLOW_VARIABLE_MAX_CHARS)
    assert (
        len(json.dumps(data, ensure_ascii=False).encode()) == limits.WORKFLOW_DEFINITION_MAX_BYTES
    )
    return data


def test_a_run_at_every_limit_fits_one_item(stack) -> None:
    start = parse_workflow(_largest_definition())
    note = Notification("escalation", "s" * 64, False, 3, 500, ESCAPED * 300, 1)
    run = RunRecord(
        run_id="wfrun_01JZZZZZZZZZZZZZZZZZZZZZZZ",
        account_id="acct_01JZZZZZZZZZZZZZZZZZZZZZZZ",
        connection_id="conn_01JZZZZZZZZZZZZZZZZZZZZZZZ",
        workflow_id=start.workflow_id,
        definition=start.to_json(),
        created_at=1_812_345_678_901,
        retry_of="wfrun_01JZZZZZZZZZZZZZZZZZZZZZZZ",
        error=ESCAPED * (limits.WORKFLOW_ERROR_MAX_CHARS + 200),
        notifications=[note] * limits.WORKFLOW_NOTIFICATIONS_KEPT,
    )
    store = _store(stack)
    assert item_size(store._run_item(run, 1)) < MAX, item_size(store._run_item(run, 1))
    store.create(run)  # the local stack refuses an item over the limit, as AWS does
    assert store.get(run.run_id) is not None


def test_a_step_at_every_limit_fits_and_its_session_moves_to_s3(stack) -> None:
    store = _store(stack)
    step = StepRecord(
        run_id="wfrun_01JZZZZZZZZZZZZZZZZZZZZZZZ",
        stage=limits.WORKFLOW_STAGES_MAX - 1,
        index=limits.WORKFLOW_STEPS_PER_STAGE_MAX - 1,
        label="l" * 64,
        stage_label="s" * 64,
        status="waiting",
        session_id="sess_01JZZZZZZZZZZZZZZZZZZZZZZZ",
        output=ESCAPED * 100_000,
        turns=[{"role": "user", "content": ESCAPED * limits.WORKFLOW_PROMPT_MAX_CHARS}] * 8,
        question=ESCAPED * limits.WORKFLOW_QUESTION_MAX_CHARS,
        answer=ESCAPED * limits.WORKFLOW_ANSWER_MAX_CHARS,
        task_token="t" * 1024,  # Step Functions task tokens are at most 1,024 characters
        error=ESCAPED * limits.WORKFLOW_ERROR_MAX_CHARS,
        input_hash="h" * 64,
        call_id="wcall_01JZZZZZZZZZZZZZZZZZZZZZZZ",
        route="r" * 64,
        human={f"V{i}": ESCAPED * 400 for i in range(limits.WORKFLOW_VARIABLES_MAX)},
        item=limits.WORKFLOW_ITEMS_MAX - 1,
    )
    store.save_step(step, 0)
    found = store.get_step(step.run_id, step.position)
    assert found is not None
    read, version = found
    assert version == 1 and read.turns == step.turns and read.output == step.output
    assert read.turns_file is not None  # the turns and output went to S3


def test_a_step_keeps_its_session_in_its_item_up_to_workflow_step_item_max_bytes(stack) -> None:
    """A step record of WORKFLOW_STEP_ITEM_MAX_BYTES keeps its turns and output in its item;
    a byte more and they go to S3 (and come back whole)."""
    from agentworks.workflows.run_store import _json

    store = _store(stack)

    def step_of_size(index: int, size: int) -> StepRecord:
        step = StepRecord(
            run_id="wfrun_01JZZZZZZZZZZZZZZZZZZZZZZZ", stage=0, index=index, label=f"s{index}",
            stage_label="s", status="succeeded", output="",
            turns=[{"role": "user", "content": "hi"}],
        )  # fmt: skip
        step.output = "x" * (size - len(_json(step.to_json()).encode()))
        assert len(_json(step.to_json()).encode()) == size
        return step

    at = step_of_size(0, limits.WORKFLOW_STEP_ITEM_MAX_BYTES)
    store.save_step(at, 0)
    kept = store.get_step(at.run_id, at.position)
    assert kept is not None and kept[0].turns_file is None and kept[0].output == at.output

    past = step_of_size(1, limits.WORKFLOW_STEP_ITEM_MAX_BYTES + 1)
    store.save_step(past, 0)
    moved = store.get_step(past.run_id, past.position)
    assert moved is not None and moved[0].turns_file is not None
    assert moved[0].output == past.output and moved[0].turns == past.turns
