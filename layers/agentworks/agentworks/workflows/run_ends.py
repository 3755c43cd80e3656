"""What the state machine's stage and run ends do (W1, W10, W12): the barrier after a
stage's steps, the run's recorded outcome with its usage and completion webhook, and the
states a pipeline item's child execution entered."""

from __future__ import annotations

import json
from dataclasses import astuple
from typing import Any

from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews.execution import Executions
from agentworks.observability import count_outcome
from agentworks.usage.counts import Counts
from agentworks.workflows.call_waits import CallWaits
from agentworks.workflows.definition import WorkflowStart
from agentworks.workflows.records import TERMINAL_RUN
from agentworks.workflows.run_notices import RunNotices
from agentworks.workflows.run_store import RunStore

DONE = frozenset({"succeeded", "skipped"})  # what a barrier lets through


class RunGone(Exception):
    """The run this execution works for is missing."""


class RunEnds:
    def __init__(
        self,
        runs: RunStore,
        notices: RunNotices,
        clock: Clock = SYSTEM_CLOCK,
        history: Executions | None = None,
        waits: CallWaits | None = None,
    ) -> None:
        self._runs = runs
        self._notices = notices
        self._clock = clock
        self._history = history  # the executions' states entered (usage)
        self._waits = waits  # a run's end wakes a workflow step that called its function

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    def barrier(self, run_id: str, item: int, stage: int) -> bool:
        """W1: every step of the stage (of this item, in a pipeline) has ended; True when one
        of them did not succeed."""
        state = self._runs.read_item(run_id, item)
        if state is None:
            raise RunGone(run_id)
        run = state.run
        start = WorkflowStart.model_validate(run.definition)
        ended = {r.index: r.status for r in state.steps if (r.item, r.stage) == (item, stage)}
        return run.status in TERMINAL_RUN or any(
            ended.get(i) not in DONE for i in range(len(start.stages[stage].steps))
        )

    def finish(self, run_id: str, error: Any = None, execution: str | None = None) -> None:
        """Records the run's outcome; `execution` (the state machine passes its own ARN: this
        function cannot name it) is read for the states it entered, the run's usage."""
        state = self._runs.read_end(run_id)
        if state is None:
            raise RunGone(run_id)
        run = state.run
        if run.status in TERMINAL_RUN:
            self._wake_caller(run_id)  # a retried Finish, or a cancel: wake it (again)
            return
        failed = [at for at, status in state.statuses.items() if status not in DONE]
        run.status = "failed" if failed or error else "succeeded"
        found = self._runs.get_step(run_id, min(failed, key=astuple)) if failed else None
        if found is not None:
            first = found[0]
            where = f"item {first.item}: " if run.definition.get("items") else ""
            run.error = f"{where}step {first.label} {first.status}: {first.error or ''}".strip()
        elif error:
            run.error = f"the run's execution failed: {json.dumps(error)[:500]}"
        run.ended_at = self._now()
        entered = self._history.entered_states(execution) if execution and self._history else 0
        entered += state.item_transitions
        usage = Counts(state_transitions=entered, mcp_tool_calls=state.mcp_tool_calls)
        self._runs.save(run, state.run_version, usage=usage)
        count_outcome("WorkflowRunsEnded", run.status)
        self._wake_caller(run_id)
        self._notices.send(run, "completed", {"status": run.status, "error": run.error})

    def item_ended(self, run_id: str, execution: str) -> None:
        """W12: an item's child execution counts the states it entered into its run's
        usage (the run's own history holds only its Distributed Map's events). An executor
        that runs items inside the run's own execution (moto's) names that one: nothing to
        add, the run's Finish counts it."""
        if self._history is None or not execution or execution.endswith(f":{run_id}"):
            return
        self._runs.add_item_transitions(run_id, self._history.entered_states(execution))

    def _wake_caller(self, run_id: str) -> None:
        """W10: a workflow step that called this run's function waits for its end."""
        if self._waits is not None:
            self._waits.wake(run_id)
