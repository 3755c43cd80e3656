"""The person's in-chat commands, caught by the UserPromptSubmit hook:

    /agentworks attach [NAME] ["purpose"]     (also /agentworks:agentworks attach …)
    /agentworks detach

Only a prompt the person typed reaches that hook. A prompt carrying the bridge's label is
delivered text (a CLI may replay a continuation as a prompt) and attaches nothing.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from agentworks.limits import PURPOSE_MAX_CHARS
from agentworks_cli.bridge.turns import LABEL

_PREFIX = re.compile(r"^\s*/agentworks(?::agentworks)?\s+(attach|detach)\b(.*)$", re.S)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass(frozen=True)
class PersonCommand:
    action: str  # attach | detach
    name: str | None = None
    purpose: str | None = None
    error: str | None = None  # said to the person instead of acting


def parse(prompt: str) -> PersonCommand | None:
    """The command in a prompt, or None when the prompt is not one (it goes to the model)."""
    if LABEL in prompt:
        return None
    match = _PREFIX.match(prompt)
    if not match:
        return None
    action, rest = match.group(1), match.group(2).strip()
    if action == "detach":
        return PersonCommand("detach")
    try:
        words = shlex.split(rest)
    except ValueError as error:
        return PersonCommand("attach", error=f"could not read the command: {error}")
    name = words[0] if words else None
    purpose = " ".join(words[1:]) or None
    if name is not None and not _NAME.match(name):
        return PersonCommand("attach", error=f"{name!r} is not a valid agent name")
    if purpose is not None and (len(purpose) > PURPOSE_MAX_CHARS or "\n" in purpose):
        return PersonCommand(
            "attach",
            error=f"the purpose is one paragraph of at most {PURPOSE_MAX_CHARS} characters",
        )
    return PersonCommand("attach", name, purpose)


# ---- the file that makes a CLI accept the command ----------------------------------------

# Claude Code refuses an unknown slash command ("Unknown command: /agentworks") before any
# hook runs. A project command file makes `/agentworks …` a known command, so the typed
# prompt reaches UserPromptSubmit, whose hook answers it; the body below reaches the model
# only if no hook did.
CLAUDE_COMMAND_FILE = ".claude/commands/agentworks.md"
_MARK = "<!-- the AgentWorks bridge's /agentworks command (agentworks bridge install) -->"
_CLAUDE_COMMAND = f"""---
description: Attach this chat to AgentWorks, or detach it (answered by the AgentWorks hooks)
argument-hint: attach [NAME] ["purpose"] | detach
---
{_MARK}
The person typed `/agentworks $ARGUMENTS`. The AgentWorks bridge hooks answer that command
before it reaches you; since you are reading this, they did not run. Tell the person, in one
short paragraph: run `agentworks bridge status` in a terminal (is the bridge running?), then
`agentworks bridge install` in this project (it puts the hooks in place), and restart this
chat. Do nothing else.
"""


def install_command_file(provider: str, project: Path) -> Path | None:
    """Writes the CLI's command file (Claude Code only: Codex passes the typed prompt to its
    hook); an existing file that is not ours is left alone. The file's path, or None."""
    if provider != "claude":
        return None
    path = project / CLAUDE_COMMAND_FILE
    if path.exists() and _MARK not in path.read_text(encoding="utf-8", errors="replace"):
        return None  # the person's own /agentworks command
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != _CLAUDE_COMMAND:
        path.write_text(_CLAUDE_COMMAND, encoding="utf-8")
    return path
