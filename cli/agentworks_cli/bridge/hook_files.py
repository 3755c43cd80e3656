"""Install and remove the bridge's hooks in a project's own hook file, merged into what the
person already has there (never replacing it).

Each CLI runs `agentworks bridge hook <event> --provider <name>` from:

- Claude Code: `.claude/settings.local.json` (the person's private project settings):
  `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": …, "timeout": 20}]}]}}`
  for Stop, UserPromptSubmit, SessionStart and SessionEnd (Claude gives all SessionEnd
  hooks 1.5 s together, whatever `timeout` says).
- Codex: `<repo>/.codex/hooks.json`, the same event → matcher group → handler shape, for
  Stop, UserPromptSubmit and SessionStart (Codex has no SessionEnd). Assumed, not tried
  against a live Codex: a group without `matcher` matches every SessionStart source,
  `timeout` is in seconds as for Claude, and a project `.codex/` layer is read once the
  person trusts the project and each hook in /hooks (we never bypass that trust). Hooks
  are on by default from Codex 0.137; older releases need `[features] codex_hooks = true`
  in config.toml, which we leave to the person.
- Cursor: `.cursor/hooks.json`, `{"version": 1, "hooks": {"stop": [{"command": …,
  "loop_limit": 10}]}}`; Cursor has only the stop event. `"version": 1` goes only into a
  file we create: an existing file keeps whatever version it declares (or none).

Our entries are recognized by their command line (`… agentworks bridge hook …`), so an
upgrade that changes a field replaces them instead of adding a copy. Removal drops our
entries, then any list, `hooks` object or file that removing them left empty: a list that
held only our hook is treated as ours.
"""

from __future__ import annotations

import copy
import json
import os
import secrets
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Provider = Literal["claude", "codex", "cursor"]
PROVIDERS: tuple[Provider, ...] = ("claude", "codex", "cursor")

HOOK_TIMEOUT_SECONDS = 20
CURSOR_LOOP_LIMIT = 10


class HookFileError(Exception):
    """A hook file we cannot merge into without losing the person's content."""


@dataclass(frozen=True)
class _Layout:
    """Where one CLI keeps project hooks and which of its events we use."""

    relative_path: str
    events: dict[str, str]  # the file's event key → our `bridge hook` event
    entry: Callable[[str], dict[str, Any]]  # command line → the entry to add to an event
    empty_document: dict[str, Any]  # a new file's skeleton; a file left at it is deleted


def _grouped_entry(command_line: str) -> dict[str, Any]:
    handler = {"type": "command", "command": command_line, "timeout": HOOK_TIMEOUT_SECONDS}
    return {"hooks": [handler]}


def _cursor_entry(command_line: str) -> dict[str, Any]:
    return {"command": command_line, "loop_limit": CURSOR_LOOP_LIMIT}


_CLAUDE_EVENTS = {
    "Stop": "stop",
    "UserPromptSubmit": "user-prompt-submit",
    "SessionStart": "session-start",
    "SessionEnd": "session-end",
}
_LAYOUTS: dict[str, _Layout] = {
    "claude": _Layout(".claude/settings.local.json", _CLAUDE_EVENTS, _grouped_entry, {}),
    "codex": _Layout(
        ".codex/hooks.json",
        {key: event for key, event in _CLAUDE_EVENTS.items() if key != "SessionEnd"},
        _grouped_entry,
        {},
    ),
    "cursor": _Layout(".cursor/hooks.json", {"stop": "stop"}, _cursor_entry, {"version": 1}),
}


def hook_file(provider: str, project: Path) -> Path:
    """The project-local hook file `provider` reads."""
    return project / _layout(provider).relative_path


def hook_events(provider: str) -> tuple[str, ...]:
    """The `bridge hook` events installed for `provider`, e.g. ("stop",) for Cursor."""
    return tuple(_layout(provider).events.values())


def agentworks_executable() -> str:
    """The `agentworks` running now, by absolute path: a hook runs with the CLI's PATH, on
    which a virtualenv's `agentworks` usually is not."""
    invoked = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if invoked is not None and invoked.stem == "agentworks":
        found = invoked if invoked.parent != Path() else shutil.which(str(invoked))
        if found and Path(found).exists():
            return str(Path(found).absolute())
    beside = Path(sys.executable).with_name("agentworks")  # the virtualenv's console script
    if beside.exists():
        return str(beside.absolute())
    found = shutil.which("agentworks")
    if found is None:
        raise HookFileError("cannot find the `agentworks` executable to name in the hooks")
    return str(Path(found).absolute())


def hook_problem(provider: str, project: Path) -> str | None:
    """Why the project's hooks would not reach the bridge, or None when they would: ours
    missing for an event, or naming an `agentworks` that is not there."""
    path = hook_file(provider, project)
    try:
        document = _read(path)
        hooks = _hooks_of(document, path) or {}
        layout = _layout(provider)
        for key in layout.events:
            ours = [c for c in _commands(_event_entries(hooks, key, path)) if _is_ours(c)]
            if not ours:
                return f"no AgentWorks hook for {key} in {path} (`agentworks bridge install`)"
            executable = shlex.split(ours[0]["command"])[0]
            if os.sep in executable and not os.access(executable, os.X_OK):
                return f"the {key} hook runs {executable}, which is not there (reinstall)"
            if os.sep not in executable:
                return (
                    f"the {key} hook runs a bare `{executable}`, which fails unless the CLI's "
                    "PATH has it (`agentworks bridge install` names it by path)"
                )
    except HookFileError as error:
        return str(error)
    return None


