"""What each state of statemachines/workflow_run.asl.json does (W1–W3, W6–W8).

The state machine owns the flow: stages one after another, a stage's steps in parallel, the
barrier, waiting for a person's answer or a call's end (task tokens: waiting costs no
history events). This module owns one step's rules: replay it from a journal, or run its
session's turns through the adapter profile, apply the step's policy to a question, check
the output schema and the budget, and record the outcome. Every action
reads its records and saves them under their versions, so a retried invocation finds the
work it already did.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews.adapter_profile_store import AdapterProfileStore
from agentworks.crews.adapters.base import Adapter, AdapterError, TurnRequest, TurnResult
from agentworks.crews.adapters.registry import runs_on_a_runner
from agentworks.crews.execution import Executions
from agentworks.crews.mcp_tool_use import TimeLeft, TurnMcpTools
from agentworks.ids import new_id
from agentworks.mcp_servers.declarations import McpToolsDeclaration, parse_declaration
from agentworks.signing import Signer
from agentworks.workflows import choices, crew_steps, replays, sessions
from agentworks.workflows.call_waits import CallWaits
from agentworks.workflows.crew_steps import CrewSteps
from agentworks.workflows.definition import Step, WorkflowStart
from agentworks.workflows.output_schema import output_problem
from agentworks.workflows.records import TERMINAL_RUN, Position, RunRecord, StepRecord
from agentworks.workflows.run_ends import RunEnds, RunGone
from agentworks.workflows.run_notices import RunNotices
from agentworks.workflows.run_store import RunStore, StaleRecord
from agentworks.workflows.runner_steps import RunnerSteps
from agentworks.workflows.variables import parse_human, resolved_prompts, with_human
from agentworks.workflows.webhooks import Webhooks

if TYPE_CHECKING:
    from agentworks.external_tasks.waits import ExternalWaits
    from agentworks.workflows.step_tools import StepTools

AdapterFactory = Callable[[dict[str, Any]], Adapter]

# W3 auto-allow: the canned reply a session gets when it asks for input.
AUTO_ALLOW_REPLY = "Yes, go ahead. No person is watching this step; use your best judgement."


@dataclass
class _Context:
    run: RunRecord
    start: WorkflowStart
    step: Step
    record: StepRecord
    version: int
    prompt: str
    profile: dict[str, Any]
    history: list[dict[str, str]]
    mcp_tools: McpToolsDeclaration = ()  # the adapter profile's declaration (issue 28)
    time_left: TimeLeft | None = None  # the invocation's remaining seconds


class WorkflowEngine:
    def __init__(
        self,
        runs: RunStore,
        profiles: AdapterProfileStore,
        adapters: AdapterFactory,
        signer: Signer | None,
        crew_steps: CrewSteps,
        runner_steps: RunnerSteps,
        clock: Clock = SYSTEM_CLOCK,
        webhooks: Webhooks | None = None,
        history: Executions | None = None,
        waits: CallWaits | None = None,
        tools: StepTools | None = None,
        external_waits: ExternalWaits | None = None,
    ) -> None:
        self._runs = runs
        self._external_waits = external_waits  # external agents' tasks the tick follows
        self._tools = tools  # the attached MCP tools steps' sessions may call (issue 28)
        self._waits = waits  # crew steps wait for their call's end; a run's end wakes its caller
        self._crew_steps = crew_steps
        self._runner = runner_steps
        self._profiles = profiles
        self._adapters = adapters
        self._clock = clock
        self._notices = RunNotices(runs, signer, webhooks or Webhooks(clock))
        # A run's end counts the states its executions entered (`history`: its usage).
        self.ends = RunEnds(runs, self._notices, clock, history, waits)

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    def handle(self, event: dict[str, Any], time_left: TimeLeft | None = None) -> dict[str, Any]:
        """One task state's action; `time_left` is the invocation's remaining seconds (a
        step's MCP tool calls end before it)."""
        action = event.get("action")
        run_id = str(event.get("run_id", ""))
        item = int(event.get("item") or 0)
        at = Position(item, int(event.get("stage") or 0), int(event.get("step") or 0))
        if action == "step":
            turn = self.step(run_id, at, time_left)
            if turn in ("await_call", "busy") and not event.get("await_calls"):
                # An execution started before AwaitCall existed: it polls (PollCall).
                return {"next": "poll"}
            if turn == "busy":
                found = self._runs.get_step(run_id, at)
                wait = crew_steps.busy_wait(found[0].busy_rounds if found else 1)
                return {"next": turn, "wait_seconds": wait}
            return {"next": turn}
        if action == "await_call":
            self.await_call(run_id, at, event["task_token"])
            return {}
        if action == "call_ended":
            self.call_ended(run_id, at)
            return {}
        if action == "await":
            self.await_answer(run_id, at, event["task_token"])
            return {}
        if action == "runner":
            self.await_runner(run_id, at, event["task_token"])
            return {}
        if action == "await_task":
            self.await_task(run_id, at, event["task_token"])
            return {}
        if action == "interrupted":
            self.interrupted(run_id, at, event.get("error"))
            return {}
        if action == "barrier":
            return {"failed": self.ends.barrier(run_id, item, at.stage)}
        if action == "finish":
            self.ends.finish(run_id, event.get("error"), event.get("execution"))
            return {}
        if action == "item_ended":
            self.ends.item_ended(run_id, str(event.get("execution") or ""))
            return {}
        raise ValueError(f"unknown workflow action {action!r}")

    # ---- a step ----

    def step(self, run_id: str, at: Position, time_left: TimeLeft | None = None) -> str:
        """Runs (or replays) one step until it ends or waits: "done", "await" (a person's
        answer), "runner" (a runner's job), "await_call" (a crew step's call is running) or
        "busy" (its Crew runs all the calls it may: ask again after a wait)."""
        context = self._context(run_id, at)
        if context is None:
            return "done"
        context.time_left = time_left
        first = context.record.answer is None and context.record.call_id is None
        if first and self._replayed(context):
            return "done"
        if context.step.kind == "crew":
            return self._advance_call(context)
        if context.step.kind == "branch":
            return self._branch(context)
        return self._run_turns(context)

    def _branch(self, context: _Context) -> str:
        """W9: a person chooses the route (resolve); the steps of the others are skipped."""
        record = context.record
        record.status, record.started_at = "running", record.started_at or self._now()
        if record.answer is None:
            record.question = choices.question(context.step)
            self._runs.save_step(record, context.version)
            return "await"
        record.route = record.output = choices.route_named(context.step, record.answer)
        record.answer = None
        if record.route is None:
            return self._end(record, context.version, "failed", error="no route was chosen")
        return self._end(record, context.version, "succeeded")

    def _advance_call(self, context: _Context) -> str:
        record = context.record
        record.status, record.started_at = "running", record.started_at or self._now()
        progress = self._crew_steps.advance(context.run, context.step, record)
        if progress.busy and record.busy_rounds >= limits.WORKFLOW_CREW_BUSY_ROUNDS_MAX:
            return self._end(
                record,
                context.version,
                "failed",
                error=f"{crew_steps.target(context.step)} stayed busy through "
                f"{limits.WORKFLOW_CREW_BUSY_ROUNDS_MAX} attempts",
            )
        if progress.busy:
            record.busy_rounds += 1
            self._runs.save_step(record, context.version)
            return "busy"
        if not progress.ended:
            self._runs.save_step(record, context.version)
            return "await_call"
        if progress.error is not None:
            return self._end(record, context.version, "failed", error=progress.error)
        record.output = progress.output
        record.turns = [
            {"role": "user", "content": context.prompt},
            {"role": "assistant", "content": progress.output or ""},
        ]
        self._end(record, context.version, "succeeded")
        self._journal(context)
        return "done"

    def _context(self, run_id: str, at: Position) -> _Context | None:
        state = self._runs.read_item(run_id, at.item)
        if state is None:
            raise RunGone(run_id)
        run = state.run
        records = [r for r in state.steps if r.item == at.item]  # a pipeline item's own
        start = WorkflowStart.model_validate(run.definition)
        record, version = state.step_at(at) or (new_record(run_id, start, at), 0)
        step = start.stages[at.stage].steps[at.index]
        if record.terminal:
            return None
        if run.status in TERMINAL_RUN:
            record.status, record.ended_at = "cancelled", self._now()
            self._save_quietly(record, version)
            return None
        done = {r.label: r for r in records}
        if choices.skipped(start, step, done):
            record.status, record.ended_at = "skipped", self._now()
            self._save_quietly(record, version)
            return None
        if step.kind in ("crew", "branch"):
            call = crew_steps.describe(step) if step.kind == "crew" else choices.question(step)
            record.input_hash = sessions.input_hash(call, {}, [])
            return _Context(run, start, step, record, version, call, {}, [])
        prompt = resolved_prompts(start, at.item)[step.label]
        opener = sessions.opener(start, step.label)
        profile = self._profiles.get(run.account_id, opener.adapter or "")
        if profile is None:
            self._end(record, version, "failed", error=f"adapter profile {opener.adapter} is gone")
            return None
        earlier = sessions.history(start, step, done)
        if step.session_ref is not None:
            # Once set it stays: a CLI may name a resumed session anew (runner_steps).
            named = done[step.session_ref]
            record.session_id = record.session_id or named.session_id
            record.runner = record.runner or named.runner
        record.input_hash = sessions.input_hash(prompt, profile.settings, earlier)
        declared = parse_declaration(profile.mcp_tools)
        return _Context(
            run, start, step, record, version, prompt, profile.settings, earlier, declared
        )

    def _replayed(self, context: _Context) -> bool:
        """W6/W7: the same resolved inputs as a journaled success replay it — no session, no
        cost. The journal is the original run's steps (retry) or the resume cache."""
        record = context.record
        found = replays.journaled(
            self._runs, context.run, context.start, context.step, record, int(self._clock.now())
        )
        if found is None:
            return False
        record.output, record.turns = found.output, found.turns
        # A cli step keeps its CLI session (a later step resumes it on the same runner).
        record.session_id = found.session_id or record.session_id or new_id("sess", self._clock)
        record.runner, record.runner_name = found.runner, found.runner_name
        record.replayed, record.started_at = True, self._now()
        self._end(record, context.version, "succeeded")
        return True

    def _run_turns(self, context: _Context) -> str:
        step, record = context.step, context.record
        if not runs_on_a_runner(context.profile):  # a CLI names its session once it ran
            record.session_id = record.session_id or new_id("sess", self._clock)
        record.status, record.started_at = "running", record.started_at or self._now()
        if record.job_id is not None:
            return self._runner_returned(context)
        if step.human_inputs and record.human is None:
            # W9: a person gives the step's inputs first (resolve), then it runs.
            if record.answer is None:
                record.question = choices.question(step)
                self._runs.save_step(record, context.version)
                return "await"
            record.human, record.answer = parse_human(step.human_inputs, record.answer), None
        if record.human:
            context.prompt = with_human(context.prompt, record.human)
        if not record.turns:
            record.turns.append({"role": "user", "content": context.prompt})
        answer, record.answer = record.answer, None
        if answer is not None:
            record.turns.append({"role": "user", "content": answer})
        version = self._runs.save_step(record, context.version)
        return self._turns(context, version, answer, None, None)

    def _runner_returned(self, context: _Context) -> str:
        """A cli turn's job ended (the step re-entering while it is out waits again)."""
        outcome = self._runner.outcome(context.run.account_id, context.record.job_id or "")
        if outcome is None:
            return "runner"
        correction = self._runner.settle(context.record, outcome)
        if outcome.error is not None:
            spent = outcome.result.cost_usd if outcome.result else 0.0
            context.record.cost_usd += spent
            self._runs.add_cost(context.run.run_id, spent)
            return self._end(context.record, context.version, "failed", error=outcome.error)
        return self._turns(context, context.version, None, correction, outcome.result)

    def _turns(
        self,
        context: _Context,
        version: int,
        answer: str | None,
        correction: str | None,
        returned: TurnResult | None,
    ) -> str:
        """The session's turns until the step ends or waits; `returned` is the answer of a
        turn a runner carried out, checked first."""
        run, step, record = context.run, context.step, context.record
        while True:
            if returned is not None:
                result, returned = returned, None
            elif len([t for t in record.turns if t["role"] == "assistant"]) >= (
                limits.WORKFLOW_STEP_TURNS_MAX
            ):
                return self._end(
                    record,
                    version,
                    "failed",
                    error=f"the session used {limits.WORKFLOW_STEP_TURNS_MAX} turns without "
                    "finishing",
                )
            elif refused := self._over_budget(context):
                return self._end(record, version, "failed", error=refused)
            else:
                tools = (
                    self._tools.for_turn(run, record, context.mcp_tools, context.time_left)
                    if self._tools
                    else None
                )
                try:
                    adapter = self._adapters(context.profile)
                    result = adapter.run_turn(self._request(context, answer, correction, tools))
                except AdapterError as error:
                    if self._tools:
                        self._tools.take(run, record, tools)
                    return self._end(
                        record, version, "failed", error=str(error) or "the agent failed"
                    )
                if self._tools:
                    self._tools.take(run, record, tools)
                if result.runner_work is not None:  # a cli turn: AwaitRunner hands it out
                    record.job_id = self._runner.create(run, record, result.runner_work)
                    record.correction = correction
                    self._runs.save_step(record, version)
                    return "runner"
            record.cost_usd += result.cost_usd
            self._runs.add_cost(run.run_id, result.cost_usd)
            record.adapter_session = result.session_id  # continued by the next turn only
            awaited = result.awaited_task
            record.awaited_task = asdict(awaited) if awaited is not None else None
            if awaited is not None:  # AwaitTask waits for the agent's task (`await_task`)
                self._runs.save_step(record, version)
                return "await_task"
            if result.question:
                record.turns.append({"role": "assistant", "content": result.question})
                if step.policy == "auto-allow":
                    answer = AUTO_ALLOW_REPLY
                    record.turns.append({"role": "user", "content": answer})
                    continue
                if step.policy == "fail":
                    return self._end(
                        record,
                        version,
                        "failed",
                        error=f"the session asked for input (policy fail): {result.question}",
                    )
                # `waiting` once the Await state holds the token (await_answer): a step
                # shown waiting can always be resolved.
                record.question = _bounded(result.question, limits.WORKFLOW_QUESTION_MAX_CHARS)
                self._runs.save_step(record, version)
                return "await"
            if result.handoff is not None:
                return self._end(
                    record, version, "failed", error="a mailbox profile cannot run a workflow step"
                )
            text = result.final_text or ""
            problem = output_problem(step, result)
            if problem is None and step.kind == "routing":
                record.route = choices.route_named(step, text)
                problem = None if record.route else choices.route_problem(step)
            record.turns.append({"role": "assistant", "content": text})
            if problem is not None and correction is None:
                # W8: re-prompted once with what was wrong, as function calls are (F6).
                correction = problem
                record.turns.append({"role": "user", "content": f"Fix your answer: {problem}"})
                answer = None
                continue
            if problem is not None:
                return self._end(record, version, "failed", error=f"output schema: {problem}")
            record.output = text
            self._end(record, version, "succeeded")
            self._journal(context)
            return "done"

    def _request(
        self,
        context: _Context,
        answer: str | None,
        correction: str | None,
        tools: TurnMcpTools | None = None,
    ) -> TurnRequest:
        return TurnRequest(
            crew_name=f"workflow:{context.start.workflow_id}",
            instructions="",
            settings=context.profile,
            kind="message",
            prompt=context.prompt,
            output_schema=context.step.output_schema,
            answer=answer,
            correction=correction,
            # The session so far: the chain's turns, then this step's own before the last.
            history=tuple(context.history + context.record.turns[1:]),
            functions=self._crew_steps.access(context.run, context.step),
            session_id=context.record.adapter_session or context.record.session_id,
            account_id=context.run.account_id,
            mcp_tools=tools,
            cancelled=lambda: self._runs.ended(context.run.run_id),
        )

    def _over_budget(self, context: _Context) -> str | None:
        cap = context.start.max_total_cost_usd
        if cap is None:
            return None
        found = self._runs.get(context.run.run_id)
        if found is None or found[2] < cap:  # a run deleted meanwhile keeps no budget
            return None
        spent = found[2]
        return f"budget_exceeded: the run's steps cost ${spent:.4f} of maxTotalCostUsd ${cap:.4f}"

    def _end(self, record: StepRecord, version: int, status: str, error: str | None = None) -> str:
        record.status, record.ended_at = status, self._now()
        record.error = None if error is None else _bounded(error, limits.WORKFLOW_ERROR_MAX_CHARS)
        record.question = None
        self._save_quietly(record, version)
        return "done"

    def _journal(self, context: _Context) -> None:
        """W6: a cacheable step of a run with a cacheKey is journaled once it succeeded."""
        cache_key = context.start.cache_key
        if context.step.cacheable and cache_key:
            expires = int(self._clock.now()) + limits.WORKFLOW_CACHE_SECONDS
            self._runs.journal(context.run.account_id, cache_key, context.record, expires)

    def _save_quietly(self, record: StepRecord, version: int) -> None:
        """A step cancelled meanwhile keeps `cancelled` (the cancel wrote it last) and takes
        the MCP tool calls of the turn the cancel cut short (issue 28: every call is
        recorded on the step that made it)."""
        try:
            self._runs.save_step(record, version)
        except StaleRecord:
            current = self._runs.get_step(record.run_id, record.position)
            if current is None or current[0].status != "cancelled":
                raise
            cancelled, at = current
            if len(record.mcp_calls) > len(cancelled.mcp_calls):
                cancelled.mcp_calls = record.mcp_calls
                with contextlib.suppress(StaleRecord):  # cancelled again: already ended
                    self._runs.save_step(cancelled, at)

    def await_call(self, run_id: str, at: Position, task_token: str) -> None:
        """AwaitCall: the token waits with the step's call until the call ends."""
        found = self._runs.get_step(run_id, at)
        if found is None or found[0].terminal or found[0].call_id is None or not self._waits:
            raise RunGone(run_id)
        waiting = f"{run_id}#{at.item}#{at.stage}#{at.index}"
        self._waits.wait(found[0].call_id, waiting, task_token)

    def call_ended(self, run_id: str, at: Position) -> None:
        """CallEnded: the call's end answered AwaitCall; the step records the outcome. A
        call found still running (no end answers a token before the call is terminal) fails
        the step rather than leaving it open."""
        if self.step(run_id, at) == "done":
            return
        found = self._runs.get_step(run_id, at)
        if found is not None and not found[0].terminal:
            self._end(found[0], found[1], "failed", error="the call's end was announced early")

    # ---- waiting for a person (escalate) ----

    def await_answer(self, run_id: str, at: Position, task_token: str) -> None:
        found = self._runs.get_step(run_id, at)
        if found is None or found[0].terminal or found[0].question is None:
            raise RunGone(run_id)
        record, version = found
        record.status, record.task_token = "waiting", task_token
        self._runs.save_step(record, version)
        run = self._runs.get(run_id)
        if run is not None:
            self._notices.send(
                run[0], "escalation", {"step": record.label, "question": record.question}
            )

    def await_runner(self, run_id: str, at: Position, task_token: str) -> None:
        """AwaitRunner: the step's job waits for a runner, answering this token."""
        found = self._runs.get_step(run_id, at)
        if found is None or found[0].terminal or found[0].job_id is None:
            raise RunGone(run_id)
        run = self._runs.get(run_id)
        if run is None:
            raise RunGone(run_id)
        self._runner.hand_out(run[0].account_id, found[0].job_id, task_token)

    def await_task(self, run_id: str, at: Position, task_token: str) -> None:
        """AwaitTask: the external agent's task the step's last turn left working is read
        by the tick from now on (agentworks.external_tasks), which answers this token once
        it ended or asked; the step's next turn reads the outcome."""
        context = self._context(run_id, at)
        awaited = context.record.awaited_task if context is not None else None
        if context is None or awaited is None or self._external_waits is None:
            raise RunGone(run_id)
        self._external_waits.begin(
            context.run.account_id,
            f"step:{run_id}:{at.item}.{at.stage}.{at.index}",
            context.profile,
            str(awaited["task_id"]),
            int(awaited["deadline_ms"]),
            task_token,
        )

    def interrupted(self, run_id: str, at: Position, error: Any) -> None:
        """The step's task failed or its wait timed out: the step fails, its siblings go on.
        A step that failed before it wrote anything is recorded now."""
        state = self._runs.read_item(run_id, at.item)
        if state is None:
            raise RunGone(run_id)
        found = state.step_at(at)
        if found is None:
            start = WorkflowStart.model_validate(state.run.definition)
            found = (new_record(run_id, start, at), 0)
        record, version = found
        if record.terminal:
            return
        cause = error if isinstance(error, dict) else {}
        if cause.get("Error") == "States.Timeout" and record.job_id is not None:
            message = f"no runner finished it within {limits.RUNNER_WAIT_TIMEOUT_SECONDS // 3600} h"
        elif cause.get("Error") == "States.Timeout":
            message = f"no answer within {limits.WORKFLOW_ESCALATION_TIMEOUT_SECONDS // 3600} h"
        else:
            message = f"the step's task failed ({cause.get('Error') or 'unknown error'})"
        record.task_token = None
        self._end(record, version, "failed", error=message)


def _bounded(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def new_record(run_id: str, start: WorkflowStart, at: Position) -> StepRecord:
    """The record of a step that has not written one yet."""
    stage = start.stages[at.stage]
    label = stage.label or f"stage-{at.stage + 1}"
    return StepRecord(run_id, at.stage, at.index, stage.steps[at.index].label, label, item=at.item)
