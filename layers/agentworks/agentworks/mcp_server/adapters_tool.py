"""The `adapters` MCP tool: the account's adapter profiles (issue 8), which workflow steps
name with `adapter`.

Same shape as `crews`: one `action` argument, each action a row of `ACTIONS`; the rules
(account-wide admin, checked settings, who sees them) live in `AdapterProfiles`, exactly as
behind `/v1/adapters`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult
from pydantic import ConfigDict, Field, RootModel

from agentworks.crews.views import AdapterProfileDeleted, AdapterProfileList, AdapterProfileView
from agentworks.errors import InvalidInput
from agentworks.identity.models import Principal
from agentworks.mcp_server.actions import ActionSpec, run_action, services
from agentworks.mcp_server.actions import text as text_argument
from agentworks.mcp_server.tooling import domain_tool

if TYPE_CHECKING:
    pass

Action = Literal["create", "update", "get", "list", "delete"]

TOOL_NAME = "adapters"
TOOL_TITLE = "AgentWorks adapter profiles"

DESCRIPTION = """\
Adapter profiles of this AgentWorks account: named adapter blocks that workflow steps run
with ("adapter": "claude-code"). Pick an `action`:

- list: the account's profiles (name, type; settings for an admin of the whole account).
- get: one profile, by `name`.
- create (admin without target bounds): `definition` = the profile: its name, adapter
  type (scripted, bedrock, lambda, mailbox, or cli: a local runner's session) and that
  type's settings, e.g.
  {"name": "claude-code", "type": "scripted",
   "rules": [{"when": "Review (\\\\S+)", "reply": "Found 2 bugs in {match.1}."},
             {"default": "Done."}]}
- update (admin without target bounds): the whole new `definition` (same name).
- delete (admin without target bounds): remove the profile by `name`.

Errors come back as is_error results with {"error": {"code", "message"}}; `unavailable`
means no such profile; `invalid_request` says what in the definition is wrong.
"""


class AdaptersOutput(RootModel[AdapterProfileView | AdapterProfileList | AdapterProfileDeleted]):
    """One JSON object per action (the same bodies the HTTP API returns)."""

    model_config = ConfigDict(json_schema_extra={"type": "object"})


@dataclass(frozen=True)
class AdaptersCall:
    action: Action
    name: str | None = None
    definition: dict[str, Any] | None = None


def _view(profile: Any, principal: Principal) -> AdapterProfileView:
    from agentworks.crews.adapter_profiles import profile_view

    return profile_view(profile, principal)


def _create(principal: Principal, call: AdaptersCall) -> AdapterProfileView:
    return _view(services().crews.adapters.create(principal, call.definition), principal)


def _update(principal: Principal, call: AdaptersCall) -> AdapterProfileView:
    definition = call.definition or {}
    name = text_argument(call, "name") or definition.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidInput("action=update needs the definition's name.", field="definition")
    return _view(services().crews.adapters.update(principal, name, definition), principal)


def _get(principal: Principal, call: AdaptersCall) -> AdapterProfileView:
    return _view(services().crews.adapters.get(principal, str(call.name)), principal)


def _list(principal: Principal, call: AdaptersCall) -> AdapterProfileList:
    found = services().crews.adapters.list(principal)
    return AdapterProfileList(adapters=[_view(p, principal) for p in found])


def _delete(principal: Principal, call: AdaptersCall) -> AdapterProfileDeleted:
    services().crews.adapters.delete(principal, str(call.name))
    return AdapterProfileDeleted(name=str(call.name).lower(), deleted=True)


ACTIONS: dict[str, ActionSpec[AdaptersCall]] = {
    "create": ActionSpec(_create, frozenset({"definition"}), required=("definition",)),
    "update": ActionSpec(_update, frozenset({"definition", "name"}), required=("definition",)),
    "get": ActionSpec(_get, frozenset({"name"}), required=("name",)),
    "list": ActionSpec(_list),
    "delete": ActionSpec(_delete, frozenset({"name"}), required=("name",)),
}
assert set(ACTIONS) == set(get_args(Action)), "every action needs a row in ACTIONS"


def run_adapters(call: AdaptersCall) -> CallToolResult:
    result = run_action(call, ACTIONS[call.action])
    assert isinstance(result, CallToolResult)  # no adapters action asks the user
    return result


def adapters(
    action: Annotated[
        Action,
        Field(
            description="What to do: list, get, create, update or delete (see the tool "
            "description)."
        ),
    ],
    name: Annotated[
        str | None,
        Field(
            description="get/delete: the profile's name. update: optional, defaults to the "
            "definition's name.",
            json_schema_extra={"maxLength": 64},
        ),
    ] = None,
    definition: Annotated[
        dict[str, Any] | None,
        Field(description="create/update: the profile: name, type and the type's settings."),
    ] = None,
) -> Annotated[CallToolResult, AdaptersOutput]:
    return run_adapters(AdaptersCall(action=action, name=name, definition=definition))


def build_tool() -> Tool:
    # delete and update replace what was there
    return domain_tool(adapters, TOOL_NAME, TOOL_TITLE, DESCRIPTION, destructive=True)
