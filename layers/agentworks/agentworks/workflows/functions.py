"""Workflow functions (F9, W10): a registered workflow's `function` triggers, called through
the same `functions` surface as Crew functions with `target=workflow:NAME`.

    - kind: function
      name: review
      description: Review a repository at a ref
      inputSchema: {type: object, properties: {REPO: {type: string}}, required: [REPO]}
      callers: [workflow:nightly, conn_01…]   # left out: any caller of the account

Each accepted call starts a run of the workflow with the arguments as its variables; the
call's status is the run's outcome, its progress the steps' evidence. A caller is a
connection, or — for a step of a running workflow — `workflow:<its workflowId>` (with the
rights of that run's starter). A call with the same submission id and arguments returns the
original call; a workflow step's submission id is its run, step, target, function and
arguments, so an identical call in that scope reuses the call it made.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews.models import CallFunction
from agentworks.crews.schema_check import SchemaProblem, check
from agentworks.dynamo import TransactionCancelled
from agentworks.errors import Conflict, InvalidInput, SchemaViolation, TryAgain, Unavailable
from agentworks.identity.models import FUNCTIONS_CALL, FUNCTIONS_READ, Principal
from agentworks.ids import new_id
from agentworks.messaging.models import iso
from agentworks.workflows.function_call_store import (
    WorkflowCall,
    WorkflowCallStore,
)
from agentworks.workflows.registry_store import RegisteredWorkflow, RegistryStore, TriggerRecord
from agentworks.workflows.views import RunStarted, RunView

if TYPE_CHECKING:
    from agentworks.workflows.runs import WorkflowRuns

_STATE = {"running": "running", "succeeded": "succeeded", "failed": "failed"}


def workflow_name(target: str) -> str | None:
    kind, _, name = target.strip().partition(":")
    return name if kind == "workflow" and name else None


def _args_hash(target: str, function: str, args: dict[str, Any]) -> str:
    blob = json.dumps([target, function, args], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


class WorkflowFunctions:
    def __init__(
        self,
        registry: RegistryStore,
        runs: WorkflowRuns,
        calls: WorkflowCallStore,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._registry = registry
        self._runs = runs
        self._calls = calls
        self._clock = clock

    def _functions(
        self, principal: Principal, name: str
    ) -> tuple[RegisteredWorkflow, list[TriggerRecord]]:
        """The registered workflow (read once) and its function triggers."""
        registered = self._registry.get(principal.account_id, name)
        if registered is None or not principal.may_target(f"workflow:{name}"):
            raise Unavailable()
        found = [self._registry.trigger(t) for t in registered.trigger_ids]
        return registered, [t for t in found if t is not None and t.kind == "function"]

    def list_functions(
        self, principal: Principal, target: str, caller: str | None = None
    ) -> dict[str, Any]:
        """The functions this caller may call: a function whose `callers` leave it out is
        not shown, as calling it answers like an unknown one."""
        principal.require(FUNCTIONS_READ)
        name = workflow_name(target) or ""
        registered, functions = self._functions(principal, name)
        who = caller or principal.connection_id
        functions = [f for f in functions if _may_call(f, who)]
        return {
            "target": f"workflow:{name}",
            "version": registered.version,
            "functions": [
                {
                    "name": t.name,
                    "description": t.config.get("description", ""),
                    "input_schema": t.config.get("inputSchema") or {"type": "object"},
                    "output_schema": None,
                }
                for t in functions
            ],
        }

    def call(
        self, principal: Principal, request: CallFunction, caller: str | None = None
    ) -> dict[str, Any]:
        """`caller`: `workflow:<id>` when a running workflow's step calls, else None (the
        connection calls as itself)."""
        principal.require(FUNCTIONS_CALL)
        name = workflow_name(request.target) or ""
        registered, functions = self._functions(principal, name)
        function = next((f for f in functions if f.name == request.function), None)
        if function is None:
            raise InvalidInput(
                f"workflow:{name} has no function '{request.function}'. See its functions "
                f"with: agentworks functions list --target workflow:{name}",
                field="function",
            )
        who = caller or principal.connection_id
        if not _may_call(function, who):
            raise Unavailable()  # an unlisted caller learns nothing of the function
        try:
            check(function.config.get("inputSchema") or {"type": "object"}, request.args)
        except SchemaProblem as problem:
            raise SchemaViolation(
                f"args don't match {request.function}'s input schema: "
                f"{problem.message.replace('data', 'args', 1)}",
                path=problem.path.replace("data", "args", 1),
            ) from None
        digest = _args_hash(request.target, request.function, request.args)
        earlier = self._calls.by_submission(principal.account_id, who, request.submission_id)
        if earlier is not None:
            return self._replayed(principal, earlier, digest)
        variables = {k: v if isinstance(v, str | int | float | bool) else json.dumps(v)
                     for k, v in request.args.items()}  # fmt: skip
        made: list[WorkflowCall] = []

        def recorded(answer: RunStarted) -> dict[str, dict[str, Any]]:
            """The call, written in the transaction that creates its run: a call that
            loses the submission id to another starts no run."""
            made.append(
                WorkflowCall(
                    call_id=new_id("wcall", self._clock),
                    account_id=principal.account_id,
                    caller=who,
                    caller_connection_id=principal.connection_id,
                    workflow_id=name,
                    function=request.function,
                    run_id=answer.run_id,
                    args_hash=digest,
                    submission_id=request.submission_id,
                    created_at=int(self._clock.now() * 1000),
                )
            )
            return self._calls.items(made[-1])

        definition = {**registered.definition, "input": variables}
        try:
            self._runs.start(principal, definition, with_run=recorded)
        except TransactionCancelled as cancelled:
            raced = self._calls.by_submission(principal.account_id, who, request.submission_id)
            if not cancelled.failed("binding") or raced is None:
                raise
            return self._replayed(principal, raced, digest)
        except TryAgain:
            for record in made:  # recorded, but its run never started: a retry starts anew
                self._calls.forget(record)
            raise
        return {**self._view(principal, made[-1]), "replayed": False}

    def _replayed(self, principal: Principal, earlier: WorkflowCall, digest: str) -> dict[str, Any]:
        """The call a submission id made before, when its arguments are the same (M2)."""
        if earlier.args_hash != digest:
            raise Conflict(
                "submission_id was already used with other arguments; use a new "
                "submission_id for new work.",
                field="submission_id",
            )
        return {**self._view(principal, earlier), "replayed": True}

    def status(self, principal: Principal, call_id: str) -> dict[str, Any]:
        principal.require(FUNCTIONS_READ)
        record = self._calls.get(call_id)
        if (
            record is None
            or record.account_id != principal.account_id
            or record.caller_connection_id != principal.connection_id
            or not principal.may_target(f"workflow:{record.workflow_id}")
        ):
            raise Unavailable()
        return self._view(principal, record)

    def _view(self, principal: Principal, record: WorkflowCall) -> dict[str, Any]:
        run = self._runs.status(principal, record.run_id)
        return call_view(record, run)


def call_view(record: WorkflowCall, run: RunView) -> dict[str, Any]:
    """A workflow call as a CallView: the run's outcome, its steps as evidence."""
    steps = [
        (stage.label, step)
        for stage in run.stages or [s for item in run.items or [] for s in item.stages]
        for step in stage.steps
    ]
    progress = [f"run {run.run_id}: {run.status}"] + [
        f"{stage}/{step.label}: {step.status}" for stage, step in steps
    ]
    last = next((s for _, s in reversed(steps) if s.status == "succeeded"), None)
    final_text = last.output if last and run.status == "succeeded" else None
    result: Any = None
    if final_text:
        try:
            result = json.loads(final_text)
        except ValueError:
            result = None
    state = _STATE.get(run.status, "cancelled" if run.status == "cancelled" else "running")
    return {
        "call_id": record.call_id,
        "target": f"workflow:{record.workflow_id}",
        "function": record.function,
        "state": state,
        "terminal": run.status in ("succeeded", "failed", "cancelled"),
        "progress": progress,
        "errors": [run.error] if run.error else [],
        "pending_inputs": [],
        "final_text": final_text,
        "result": result,
        "result_file": None,
        "files": [],
        "turns": len(steps),
        "created_at": iso(record.created_at),
        "updated_at": run.ended_at or run.created_at,
    }


def _may_call(function: TriggerRecord, who: str) -> bool:
    allowed = function.config.get("callers")
    return allowed is None or who in allowed
