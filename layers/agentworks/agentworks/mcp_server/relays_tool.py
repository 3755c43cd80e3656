"""The `relays` MCP tool: publish Relays, read their releases, run their functions (R1–R4).

Same shape as `functions`: one `action` argument, each action a row of `ACTIONS`; the rules
live in `RelayReleases` and `RelayRuns`, exactly as behind /api/relays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult
from pydantic import ConfigDict, Field, RootModel

from agentworks import limits
from agentworks.identity.models import Principal
from agentworks.mcp_server.actions import ActionSpec, run_action, services
from agentworks.mcp_server.actions import text as text_argument
from agentworks.mcp_server.results import build_model, to_json_text
from agentworks.mcp_server.tooling import domain_tool
from agentworks.relays.views import RelayList, RelayRunView, ReleaseList, ReleaseView

if TYPE_CHECKING:
    from agentworks.relays.wiring import Relays

Action = Literal["publish", "releases", "run", "status", "retry"]

TOOL_NAME = "relays"
TOOL_TITLE = "AgentWorks Relays"

DESCRIPTION = """\
Relays: Python functions published to this account; a run executes in the background with \
durable steps. Pick an `action`:

- releases: `relay`'s releases (the active one marked) with its functions and their
  input_schema; without `relay`, the account's Relays.
- run: start `function` of `relay` with `input` (matching its input_schema) and an
  `idempotency_key`. Returns a `run_id` at once: KEEP IT. The same key again returns the
  original run (replayed=true), never a second one; with other input it is a `conflict`.
  `version` pins a release (default: the active one).
- status: a run (`run_id`). Poll it until `terminal` is true: succeeded (the final JSON in
  `result`), failed (`error`) or needs_reconciliation (steps whose side effects are
  uncertain).
- retry: a failed run again (`run_id`); completed steps are reused. For
  needs_reconciliation, check the uncertain steps' side effects first, then pass
  replay_uncertain=true.
- publish (admin): `files` (path → text: relay.yaml and its Python modules) become the
  Relay's active release; identical source is a no-op (created=false).

Errors come back as is_error results with {"error": {"code", "message"}}; `unavailable`
means unknown or not yours (the two look the same).
"""


# ---------------------------------------------------------------- results


class RelaysOutput(RootModel[ReleaseView | ReleaseList | RelayList | RelayRunView]):
    """One JSON object per action (the same bodies /api/relays returns)."""

    # MCP wants an object at the root of an output schema; every arm is one.
    model_config = ConfigDict(json_schema_extra={"type": "object"})


@dataclass(frozen=True)
class RelaysCall:
    """The tool's arguments, after the SDK checked their types against the input schema."""

    action: Action
    relay: str | None = None
    files: dict[str, str] | None = None
    name: str | None = None
    function: str | None = None
    input: dict[str, Any] | None = None
    idempotency_key: str | None = None
    version: int | None = None
    run_id: str | None = None
    replay_uncertain: bool | None = None


# ---------------------------------------------------------------- actions


def _relays() -> Relays:
    return services().relays


def _publish(principal: Principal, call: RelaysCall) -> ReleaseView:
    from agentworks.relays.views import PublishRelay

    request = build_model(PublishRelay, files=call.files or {}, name=text_argument(call, "name"))
    return _relays().releases.publish(principal, request)


def _releases(principal: Principal, call: RelaysCall) -> ReleaseList | RelayList:
    relay = text_argument(call, "relay")
    releases = _relays().releases
    return releases.relays(principal) if relay is None else releases.releases(principal, relay)


def _run(principal: Principal, call: RelaysCall) -> RelayRunView:
    from agentworks.relays.views import StartRelayRun

    request = build_model(
        StartRelayRun,
        function=call.function,
        input=call.input or {},
        idempotency_key=call.idempotency_key,
        version=call.version,
    )
    return _relays().runs.start(principal, str(call.relay), request)


def _status(principal: Principal, call: RelaysCall) -> RelayRunView:
    return _relays().runs.status(principal, str(call.run_id), text_argument(call, "relay"))


def _retry(principal: Principal, call: RelaysCall) -> RelayRunView:
    from agentworks.relays.views import RetryRelayRun

    request = build_model(RetryRelayRun, replay_uncertain=bool(call.replay_uncertain))
    return _relays().runs.retry(principal, str(call.run_id), request, text_argument(call, "relay"))


# ---------------------------------------------------------------- texts


