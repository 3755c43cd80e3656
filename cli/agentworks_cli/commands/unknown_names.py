"""A name the server does not know (an agent, a Crew): the nearest one this connection may
see, and the command that lists them all. The server answers an unknown and an unreachable
name alike (A5); the list this connection may read tells a typo apart."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from agentworks_cli import shapes
from agentworks_cli.client import EXIT_NOT_FOUND, CliError
from agentworks_cli.commands.formatting import shell
from agentworks_cli.commands.session import Session


def _agent_names(session: Session) -> list[str]:
    listed = session.call("GET", "/v1/agents", shape=shapes.AGENTS)
    return [str(agent["agent_name"]) for agent in listed["agents"]]


def _crew_names(session: Session) -> list[str]:
    listed = session.call("GET", "/v1/crews", shape=shapes.CREWS)
    return [str(crew["target"]).removeprefix("crew:") for crew in listed["crews"]]


# A target's kind: what it is called, how to read the names, the command that lists them.
_KINDS: dict[str, tuple[str, Callable[[Session], list[str]], tuple[str, ...]]] = {
    "agent": ("agent", _agent_names, ("agents", "--all")),
    "crew": ("Crew", _crew_names, ("crews", "list")),
}


def with_target_hint(session: Session, error: CliError, target: str | None) -> CliError:
    """`error` as it was, unless it is a not-found for an `agent:NAME` or `crew:NAME`
    target: then with the way forward added."""
    kind, _, name = (target or "").partition(":")
    if kind not in _KINDS or not _unavailable(error):
        return error
    noun, read_names, listing = _KINDS[kind]
    try:
        names = read_names(session)
    except CliError:  # the hint is a courtesy; the refusal stands as it was
        names = []
    everyone = shell(session.command(*listing))
    if name in names:
        hint = f"The {noun} '{name}' exists, but not for this connection; see {everyone}"
    else:
        nearest = difflib.get_close_matches(name, names, n=1)
        hint = f"No {noun} named '{name}'"
        hint += f"; did you mean '{nearest[0]}'?" if nearest else "."
        hint += f" The names: {everyone}"
    return CliError(f"{error.message} {hint}", error.exit_code, error.body)


def with_agent_hint(session: Session, error: CliError, name: str) -> CliError:
    return with_target_hint(session, error, f"agent:{name}")


def _unavailable(error: CliError) -> bool:
    body: Any = error.body
    code = (body.get("error") or {}).get("code") if isinstance(body, dict) else None
    return error.exit_code == EXIT_NOT_FOUND and code == "unavailable"  # not an expired inbox
