"""Agent names (M4): case-insensitive ASCII letters, digits, '.', '_', '-'; start with a
letter or digit; at most 64 characters."""

from __future__ import annotations

import re

from agentworks import limits
from agentworks.errors import InvalidInput

_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def is_valid_agent_name(name: str) -> bool:
    return (
        isinstance(name, str)
        and 1 <= len(name) <= limits.AGENT_NAME_MAX_CHARS
        and name.isascii()
        and bool(_NAME_RE.match(name))
    )


def normalize_agent_name(name: str, field: str = "agent_name") -> str:
    """The canonical (lower-case) form, or `InvalidInput` saying what a name may be."""
    if not is_valid_agent_name(name):
        raise InvalidInput(
            f"{field} must be 1–{limits.AGENT_NAME_MAX_CHARS} ASCII letters, digits, '.', '_' "
            "or '-', starting with a letter or digit.",
            field=field,
        )
    return name.lower()


# Targets that take calls, not messages, and the way to call each.
CALLED_NOT_MESSAGED = {
    "workflow": "call its functions (agentworks functions list --target workflow:{name})",
    "relay": "run its functions (agentworks relays run {name} FUNCTION --input JSON)",
}


def parse_agent_target(target: str) -> str:
    """`agent:NAME` → canonical name."""
    kind, name = parse_target(target)
    if kind != "agent":
        raise InvalidInput("target must be agent:NAME.", field="target")
    return name


def parse_target(target: str) -> tuple[str, str]:
    """`agent:NAME` or `crew:NAME` → (kind, canonical name). Crew names follow the same
    rules as agent names."""
    kind, _, name = target.strip().partition(":")
    if kind in CALLED_NOT_MESSAGED and name:
        raise InvalidInput(
            f"{kind}:{name} is not messaged: {CALLED_NOT_MESSAGED[kind].format(name=name)}. "
            "Messages go to agent:NAME or crew:NAME.",
            field="target",
        )
    if kind not in ("agent", "crew") or not name:
        raise InvalidInput(
            "target must be agent:NAME or crew:NAME, or use inbox_id to continue a conversation.",
            field="target",
        )
    return kind, normalize_agent_name(name, field="target")
