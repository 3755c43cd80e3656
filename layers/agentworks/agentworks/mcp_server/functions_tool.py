"""The `functions` MCP tool: discover and call a Crew's typed functions (F2–F8).

Same shape as `messages`: one `action` argument, each action a row of `ACTIONS`; the
rules live in `FunctionCalls`, exactly as behind `/v1/functions` and `/v1/calls`.

F7 questions: a client on protocol 2026-07-28 that declared elicitation gets a call's
pending question as an elicitation while it polls `status` (an `InputRequiredResult`); its
answer, on the retry, goes through the same `FunctionCalls.reply` as action=reply. Every
other client sees `pending_inputs` and answers with action=reply.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import ConfigDict, Field, RootModel

from agentworks import limits
from agentworks.crews.models import (
    CallFunction,
    PostCallResult,
    ReplyToCall,
)
from agentworks.crews.views import CallView, FilePage, FunctionList
from agentworks.errors import Conflict
from agentworks.identity.models import Principal
from agentworks.mcp_server.actions import NOT_AN_ARGUMENT, ActionSpec, run_action
from agentworks.mcp_server.actions import text as text_argument
from agentworks.mcp_server.questions import accepted_answer, elicitation
from agentworks.mcp_server.results import build_model, to_json_text
from agentworks.mcp_server.tooling import domain_tool
from agentworks.observability import logger

if TYPE_CHECKING:
    from agentworks.crews.calls import FunctionCalls

Action = Literal["list", "call", "status", "read", "reply", "complete"]

TOOL_NAME = "functions"
TOOL_TITLE = "AgentWorks functions"
# The protocol revision from which a question can ride a tool result (multi-round trip).
INPUT_REQUIRED_PROTOCOL = "2026-07-28"

DESCRIPTION = f"""\
Typed functions of this account's Crews (target "crew:NAME"; see the `crews` tool for
the Crews) and registered workflows ("workflow:NAME": a call starts a run). A call runs in
the background and may take minutes. Pick an `action`:

- list: a target's current functions with their input and output JSON schemas. Do this
  first, and build `args` from the input_schema.
- call: start `function` on `target` with `args` (an object matching its input_schema;
  a mismatch is an `invalid_arguments` error with the `path` of the problem). Returns a
  `call_id` at once: KEEP IT. Give every call a fresh `submission_id`; if a call fails
  or times out and you cannot tell whether it started, call again with the SAME
  submission_id and args: you get the original call (replayed=true), not a second one.
  `busy` means the Crew already runs {limits.RUNNING_PER_CREW} calls: nothing was
  queued; retry later with the same submission_id.
- status: the call's state. Poll it (every few seconds) until `terminal` is true:
  succeeded (the outcome is in `result`, or in the file `result_file`), failed,
  cancelled or interrupted (see `errors`). Progress lines and questions are NOT
  completion.
- reply: when status shows `pending_inputs` (state input_required), the call waits for
  an answer: reply with that question's `request_id` and your `answer` (ask your user
  when it is theirs to decide), then keep polling status.
- read: a file of the call (`path` from `files`, or `result_file`), one page of up to
  2 MiB at a time (`page` 0, 1, … of `pages`); binary content comes base64-encoded.
- complete: when a Crew handed work to YOUR agent name (a message in your mailbox naming
  the call_id), post the outcome: `call_id`, `agent_name` (your name), `final_text` and/or
  `result` (JSON matching the function's output schema; a mismatch is `invalid_result`
  and the call keeps waiting for a corrected one).

list, status and read only read; call, reply and complete act. Errors come back as is_error
results with {{"error": {{"code", "message"}}}}; `unavailable` means unknown or not yours
(the two look the same).
"""


# ---------------------------------------------------------------- results


class CallStatus(CallView):
    """A call as `GET /v1/calls/{call_id}` returns it (`replayed` only from action=call)."""

    replayed: bool | None = None


class FunctionsOutput(RootModel[FunctionList | CallStatus | FilePage]):
    """One JSON object per action (the same bodies the HTTP API returns)."""

    # MCP wants an object at the root of an output schema; every arm is one.
    model_config = ConfigDict(json_schema_extra={"type": "object"})


@dataclass(frozen=True)
class FunctionsCall:
    """The tool's arguments, after the SDK checked their types against the input schema."""

    action: Action
    target: str | None = None
    function: str | None = None
    args: dict[str, Any] | None = None
    submission_id: str | None = None
    call_id: str | None = None
    path: str | None = None
    page: int | None = None
    request_id: str | None = None
    answer: str | None = None
    agent_name: str | None = None
    final_text: str | None = None
    result: Any = None
    # The request's MCP context (questions as elicitations); not an argument.
    context: Context | None = field(default=None, compare=False, metadata=NOT_AN_ARGUMENT)


# ---------------------------------------------------------------- actions


def calls() -> FunctionCalls:
    # Imported on first use: the stores pull in boto3, which tools/list never needs.
    from agentworks.runtime import services

    return services().crews.calls


def _list(principal: Principal, call: FunctionsCall) -> dict[str, Any]:
    return calls().list_functions(principal, str(call.target))


