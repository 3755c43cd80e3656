"""One step's rules in the workflow engine, driven as the state machine drives them (its
task events) with no execution around them: what each step records — status, times,
turns, output, question, error — and what it tells the state machine to do next. The runs
tests show the same rules through real executions; these read every field a rule writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from agentworks import limits
from agentworks.workflows.crew_steps import Progress
from agentworks.workflows.definition import WorkflowStart
from agentworks.workflows.engine import AUTO_ALLOW_REPLY, WorkflowEngine
from agentworks.workflows.records import Position, RunRecord, StepRecord
from agentworks.workflows.run_ends import RunGone
from tests.integration.workflow_support import TIMED, define
from tests.support import workflow_agents
from tests.support.history_model import asl

FIRST = Position(0, 0, 0)


@dataclass
class Runs:
    """A run written as `WorkflowRuns.start` writes it, stepped by the engine directly."""

    stack: Any
    engine: WorkflowEngine
    created: list[str]

    @property
    def store(self) -> Any:
        return self.engine._runs

    def create(self, *steps: dict[str, Any], retry_of: str | None = None, **extra: Any) -> str:
        return self.create_stages([list(steps)], retry_of, **extra)

    def create_stages(
        self, stages: list[list[dict[str, Any]]], retry_of: str | None = None, **extra: Any
    ) -> str:
        definition = {"workflowId": "engine", "stages": [{"steps": s} for s in stages], **extra}
        start = WorkflowStart.model_validate(definition)
        principal = self.stack.principal(self.stack.admin_token)
        run_id = f"wfrun_{len(self.created):04d}"
        self.created.append(run_id)
        self.store.create(
            RunRecord(
                run_id=run_id,
                account_id=principal.account_id,
                connection_id=principal.connection_id,
                workflow_id=start.workflow_id,
                definition=start.to_json(),
                created_at=int(self.stack.clock.now() * 1000),
                retry_of=retry_of,
            )
        )
        return run_id

    def step(self, run_id: str, at: Position = FIRST, **extra: Any) -> dict[str, Any]:
        event = {"action": "step", "run_id": run_id, "item": at.item, "stage": at.stage,
                 "step": at.index, "await_calls": True, **extra}  # fmt: skip
        return self.engine.handle(event)

    def record(self, run_id: str, at: Position = FIRST) -> StepRecord:
        found = self.store.get_step(run_id, at)
        assert found is not None
        return found[0]

    def answer(self, run_id: str, text: str, at: Position = FIRST) -> None:
        """What `resolve` writes: the answer, for the step's next invocation."""
        record, version = self.store.get_step(run_id, at)
        record.answer = text
        self.store.save_step(record, version)


@pytest.fixture
def runs(stack: Any, api: Any) -> Runs:
    workflow_agents.reset()
    define(api, stack.admin_token, TIMED)
    return Runs(stack, stack.services.workflows.engine, [])


def _now_ms(stack: Any) -> int:
    return int(stack.clock.now() * 1000)


def test_an_agent_step_records_its_session_turns_output_and_times(runs: Runs, stack) -> None:
    run_id = runs.create({"label": "a", "adapter": "timed", "prompt": "hello there"})
    began = _now_ms(stack)
    assert runs.step(run_id) == {"next": "done"}
    record = runs.record(run_id)
    assert record.status == "succeeded"
    assert record.output == "did: hello there"
    assert record.turns == [
        {"role": "user", "content": "hello there"},
        {"role": "assistant", "content": "did: hello there"},
    ]
    assert record.started_at == began and record.ended_at == began
    assert record.session_id is not None and record.session_id.startswith("sess")
    assert record.error is None and record.question is None and record.answer is None
    assert record.input_hash  # what a retry compares to replay it
    # A terminal step is not run again: the next invocation finds it done.
    assert runs.step(run_id) == {"next": "done"}
    assert len(workflow_agents.turns_for("hello there")) == 1


def test_a_question_waits_with_its_question_then_the_answer_goes_to_the_session(
    runs: Runs, stack
) -> None:
    run_id = runs.create(
        {"label": "a", "adapter": "timed", "prompt": "ask: which branch", "policy": "escalate"}
    )
    assert runs.step(run_id) == {"next": "await"}
    waiting = runs.record(run_id)
    assert waiting.status == "running"  # `waiting` once the Await state holds the token
    assert waiting.question == "which branch"
    assert waiting.turns == [
        {"role": "user", "content": "ask: which branch"},
        {"role": "assistant", "content": "which branch"},
    ]
    runs.engine.handle({"action": "await", "run_id": run_id, "task_token": "token-1"})
    held = runs.record(run_id)
    assert (held.status, held.task_token, held.question) == ("waiting", "token-1", "which branch")
    runs.answer(run_id, "main")
    assert runs.step(run_id) == {"next": "done"}
    done = runs.record(run_id)
    assert done.status == "succeeded"
    assert done.question is None and done.answer is None
    assert done.turns[2] == {"role": "user", "content": "main"}
    assert done.output == ("did: ask: which branch | answer: main | history: which branch / main")
    assert [t.answer for t in workflow_agents.turns_for("which branch")] == [None, "main"]