def _commands(entries: list[Any]) -> list[dict[str, Any]]:
    """The handlers of an event's entries, whether grouped (Claude, Codex) or not (Cursor)."""
    handlers: list[dict[str, Any]] = []
    for entry in entries:
        group = entry.get("hooks") if isinstance(entry, dict) else None
        handlers += (
            [h for h in group if isinstance(h, dict)] if isinstance(group, list) else [entry]
        )
    return handlers


def hook_command(provider: str, event: str, command: str = "agentworks") -> str:
    """The command line a hook runs; `command` is the `agentworks` executable to call."""
    if Path(command).stem != "agentworks":
        raise ValueError(f"{command!r} is not an agentworks executable")
    return f"{shlex.quote(command)} bridge hook {event} --provider {provider}"


def install(provider: str, project: Path, command: str = "agentworks") -> Path:
    """Add (or bring up to date) our hooks in the project's hook file; returns its path.
    Installing again changes nothing."""
    path = hook_file(provider, project)
    document = _read(path)
    merged = _with_our_hooks(provider, document, path, command)
    if merged != document:
        _write(path, merged)
    return path


def uninstall(provider: str, project: Path) -> bool:
    """Take our hooks out of the project's hook file, leaving the person's content as it
    was; True when something was removed."""
    layout, path = _layout(provider), hook_file(provider, project)
    if not path.exists():
        return False
    document = _read(path)
    hooks = _hooks_of(document, path)
    if hooks is None:
        return False
    removed = False
    for key in layout.events:
        entries = _event_entries(hooks, key, path)
        kept = _without_ours(entries)
        if kept == entries:
            continue
        removed = True
        if kept:
            hooks[key] = kept
        else:
            del hooks[key]
    if not removed:
        return False
    if not hooks:
        del document["hooks"]
    if document == layout.empty_document and not path.is_symlink():
        path.unlink()  # only our hooks were in it (a link's target is the person's to keep)
    else:
        _write(path, document)
    return True


def installed(provider: str, project: Path, command: str = "agentworks") -> bool:
    """True when every event already has our current hook (install would change nothing)."""
    path = hook_file(provider, project)
    if not path.exists():
        return False
    document = _read(path)
    return _with_our_hooks(provider, document, path, command) == document


# ---------------------------------------------------------------- merging


def _with_our_hooks(
    provider: str, document: dict[str, Any], path: Path, command: str
) -> dict[str, Any]:
    """A copy of `document` whose events each end with our current hook, once."""
    layout = _layout(provider)
    merged = copy.deepcopy(document or layout.empty_document)  # a new file: the skeleton
    hooks = _hooks_of(merged, path)
    if hooks is None:
        hooks = merged["hooks"] = {}
    for key, event in layout.events.items():
        entries = _event_entries(hooks, key, path)
        hooks[key] = [*_without_ours(entries), layout.entry(hook_command(provider, event, command))]
    return merged


def _without_ours(entries: list[Any]) -> list[Any]:
    """`entries` minus our handlers; a matcher group they leave empty goes too."""
    kept: list[Any] = []
    for entry in entries:
        if _is_ours(entry):
            continue
        group = entry.get("hooks") if isinstance(entry, dict) else None
        if isinstance(group, list) and any(_is_ours(handler) for handler in group):
            rest = [handler for handler in group if not _is_ours(handler)]
            if not rest:
                continue
            entry = {**entry, "hooks": rest}
        kept.append(entry)
    return kept


def _is_ours(entry: Any) -> bool:
    """A handler whose command runs `<…/agentworks> bridge hook …`, however it was quoted."""
    command = entry.get("command") if isinstance(entry, dict) else None
    if not isinstance(command, str) or "bridge" not in command:
        return False
    try:
        words = shlex.split(command)
    except ValueError:  # unbalanced quotes: not a line we wrote
        return False
    return any(
        Path(words[i]).stem == "agentworks" and words[i + 1 : i + 3] == ["bridge", "hook"]
        for i in range(len(words) - 2)
    )


def _hooks_of(document: dict[str, Any], path: Path) -> dict[str, Any] | None:
    hooks = document.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise HookFileError(_refusal(path, '"hooks" is not a JSON object'))
    return hooks


def _event_entries(hooks: dict[str, Any], key: str, path: Path) -> list[Any]:
    entries = hooks.get(key, [])
    if not isinstance(entries, list):
        raise HookFileError(_refusal(path, f'"hooks"."{key}" is not a JSON list'))
    return entries


# ---------------------------------------------------------------- the file


def _layout(provider: str) -> _Layout:
    try:
        return _LAYOUTS[provider]
    except KeyError:
        raise ValueError(f"unknown provider {provider!r}: use one of {PROVIDERS}") from None


def _read(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    try:
        document = json.loads(data.decode("utf-8"))
    except ValueError as error:  # bad UTF-8 or bad JSON
        raise HookFileError(_refusal(path, f"it is not valid JSON ({error})")) from None
    if not isinstance(document, dict):
        raise HookFileError(_refusal(path, "it is not a JSON object"))
    return document


def _refusal(path: Path, why: str) -> str:
    return (
        f"{path}: cannot add or remove AgentWorks hooks because {why}. "
        "Fix or move the file, then run the command again; it was left unchanged."
    )


def _write(path: Path, document: dict[str, Any]) -> None:
    """Replace the file in one step (a reader never sees half a file), keeping its mode and
    writing through a symlink to its target."""
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    existing_mode = target.stat().st_mode & 0o7777 if target.exists() else None
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    # 0o666 lets the umask pick a new file's mode, as for any file an editor creates.
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
            stream.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
            stream.flush()
            os.fsync(stream.fileno())
        if existing_mode is not None:
            os.chmod(temporary, existing_mode)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
