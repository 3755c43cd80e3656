"""The step runner: what each state of statemachines/function_call.asl.json does (F3–F8).

Every action reads the call record, does one thing, and saves it under its version, so a
retried Lambda invocation finds the work it already did. The state machine owns the flow
(loops, waits, retries, catches); this module owns the rules of one step.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews.adapters.base import Adapter, AdapterError, TurnRequest, TurnResult
from agentworks.crews.call_bounds import inline_result_max, stored_size
from agentworks.crews.call_store import CallStore, StaleCall
from agentworks.crews.crew_store import CrewStore
from agentworks.crews.mcp_tool_use import TimeLeft, TurnMcpTools, take_mcp_calls
from agentworks.crews.message_turns import MessageTurns
from agentworks.crews.models import CallRecord, Crew, PendingInput
from agentworks.crews.outcomes import count_ended, report_outcome
from agentworks.crews.outputs import RESULT_FILE, OutputStore, call_prefix, crew_prefix
from agentworks.crews.schema_check import SchemaProblem, check
from agentworks.errors import AgentWorksError, Unavailable
from agentworks.identity.models import FUNCTIONS_CALL, MESSAGES_SEND
from agentworks.ids import new_id
from agentworks.messaging.models import Party
from agentworks.messaging.names import is_valid_agent_name

if TYPE_CHECKING:
    from agentworks.crews.conversation_records import (
        AskedRunStarts,
        AskingRuns,
        ConversationRecords,
        LiveConnection,
        StarterPrincipal,
    )
    from agentworks.external_tasks.waits import ExternalWaits
    from agentworks.identity.models import Principal
    from agentworks.mcp_servers.service import McpServers
    from agentworks.mcp_servers.token_calls import TokenCalls
    from agentworks.messaging.service import MessagingService

AdapterFactory = Callable[[dict[str, Any]], Adapter]


class CallGone(Exception):
    """The record of the call this execution runs is missing."""


class HandoffFailed(Exception):
    """The work could not be handed to the named agent (recorded on the call as failed)."""


def store_result(record: CallRecord, outputs: OutputStore, value: Any) -> None:
    """F6: a result up to 256 KiB inline on the record, larger ones as `result.json` — and
    so is one that would not fit in the record beside the call's own large args (one
    DynamoDB item holds under 400 KB; call_bounds)."""
    encoded = json.dumps(value).encode()
    record.has_result = True
    if len(encoded) <= limits.RESULT_INLINE_MAX_BYTES and stored_size(value) <= inline_result_max(
        record
    ):
        record.result, record.result_file = value, None
        return
    outputs.put(call_prefix(record.crew_id, record.call_id), RESULT_FILE, encoded)
    record.result, record.result_file = None, RESULT_FILE


def result_problem(has_result: bool, value: Any, schema: dict[str, Any] | None) -> str | None:
    """Why a result does not satisfy the output schema (None when it does, or none is set)."""
    if schema is None:
        return None
    if not has_result:
        return "no result was written to FUNCTION_RESULT_FILE"
    encoded = json.dumps(value)
    if len(encoded.encode()) > limits.RESULT_VALIDATION_MAX_BYTES:
        return "the result is larger than 16 MiB"
    try:
        check(schema, value)
    except SchemaProblem as problem:
        return f"{problem.message.replace('data', 'result', 1)}"
    return None


def handoff_instructions(call_id: str, agent: str, output_schema: dict[str, Any] | None) -> str:
    """How the agent that received the work posts its outcome (mailbox adapter)."""
    result = " --result '<JSON matching the schema above>'" if output_schema else ""
    return (
        f"This is work for AgentWorks call {call_id}. When it is done, post the outcome as "
        f"agent:{agent} (replying to this message does not complete it):\n"
        f"  agentworks functions complete --call-id {call_id} --agent {agent} "
        f"--text '<your answer>'{result}\n"
        f"  MCP: functions action=complete call_id={call_id} agent_name={agent} "
        "final_text=... result=...\n"
        f"  HTTP: POST /v1/calls/{call_id}/result "
        f'{{"agent_name": "{agent}", "final_text": "...", "result": ...}}'
    )


def _function_prompt(crew: Crew, record: CallRecord) -> str:
    spec = crew.definition.function(record.function)
    lines = [f"Run the function '{record.function}'."]
    if spec and spec.description:
        lines.append(f"Description: {spec.description}")
    lines.append("Arguments (JSON): " + json.dumps(record.args, sort_keys=True))
    if spec and spec.output_schema:
        lines.append("Write the result as JSON matching: " + json.dumps(spec.output_schema))
    return "\n".join(lines)


class StepRunner(MessageTurns):
    def __init__(
        self,
        crews: CrewStore,
        calls: CallStore,
        outputs: OutputStore,
        adapters: AdapterFactory,
        clock: Clock = SYSTEM_CLOCK,
        messaging: MessagingService | None = None,
        inbox: ConversationRecords | None = None,
        askers: AskingRuns | None = None,
        is_live: LiveConnection | None = None,
        starter: StarterPrincipal | None = None,
        asked_starts_on: Callable[[str], AskedRunStarts] | None = None,
        call_ended: Callable[[CallRecord], None] | None = None,
        mcp_servers: McpServers | None = None,
        mcp_token_calls: TokenCalls | None = None,
        waits: ExternalWaits | None = None,
    ) -> None:
        self._crews = crews
        self._waits = waits  # external agents' tasks the tick follows (a2a adapter)
        self._mcp_servers = mcp_servers  # attached MCP servers a Crew's turns may call
        self._mcp_token_calls = mcp_token_calls  # …and a lambda adapter's agent, by token
        self._calls = calls
        self._outputs = outputs
        self._adapters = adapters
        self._clock = clock
        # Message runs read their message and answer through messaging (and the mailbox
        # adapter hands work over through it); their outcome goes to the Crew's inbox store.
        self._messaging = messaging
        self._inbox = inbox
        # C3: a run that asked another Crew waits; what comes of its request wakes it. Its
        # authority is the starter's connection, re-checked before it asks (`is_live`).
        self._askers = askers
        self._is_live = is_live
        self._starter = starter  # the starter's principal (its target bounds, A4)
        # C3: starts an asked Crew's run on the state machine a task names (its own).
        self._asked_starts_on = asked_starts_on
        # A workflow step waiting for this call's end goes on (workflows.call_waits).
        self._call_ended = call_ended

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    def handle(self, event: dict[str, Any], time_left: TimeLeft | None = None) -> dict[str, Any]:
        """One task state's action; `time_left` is the invocation's remaining seconds (a
        turn's MCP tool calls end before it)."""
        action = event.get("action")
        call_id = str(event.get("call_id", ""))
        if action == "turn":
            return {"next": self.turn(call_id, time_left)}
        if action == "await_input":
            self.await_input(call_id, str(event["task_token"]))
            return {}
        if action == "handoff":
            self.handoff(call_id, str(event["task_token"]))
            return {}
        if action == "await_task":
            self.await_task(call_id, str(event["task_token"]))
            return {}
        if action == "ask_crew":
            self.ask_crew(call_id, str(event["task_token"]), event.get("state_machine"))
            return {}
        if action == "finish":
            self.finish(call_id)
            return {}
        if action == "interrupt":
            self.interrupt(call_id, event.get("error") or {})
            return {}
        raise ValueError(f"unknown step action {action!r}")

    def _load(self, call_id: str, entered: int) -> tuple[CallRecord, int]:
        """The record, counting the states of statemachines/function_call.asl.json this
        invocation stands for (usage): the next write of the record keeps the count."""
        found = self._calls.get(call_id)
        if found is None:
            raise CallGone(call_id)
        record, version = found
        record.transitions += entered
        return record, version

    # ---- turn ----

    def turn(self, call_id: str, time_left: TimeLeft | None = None) -> str:
        record, version = self._load(call_id, entered=2)  # Turn, then the Route choice
        if record.terminal or record.outcome:
            return "finish"
        crew = self._crews.get(record.account_id, record.crew_name)
        if crew is None or crew.crew_id != record.crew_id:
            record.outcome = "failed"
            record.errors.append("The Crew was deleted or replaced while the call ran.")
            self._save(record, version)
            return "finish"
        if record.turns >= limits.MAX_TURNS:
            record.outcome = "failed"
            record.errors.append(f"The call used its {limits.MAX_TURNS} turns without an outcome.")
            self._save(record, version)
            return "finish"

        if record.kind == "message":
            return self._message_turn(record, version, crew, time_left)

        record.state, record.turns = "running", record.turns + 1
        record.progress.append(f"turn {record.turns} started")
        version = self._save(record, version)  # evidence survives a crash in the turn

        spec = crew.definition.function(record.function)
        request = TurnRequest(
            crew_name=crew.name,
            instructions=crew.definition.instructions,
            settings=crew.definition.adapter,
            kind="function",
            prompt=_function_prompt(crew, record),
            function=record.function,
            args=record.args,
            output_schema=spec.output_schema if spec else None,
            answer=record.answers[-1]["answer"] if record.answers else None,
            correction=record.correction,
            function_output_dir=call_prefix(crew.crew_id, record.call_id),
            crew_output_dir=crew_prefix(crew.crew_id),
            function_result_file=call_prefix(crew.crew_id, record.call_id) + RESULT_FILE,
            account_id=crew.account_id,
            mcp_tools=(tools := self._mcp_tool_use(crew, record, time_left)),
            session_id=record.session_id,
            cancelled=lambda: self._call_stopped(record.call_id),
        )
        try:
            result = self._adapters(crew.definition.adapter).run_turn(request)
        except AdapterError as error:
            take_mcp_calls(record, tools)
            record.outcome = "failed"
            record.errors.append(str(error) or "The agent failed.")
            self._save(record, version)
            return "finish"
        take_mcp_calls(record, tools)
        return self._after_turn(record, version, crew, result, spec.output_schema if spec else None)

    def _mcp_tool_use(
        self, crew: Crew, record: CallRecord, time_left: TimeLeft | None
    ) -> TurnMcpTools | None:
        """Issue 28: the turn calls the Crew's declared MCP tools for its caller, whose
        connection must still be live and hold `functions:call` (a message run: for the
        connection that sent the message, holding `messages:send`)."""
        if self._mcp_servers is None:
            return None
        starter = self._starter

        def caller() -> Principal | None:
            if starter is None:
                return None
            return starter(record.account_id, record.caller_connection_id)

        prefix = call_prefix(crew.crew_id, record.call_id)

        def keep(name: str, data: bytes) -> str:
            self._outputs.put(prefix, name, data)
            return name

        return TurnMcpTools(
            self._mcp_servers,
            tuple(crew.definition.mcp_tools),
            caller,
            MESSAGES_SEND if record.kind == "message" else FUNCTIONS_CALL,
            keep,
            time_left=time_left,
            tokens=self._mcp_token_calls,
            run=f"call:{record.call_id}",
            cancelled=lambda: self._call_stopped(record.call_id),
        )

    def _call_stopped(self, call_id: str) -> bool:
        """Whether the call was cancelled (or ended) meanwhile: its in-flight MCP calls stop."""
        found = self._calls.get(call_id)
        return found is None or found[0].terminal

    def _after_turn(
        self,
        record: CallRecord,
        version: int,
        crew: Crew,
        result: TurnResult,
        output_schema: dict[str, Any] | None,
    ) -> str:
        record.progress.extend(result.progress)
        record.cost_usd += result.cost_usd
        record.session_id = result.session_id  # continued by the next turn only
        awaited = result.awaited_task
        record.awaited_task = asdict(awaited) if awaited is not None else None
        prefix = call_prefix(crew.crew_id, record.call_id)
        for path, content in sorted(result.files.items()):
            size = self._outputs.put(prefix, path, content)
            record.files = [f for f in record.files if f["path"] != path]
            record.files.append({"path": path, "size": size})
        if result.question:
            record.pending_inputs.append(
                PendingInput(new_id("req", self._clock), result.question, self._now())
            )
            self._save(record, version)
            return "ask"
        if awaited is not None:
            # An external agent's task still working: AwaitTask waits for it (`await_task`).
            self._save(record, version)
            return "await_task"
        if result.crew_request is not None and record.kind == "message":
            # C3: the AwaitCrew state sends it (`ask_crew`) and waits for what comes of it.
            ask = result.crew_request
            record.asked_crew = ask.crew_name.strip().lower()
            record.asked_message, record.asked_handoff = ask.message, ask.handoff
            self._save(record, version)
            return "ask_crew"
        if result.handoff is not None:
            # Mailbox adapter: the AwaitAgent state sends it (`handoff`) and waits.
            agent = result.handoff.agent_name.strip().lower()
            if not is_valid_agent_name(agent):
                record.outcome = "failed"
                record.errors.append(f"The hand-off names no valid agent ({agent!r}).")
                self._save(record, version)
                return "finish"
            record.handoff_agent, record.handoff_message = agent, result.handoff.message
            self._save(record, version)
            return "handoff"
        record.final_text = result.final_text
        problem = result_problem(result.has_result, result.result, output_schema)
        if problem is None:
            if result.has_result:
                store_result(record, self._outputs, result.result)
            record.outcome, record.correction = "succeeded", None
            self._save(record, version)
            return "finish"
        if record.corrections < limits.CORRECTION_TURNS:
            record.corrections += 1
            record.correction = problem
            record.progress.append(f"result rejected, asking for a correction: {problem}")
            self._save(record, version)
            return "correct"
        record.outcome = "failed"
        record.errors.append(f"The result does not match the output schema: {problem}")
        self._save(record, version)
        return "finish"

    # ---- waits and outcomes ----

    def await_input(self, call_id: str, task_token: str) -> None:
        self._hold(call_id, task_token, state="input_required")

    def await_task(self, call_id: str, task_token: str) -> None:
        """An external agent's task the last turn left working: the tick reads it from now
        on (agentworks.external_tasks) and answers `task_token` once it ended or asked, so
        the wait costs no invocation and no transition; the next turn reads the outcome."""
        if self._waits is None:
            raise AgentWorksError("external tasks cannot be followed by this runner")
        record = self._hold(call_id, task_token)
        crew = self._crews.get(record.account_id, record.crew_name)
        awaited = record.awaited_task
        if awaited is None or crew is None:
            raise CallGone(call_id)
        self._waits.begin(
            record.account_id,
            f"call:{call_id}",
            crew.definition.adapter,
            str(awaited["task_id"]),
            int(awaited["deadline_ms"]),
            task_token,
        )

    def _hold(self, call_id: str, task_token: str, state: str | None = None) -> CallRecord:
        """Records the token the call's execution now waits on (and the state it shows),
        read again over a concurrent write; CallGone when the call already ended."""
        for _attempt in range(5):
            record, version = self._load(call_id, entered=1)
            if record.terminal:
                raise CallGone(call_id)
            record.state, record.task_token = state or record.state, task_token
            try:
                self._save(record, version)
                return record
            except StaleCall:
                continue
        raise StaleCall()

    def handoff(self, call_id: str, task_token: str) -> None:
        """Mailbox adapter: sends the work to the named agent as a first contact from the
        Crew (`crew:NAME`, so the agent sees who asks) and waits on `task_token` until the
        agent posts the outcome (`FunctionCalls.post_result`). The Crew started this
        conversation, so a reply in it reaches no run: only a posted result completes it."""
        for _attempt in range(5):
            record, version = self._load(call_id, entered=1)
            agent = record.handoff_agent
            if record.terminal or not agent:
                raise HandoffFailed(f"call {call_id} has no work to hand over")
            if record.handoff_message is None:
                if not record.handoff_inbox_id:
                    raise HandoffFailed(f"call {call_id} has no work to hand over")
                # A repeated invocation of this step: the work went out; wait on this token.
                record.task_token = task_token
                try:
                    self._save(record, version)
                    return
                except StaleCall:
                    continue
            spec = self._spec(record)
            body = record.handoff_message.strip() + "\n\n"
            if record.kind == "message":
                # The message's own "Reply with" names the Crew's inbox, which is nobody's.
                body += (
                    f"crew:{record.crew_name} hands this message to you; its answer is "
                    "whatever you post below, which the Crew sends back in that conversation.\n"
                )
            body += handoff_instructions(call_id, agent, spec.output_schema if spec else None)
            try:
                receipt, agent_id = self._hand_over(record, agent, body)
            except AgentWorksError as error:
                reason = (
                    f"agent:{agent} is not a registered name of this account"
                    if isinstance(error, Unavailable)
                    else error.message
                )
                record.outcome = "failed"
                record.errors.append(f"The work could not be handed to agent:{agent}: {reason}")
                with contextlib.suppress(StaleCall):
                    self._save(record, version)
                raise HandoffFailed(str(error)) from None
            record.state, record.task_token = "running", task_token
            record.handoff_inbox_id, record.handoff_agent_id = receipt.inbox_id, agent_id
            record.handoff_message = None
            record.progress.append(f"handed to agent:{agent}")
            try:
                self._save(record, version)
                return
            except StaleCall:
                continue
        raise StaleCall()

    def _hand_over(self, record: CallRecord, agent: str, body: str) -> tuple[Any, str]:
        if self._messaging is None:
            raise AgentWorksError("messages are not available to this runner")
        if len(body) > limits.MESSAGE_MAX_CHARS:
            raise AgentWorksError(
                f"the work is {len(body):,} characters; a message holds at most "
                f"{limits.MESSAGE_MAX_CHARS:,}"
            )
        return self._messaging.first_contact_as_system(
            record.account_id,
            Party("crew", record.crew_id, record.crew_name),
            f"agent:{agent}",
            body,
            # One hand-off per turn, even when this step is retried.
            submission_id=f"{record.call_id}.handoff.{record.turns}",
        )

    def _spec(self, record: CallRecord) -> Any:
        crew = self._crews.get(record.account_id, record.crew_name)
        if crew is None or crew.crew_id != record.crew_id or not record.function:
            return None
        return crew.definition.function(record.function)

    def finish(self, call_id: str) -> None:
        record, version = self._load(call_id, entered=1)
        if record.terminal:
            self._report(record)  # a retried Finish: already recorded
            return
        if record.kind == "message":
            version = self._answer(record, version)
        record.state = record.outcome or "failed"
        record.updated_at = self._now()
        record.pending_inputs, record.task_token = [], None
        release, record.slot_held = record.slot_held, False
        self._calls.finish(record, version, release_slot=release)
        if record.kind == "message" and record.state != "succeeded":
            why = record.errors[-1] if record.errors else record.state
            self._tell_asker(record, f"crew:{record.crew_name} couldn't complete it: {why}")
        count_ended(record)
        self._report(record)

    def interrupt(self, call_id: str, error: dict[str, Any]) -> None:
        record, version = self._load(call_id, entered=1)
        if record.terminal:
            self._report(record)
            return
        if record.outcome == "failed" and record.errors:
            # A step that failed on purpose after recording why (a hand-off that could not
            # be delivered): the call failed, it was not interrupted.
            record.state = "failed"
        else:
            cause = str(error.get("Error") or "Interrupted")
            detail = str(error.get("Cause") or "")[:500]
            record.errors.append(f"interrupted: {cause}" + (f" ({detail})" if detail else ""))
            record.outcome = "interrupted"
            record.state = "interrupted"
        record.updated_at = self._now()
        record.task_token = None
        release, record.slot_held = record.slot_held, False
        self._calls.finish(record, version, release_slot=release)
        count_ended(record)
        self._report(record)

    # ---- message runs: the answer and the outcome ----

    def _report(self, record: CallRecord) -> None:
        """What follows a call's end (repeated by a retried Finish or Interrupted): the
        message's outcome where its sender looks, and the workflow step waiting for it."""
        report_outcome(record, self._inbox, self._messaging, self._now())
        if self._call_ended is not None:
            self._call_ended(record)

    def _save(self, record: CallRecord, version: int) -> int:
        record.updated_at = self._now()
        return self._calls.save(record, version)
