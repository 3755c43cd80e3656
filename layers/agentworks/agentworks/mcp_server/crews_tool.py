"""The `crews` MCP tool: define, inspect and delete Crews (F1).

Same shape as `messages`: one `action` argument, each action a row of `ACTIONS`. The
rules (admin scope, checked definitions, visibility) live in `CrewService`, exactly as
behind `/v1/crews`; this module only maps arguments and results.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult
from pydantic import ConfigDict, Field, RootModel

from agentworks.audit.models import AuditPage
from agentworks.conversations.models import ReviewOutcome
from agentworks.crews.service import crew_view
from agentworks.crews.views import CrewDeleted, CrewList, CrewView
from agentworks.errors import InvalidInput
from agentworks.identity.models import Principal
from agentworks.mcp_server.actions import ActionSpec, run_action, services
from agentworks.mcp_server.actions import text as text_argument
from agentworks.mcp_server.results import to_json_text
from agentworks.mcp_server.tooling import domain_tool

if TYPE_CHECKING:
    pass

Action = Literal["create", "update", "get", "list", "delete", "release", "decline", "audit"]

TOOL_NAME = "crews"
TOOL_TITLE = "AgentWorks Crews"

DESCRIPTION = """\
Crews of this AgentWorks account: named agents that expose typed functions (call them
with the `functions` tool). Pick an `action`:

- list: the Crews this connection may use (name, target crew:NAME, version, functions).
- get: one Crew's current definition, by `name`.
- create (admin): `definition` = the Crew file's content as an object, e.g.
  {"name": "contracts", "instructions": "Answer questions about contract clauses.",
   "messaging": "on", "adapter": {"type": "scripted", "rules": [...]},
   "functions": [{"name": "summarize", "description": "Summarize a text",
     "input_schema": {"type": "object", "properties": {"text": {"type": "string"}},
                      "required": ["text"]},
     "output_schema": {"type": "object", "properties": {"summary": {"type": "string"}}}}]}
  adapter.type is scripted, bedrock, lambda or mailbox; messaging is off, review or on;
  `access` (optional) lists the connection ids that may use it (empty = the account).
