"""Whether Codex will run the bridge's hooks in a project, as Codex itself says.

Codex reads a project's `.codex/` only once the person trusted the project, and runs each
hook only once they trusted it in `/hooks` (bound to the hook's content: a changed hook
needs trusting again). We never write that trust; we ask Codex: `codex app-server` answers
`hooks/list` with each hook's `trustStatus`, the same answer its `/hooks` screen shows.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

ASK_SECONDS = 15.0
# `agents` may be run in a loop and each answer costs a Codex start: an answer stands while
# neither Codex's config (where trust is recorded) nor the hook file changed.
_cache: dict[tuple[str, float, float], str | None] = {}
_lock = threading.Lock()


def untrusted(project: Path, codex: str | None = None) -> str | None:
    """Why Codex will not run our hooks in `project`, or None when it will (or when Codex
    is not installed here to ask)."""
    home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
    key = (str(project), _mtime(home / "config.toml"), _mtime(project / ".codex" / "hooks.json"))
    with _lock:
        if key in _cache:
            return _cache[key]
    said = _ask(project, codex or shutil.which("codex"))
    with _lock:
        _cache[key] = said
    return said


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _ask(project: Path, codex: str | None) -> str | None:
    if codex is None:
        return None
    hooks = _listed(project, codex)
    if hooks is None:
        return None  # Codex did not answer: nothing to say either way
    ours = [h for h in hooks if "bridge hook" in str(h.get("command") or "")]
    if not ours:
        return (
            "Codex does not load this project's hooks: trust the project when Codex asks "
            "(or `agentworks bridge install --provider codex` if they are missing)"
        )
    waiting = sorted({str(h.get("eventName")) for h in ours if h.get("trustStatus") != "trusted"})
    if waiting:
        return (
            f"hooks untrusted ({', '.join(waiting)}): open /hooks in Codex and trust each "
            "AgentWorks hook; Codex skips them until then"
        )
    return None


def _listed(project: Path, codex: str) -> list[dict[str, Any]] | None:
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"clientInfo": {"name": "agentworks-bridge", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(project)]}},
    ]  # fmt: skip
    try:
        server = subprocess.Popen(
            [codex, "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, text=True, cwd=project,
        )  # fmt: skip
    except OSError:
        return None
    timer = threading.Timer(ASK_SECONDS, server.kill)
    timer.start()
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        server.stdin.flush()
        for line in server.stdout:
            answer = _json(line)
            if answer.get("id") == 2:
                data = (answer.get("result") or {}).get("data") or []
                return [h for entry in data for h in entry.get("hooks") or []]
        return None
    except (OSError, ValueError):
        return None
    finally:
        timer.cancel()
        server.kill()
        server.wait()


def _json(line: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
