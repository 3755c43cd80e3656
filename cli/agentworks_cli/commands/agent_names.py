"""An agent name the server does not know: the nearest registered one, and where to see
them all. The server answers an unknown and an unreachable name alike (A5); the directory
this connection may read tells a typo apart."""

from __future__ import annotations

import difflib

from agentworks_cli import shapes
from agentworks_cli.client import EXIT_NOT_FOUND, CliError
from agentworks_cli.commands.formatting import shell
from agentworks_cli.commands.session import Session


def with_name_hint(session: Session, error: CliError, name: str) -> CliError:
    """`error` as it was, unless it is a not-found: then with the way forward added."""
    code = (error.body.get("error") or {}).get("code") if isinstance(error.body, dict) else None
    if error.exit_code != EXIT_NOT_FOUND or code != "unavailable":  # e.g. an expired inbox
        return error
    try:
        listed = session.call("GET", "/v1/agents", shape=shapes.AGENTS)
        names = [str(agent["agent_name"]) for agent in listed["agents"]]
    except CliError:  # the hint is a courtesy; the refusal stands as it was
        names = []
    everyone = shell(session.command("agents", "--all"))
    if name in names:
        hint = f"'{name}' is registered, but not for this connection; see {everyone}"
    else:
        nearest = difflib.get_close_matches(name, names, n=1)
        hint = f"No agent named '{name}'"
        hint += f"; did you mean '{nearest[0]}'?" if nearest else "."
        hint += f" The account's names: {everyone}"
    return CliError(f"{error.message} {hint}", error.exit_code, error.body)
