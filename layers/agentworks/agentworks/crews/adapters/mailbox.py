"""The `mailbox` adapter: hand the work to a named external agent (SPEC §8).

Settings::

    adapter:
      type: mailbox
      agent: reviewer          # a registered agent name (M4)

Every turn becomes a Handoff: the platform sends the message to that agent's mailbox,
appends the exact reply instructions (with the call id) and waits for the reply
(`.waitForTaskToken`). This text therefore names no ids.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentworks.crews.adapters import settings_checks as checks
from agentworks.crews.adapters.base import AdapterError, Handoff, TurnRequest, TurnResult
from agentworks.messaging.names import is_valid_agent_name

SETTINGS_KEYS = ("type", "agent")
# "Description: <text>" up to the "Arguments (JSON):" line or the end (see crews.runner).
_DESCRIPTION = re.compile(r"^Description:[ \t]*(.*?)(?=^Arguments \(JSON\):|\Z)", re.M | re.S)


def validate(settings: dict[str, Any]) -> list[str]:
    """Problems with a mailbox adapter's settings (empty when fine)."""
    where = "mailbox adapter"
    problems = checks.unknown_keys(settings, SETTINGS_KEYS, where)
    problems += checks.required_str(settings, "agent", where)
    agent = settings.get("agent")
    if not problems and not is_valid_agent_name(agent or ""):
        problems.append(
            f"{where}: 'agent' must be an agent name: 1–64 ASCII letters, digits, '.', '_' "
            "or '-', starting with a letter or digit"
        )
    return problems


class MailboxAdapter:
    """Hands each turn to one external agent."""

    def __init__(self, settings: dict[str, Any]) -> None:
        problems = validate(settings)
        if problems:
            raise AdapterError("; ".join(problems))
        self._agent = str(settings["agent"]).lower()  # agent names are case-insensitive

    def run_turn(self, request: TurnRequest) -> TurnResult:
        """A hand-off whose message tells the external agent what to do."""
        return TurnResult(handoff=Handoff(self._agent, handoff_message(request)))


def handoff_message(request: TurnRequest) -> str:
    """What the external agent reads: the prompt of a message turn, or the function call."""
    parts = [request.prompt if request.kind == "message" else _function_task(request)]
    if request.answer is not None:
        parts.append(f"A person answered the pending question:\n{request.answer}")
    if request.correction is not None:
        parts.append(
            "Your previous result did not validate against the output schema:\n"
            f"{request.correction}\nSend a corrected result."
        )
    return "\n\n".join(parts)


def _function_task(request: TurnRequest) -> str:
    lines = [
        f"Please carry out a call of the function `{request.function}` for Crew "
        f"`{request.crew_name}`."
    ]
    if request.instructions.strip():
        lines.append(f"The Crew's instructions:\n{request.instructions.strip()}")
    description = function_description(request.prompt)
    if description:
        lines.append(f"What the function does:\n{description}")
    lines.append("Arguments (JSON):\n" + _json(request.args or {}))
    if request.output_schema is not None:
        lines.append(
            "Deliver the result by replying as described below, with a text that is only "
            "a JSON value matching this JSON Schema (it is validated):\n"
            + _json(request.output_schema)
        )
    else:
        lines.append("Deliver the result by replying as described below: your answer as text.")
    return "\n\n".join(lines)


def function_description(prompt: str) -> str | None:
    """The `Description: …` the step runner renders into a function prompt, if any.

    The rest of that prompt (arguments, schema) is rebuilt here from the request's fields,
    so the external agent reads each of them once.
    """
    found = _DESCRIPTION.search(prompt)
    return (found.group(1).strip() or None) if found else None


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)
