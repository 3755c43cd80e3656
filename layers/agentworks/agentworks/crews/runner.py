"""The step runner: what each state of statemachines/function_call.asl.json does (F3–F8).

Every action reads the call record, does one thing, and saves it under its version, so a
retried Lambda invocation finds the work it already did. The state machine owns the flow
(loops, waits, retries, catches); this module owns the rules of one step.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews import limits
from agentworks.crews.adapters.base import Adapter, AdapterError, TurnRequest, TurnResult
from agentworks.crews.call_store import CallStore, StaleCall
from agentworks.crews.crew_store import CrewStore
from agentworks.crews.models import CallRecord, Crew, PendingInput
from agentworks.crews.outputs import RESULT_FILE, OutputStore, call_prefix, crew_prefix
from agentworks.crews.schema_check import SchemaProblem, check
from agentworks.ids import new_id

AdapterFactory = Callable[[dict[str, Any]], Adapter]


class CallGone(Exception):
    """The record of the call this execution runs is missing."""


def _function_prompt(crew: Crew, record: CallRecord) -> str:
    spec = crew.definition.function(record.function)
    lines = [f"Run the function '{record.function}'."]
    if spec and spec.description:
        lines.append(f"Description: {spec.description}")
    lines.append("Arguments (JSON): " + json.dumps(record.args, sort_keys=True))
    if spec and spec.output_schema:
        lines.append("Write the result as JSON matching: " + json.dumps(spec.output_schema))
    return "\n".join(lines)


class StepRunner:
    def __init__(
        self,
        crews: CrewStore,
        calls: CallStore,
        outputs: OutputStore,
        adapters: AdapterFactory,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._crews = crews
        self._calls = calls
        self._outputs = outputs
        self._adapters = adapters
        self._clock = clock

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    def handle(self, event: dict[str, Any]) -> dict[str, Any]:
        action = event.get("action")
        call_id = str(event.get("call_id", ""))
        if action == "turn":
            return {"next": self.turn(call_id)}
        if action == "await_input":
            self.await_input(call_id, str(event["task_token"]))
            return {}
        if action == "finish":
            self.finish(call_id)
            return {}
        if action == "interrupt":
            self.interrupt(call_id, event.get("error") or {})
            return {}
        raise ValueError(f"unknown step action {action!r}")

    def _load(self, call_id: str) -> tuple[CallRecord, int]:
        found = self._calls.get(call_id)
        if found is None:
            raise CallGone(call_id)
        return found

    # ---- turn ----

    def turn(self, call_id: str) -> str:
        record, version = self._load(call_id)
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
        )
        try:
            result = self._adapters(crew.definition.adapter).run_turn(request)
        except AdapterError as error:
            record.outcome = "failed"
            record.errors.append(str(error) or "The agent failed.")
            self._save(record, version)
            return "finish"
        return self._after_turn(record, version, crew, result, spec.output_schema if spec else None)

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
        record.final_text = result.final_text
        problem = self._result_problem(result, output_schema)
        if problem is None:
            if result.has_result:
                self._store_result(record, prefix, result.result)
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

    @staticmethod
    def _result_problem(result: TurnResult, schema: dict[str, Any] | None) -> str | None:
        if schema is None:
            return None
        if not result.has_result:
            return "no result was written to FUNCTION_RESULT_FILE"
        encoded = json.dumps(result.result)
        if len(encoded.encode()) > limits.RESULT_VALIDATION_MAX_BYTES:
            return "the result is larger than 16 MiB"
        try:
            check(schema, result.result)
        except SchemaProblem as problem:
            return f"{problem.message.replace('data', 'result', 1)}"
        return None

    def _store_result(self, record: CallRecord, prefix: str, value: Any) -> None:
        encoded = json.dumps(value).encode()
        record.has_result = True
        if len(encoded) <= limits.RESULT_INLINE_MAX_BYTES:
            record.result = value
            return
        # F6: larger results are a file reference, read in pages.
        self._outputs.put(prefix, RESULT_FILE, encoded)
        record.result, record.result_file = None, RESULT_FILE

    # ---- waits and outcomes ----

    def await_input(self, call_id: str, task_token: str) -> None:
        for _attempt in range(5):
            record, version = self._load(call_id)
            record.state, record.task_token = "input_required", task_token
            try:
                self._save(record, version)
                return
            except StaleCall:
                continue
        raise StaleCall()

    def finish(self, call_id: str) -> None:
        record, version = self._load(call_id)
        if record.terminal:
            return  # a retried Finish: already recorded
        record.state = record.outcome or "failed"
        record.updated_at = self._now()
        record.pending_inputs, record.task_token = [], None
        release, record.slot_held = record.slot_held, False
        self._calls.finish(record, version, release_slot=release)

    def interrupt(self, call_id: str, error: dict[str, Any]) -> None:
        record, version = self._load(call_id)
        if record.terminal:
            return
        cause = str(error.get("Error") or "Interrupted")
        detail = str(error.get("Cause") or "")[:500]
        record.errors.append(f"interrupted: {cause}" + (f" ({detail})" if detail else ""))
        record.outcome = "interrupted"
        record.state = "interrupted"
        record.updated_at = self._now()
        record.task_token = None
        release, record.slot_held = record.slot_held, False
        self._calls.finish(record, version, release_slot=release)

    def _save(self, record: CallRecord, version: int) -> int:
        record.updated_at = self._now()
        return self._calls.save(record, version)
