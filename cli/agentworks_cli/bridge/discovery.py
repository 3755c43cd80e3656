"""Which chat `agentworks attach` (or `detach`) means when no session id is given.

Every hook tells the bridge which chat ran it, from which folder and which CLI process (the
hook's nearest ancestor that is `claude` or `codex`). So:

- run inside a chat (an agent's own shell tool), the chat is the one whose CLI process is an
  ancestor of this command: it attaches itself;
- run from a terminal, the live chats of this project (their CLI still running, and started
  in this folder or below) are the candidates: one is taken, several are offered to pick.

A chat is seen only once one of its hooks ran (`agentworks bridge install` puts the hooks in
place; its first prompt or turn runs one).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworks_cli.bridge import process_tree

CLI_WORDS = {"claude": ("claude",), "codex": ("codex",), "cursor": ("cursor",)}
# A chat whose CLI process could not be told apart counts as live this long after a hook.
UNKNOWN_PROCESS_LIVE_SECONDS = 15 * 60


@dataclass(frozen=True)
class Chat:
    session: str  # "<provider>:<session id>"
    provider: str
    cwd: str
    cli_pid: int | None
    agent_name: str | None  # attached as
    seen_at: float

    @property
    def session_id(self) -> str:
        return self.session.split(":", 1)[1]

    def describe(self) -> str:
        attached = f"attached as {self.agent_name}" if self.agent_name else "not attached"
        ago = max(0, int(time.time() - self.seen_at))
        where = f"{self.provider} session {self.session_id} in {self.cwd}"
        return f"{where} ({attached}; last hook {ago} s ago)"


def calling_cli(provider: str, pid: int | None = None) -> dict[str, float] | None:
    """The CLI process that ran this hook: the nearest ancestor whose command line names the
    provider (`claude`, `node …/claude-code/cli.js`, `codex`)."""
    words = CLI_WORDS.get(provider, (provider,))
    for ancestor in process_tree.ancestors(os.getpid() if pid is None else pid):
        line = process_tree.command_line(ancestor).lower()
        if any(word in line for word in words) and "bridge hook" not in line:
            started = process_tree.start_time(ancestor)
            if started is not None:
                return {"pid": ancestor, "started": started}
    return None


def live_chats(sightings: list[dict[str, Any]], now: float | None = None) -> list[Chat]:
    """The chats whose CLI process still runs (the same process: pid and start time)."""
    now = time.time() if now is None else now
    chats = []
    for seen in sightings:
        pid, started = seen.get("cli_pid"), seen.get("cli_started")
        if pid is None:
            alive = now - float(seen["seen_at"]) < UNKNOWN_PROCESS_LIVE_SECONDS
        else:
            alive = started is not None and process_tree.start_time(int(pid)) == started
        if alive and seen.get("event") != "session-end":
            chats.append(
                Chat(
                    session=str(seen["session"]),
                    provider=str(seen["provider"]),
                    cwd=str(seen["cwd"]),
                    cli_pid=int(pid) if pid is not None else None,
                    agent_name=seen.get("agent_name"),
                    seen_at=float(seen["seen_at"]),
                )
            )
    return chats


def own_chat(chats: list[Chat], pid: int | None = None) -> Chat | None:
    """The chat this command runs inside of (its CLI process is one of our ancestors)."""
    mine = process_tree.ancestors(os.getpid() if pid is None else pid)
    found = [c for c in chats if c.cli_pid is not None and c.cli_pid in mine]
    # Nested CLIs: the nearest ancestor is the chat that ran this command.
    found.sort(key=lambda c: mine.index(c.cli_pid) if c.cli_pid in mine else len(mine))
    return found[0] if found else None


def of_project(chats: list[Chat], project: Path) -> list[Chat]:
    """The chats started in `project` or a folder below it, newest hook first."""
    root = project.resolve()
    inside = [c for c in chats if _within(Path(c.cwd), root)]
    return sorted(inside, key=lambda c: c.seen_at, reverse=True)


def _within(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root)
    except (ValueError, OSError):
        return False
    return True