- update (admin): the whole new `definition` (same name; a Crew can't be renamed). Its
  version goes up; calls already running keep the version they started with.
- delete (admin): remove the Crew by `name`; records of past calls remain.
- release (admin): a Crew with messaging "review" holds each message until a person
  decides; release lets the message `message_id` through (the Crew's run starts now).
- decline (admin): turn that message down instead (optional `reason`, shown to the
  sender); nothing runs. `messages action=state target=crew:NAME` lists what waits
  (run_state pending_review).
- audit (admin without target bounds): the audit log of conversations with a Crew, oldest
  first: every message, request state, release, decline, cancel, expiry, pause, resume,
  close and delete, with who did it (a connection, the platform, or a run and the
  connection it runs as). Optional `inbox_id` (one conversation), `limit` (1-100) and
  `after` (a page's next_cursor). No message bodies.

list, get and audit only read; the other actions change the account (admin scope).
Errors come back as is_error results with {"error": {"code", "message"}}; `unavailable`
means unknown or not yours (the two look the same); `invalid_request` says what in the
definition is wrong.
"""


class CrewsOutput(RootModel[CrewView | CrewList | CrewDeleted | ReviewOutcome | AuditPage]):
    """One JSON object per action (the same bodies the HTTP API returns)."""

    # MCP wants an object at the root of an output schema; every arm is one.
    model_config = ConfigDict(json_schema_extra={"type": "object"})


@dataclass(frozen=True)
class CrewsCall:
    """The tool's arguments, after the SDK checked their types against the input schema."""

    action: Action
    name: str | None = None
    definition: dict[str, Any] | None = None
    message_id: str | None = None
    reason: str | None = None
    inbox_id: str | None = None
    after: str | None = None
    limit: int | None = None


def _create(principal: Principal, call: CrewsCall) -> dict[str, Any]:
    return crew_view(services().crews.definitions.create(principal, call.definition), principal)


def _update(principal: Principal, call: CrewsCall) -> dict[str, Any]:
    definition = call.definition or {}
    name = text_argument(call, "name") or definition.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidInput("action=update needs the definition's name.", field="definition")
    crew = services().crews.definitions.update(principal, name.lower(), definition)
    return crew_view(crew, principal)


def _get(principal: Principal, call: CrewsCall) -> dict[str, Any]:
    return crew_view(services().crews.definitions.get(principal, str(call.name)), principal)


def _list(principal: Principal, call: CrewsCall) -> dict[str, Any]:
    crews = services().crews.definitions.list(principal)
    return {"crews": [crew_view(c, principal) for c in crews]}


def _delete(principal: Principal, call: CrewsCall) -> dict[str, Any]:
    services().crews.definitions.delete(principal, str(call.name))
    return {"target": f"crew:{str(call.name).lower()}", "deleted": True}


def _release(principal: Principal, call: CrewsCall) -> ReviewOutcome:
    return services().crews.inboxes.release(principal, str(call.name), str(call.message_id))


def _decline(principal: Principal, call: CrewsCall) -> ReviewOutcome:
    return services().crews.inboxes.decline(
        principal, str(call.name), str(call.message_id), text_argument(call, "reason")
    )


def _audit(principal: Principal, call: CrewsCall) -> dict[str, Any]:
    page = services().audit.entries(principal, call.inbox_id, call.after, call.limit)
    return page.model_dump(mode="json")


def _audit_text(page: dict[str, Any]) -> str:
    lines = [f"{len(page['entries'])} audit entries (oldest first):"]
    for e in page["entries"]:
        actor = e["actor"]
        who = actor.get("run_id") or actor.get("connection_id") or actor["kind"]
        state = f" -> {e['state']}" if e.get("state") else ""
        lines.append(f"- {e['at']} {e['conversation_id']} {e['action']}{state} by {who}")
    if page.get("next_cursor"):
        lines.append(f"more: crews action=audit after={page['next_cursor']}")
    return "\n".join(lines) + "\n\n" + json.dumps(page, ensure_ascii=False)


def _crew_text(view: dict[str, Any]) -> str:
    names = ", ".join(f["name"] for f in view["functions"]) or "none"
    return (
        f"{view['target']} version {view['version']} (functions: {names}). Callers discover "
        f"its functions with: functions action=list target={view['target']}\n\n"
        + to_json_text(view)
    )


def _list_text(listed: dict[str, Any]) -> str:
    crews = listed["crews"]
    if not crews:
        return "No Crews this connection may use.\n\n" + to_json_text(listed)
    lines = [f"{len(crews)} Crew{'s' if len(crews) != 1 else ''}:"]
    for view in crews:
        names = ", ".join(f["name"] for f in view["functions"]) or "no functions"
        lines.append(f"- {view['target']} v{view['version']}: {names}")
    return "\n".join(lines) + "\n\n" + json.dumps(listed, ensure_ascii=False)


ACTIONS: dict[str, ActionSpec[CrewsCall]] = {
    "create": ActionSpec(
        _create, frozenset({"definition"}), required=("definition",), text=_crew_text
    ),
    "update": ActionSpec(
        _update, frozenset({"definition", "name"}), required=("definition",), text=_crew_text
    ),
    "get": ActionSpec(_get, frozenset({"name"}), required=("name",), text=_crew_text),
    "list": ActionSpec(_list, text=_list_text),
    "delete": ActionSpec(_delete, frozenset({"name"}), required=("name",)),
    "release": ActionSpec(
        _release, frozenset({"name", "message_id"}), required=("name", "message_id")
    ),
    "decline": ActionSpec(
        _decline, frozenset({"name", "message_id", "reason"}), required=("name", "message_id")
    ),
    "audit": ActionSpec(_audit, frozenset({"inbox_id", "after", "limit"}), text=_audit_text),
}
assert set(ACTIONS) == set(get_args(Action)), "every action needs a row in ACTIONS"


def run_crews(call: CrewsCall) -> CallToolResult:
    result = run_action(call, ACTIONS[call.action])
    assert isinstance(result, CallToolResult)  # no crews action asks the user
    return result


# ---------------------------------------------------------------- the tool itself


def crews(
    action: Annotated[
        Action,
        Field(
            description="What to do: list, get, create, update, delete, release, decline or "
            "audit (see the tool description)."
        ),
    ],
    name: Annotated[
        str | None,
        Field(
            description="get/delete/release/decline: the Crew's name (contracts, not "
            "crew:contracts). update: optional, defaults to the definition's name.",
            json_schema_extra={"maxLength": 64},
        ),
    ] = None,
    definition: Annotated[
        dict[str, Any] | None,
        Field(
            description="create/update: the Crew file's content as an object: name, "
            "instructions, messaging (off|review|on), adapter {type, …}, access "
            "[connection ids], functions [{name, description, input_schema, output_schema}]."
        ),
    ] = None,
    message_id: Annotated[
        str | None,
        Field(
            description="release/decline: the message waiting for review (msg_…).",
            json_schema_extra={"maxLength": 64},
        ),
    ] = None,
    reason: Annotated[
        str | None,
        Field(
            description="decline: why, in a sentence; the sender reads it.",
            json_schema_extra={"maxLength": 1000},
        ),
    ] = None,
    inbox_id: Annotated[
        str | None,
        Field(
            description="audit: one conversation's entries (either inbox id, or cnv_...).",
            json_schema_extra={"maxLength": 64},
        ),
    ] = None,
    after: Annotated[
        str | None,
        Field(
            description="audit: the next page (a page's next_cursor).",
            json_schema_extra={"maxLength": 512},
        ),
    ] = None,
    limit: Annotated[
        int | None,
        Field(description="audit: entries per page, 1-100 (default 50).", ge=1, le=100),
    ] = None,
) -> Annotated[CallToolResult, CrewsOutput]:
    return run_crews(
        CrewsCall(
            action=action,
            name=name,
            definition=definition,
            message_id=message_id,
            reason=reason,
            inbox_id=inbox_id,
            after=after,
            limit=limit,
        )
    )


def build_tool() -> Tool:
    # delete and update replace what was there
    return domain_tool(crews, TOOL_NAME, TOOL_TITLE, DESCRIPTION, destructive=True)