def test_auto_allow_answers_the_question_itself(runs: Runs) -> None:
    run_id = runs.create(
        {"label": "a", "adapter": "timed", "prompt": "ask: may I", "policy": "auto-allow"}
    )
    assert runs.step(run_id) == {"next": "done"}
    record = runs.record(run_id)
    assert record.status == "succeeded"
    assert record.turns[1:3] == [
        {"role": "assistant", "content": "may I"},
        {"role": "user", "content": AUTO_ALLOW_REPLY},
    ]
    assert [t.answer for t in workflow_agents.turns_for("may I")] == [None, AUTO_ALLOW_REPLY]


def test_policy_fail_fails_the_step_with_the_question(runs: Runs) -> None:
    run_id = runs.create({"label": "a", "adapter": "timed", "prompt": "ask: may I"})
    assert runs.step(run_id) == {"next": "done"}
    record = runs.record(run_id)
    assert record.status == "failed"
    assert record.error == "the session asked for input (policy fail): may I"
    assert record.question is None
    assert len(workflow_agents.turns_for("may I")) == 1


def test_a_session_that_never_finishes_fails_at_the_turn_limit(runs: Runs) -> None:
    run_id = runs.create(
        {"label": "a", "adapter": "timed", "prompt": "ask always: again", "policy": "auto-allow"}
    )
    runs.step(run_id)
    record = runs.record(run_id)
    assert record.status == "failed"
    assert record.error == (
        f"the session used {limits.WORKFLOW_STEP_TURNS_MAX} turns without finishing"
    )
    # Exactly the limit: the turn past it was never asked for.
    assert len(workflow_agents.turns_for("again")) == limits.WORKFLOW_STEP_TURNS_MAX
    assistant = [t for t in record.turns if t["role"] == "assistant"]
    assert len(assistant) == limits.WORKFLOW_STEP_TURNS_MAX


def test_a_long_question_is_kept_bounded(runs: Runs) -> None:
    most = limits.WORKFLOW_QUESTION_MAX_CHARS
    at_bound, past_bound = "q" * most, "r" * (most + 1)
    run_at = runs.create(
        {"label": "a", "adapter": "timed", "prompt": f"ask: {at_bound}", "policy": "escalate"}
    )
    run_past = runs.create(
        {"label": "a", "adapter": "timed", "prompt": f"ask: {past_bound}", "policy": "escalate"}
    )
    runs.step(run_at)
    runs.step(run_past)
    assert runs.record(run_at).question == at_bound
    assert runs.record(run_past).question == "r" * (most - 1) + "…"


def test_an_adapter_error_fails_the_step_with_its_text(runs: Runs) -> None:
    run_id = runs.create({"label": "a", "adapter": "timed", "prompt": "explode now"})
    assert runs.step(run_id) == {"next": "done"}
    record = runs.record(run_id)
    assert (record.status, record.error) == ("failed", "exploded as asked")
    assert record.ended_at is not None and record.output is None


def test_an_adapter_error_with_no_text_fails_the_step_as_the_agents_failure(runs: Runs) -> None:
    run_id = runs.create({"label": "a", "adapter": "timed", "prompt": "explode silently"})
    assert runs.step(run_id) == {"next": "done"}
    record = runs.record(run_id)
    assert (record.status, record.error) == ("failed", "the agent failed")


def test_a_turn_that_hands_off_fails_the_step_a_mailbox_profile_cannot_run(runs: Runs) -> None:
    run_id = runs.create({"label": "a", "adapter": "timed", "prompt": "hand off cost 0.25"})
    assert runs.step(run_id) == {"next": "done"}
    record = runs.record(run_id)
    assert (record.status, record.error) == (
        "failed",
        "a mailbox profile cannot run a workflow step",
    )
    assert record.ended_at is not None and record.output is None
    assert record.cost_usd == 0.25  # the turn's cost is the step's, whatever came of it


def test_a_turn_is_asked_as_the_workflows_session_with_no_instructions(runs: Runs) -> None:
    run_id = runs.create({"label": "a", "adapter": "timed", "prompt": "Summarise"})
    runs.step(run_id)
    [turn] = workflow_agents.turns_for("Summarise")
    request = turn.request
    assert (request.crew_name, request.instructions, request.kind) == (
        "workflow:engine",
        "",
        "message",
    )
    assert (request.answer, request.correction, request.history) == (None, None, ())


def test_a_wrong_answer_is_re_prompted_once_as_the_users_turn_with_what_was_wrong(
    runs: Runs,
) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    run_id = runs.create(
        {"label": "a", "adapter": "timed", "prompt": "fixable count", "outputSchema": schema}
    )
    assert runs.step(run_id) == {"next": "done"}
    record = runs.record(run_id)
    assert (record.status, record.output) == ("succeeded", '{"n": 1}')
    _, again = workflow_agents.turns_for("fixable")  # the turn, then its one re-prompt
    problem = "the final message is not JSON matching the outputSchema"
    assert (again.request.correction, again.request.answer) == (problem, None)
    assert record.turns[-3:] == [
        {"role": "assistant", "content": "did: fixable count"},
        {"role": "user", "content": f"Fix your answer: {problem}"},
        {"role": "assistant", "content": '{"n": 1}'},
    ]


def test_a_turns_tool_calls_are_bounded_by_the_invocations_time_left(
    runs: Runs, api, stack
) -> None:
    entrypoint = "tests.support.workflow_agents:tells_its_time_left"
    define(api, stack.admin_token, {"name": "clock", "type": "scripted", "entrypoint": entrypoint})
    run_id = runs.create({"label": "a", "adapter": "clock", "prompt": "p"})
    event = {"action": "step", "run_id": run_id, "item": 0, "stage": 0, "step": 0}
    assert runs.engine.handle({**event, "await_calls": True}, lambda: 7.5) == {"next": "done"}
    assert runs.record(run_id).output == "time left: 7.5"


