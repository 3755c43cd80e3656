"""The hook payloads each CLI sends on stdin and the JSON each expects back
(facts in the product's CLI-HOOKS notes: Claude Code, Codex, Cursor)."""

from __future__ import annotations

from typing import Any

from agentworks_cli.bridge.hook_files import PROVIDERS

__all__ = ["PROVIDERS", "prompt_consumed", "session_of", "session_start_context", "stop_output"]


def session_of(provider: str, payload: dict[str, Any]) -> str | None:
    """The bridge's key for the exact chat: `<provider>:<its session id>`."""
    field = "conversation_id" if provider == "cursor" else "session_id"
    value = payload.get(field)
    return f"{provider}:{value}" if isinstance(value, str) and value else None


def stop_output(provider: str, text: str) -> dict[str, Any]:
    """Continue the session with `text` as its next turn."""
    if provider == "cursor":
        return {"followup_message": text}
    return {"decision": "block", "reason": text}


def prompt_consumed(provider: str, said: str) -> dict[str, Any]:
    """Swallow the person's `/agentworks …` prompt (the model never sees it) and tell them."""
    if provider == "claude":
        return {
            "decision": "block",
            "reason": said,
            "hookSpecificOutput": {
                "hookEventName": "UserPromptSubmit",
                "suppressOriginalPrompt": True,
            },
        }
    return {"decision": "block", "reason": said}


def session_start_context(text: str) -> dict[str, Any]:
    """Context a SessionStart hook adds to the session (Claude Code and Codex alike)."""
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
