"""Each attached agent's own connection: messaging scopes only, created by the person's
login with `ends_with_parent` (revoking the login stops every agent it attached), kept in
a 0600 config in the bridge's folder, revoked on detach."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agentworks_cli.client import load_config
from agentworks_local.configfile import read_config, write_config

SCOPES = ["messages:read", "messages:send"]


def child_path(home: Path, agent_name: str) -> Path:
    return home / "agents" / f"{re.sub(r'[^A-Za-z0-9._-]', '_', agent_name)}.json"


def create(person: Any, person_config: str, home: Path, agent_name: str) -> tuple[Path, str]:
    """A new child connection for `agent_name`: its config's path and its connection id."""
    issued = person.create_connection(
        {"name": f"bridge-{agent_name}"[:64], "scopes": SCOPES, "ends_with_parent": True}
    )
    parent = load_config(Path(person_config))
    path = write_config(
        child_path(home, agent_name),
        {
            "url": parent.url,
            "token": issued["token"],
            "account_id": parent.account_id,
            "connection_id": issued["connection_id"],
            "push_url": parent.push_url,
            "name": issued["name"],
        },
    )
    return path, str(issued["connection_id"])


def revoke(person: Any, config_path: str) -> None:
    """Revokes the child and forgets its token (best effort: a gone child is fine)."""
    path = Path(config_path)
    if not path.exists():
        return
    connection_id = read_config(path).get("connection_id")
    if isinstance(connection_id, str):
        person.revoke_connection(connection_id)
    path.unlink(missing_ok=True)
