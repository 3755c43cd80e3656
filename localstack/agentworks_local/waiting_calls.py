"""Calls whose executions the restart lost: the waiting ones wait again, the rest end.

Step Functions executions live in moto's memory only; the calls they drive are DynamoDB
records, which the journal keeps. After a restart:

- a call waiting for a person's answer (F7, `AwaitInput`) or for an agent's posted result
  (mailbox adapter, `AwaitAgent`) gets its execution back, started at that wait with the
  same name, so the reconciler finds it running and `reply` / `post_result` complete it.
  Both waits' step runner actions are idempotent (they record the new task token; a
  hand-off that went out is not sent again);
- a call that was mid-turn ends `interrupted`, saying the local stack stopped under it,
  as a call whose Lambda died would.

On AWS nothing of this is needed: executions outlive any one process.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentworks.crews.call_store import CallStore
from agentworks.crews.models import CallRecord
from agentworks.crews.open_call_store import OpenCallStore

INTERRUPTED_BY_RESTART = (
    "the local stack stopped while this call was running; its turn did not finish"
)
_TOKEN_WAIT_SECONDS = 10.0


@dataclass
class Resumed:
    waiting: list[str] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)

    def describe(self) -> str:
        return (
            f"waiting calls resumed: {len(self.waiting)}; calls ended interrupted (mid-turn "
            f"at the stop): {len(self.interrupted)}"
        )


def waiting_state(record: CallRecord) -> str | None:
    """The state machine's wait the call was in, or None when it was not waiting."""
    if record.terminal or not record.task_token:
        return None
    if record.state == "input_required":
        return "AwaitInput"
    if record.handoff_inbox_id and record.handoff_message is None:
        return "AwaitAgent"
    return None


def resume_calls(
    client: Any,
    work_table: str,
    stepfunctions: Any,
    state_machine_arn: str,
    interrupt: Callable[[str, str], bool],
) -> Resumed:
    calls = CallStore(client, work_table)
    resumed = Resumed()
    by_state: dict[str, list[str]] = {}
    old_tokens: dict[str, str | None] = {}
    for call_id in OpenCallStore(client, work_table).every_open():
        found = calls.get(call_id)
        if found is None or found[0].terminal:
            continue
        state = waiting_state(found[0])
        if state is None:
            if interrupt(call_id, INTERRUPTED_BY_RESTART):
                resumed.interrupted.append(call_id)
            continue
        by_state.setdefault(state, []).append(call_id)
        old_tokens[call_id] = found[0].task_token
    if not by_state:
        return resumed
    original = stepfunctions.describe_state_machine(stateMachineArn=state_machine_arn)
    definition = original["definition"]
    try:
        for state, call_ids in by_state.items():
            # An execution copies its state machine's definition when it starts (as on
            # AWS): started under one that begins at the wait, it carries on from there.
            starting_at = {**json.loads(definition), "StartAt": state}
            stepfunctions.update_state_machine(
                stateMachineArn=state_machine_arn, definition=json.dumps(starting_at)
            )
            for call_id in call_ids:
                stepfunctions.start_execution(
                    stateMachineArn=state_machine_arn,
                    name=call_id,
                    input=json.dumps({"call_id": call_id}),
                )
                resumed.waiting.append(call_id)
    finally:
        stepfunctions.update_state_machine(stateMachineArn=state_machine_arn, definition=definition)
    _await_new_tokens(calls, old_tokens)
    return resumed


def _await_new_tokens(calls: CallStore, old_tokens: dict[str, str | None]) -> None:
    """Until each resumed wait has recorded its new task token, an answer would go to the
    lost execution's; the stack serves requests only after this."""
    deadline = time.monotonic() + _TOKEN_WAIT_SECONDS
    pending = dict(old_tokens)
    while pending and time.monotonic() < deadline:
        for call_id, token in list(pending.items()):
            found = calls.get(call_id)
            if found is None or found[0].terminal or found[0].task_token != token:
                del pending[call_id]
        if pending:
            time.sleep(0.05)
