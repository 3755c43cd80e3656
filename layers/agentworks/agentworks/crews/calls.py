"""Structured function calls: list, call, status, read, reply, cancel (F2–F8)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.crews.access import may_see_call, parse_crew_target, visible
from agentworks.crews.call_store import (
    CallBindingExists,
    CallStore,
    CrewBusy,
    CrewChanged,
    StaleCall,
)
from agentworks.crews.crew_store import CrewStore
from agentworks.crews.execution import Executions
from agentworks.crews.models import CallFunction, CallRecord, PostCallResult, ReplyToCall
from agentworks.crews.outcomes import count_ended
from agentworks.crews.outputs import RESULT_FILE, FileGone, OutputStore, call_prefix
from agentworks.crews.runner import result_problem, store_result
from agentworks.crews.schema_check import SchemaProblem, check
from agentworks.errors import (
    Busy,
    Conflict,
    Expired,
    InvalidInput,
    SchemaViolation,
    Unavailable,
)
from agentworks.identity.models import (
    ADMIN,
    FUNCTIONS_CALL,
    FUNCTIONS_READ,
    MESSAGES_SEND,
    Principal,
)
from agentworks.ids import new_id
from agentworks.json_input import depth_of
from agentworks.messaging.models import iso
from agentworks.messaging.names import normalize_agent_name
from agentworks.observability import count

if TYPE_CHECKING:
    from agentworks.crews.views import CallList


# A list position as the Runs page passes it back: the created ms and id of the last call
# looked at. It only positions a Query in the caller's own account, so it needs no signature.
_POSITION = re.compile(r"(\d{13})\.(call_[0-9A-Za-z]{1,40})")


def _list_position(before: str | None) -> tuple[int, str] | None:
    if before is None:
        return None
    matched = _POSITION.fullmatch(before)
    if matched is None:
        raise InvalidInput(
            "before must be the next_before of a page of calls; list again without it.",
            field="before",
        )
    return int(matched.group(1)), matched.group(2)


class RoutedFunctions(Protocol):
    """Functions of another kind of target on this surface (workflow:, relay:)."""

    def list_functions(
        self, principal: Principal, target: str, caller: str | None = None
    ) -> dict[str, Any]: ...

    def call(
        self, principal: Principal, request: CallFunction, caller: str | None = None
    ) -> dict[str, Any]: ...

    def status(self, principal: Principal, call_id: str) -> dict[str, Any]: ...


class InvalidResult(SchemaViolation, code="invalid_result"):
    """A posted result does not match the function's output schema; the call still waits."""