def _run_text(run: RelayRunView) -> str:
    """What an agent must do next leads; the full JSON follows."""
    lines = [
        f"Run {run.run_id} ({run.relay} {run.function}, release {run.version}): "
        f"status={run.status}, " + ("terminal." if run.terminal else "not finished.")
    ]
    if run.replayed:
        lines.append(
            "replayed=true: this idempotency_key already started this run; nothing new started."
        )
    if not run.terminal:
        lines.append(
            f"Next: poll action=status run_id={run.run_id} every few seconds until terminal "
            "is true."
        )
    elif run.status == "succeeded":
        lines.append("The final JSON is in `result`.")
    elif run.status == "needs_reconciliation":
        lines.append(
            "Some steps may or may not have taken effect (status uncertain in `steps`): check "
            f"their side effects, then action=retry run_id={run.run_id} replay_uncertain=true."
        )
    else:
        lines.append(
            f"It failed: {run.error or run.status}. action=retry run_id={run.run_id} runs it "
            "again (completed steps are reused)."
        )
    return "\n".join(lines) + "\n\n" + to_json_text(run.model_dump(mode="json"))


ACTIONS: dict[str, ActionSpec[RelaysCall]] = {
    "publish": ActionSpec(_publish, frozenset({"files", "name"}), required=("files",)),
    "releases": ActionSpec(_releases, frozenset({"relay"})),
    "run": ActionSpec(
        _run,
        frozenset({"relay", "function", "input", "idempotency_key", "version"}),
        required=("relay", "function", "idempotency_key"),
        text=_run_text,
    ),
    "status": ActionSpec(
        _status, frozenset({"run_id", "relay"}), required=("run_id",), text=_run_text
    ),
    "retry": ActionSpec(
        _retry,
        frozenset({"run_id", "relay", "replay_uncertain"}),
        required=("run_id",),
        text=_run_text,
    ),
}
assert set(ACTIONS) == set(get_args(Action)), "every action needs a row in ACTIONS"


def run_relays(call: RelaysCall) -> CallToolResult:
    result = run_action(call, ACTIONS[call.action])
    assert isinstance(result, CallToolResult)  # no relay action asks the user
    return result


# ---------------------------------------------------------------- the tool itself


def relays(
    action: Annotated[
        Action,
        Field(
            description="What to do: releases, run, status, retry or publish (see the tool "
            "description)."
        ),
    ],
    relay: Annotated[
        str | None,
        Field(
            description="releases/run: the Relay's name (status/retry: optional, checked).",
            json_schema_extra={"examples": ["summarize"]},
            max_length=63,
        ),
    ] = None,
    files: Annotated[
        dict[str, str] | None,
        Field(
            description="publish: relay.yaml and its Python modules, relative path → text.",
            json_schema_extra={"maxProperties": limits.RELAY_FILES_MAX},
        ),
    ] = None,
    name: Annotated[
        str | None,
        Field(description="publish: publish under this name instead of relay.yaml's."),
    ] = None,
    function: Annotated[
        str | None,
        Field(description="run: the function's name, as releases lists it.", max_length=64),
    ] = None,
    input: Annotated[
        dict[str, Any] | None,
        Field(description="run: the function's INPUT, an object matching its input_schema."),
    ] = None,
    idempotency_key: Annotated[
        str | None,
        Field(
            description="run: a new unique key per run (e.g. a UUID). After an uncertain run "
            "(error, timeout), run again with the SAME key and input to get the original run.",
            json_schema_extra={"maxLength": limits.RELAY_IDEMPOTENCY_KEY_MAX_CHARS},
        ),
    ] = None,
    version: Annotated[
        int | None,
        Field(
            description="run: the release to run (default: the active one).",
            json_schema_extra={"minimum": 1},
        ),
    ] = None,
    run_id: Annotated[
        str | None,
        Field(description="status/retry: the run_id that action=run returned.", max_length=64),
    ] = None,
    replay_uncertain: Annotated[
        bool | None,
        Field(
            description="retry: you checked the uncertain steps' side effects, so they run "
            "again (needs_reconciliation only)."
        ),
    ] = None,
) -> Annotated[CallToolResult, RelaysOutput]:
    return run_relays(
        RelaysCall(
            action=action,
            relay=relay,
            files=files,
            name=name,
            function=function,
            input=input,
            idempotency_key=idempotency_key,
            version=version,
            run_id=run_id,
            replay_uncertain=replay_uncertain,
        )
    )


def build_tool() -> Tool:
    # publish and run act; releases and status only read
    return domain_tool(relays, TOOL_NAME, TOOL_TITLE, DESCRIPTION)