def test_a_step_error_is_kept_bounded(runs: Runs, stack) -> None:
    engine, store = runs.engine, runs.store
    run_id = runs.create({"label": "a", "adapter": "timed", "prompt": "p"})
    most = limits.WORKFLOW_ERROR_MAX_CHARS
    record = StepRecord(run_id, 0, 0, "a", "stage-1")
    engine._end(record, 0, "failed", error="e" * most)
    assert runs.record(run_id).error == "e" * most
    record, version = store.get_step(run_id, FIRST)
    engine._end(record, version, "failed", error="f" * (most + 1))
    assert runs.record(run_id).error == "f" * (most - 1) + "…"


def test_a_branch_asks_a_person_then_takes_the_route_named(runs: Runs, stack) -> None:
    branch = {
        "label": "pick",
        "kind": "branch",
        "prompt": "Ship it?",
        "routes": {"ship": [], "hold": []},
    }
    run_id = runs.create(branch)
    began = _now_ms(stack)
    assert runs.step(run_id) == {"next": "await"}
    waiting = runs.record(run_id)
    assert waiting.status == "running" and waiting.started_at == began
    assert waiting.question == "Ship it? (choose a route: ship, hold)"
    stack.clock.advance(5)
    runs.answer(run_id, "Hold.")
    assert runs.step(run_id) == {"next": "done"}
    done = runs.record(run_id)
    assert (done.status, done.route, done.output) == ("succeeded", "hold", "hold")
    assert done.answer is None and done.question is None
    assert done.started_at == began and done.ended_at == began + 5000


def test_a_branch_answer_that_names_no_route_fails_it(runs: Runs) -> None:
    run_id = runs.create(
        {"label": "pick", "kind": "branch", "prompt": "?", "routes": {"a": [], "b": []}}
    )
    runs.step(run_id)
    runs.answer(run_id, "neither")
    assert runs.step(run_id) == {"next": "done"}
    record = runs.record(run_id)
    assert (record.status, record.error, record.route) == ("failed", "no route was chosen", None)


@pytest.mark.parametrize(
    ("error", "with_job", "expected"),
    [
        ({"Error": "States.Timeout"}, False, "no answer within 24 h"),
        ({"Error": "States.Timeout"}, True, "no runner finished it within"),
        ({"Error": "Lambda.Unknown"}, False, "the step's task failed (Lambda.Unknown)"),
        ("not a dict", False, "the step's task failed (unknown error)"),
        ({}, False, "the step's task failed (unknown error)"),
    ],
)
def test_an_interrupted_step_fails_with_why(
    runs: Runs, error: Any, with_job: bool, expected: str
) -> None:
    run_id = runs.create({"label": "a", "adapter": "timed", "prompt": "p"})
    record = StepRecord(run_id, 0, 0, "a", "stage-1", status="waiting", task_token="tok")
    record.job_id = "job_1" if with_job else None
    runs.store.save_step(record, 0)
    runs.engine.handle({"action": "interrupted", "run_id": run_id, "error": error})
    failed = runs.record(run_id)
    assert failed.status == "failed"
    assert failed.error is not None and failed.error.startswith(expected)
    if with_job:
        hours = limits.RUNNER_WAIT_TIMEOUT_SECONDS // 3600
        assert failed.error == f"no runner finished it within {hours} h"
    assert failed.task_token is None


def test_an_interrupted_step_that_wrote_nothing_is_recorded_failed(runs: Runs) -> None:
    run_id = runs.create({"label": "a", "adapter": "timed", "prompt": "p"})
    runs.engine.interrupted(run_id, FIRST, {"Error": "States.TaskFailed"})
    record = runs.record(run_id)
    assert (record.label, record.stage_label, record.status) == ("a", "stage-1", "failed")


def test_an_interrupted_step_that_already_ended_keeps_its_outcome(runs: Runs) -> None:
    run_id = runs.create({"label": "a", "adapter": "timed", "prompt": "fine"})
    runs.step(run_id)
    runs.engine.interrupted(run_id, FIRST, {"Error": "States.Timeout"})
    record = runs.record(run_id)
    assert (record.status, record.error) == ("succeeded", None)


def test_actions_on_a_run_that_is_gone_say_so(runs: Runs) -> None:
    for action in (
        lambda: runs.engine.interrupted("wfrun_gone", FIRST, {}),
        lambda: runs.engine.step("wfrun_gone", FIRST),
        lambda: runs.engine.await_answer("wfrun_gone", FIRST, "t"),
        lambda: runs.engine.await_runner("wfrun_gone", FIRST, "t"),
        lambda: runs.engine.await_call("wfrun_gone", FIRST, "t"),
    ):
        with pytest.raises(RunGone) as gone:
            action()
        assert str(gone.value) == "wfrun_gone"  # the task's error Cause names the run


def test_awaiting_an_answer_needs_an_open_question(runs: Runs) -> None:
    run_id = runs.create({"label": "a", "adapter": "timed", "prompt": "fine"})
    runs.store.save_step(StepRecord(run_id, 0, 0, "a", "stage-1", status="running"), 0)
    for action in (
        runs.engine.await_answer,
        runs.engine.await_runner,  # no job is out for it
        runs.engine.await_call,  # no call is out for it
    ):
        with pytest.raises(RunGone) as gone:
            action(run_id, FIRST, "t")
        assert str(gone.value) == run_id