def _call(principal: Principal, call: FunctionsCall) -> dict[str, Any]:
    request = build_model(
        CallFunction,
        target=call.target,
        function=call.function,
        args=call.args or {},
        submission_id=text_argument(call, "submission_id"),
    )
    return calls().call(principal, request)


def _status(principal: Principal, call: FunctionsCall) -> dict[str, Any] | InputRequiredResult:
    call_id = str(call.call_id)
    ctx = call.context
    if ctx is None or not _client_elicits(ctx):
        return calls().status(principal, call_id)
    if ctx.request_state is not None:
        return _answered(principal, call_id, ctx)
    status = calls().status(principal, call_id)
    if status["state"] != "input_required" or not status["pending_inputs"]:
        return status
    # F7: ask the client's user now; the answer arrives on the client's retry.
    asked = status["pending_inputs"]
    return InputRequiredResult(
        input_requests={p["request_id"]: elicitation(status, p) for p in asked},
        request_state=json.dumps(
            {"call_id": call_id, "asked": [p["request_id"] for p in asked]},
            separators=(",", ":"),
        ),
    )


def _read(principal: Principal, call: FunctionsCall) -> dict[str, Any]:
    return calls().read(principal, str(call.call_id), str(call.path), call.page or 0)


def _reply(principal: Principal, call: FunctionsCall) -> dict[str, Any]:
    request = build_model(ReplyToCall, request_id=call.request_id, answer=call.answer)
    return calls().reply(principal, str(call.call_id), request)


def _complete(principal: Principal, call: FunctionsCall) -> dict[str, Any]:
    fields: dict[str, Any] = {"agent_name": call.agent_name, "final_text": call.final_text}
    if call.result is not None:
        fields["result"] = call.result
    request = build_model(PostCallResult, **fields)
    return calls().post_result(principal, str(call.call_id), request)


# ---------------------------------------------------------------- F7 elicitation


def _client_elicits(ctx: Context) -> bool:
    """Whether this request's client can be asked through a multi-round-trip result."""
    version = ctx.protocol_version
    if version is None or version < INPUT_REQUIRED_PROTOCOL:  # ISO dates order as strings
        return False
    try:
        capabilities = ctx.client_capabilities
    except ValueError:  # no request context (a direct call, not over the wire)
        return False
    declared = capabilities.elicitation if capabilities is not None else None
    # An empty elicitation capability means form mode (the spec's default).
    return declared is not None and (declared.form is not None or declared.url is None)


def _answered(principal: Principal, call_id: str, ctx: Context) -> dict[str, Any]:
    """The retry after a question: accepted answers go to `reply`; then the fresh status.

    Declined or cancelled questions stay pending (action=reply still answers them). The
    status is returned, never a new question, so one poll asks at most once.
    """
    state = json.loads(str(ctx.request_state))  # sealed by the SDK: we minted it
    responses = ctx.input_responses or {}
    if state.get("call_id") == call_id:
        for request_id in state.get("asked", []):
            answer = accepted_answer(responses.get(request_id))
            if answer is None:
                continue
            request = build_model(ReplyToCall, request_id=request_id, answer=answer)
            try:
                calls().reply(principal, call_id, request)
            except Conflict:
                # Answered meanwhile (action=reply, another client) or ended: the status says.
                logger.info("elicited answer not needed", extra={"call_id": call_id})
    return calls().status(principal, call_id)


# ---------------------------------------------------------------- texts


def status_text(status: dict[str, Any]) -> str:
    """A call's status as text (also a task's final result): what an agent must do next
    leads; the full JSON follows."""
    call_id, state = status["call_id"], status["state"]
    lines = [
        f"Call {call_id} ({status['target']} {status['function']}): state={state}, "
        + ("terminal." if status["terminal"] else "not finished.")
    ]
    if status.get("replayed"):
        lines.append(
            "replayed=true: this submission_id already started this call; nothing new started."
        )
    for pending in status["pending_inputs"]:
        lines += [
            f"QUESTION request_id={pending['request_id']}: {pending['question']}",
            f"Answer it: action=reply call_id={call_id} request_id={pending['request_id']} "
            "answer=<the answer> (ask your user when it is theirs to decide).",
        ]
    if not status["terminal"]:
        lines.append(
            f"Next: poll action=status call_id={call_id} every few seconds until terminal is "
            "true. Progress lines are not the result."
        )
    elif state == "succeeded" and status.get("result_file"):
        lines.append(
            f"The result is the file {status['result_file']}: action=read call_id={call_id} "
            f"path={status['result_file']}."
        )
    elif state == "succeeded":
        lines.append("The outcome is in `result` (and `final_text`).")
    else:
        lines.append("It did not succeed: " + ("; ".join(status["errors"]) or state) + ".")
    for item in status["files"]:
        lines.append(
            f"File {item['path']} ({item['size']} bytes): action=read call_id={call_id} "
            f"path={item['path']}"
        )
    return "\n".join(lines) + "\n\n" + to_json_text(status)