def _args_hash(target: str, function: str, args: dict[str, Any]) -> str:
    payload = json.dumps([target, function, args], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


def mcp_call_summary(entry: dict[str, Any]) -> dict[str, Any]:
    """What a status shows of one MCP tool call (issue 28): never its content."""
    # Every entry carries these (mcp_servers.call_records writes them all).
    return {
        "server": entry["server"],
        "tool": entry["tool"],
        "outcome": entry["outcome"],
        "duration_ms": int(entry["duration_ms"]),
        "result_bytes": int(entry["result_bytes"]),
    }


def call_status(record: CallRecord) -> dict[str, Any]:
    """What a caller sees: state, saved progress, questions, outcome and file metadata."""
    return {
        "call_id": record.call_id,
        "target": f"crew:{record.crew_name}",
        "function": record.function,
        "state": record.state,
        "terminal": record.terminal,
        "progress": record.progress,
        "errors": record.errors,
        "pending_inputs": [
            {"request_id": p.request_id, "question": p.question, "asked_at": iso(p.asked_at)}
            for p in record.pending_inputs
        ],
        "final_text": record.final_text,
        "result": record.result,  # None when there is none, or it is kept as result_file
        "result_file": record.result_file,
        "files": record.files,
        "turns": record.turns,
        "cost_usd": round(record.cost_usd, 6),
        "mcp_calls": [mcp_call_summary(c) for c in record.mcp_calls],
        "created_at": iso(record.created_at),
        "updated_at": iso(record.updated_at),
    }


class FunctionCalls:
    def __init__(
        self,
        crews: CrewStore,
        calls: CallStore,
        executions: Executions,
        outputs: OutputStore,
        clock: Clock = SYSTEM_CLOCK,
        call_ended: Callable[[CallRecord], None] | None = None,
    ) -> None:
        self._crews = crews
        self._calls = calls
        self._executions = executions
        self._outputs = outputs
        self._clock = clock
        # A workflow step waiting for a call goes on when it ends (as after Finish).
        self._call_ended = call_ended
        # Other kinds of targets answer on the same surface: workflow:NAME (W10), relay:NAME.
        self._routes: dict[str, tuple[str, RoutedFunctions]] = {}

    def route(self, kind: str, call_prefix: str, functions: RoutedFunctions) -> None:
        """Calls with target=<kind>:NAME, and call ids starting `call_prefix`, go to
        `functions` (registered workflows' function triggers, Relays)."""
        self._routes[kind] = (call_prefix, functions)

    def _routed_target(self, target: str) -> RoutedFunctions | None:
        found = self._routes.get(target.strip().partition(":")[0])
        return found[1] if found else None

    def _routed_call(self, call_id: str) -> RoutedFunctions | None:
        return next((f for prefix, f in self._routes.values() if call_id.startswith(prefix)), None)

    def _now(self) -> int:
        return int(self._clock.now() * 1000)

    def list_functions(
        self, principal: Principal, target: str, caller: str | None = None
    ) -> dict[str, Any]:
        """`caller`: `workflow:<id>` when a running workflow's step asks (as for call)."""
        principal.require(FUNCTIONS_READ)
        routed = self._routed_target(target)
        if routed is not None:
            return routed.list_functions(principal, target, caller)
        crew = visible(principal, self._crews.get(principal.account_id, parse_crew_target(target)))
        return {
            "target": f"crew:{crew.name}",
            "version": crew.version,
            "functions": [f.model_dump(mode="json") for f in crew.definition.functions],
        }

    def call(
        self, principal: Principal, request: CallFunction, caller: str | None = None
    ) -> dict[str, Any]:
        """F2 for every surface (HTTP, MCP, a workflow's steps); the accepted-calls metric is
        counted here. `caller` is `workflow:<id>` when a running workflow calls (W10)."""
        accepted = self._call(principal, request, caller)
        count("FunctionCallsAccepted", 0 if accepted["replayed"] else 1)
        return accepted

    def _call(
        self, principal: Principal, request: CallFunction, caller: str | None
    ) -> dict[str, Any]:
        principal.require(FUNCTIONS_CALL)
        routed = self._routed_target(request.target)
        if routed is not None:
            return routed.call(principal, request, caller)
        name = parse_crew_target(request.target)
        crew = visible(principal, self._crews.get(principal.account_id, name))
        spec = crew.definition.function(request.function)
        if spec is None:
            raise InvalidInput(
                f"crew:{name} has no function '{request.function}'. See its functions with: "
                f"agentworks functions list --target crew:{name}",
                field="function",
            )
        if len(json.dumps(request.args)) > limits.ARGS_MAX_BYTES:
            raise InvalidInput(
                f"args are limited to {limits.ARGS_MAX_BYTES // 1024} KiB of JSON.", field="args"
            )
        if depth_of(request.args) > limits.ARGS_MAX_DEPTH:
            # Bounded before the schema check, whose validator recurses per level.
            raise InvalidInput(
                f"args may nest at most {limits.ARGS_MAX_DEPTH} levels.", field="args"
            )
        try:
            check(spec.input_schema, request.args)
        except SchemaProblem as problem:
            path = problem.path.replace("data", "args", 1)
            raise SchemaViolation(
                f"args don't match {request.function}'s input schema: "
                f"{problem.message.replace('data', 'args', 1)}",
                path=path,
            ) from None
        digest = _args_hash(f"crew:{name}", request.function, request.args)
        now = self._now()
        record = CallRecord(
            call_id=new_id("call", self._clock),
            account_id=principal.account_id,
            crew_name=name,
            crew_id=crew.crew_id,
            function=request.function,
            args=request.args,
            caller_connection_id=principal.connection_id,
            state="accepted",
            created_at=now,
            updated_at=now,
            submission_id=request.submission_id,
        )
        try:
            self._calls.admit(crew, record, digest, request.submission_id)
        except CallBindingExists as existing:
            return self._recover(principal, existing, digest)
        except CrewBusy:
            raise Busy(
                f"crew:{name} is running {limits.RUNNING_PER_CREW} calls; nothing was queued. "
                "Retry later (reuse the same submission_id)."
            ) from None
        except (CrewChanged, StaleCall):
            raise Conflict("The Crew changed while calling it; retry.") from None
        try:
            self._executions.start(record.call_id)
        except Exception:
            # Nothing will run it: record the failure and give the slot back.
            record.state, record.updated_at = "failed", self._now()
            record.errors.append("The execution could not be started.")
            record.slot_held = False
            self._calls.finish(record, 1, release_slot=True)
            raise
        return {**call_status(record), "replayed": False}

    def _recover(
        self, principal: Principal, existing: CallBindingExists, digest: str
    ) -> dict[str, Any]:
        """F4: the same submission_id recovers the accepted call; other arguments conflict."""
        if existing.args_hash != digest:
            raise Conflict(
                "submission_id was already used with other arguments; use a new submission_id "
                "for new work.",
                field="submission_id",
            )
        found = self._calls.get(existing.call_id)
        record = may_see_call(principal, found[0] if found else None)
        return {**call_status(record), "replayed": True}

    def recent(
        self, principal: Principal, limit: int | None = None, before: str | None = None
    ) -> CallList:
        """C5 the Runs page: the caller's function calls, newest first (an admin's: the
        account's), within its target bounds, a page at a time (`before`: the previous
        page's next_before)."""
        from agentworks.crews.views import CallList, CallSummary

        records, next_before = self._recent_records(principal, limit, before)
        return CallList(
            calls=[
                CallSummary(
                    call_id=r.call_id,
                    target=f"crew:{r.crew_name}",
                    function=r.function,
                    state=r.state,  # type: ignore[arg-type]
                    terminal=r.terminal,
                    waiting_for_answer=r.state == "input_required",
                    cost_usd=round(r.cost_usd, 6),
                    created_at=iso(r.created_at),
                    updated_at=iso(r.updated_at),
                )
                for r in records
            ],
            next_before=next_before,
        )

    def recent_statuses(
        self,
        principal: Principal,
        limit: int | None = None,
        crew_name: str | None = None,
        before: str | None = None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """A2A ListTasks: the same calls as `recent` (of one Crew, when named), each with its
        whole status, and where the next page starts."""
        records, next_before = self._recent_records(principal, limit, before)
        statuses = [call_status(r) for r in records if crew_name in (None, r.crew_name)]
        return statuses, next_before

    def _recent_records(
        self, principal: Principal, limit: int | None, before: str | None
    ) -> tuple[list[CallRecord], str | None]:
        """The caller's newest calls (an admin's: the account's) within its target bounds,
        older than `before` (a page's next_before), and the next page's `before`."""
        principal.require(FUNCTIONS_READ)
        page = limits.CALLS_PAGE_DEFAULT if limit is None else limit
        if not 1 <= page <= limits.CALLS_PAGE_MAX:
            raise InvalidInput(f"limit must be 1–{limits.CALLS_PAGE_MAX}.", field="limit")
        caller = None if ADMIN in principal.scopes else principal.connection_id
        now = int(self._clock.now() * 1000)
        records, following = self._calls.recent(
            principal.account_id, caller, now, page, _list_position(before)
        )
        next_before = None if following is None else f"{following[0]:013d}.{following[1]}"
        return [r for r in records if principal.may_target(f"crew:{r.crew_name}")], next_before

    def status(self, principal: Principal, call_id: str) -> dict[str, Any]:
        principal.require(FUNCTIONS_READ)
        routed = self._routed_call(call_id)
        if routed is not None:
            return routed.status(principal, call_id)
        found = self._calls.get(call_id)
        return call_status(may_see_call(principal, found[0] if found else None))

    def read(self, principal: Principal, call_id: str, path: str, page: int) -> dict[str, Any]:
        principal.require(FUNCTIONS_READ)
        found = self._calls.get(call_id)
        record = may_see_call(principal, found[0] if found else None)
        known = {f["path"] for f in record.files} | ({RESULT_FILE} if record.result_file else set())
        if path not in known:
            raise Unavailable()
        if page < 0:
            raise InvalidInput("page must be 0 or more.", field="page")
        try:
            chunk = self._outputs.read_page(call_prefix(record.crew_id, record.call_id), path, page)
        except FileGone:
            raise Expired(
                "This output was removed 7 days after it was written; the call record remains."
            ) from None
        try:
            content, encoding = chunk.content.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            content, encoding = base64.b64encode(chunk.content).decode(), "base64"
        return {
            "call_id": call_id,
            "path": chunk.path,
            "page": chunk.page,
            "pages": chunk.pages,
            "size": chunk.size,
            "encoding": encoding,
            "content": content,
        }

    def reply(self, principal: Principal, call_id: str, request: ReplyToCall) -> dict[str, Any]:
        """F7: answers the pending question with the matching request id; grants nothing else."""
        principal.require(FUNCTIONS_CALL)
        for _attempt in range(5):
            found = self._calls.get(call_id)
            record = may_see_call(principal, found[0] if found else None)
            assert found is not None
            version = found[1]
            if record.terminal:
                raise Conflict(
                    f"The call already ended ({record.state}); there is nothing to answer."
                )
            pending = next(
                (p for p in record.pending_inputs if p.request_id == request.request_id), None
            )
            if pending is None or record.state != "input_required" or not record.task_token:
                raise Conflict(
                    "No pending input with that request_id on this call; see its "
                    "pending_inputs with: agentworks functions status --call-id " + call_id,
                    field="request_id",
                )
            token = record.task_token
            record.pending_inputs = [p for p in record.pending_inputs if p is not pending]
            record.answers.append({"request_id": request.request_id, "answer": request.answer})
            record.state, record.task_token, record.updated_at = "running", None, self._now()
            try:
                self._calls.save(record, version)
            except StaleCall:
                continue
            self._executions.resume(token, {"request_id": request.request_id})
            return call_status(record)
        raise Conflict("The call changed while replying; retry.")

    def cancel(self, principal: Principal, call_id: str) -> dict[str, Any]:
        """Ends an unfinished call as `cancelled` for its caller (or the account's admin):
        the record turns terminal and gives the Crew's slot back in one transaction, then
        its execution stops. A turn still in flight finds the record ended and records
        nothing more; an asked question can no longer be answered."""
        principal.require(FUNCTIONS_CALL)
        if self._routed_call(call_id) is not None:
            raise InvalidInput(
                "This call belongs to a workflow run or a Relay run: cancel that run.",
                field="call_id",
            )
        for _attempt in range(5):
            found = self._calls.get(call_id)
            record = may_see_call(principal, found[0] if found else None)
            assert found is not None
            if record.kind != "function":
                raise Unavailable()  # a Crew's own run (a message, a wakeup) is not a call
            if record.terminal:
                raise Conflict(
                    f"The call already ended ({record.state}); there is nothing to cancel.",
                    state=record.state,
                )
            record.state = record.outcome = "cancelled"
            record.errors.append("cancelled by the caller")
            record.pending_inputs, record.task_token = [], None
            record.updated_at = self._now()
            release, record.slot_held = record.slot_held, False
            try:
                self._calls.finish(record, found[1], release_slot=release)
            except StaleCall:
                continue
            self._executions.stop(call_id, "cancelled by the caller")
            count_ended(record)
            if self._call_ended is not None:
                self._call_ended(record)
            return call_status(record)
        raise Conflict("The call changed while cancelling; retry.")

    def post_result(
        self, principal: Principal, call_id: str, request: PostCallResult
    ) -> dict[str, Any]:
        """Mailbox adapter (§8): the agent the work was handed to posts the outcome, acting
        as that name (M5: this connection is on its allow-list, same identity as when the
        work was handed over). A result that does not match the output schema is a 422 and
        the call keeps waiting; an accepted one resumes the execution to its outcome."""
        principal.require(MESSAGES_SEND)
        name = normalize_agent_name(request.agent_name)
        consent = principal.consents.get(name)
        if request.final_text is None and "result" not in request.model_fields_set:
            raise InvalidInput("Give final_text, result or both.", field="final_text")
        for attempt in range(_POST_ATTEMPTS):
            found = self._calls.get(call_id)
            record = found[0] if found else None
            waits = attempt < _HANDOFF_WAITS
            if record is not None and record.handoff_message is not None and waits:
                # The work reached the agent's mailbox a moment before the hand-off step
                # recorded it: give that step a moment to finish.
                _pause(_HANDOFF_WAIT_SECONDS)
                continue
            if (
                record is None
                or found is None
                or record.account_id != principal.account_id
                or consent is None
                or not principal.may_target(f"agent:{name}")  # A4: bounds name it too
                or record.handoff_agent != name
                or consent.agent_id != record.handoff_agent_id
            ):
                raise Unavailable()  # not waiting on this caller: knowing the id grants nothing
            if record.terminal or record.state != "running" or not record.task_token:
                raise Conflict(
                    f"The call is {record.state}; it is not waiting for a result.",
                    state=record.state,
                )
            has_result = "result" in request.model_fields_set
            crew = self._crews.get(record.account_id, record.crew_name)
            spec = crew.definition.function(record.function) if crew and record.function else None
            schema = spec.output_schema if spec else None
            problem = result_problem(has_result, request.result, schema)
            if problem is not None:
                raise InvalidResult(
                    f"The result does not match {record.function}'s output schema: {problem}. "
                    "The call still waits; post a corrected result.",
                    output_schema=schema,
                )
            record.final_text = request.final_text
            if has_result:
                store_result(record, self._outputs, request.result)
            token = record.task_token
            record.outcome, record.task_token = "succeeded", None
            record.progress.append(f"result posted by agent:{name}")
            record.updated_at = self._now()
            try:
                self._calls.save(record, found[1])
            except StaleCall:
                continue
            try:
                self._executions.resume(token, {"posted_by": f"agent:{name}"})
            except Exception:
                raise Conflict(
                    "The call stopped waiting before the result arrived; see its status."
                ) from None
            return call_status(record)
        raise Conflict("The call changed while posting; retry.")


_HANDOFF_WAITS, _HANDOFF_WAIT_SECONDS = 20, 0.1  # a hand-off still being recorded: ~2 s
# Real time whatever the service's clock: the hand-off step runs elsewhere, meanwhile.
_pause = time.sleep
_POST_ATTEMPTS = _HANDOFF_WAITS + 5  # then a few saves