def _runner_tasks() -> list[dict[str, Any]]:
    """The Parameters of every task the workflow state machine hands this engine."""
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("Resource") == "${WorkflowRunnerArn}":
                found.append(node["Parameters"])
            elif node.get("FunctionName") == "${WorkflowRunnerArn}":  # waits for its token
                found.append(node["Payload"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(asl("workflow_run"))
    return found


def test_every_task_the_state_machine_sends_reaches_its_action(runs: Runs) -> None:
    """Each task's event, built from its Parameters, on a run that is gone: every action
    reads its run and says which is gone (the task's error Cause); none is unknown."""
    values = {"$.run_id": "wfrun_gone", "$$.Task.Token": "token-1",
              "$$.Execution.Id": "arn:aws:states:us-east-1:1:execution:wf:wfrun_gone"}  # fmt: skip
    actions = set()
    for parameters in _runner_tasks():
        event = {
            key.removesuffix(".$"): values.get(value, 1) if key.endswith(".$") else value
            for key, value in parameters.items()
        }
        actions.add(event["action"])
        if event["action"] == "item_ended":  # the run's own execution: nothing to count
            assert runs.engine.handle(event) == {}
            continue
        with pytest.raises(RunGone) as gone:
            runs.engine.handle(event)
        assert str(gone.value) == "wfrun_gone", event
    assert actions == {"step", "await_call", "call_ended", "await", "runner", "await_task",
                       "interrupted", "barrier", "item_ended", "finish"}  # fmt: skip


def test_a_pipeline_items_stage_barrier_waits_for_each_of_its_steps(runs: Runs) -> None:
    two = [{"label": "a", "adapter": "timed", "prompt": "A {{ITEM}}"},
           {"label": "b", "adapter": "timed", "prompt": "B {{ITEM}}"}]  # fmt: skip
    run_id = runs.create_stages([two], items=["x", "y"])
    barrier = {"action": "barrier", "run_id": run_id, "item": 1, "stage": 0}
    assert runs.step(run_id, Position(1, 0, 1)) == {"next": "done"}
    assert runs.record(run_id, Position(1, 0, 1)).output == "did: B y"
    assert runs.engine.handle(barrier) == {"failed": True}  # item 1's step a has not run
    runs.step(run_id, Position(1, 0, 0))
    assert runs.engine.handle(barrier) == {"failed": False}
    # Item 0 is its own: neither of its steps ran.
    assert runs.engine.handle({**barrier, "item": 0}) == {"failed": True}
    assert runs.store.get_step(run_id, FIRST) is None


def test_an_item_ended_with_no_execution_named_counts_nothing(runs: Runs) -> None:
    run_id = runs.create({"label": "a", "adapter": "timed", "prompt": "fine"})
    runs.step(run_id)
    before = runs.store.read_end(run_id).item_transitions
    assert runs.engine.handle({"action": "item_ended", "run_id": run_id, "item": 1}) == {}
    assert runs.store.read_end(run_id).item_transitions == before == 0


def test_a_finish_with_the_executions_error_fails_the_run_saying_so(runs: Runs) -> None:
    run_id = runs.create({"label": "a", "adapter": "timed", "prompt": "fine"})
    runs.step(run_id)
    error = {"Error": "States.Runtime", "Cause": "broken"}
    assert runs.engine.handle({"action": "finish", "run_id": run_id, "error": error}) == {}
    run = runs.store.get(run_id)[0]
    assert run.status == "failed"
    assert run.error == f"the run's execution failed: {json.dumps(error)}"


def test_an_unknown_action_is_refused(runs: Runs) -> None:
    with pytest.raises(ValueError, match="unknown workflow action 'dance'"):
        runs.engine.handle({"action": "dance", "run_id": "wfrun_x"})


def test_a_cancelled_run_cancels_the_step_it_reaches(runs: Runs, stack) -> None:
    run_id = runs.create({"label": "a", "adapter": "timed", "prompt": "never"})
    run, version, _ = runs.store.get(run_id)
    run.status = "cancelled"
    runs.store.save(run, version)
    assert runs.step(run_id) == {"next": "done"}
    record = runs.record(run_id)
    assert (record.status, record.ended_at) == ("cancelled", _now_ms(stack))
    assert workflow_agents.turns_for("never") == []


# ---- crew steps: the engine's side of a call (the call itself: test_workflow_crew_steps) ----


class _Calls:
    """The crew step's call as the engine sees it: each advance answers the next progress."""

    def __init__(self, *answers: Progress) -> None:
        self.answers = list(answers)
        self.records: list[StepRecord] = []

    def advance(self, run: RunRecord, step: Any, record: StepRecord) -> Progress:
        self.records.append(record)
        return self.answers.pop(0)


@pytest.fixture
def crew_runs(runs: Runs, monkeypatch: pytest.MonkeyPatch) -> tuple[Runs, list[_Calls]]:
    installed: list[_Calls] = []

    def install(*answers: Progress) -> _Calls:
        calls = _Calls(*answers)
        monkeypatch.setattr(runs.engine, "_crew_steps", calls)
        installed.append(calls)
        return calls

    runs.install = install  # type: ignore[attr-defined]
    return runs, installed


CREW_STEP = {"label": "c", "crew": "reviewer", "function": "review", "args": {"x": 1}}


def test_a_later_runs_crew_step_replays_only_the_same_call(crew_runs) -> None:
    """W6 for a crew step: its resolved input is the call (target, function, args)."""
    runs, _ = crew_runs
    cacheable = {**CREW_STEP, "cacheable": True}
    first = runs.create(cacheable, cacheKey="nightly")
    runs.install(Progress(True, output="x is fine"))
    assert runs.step(first) == {"next": "done"}
    same = runs.create(cacheable, cacheKey="nightly")
    assert runs.step(same) == {"next": "done"}
    assert (runs.record(same).replayed, runs.record(same).output) == (True, "x is fine")
    other = runs.create({**cacheable, "args": {"x": 2}}, cacheKey="nightly")
    asked = runs.install(Progress(True, output="x=2 is fine"))
    assert runs.step(other) == {"next": "done"}
    ran = runs.record(other)
    assert (ran.replayed, ran.output) == (False, "x=2 is fine") and len(asked.records) == 1


def test_a_crew_step_records_its_call_outcome_as_turns(crew_runs, stack) -> None:
    runs, _ = crew_runs
    run_id = runs.create(CREW_STEP)
    runs.install(Progress(False), Progress(True, output="looks good"))
    began = _now_ms(stack)
    assert runs.step(run_id) == {"next": "await_call"}
    running = runs.record(run_id)
    assert running.status == "running" and running.started_at == began
    stack.clock.advance(2)
    assert runs.step(run_id) == {"next": "done"}
    done = runs.record(run_id)
    assert (done.status, done.output, done.started_at) == ("succeeded", "looks good", began)
    assert done.ended_at == began + 2000
    prompt = done.turns[0]["content"]
    assert done.turns == [
        {"role": "user", "content": prompt},
        {"role": "assistant", "content": "looks good"},
    ]
    assert "reviewer" in prompt and "review" in prompt


def test_a_crew_step_with_no_output_keeps_an_empty_answer(crew_runs) -> None:
    runs, _ = crew_runs
    run_id = runs.create(CREW_STEP)
    runs.install(Progress(True, output=None))
    runs.step(run_id)
    record = runs.record(run_id)
    assert record.status == "succeeded" and record.output is None
    assert record.turns[1] == {"role": "assistant", "content": ""}


def test_a_crew_step_whose_call_failed_fails_with_its_error(crew_runs) -> None:
    runs, _ = crew_runs
    run_id = runs.create(CREW_STEP)
    runs.install(Progress(True, error="the Crew refused"))
    assert runs.step(run_id) == {"next": "done"}
    record = runs.record(run_id)
    assert (record.status, record.error, record.output) == ("failed", "the Crew refused", None)


def test_a_busy_crew_is_asked_again_until_the_rounds_run_out(crew_runs) -> None:
    runs, _ = crew_runs
    rounds = limits.WORKFLOW_CREW_BUSY_ROUNDS_MAX
    run_id = runs.create(CREW_STEP)
    runs.install(*[Progress(False, busy=True) for _ in range(rounds + 1)])
    for asked in range(1, rounds + 1):
        answer = runs.step(run_id)
        assert answer["next"] == "busy", asked
        assert runs.record(run_id).busy_rounds == asked
        # Doubling from the first wait up to the longest (the CrewBusy state's Wait).
        first, longest = (
            limits.WORKFLOW_CREW_BUSY_FIRST_WAIT_SECONDS,
            limits.WORKFLOW_CREW_BUSY_LONGEST_WAIT_SECONDS,
        )
        assert answer["wait_seconds"] == min(first * 2 ** (asked - 1), longest)
    assert runs.step(run_id) == {"next": "done"}
    record = runs.record(run_id)
    assert record.status == "failed"
    assert record.error == f"crew:reviewer stayed busy through {rounds} attempts"


def test_a_busy_crew_that_frees_up_in_the_last_round_gets_the_call(crew_runs) -> None:
    runs, _ = crew_runs
    rounds = limits.WORKFLOW_CREW_BUSY_ROUNDS_MAX
    run_id = runs.create(CREW_STEP)
    busy = [Progress(False, busy=True) for _ in range(rounds)]
    runs.install(*busy, Progress(False), Progress(True, output="ok"))
    for _ in range(rounds):
        runs.step(run_id)
    assert runs.step(run_id) == {"next": "await_call"}
    assert runs.step(run_id) == {"next": "done"}
    assert runs.record(run_id).status == "succeeded"


def test_an_old_execution_without_await_call_polls(crew_runs) -> None:
    runs, _ = crew_runs
    run_id = runs.create(CREW_STEP)
    runs.install(Progress(False), Progress(False, busy=True))
    assert runs.step(run_id, await_calls=False) == {"next": "poll"}
    assert runs.step(run_id, await_calls=False) == {"next": "poll"}


def test_a_call_announced_ended_while_still_running_fails_the_step(crew_runs) -> None:
    runs, _ = crew_runs
    run_id = runs.create(CREW_STEP)
    runs.install(Progress(False), Progress(False))
    runs.step(run_id)
    runs.engine.handle({"action": "call_ended", "run_id": run_id})
    record = runs.record(run_id)
    assert (record.status, record.error) == ("failed", "the call's end was announced early")


def test_a_call_that_ended_records_its_outcome_on_call_ended(crew_runs) -> None:
    runs, _ = crew_runs
    run_id = runs.create(CREW_STEP)
    runs.install(Progress(False), Progress(True, output="fine"))
    runs.step(run_id)
    runs.engine.handle({"action": "call_ended", "run_id": run_id})
    record = runs.record(run_id)
    assert (record.status, record.output, record.error) == ("succeeded", "fine", None)


# ---- cli steps: a turn is a runner's job (the runner itself: test_runner_steps) ----


@pytest.fixture
def cli_runs(runs: Runs, api: Any, stack: Any) -> Runs:
    from tests.integration.runner_support import CLAUDE

    define(api, stack.admin_token, CLAUDE)
    return runs


def _job_ends(runs: Runs, run_id: str, **ending: Any) -> None:
    """What a runner's report writes on the step's job."""
    from dataclasses import replace

    record = runs.record(run_id)
    store = runs.engine._runner._store
    job = store.get(runs.store.get(run_id)[0].account_id, record.job_id or "", 0)
    assert job is not None
    store.save(replace(job, **ending))


def test_a_cli_turn_waits_for_its_runner_then_takes_in_what_it_did(cli_runs: Runs) -> None:
    runs = cli_runs
    run_id = runs.create({"label": "a", "adapter": "claude-code", "prompt": "Review auth.ts"})
    assert runs.step(run_id) == {"next": "runner"}
    out = runs.record(run_id)
    assert out.status == "running" and out.job_id is not None and out.session_id is None
    assert runs.step(run_id) == {"next": "runner"}  # re-entered while the job is out
    _job_ends(runs, run_id, state="succeeded", output="Found 2 bugs.", cost_usd=0.25,
              session_id="cli-sess-1", runner="rk_1", runner_name="laptop")  # fmt: skip
    assert runs.step(run_id) == {"next": "done"}
    done = runs.record(run_id)
    assert (done.status, done.output, done.cost_usd) == ("succeeded", "Found 2 bugs.", 0.25)
    assert (done.session_id, done.runner, done.runner_name) == ("cli-sess-1", "rk_1", "laptop")
    assert done.job_id is None
    assert runs.store.get(run_id)[2] == 0.25  # the run's cost too


def test_a_failed_cli_turn_fails_the_step_and_its_cost_still_counts(cli_runs: Runs) -> None:
    runs = cli_runs
    run_id = runs.create({"label": "a", "adapter": "claude-code", "prompt": "Review auth.ts"})
    runs.step(run_id)
    _job_ends(runs, run_id, state="failed", error="exit 1", cost_usd=0.5, runner_name="laptop")
    assert runs.step(run_id) == {"next": "done"}
    failed = runs.record(run_id)
    assert failed.status == "failed"
    assert failed.error == "the claude session failed on runner laptop: exit 1"
    assert failed.cost_usd == 0.5 and runs.store.get(run_id)[2] == 0.5


def test_a_cli_turn_whose_job_is_gone_fails_the_step(cli_runs: Runs, stack) -> None:
    runs = cli_runs
    run_id = runs.create({"label": "a", "adapter": "claude-code", "prompt": "Review auth.ts"})
    runs.step(run_id)
    record = runs.record(run_id)
    store = runs.engine._runner._store
    account = runs.store.get(run_id)[0].account_id
    stack.client.delete_item(
        TableName=stack.settings.work_table, Key=store._key(account, record.job_id or "")
    )
    assert runs.step(run_id) == {"next": "done"}
    failed = runs.record(run_id)
    assert (failed.status, failed.error) == ("failed", "the step's runner job is gone")
    assert failed.cost_usd == 0 and runs.store.get(run_id)[2] == 0


def _schema_step_out(runs: Runs) -> str:
    """A cli step with an output schema whose first turn is out with a runner."""
    schema = {"type": "object", "required": ["n"]}
    run_id = runs.create(
        {"label": "a", "adapter": "claude-code", "prompt": "Count", "outputSchema": schema}
    )
    runs.step(run_id)
    return run_id


def test_a_cli_answer_that_misses_the_schema_is_a_correction_turn(cli_runs: Runs) -> None:
    runs = cli_runs
    run_id = _schema_step_out(runs)
    _job_ends(runs, run_id, state="succeeded", output="not json", session_id="s1")
    assert runs.step(run_id) == {"next": "runner"}  # the correction is a new job
    asked = runs.record(run_id)
    assert asked.correction is not None and asked.job_id is not None
    assert asked.turns[-1]["content"].startswith("Fix your answer: ")
    _job_ends(runs, run_id, state="succeeded", output='{"n": 2}', session_id="s1")
    assert runs.step(run_id) == {"next": "done"}
    done = runs.record(run_id)
    assert (done.status, done.output, done.correction) == ("succeeded", '{"n": 2}', None)


def test_a_cli_answer_that_misses_the_schema_after_its_correction_fails(cli_runs: Runs) -> None:
    runs = cli_runs
    run_id = _schema_step_out(runs)
    _job_ends(runs, run_id, state="succeeded", output="not json", cost_usd=0.25)
    runs.step(run_id)
    _job_ends(runs, run_id, state="succeeded", output="still not json", cost_usd=0.5)
    assert runs.step(run_id) == {"next": "done"}
    failed = runs.record(run_id)
    assert failed.status == "failed" and (failed.error or "").startswith("output schema: ")
    assert failed.cost_usd == 0.75  # both turns'


def test_a_correction_turn_that_fails_adds_its_cost_to_the_first(cli_runs: Runs) -> None:
    runs = cli_runs
    run_id = _schema_step_out(runs)
    _job_ends(runs, run_id, state="succeeded", output="not json", cost_usd=0.25)
    runs.step(run_id)
    _job_ends(runs, run_id, state="failed", error="exit 2", cost_usd=0.5, runner_name="box")
    assert runs.step(run_id) == {"next": "done"}
    failed = runs.record(run_id)
    assert failed.error == "the claude session failed on runner box: exit 2"
    assert failed.cost_usd == 0.75 and runs.store.get(run_id)[2] == 0.75


# ---- the resume cache (W6): what a step journals for a later run ----


def _journaled(runs: Runs, run_id: str, cache_key: str) -> Any:
    record = runs.record(run_id)
    account = runs.store.get(run_id)[0].account_id
    return runs.store.cached(account, cache_key, record.label, record.input_hash, 0)


def test_a_cacheable_step_of_a_run_with_a_cache_key_is_journaled_for_thirty_days(
    runs: Runs, stack
) -> None:
    run_id = runs.create(
        {"label": "a", "adapter": "timed", "prompt": "keep me", "cacheable": True},
        cacheKey="nightly",
    )
    runs.step(run_id)
    found = _journaled(runs, run_id, "nightly")
    assert found is not None and found.output == "did: keep me"
    assert found.turns == runs.record(run_id).turns
    record = runs.record(run_id)
    account = runs.store.get(run_id)[0].account_id
    lasts = int(stack.clock.now()) + limits.WORKFLOW_CACHE_SECONDS
    assert runs.store.cached(account, "nightly", "a", record.input_hash, lasts - 1) is not None
    assert runs.store.cached(account, "nightly", "a", record.input_hash, lasts) is None


def test_only_a_cacheable_step_of_a_run_with_a_cache_key_is_journaled(runs: Runs) -> None:
    not_cacheable = runs.create(
        {"label": "a", "adapter": "timed", "prompt": "p1"}, cacheKey="nightly"
    )
    no_key = runs.create({"label": "a", "adapter": "timed", "prompt": "p2", "cacheable": True})
    failed = runs.create(
        {"label": "a", "adapter": "timed", "prompt": "explode", "cacheable": True},
        cacheKey="nightly",
    )
    for run_id in (not_cacheable, no_key, failed):
        runs.step(run_id)
    assert _journaled(runs, not_cacheable, "nightly") is None
    assert _journaled(runs, failed, "nightly") is None
    # No key: nothing under any key, the empty one included.
    assert _journaled(runs, no_key, "") is None and _journaled(runs, no_key, "None") is None


def test_a_later_run_replays_the_journaled_step_without_a_session_and_is_done(
    runs: Runs,
) -> None:
    cacheable = {"label": "a", "adapter": "timed", "prompt": "keep me", "cacheable": True}
    first = runs.create(cacheable, cacheKey="nightly")
    runs.step(first)
    later = runs.create(cacheable, cacheKey="nightly")
    assert runs.step(later) == {"next": "done"}
    replayed = runs.record(later)
    assert (replayed.status, replayed.replayed) == ("succeeded", True)
    assert replayed.output == "did: keep me" and replayed.turns == runs.record(first).turns
    assert len(workflow_agents.turns_for("keep me")) == 1  # the first run's turn only
    # Stepped again (Step Functions retries a task whose answer was lost): still done.
    assert runs.step(later) == {"next": "done"}
    assert runs.record(later) == replayed


def test_a_person_answering_a_waiting_step_runs_it_though_a_twin_was_journaled_meanwhile(
    runs: Runs,
) -> None:
    """A step asks its run's person first; the replay check is made once, before that: a
    twin run's journal written while it waits does not stand in for this person's answer."""
    asking = {"label": "a", "adapter": "timed", "prompt": "Deploy {{ENV}}",
              "humanInputs": ["ENV"], "cacheable": True}  # fmt: skip
    waiting, twin = (runs.create(asking, cacheKey="nightly") for _ in range(2))
    assert runs.step(waiting) == runs.step(twin) == {"next": "await"}
    runs.answer(twin, "staging")
    runs.step(twin)
    assert runs.record(twin).output == "did: Deploy staging"  # journaled for "nightly"
    runs.answer(waiting, "prod")
    assert runs.step(waiting) == {"next": "done"}
    ran = runs.record(waiting)
    assert (ran.output, ran.replayed, ran.human) == ("did: Deploy prod", False, {"ENV": "prod"})


def test_a_retry_replays_a_cli_step_in_its_cli_session_on_its_runner(cli_runs: Runs) -> None:
    runs = cli_runs
    review = {"label": "a", "adapter": "claude-code", "prompt": "Review auth.ts"}
    original = runs.create(review)
    runs.step(original)
    _job_ends(runs, original, state="succeeded", output="Found 2 bugs.", cost_usd=0.25,
              session_id="cli-sess-1", runner="rk_1", runner_name="laptop")  # fmt: skip
    runs.step(original)
    retry = runs.create(review, retry_of=original)
    assert runs.step(retry) == {"next": "done"}  # no job: nothing for a runner to do
    replayed = runs.record(retry)
    assert (replayed.replayed, replayed.output, replayed.job_id) == (True, "Found 2 bugs.", None)
    # A later step resumes the CLI session where it is: the same id on the same runner.
    assert (replayed.session_id, replayed.runner, replayed.runner_name) == (
        "cli-sess-1",
        "rk_1",
        "laptop",
    )


# ---- what a step reads before it runs ----


def test_a_step_with_human_inputs_asks_for_them_first_then_runs_with_them(runs: Runs) -> None:
    run_id = runs.create(
        {"label": "a", "adapter": "timed", "prompt": "Deploy {{ENV}}", "humanInputs": ["ENV"]}
    )
    assert runs.step(run_id) == {"next": "await"}
    asked = runs.record(run_id)
    assert asked.question == "This step needs ENV from a person."
    assert asked.turns == [] and workflow_agents.turns_for("Deploy") == []  # nothing ran
    runs.answer(run_id, "staging")
    assert runs.step(run_id) == {"next": "done"}
    done = runs.record(run_id)
    assert done.human == {"ENV": "staging"} and done.answer is None
    assert done.turns[0] == {"role": "user", "content": "Deploy staging"}
    assert done.output == "did: Deploy staging"


def test_a_step_whose_adapter_profile_is_gone_fails_saying_so(runs: Runs, api, stack) -> None:
    run_id = runs.create({"label": "a", "adapter": "timed", "prompt": "p"})
    assert api("DELETE", "/v1/adapters/timed", stack.admin_token).status in (200, 204)
    assert runs.step(run_id) == {"next": "done"}
    record = runs.record(run_id)
    assert (record.status, record.error) == ("failed", "adapter profile timed is gone")
    assert record.ended_at is not None


def test_a_step_on_a_route_not_taken_is_skipped_without_running(runs: Runs, stack) -> None:
    run_id = runs.create_stages(
        [
            [
                {
                    "label": "pick",
                    "kind": "branch",
                    "prompt": "?",
                    "routes": {"a": ["on_a"], "b": []},
                }
            ],
            [{"label": "on_a", "adapter": "timed", "prompt": "route a work"}],
        ]
    )
    runs.step(run_id)
    runs.answer(run_id, "b")
    runs.step(run_id)
    on_a = Position(0, 1, 0)
    assert runs.step(run_id, on_a) == {"next": "done"}
    record = runs.record(run_id, on_a)
    assert (record.status, record.ended_at) == ("skipped", _now_ms(stack))
    assert workflow_agents.turns_for("route a work") == []


def test_a_step_that_continues_a_session_takes_its_history_and_id(runs: Runs) -> None:
    run_id = runs.create_stages(
        [
            [{"label": "first", "adapter": "timed", "prompt": "one"}],
            [{"label": "then", "sessionRef": "first", "prompt": "two"}],
        ]
    )
    runs.step(run_id)
    then = Position(0, 1, 0)
    assert runs.step(run_id, then) == {"next": "done"}
    first, second = runs.record(run_id), runs.record(run_id, then)
    assert second.session_id == first.session_id
    assert second.output == "did: two | history: one / did: one"


# ---- a save that meets a cancel, and the waits of a run that is gone ----


def test_a_save_after_a_cancel_keeps_cancelled_and_takes_the_turns_tool_calls(
    runs: Runs,
) -> None:
    from agentworks.workflows.run_store import StaleRecord

    run_id = runs.create({"label": "a", "adapter": "timed", "prompt": "fine"})
    runs.store.save_step(StepRecord(run_id, 0, 0, "a", "stage-1", status="running"), 0)
    mine, version = runs.store.get_step(run_id, FIRST)
    cancelled, at = runs.store.get_step(run_id, FIRST)
    cancelled.status = "cancelled"
    runs.store.save_step(cancelled, at)  # the cancel writes last
    mine.mcp_calls = [{"tool": "slow", "outcome": "failed", "result": "cancelled"}]
    runs.engine._save_quietly(mine, version)
    kept = runs.record(run_id)
    assert kept.status == "cancelled" and kept.mcp_calls == mine.mcp_calls
    # Any other change meanwhile is a conflict the caller must hear of.
    other, at = runs.store.get_step(run_id, FIRST)
    other.status = "running"
    runs.store.save_step(other, at)
    with pytest.raises(StaleRecord):
        runs.engine._save_quietly(mine, version)


def test_the_waits_of_a_run_that_is_gone_say_which(runs: Runs, cli_runs: Runs, stack) -> None:
    with pytest.raises(RunGone) as gone:
        runs.engine.await_task("wfrun_gone", FIRST, "t")
    assert str(gone.value) == "wfrun_gone"
    run_id = runs.create({"label": "a", "adapter": "timed", "prompt": "fine"})
    runs.store.save_step(StepRecord(run_id, 0, 0, "a", "stage-1", status="running"), 0)
    with pytest.raises(RunGone) as nothing_awaited:
        runs.engine.await_task(run_id, FIRST, "t")  # no external task is out for it
    assert str(nothing_awaited.value) == run_id
    ended, version = runs.store.get_step(run_id, FIRST)
    ended.status = "succeeded"
    runs.store.save_step(ended, version)
    with pytest.raises(RunGone) as step_ended:
        runs.engine.await_task(run_id, FIRST, "t")  # the step ended meanwhile
    assert str(step_ended.value) == run_id
    # A job is out for the step, but its run was deleted meanwhile.
    cli_run = cli_runs.create({"label": "a", "adapter": "claude-code", "prompt": "Review"})
    assert cli_runs.step(cli_run) == {"next": "runner"}
    key = {"pk": {"S": f"WFRUN#{cli_run}"}, "sk": {"S": "RUN"}}
    stack.client.delete_item(TableName=stack.settings.work_table, Key=key)
    assert runs.store.get(cli_run) is None and runs.record(cli_run).job_id is not None
    with pytest.raises(RunGone) as run_deleted:
        runs.engine.await_runner(cli_run, FIRST, "t")
    assert str(run_deleted.value) == cli_run