def _list_text(listed: dict[str, Any]) -> str:
    names = ", ".join(f["name"] for f in listed["functions"]) or "none"
    return (
        f"{listed['target']} (version {listed['version']}) offers: {names}. Call one with "
        f"action=call target={listed['target']} function=NAME args={{…matching its "
        "input_schema}} submission_id=<new unique id>.\n\n" + to_json_text(listed)
    )


def _page_text(page: dict[str, Any]) -> str:
    more = (
        f" Next page: action=read call_id={page['call_id']} path={page['path']} "
        f"page={page['page'] + 1}."
        if page["page"] + 1 < page["pages"]
        else ""
    )
    return (
        f"{page['path']}: page {page['page']} of pages 0–{page['pages'] - 1}, {page['size']} "
        f"bytes in all, {page['encoding']}.{more}\n\n" + to_json_text(page)
    )


ACTIONS: dict[str, ActionSpec[FunctionsCall]] = {
    "list": ActionSpec(_list, frozenset({"target"}), required=("target",), text=_list_text),
    "call": ActionSpec(
        _call,
        frozenset({"target", "function", "args", "submission_id"}),
        required=("target", "function"),
        text=status_text,
        operation="Call",
    ),
    "status": ActionSpec(_status, frozenset({"call_id"}), required=("call_id",), text=status_text),
    "read": ActionSpec(
        _read, frozenset({"call_id", "path", "page"}), required=("call_id", "path"), text=_page_text
    ),
    "reply": ActionSpec(
        _reply,
        frozenset({"call_id", "request_id", "answer"}),
        required=("call_id", "request_id", "answer"),
        text=status_text,
    ),
    "complete": ActionSpec(
        _complete,
        frozenset({"call_id", "agent_name", "final_text", "result"}),
        required=("call_id", "agent_name"),
    ),
}
assert set(ACTIONS) == set(get_args(Action)), "every action needs a row in ACTIONS"


def run_functions(call: FunctionsCall) -> CallToolResult | InputRequiredResult:
    return run_action(call, ACTIONS[call.action])


# ---------------------------------------------------------------- the tool itself


def functions(
    action: Annotated[
        Action,
        Field(
            description="What to do: list, call, status, reply, read or complete (see the "
            "tool description)."
        ),
    ],
    ctx: Context,
    target: Annotated[
        str | None,
        Field(
            description="list/call: the Crew, as crew:NAME.",
            json_schema_extra={"examples": ["crew:contracts"], "maxLength": 80},
        ),
    ] = None,
    function: Annotated[
        str | None,
        Field(description="call: the function's name, as list shows it."),
    ] = None,
    args: Annotated[
        dict[str, Any] | None,
        Field(description="call: the arguments, an object matching the function's input_schema."),
    ] = None,
    submission_id: Annotated[
        str | None,
        Field(
            description="call: your retry key (a new unique string per call, e.g. a UUID). "
            "After an uncertain call (error, timeout), call again with the SAME submission_id "
            "and args to get the original call instead of a second one.",
            json_schema_extra={"maxLength": 128},
        ),
    ] = None,
    call_id: Annotated[
        str | None,
        Field(description="status/reply/read: the call_id that action=call returned."),
    ] = None,
    path: Annotated[
        str | None,
        Field(
            description="read: a file of the call (a `files` path, or its `result_file`).",
            json_schema_extra={"maxLength": 512},
        ),
    ] = None,
    page: Annotated[
        int | None,
        Field(
            description="read: which page (0, 1, …; each up to 2 MiB). Default 0.",
            json_schema_extra={"minimum": 0},
        ),
    ] = None,
    request_id: Annotated[
        str | None,
        Field(description="reply: the request_id of the pending question you answer."),
    ] = None,
    answer: Annotated[
        str | None,
        Field(
            description="reply: your answer to that question.",
            json_schema_extra={"minLength": 1, "maxLength": limits.ANSWER_MAX_CHARS},
        ),
    ] = None,
    agent_name: Annotated[
        str | None,
        Field(
            description="complete: your agent name, the one the work was handed to.",
            json_schema_extra={"maxLength": limits.AGENT_NAME_MAX_CHARS},
        ),
    ] = None,
    final_text: Annotated[
        str | None,
        Field(
            description="complete: your answer as text.", json_schema_extra={"maxLength": 100_000}
        ),
    ] = None,
    result: Annotated[
        Any,
        Field(description="complete: the result JSON, matching the function's output schema."),
    ] = None,
) -> Annotated[CallToolResult, FunctionsOutput] | InputRequiredResult:
    return run_functions(
        FunctionsCall(
            action=action,
            target=target,
            function=function,
            args=args,
            submission_id=submission_id,
            call_id=call_id,
            path=path,
            page=page,
            request_id=request_id,
            answer=answer,
            agent_name=agent_name,
            final_text=final_text,
            result=result,
            context=ctx,
        )
    )


def build_tool() -> Tool:
    # call and reply act; list, status and read only read
    return domain_tool(functions, TOOL_NAME, TOOL_TITLE, DESCRIPTION)
