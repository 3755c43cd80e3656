"""Action-style tools: one `action` argument, each action a row of the tool's table.

A row (`ActionSpec`) says which arguments the action takes and needs, how it runs and how
its text reads. `run_action` checks the arguments, runs the row as the request's principal
and turns domain errors into error results, so every tool answers in one shape.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from mcp.types import CallToolResult, InputRequiredResult
from pydantic import BaseModel

from agentworks.errors import AgentWorksError, InvalidInput
from agentworks.identity.models import Principal
from agentworks.mcp_server.principal import current_principal
from agentworks.mcp_server.results import error_result, ok_result
from agentworks.observability import count_refusal

if TYPE_CHECKING:
    from agentworks.runtime import Services

# Field metadata marking a dataclass field that is not a tool argument (e.g. the context).
NOT_AN_ARGUMENT = {"argument": False}


def services() -> Services:
    """The process's services, for the tools' actions. Imported on first use: the stores
    pull in boto3, which tools/list never needs."""
    from agentworks.runtime import services as process_services

    return process_services()


class ActionCall(Protocol):
    """A tool's arguments as a dataclass with an `action` field."""

    @property
    def action(self) -> str: ...


C = TypeVar("C", bound=ActionCall)
Outcome = BaseModel | dict[str, Any] | InputRequiredResult


@dataclass(frozen=True)
class ActionSpec(Generic[C]):
    run: Callable[[Principal, C], Outcome]
    accepts: frozenset[str] = frozenset()
    required: tuple[str, ...] = ()
    # Text content of a success; None = the structured JSON itself.
    text: Callable[[Any], str] | None = None
    # Refusal metrics use the HTTP API's operation names.
    operation: str = "Request"


def given_arguments(call: Any) -> set[str]:
    """Arguments with a value; clients that fill unused fields send null, "", [] or {}."""
    return {
        f.name
        for f in fields(call)
        if f.name != "action"
        and f.metadata.get("argument", True)
        and getattr(call, f.name) not in (None, "", [], {})
    }


def check_arguments(action: str, given: set[str], spec: ActionSpec[Any]) -> None:
    stray = sorted(given - spec.accepts)
    if stray:
        takes = ", ".join(sorted(spec.accepts)) or "no other arguments"
        raise InvalidInput(
            f"action={action} does not take {', '.join(stray)}; it takes: {takes}.",
            field=stray[0],
        )
    missing = [name for name in spec.required if name not in given]
    if missing:
        raise InvalidInput(f"action={action} needs {' and '.join(missing)}.", field=missing[0])


def run_action(call: C, spec: ActionSpec[C]) -> CallToolResult | InputRequiredResult:
    """Runs one action as the request's principal; domain errors become error results.

    An `InputRequiredResult` (a question for the client's user) passes through as is.
    """
    try:
        principal = current_principal()
        check_arguments(call.action, given_arguments(call), spec)
        result = spec.run(principal, call)
    except AgentWorksError as error:
        count_refusal(spec.operation, error.code)
        return error_result(error)
    if isinstance(result, InputRequiredResult):
        return result
    structured = result.model_dump(mode="json") if isinstance(result, BaseModel) else result
    return ok_result(structured, spec.text(result) if spec.text else None)


def text(call: Any, name: str) -> str | None:
    """A string argument of `call`, blank meaning absent."""
    value = getattr(call, name)
    return value if value not in (None, "") else None
