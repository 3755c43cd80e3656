"""Templates of the scripted adapter: `{prompt}`, `{answer}`, `{match.N}`, `{args.X}`,
`{history}` (the session's earlier turns, oldest first, one `role: text` line each),
`{call.X}` (the status of the call a `call` rule made: `{call.result.summary}`),
`{mcp.X}` (what came of an `mcp` rule's tool call: `{mcp.text}`, `{mcp.outcome}` — ok,
tool_error, refused or failed — `{mcp.is_error}`, `{mcp.structured.X}`) ….

Rendering never fails: a missing key renders as an empty string, a non-string value as
JSON. `{{` and `}}` are literal braces. In a structured result, a string leaf that is exactly
one placeholder keeps the value's JSON type (`"{args.count}"` → 3, not "3"), so scripted
results can satisfy typed output schemas.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from typing import Any

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_]\w*(?:\.[^{}.\s]+)*)\}")
_MISSING = object()


@dataclass(frozen=True)
class TemplateContext:
    """The values a template may name."""

    prompt: str = ""
    answer: str | None = None
    correction: str | None = None
    function: str | None = None
    crew: str = ""
    args: Any = None
    match: re.Match[str] | None = None
    history: str = ""
    call: Any = None  # the status of the function call a `call` rule made
    mcp: Any = None  # what came of the MCP tool call an `mcp` rule made


def render(template: str, ctx: TemplateContext) -> str:
    """`template` with every placeholder replaced (missing → "")."""

    def replace(found: re.Match[str]) -> str:
        token = found.group(0)
        if token in ("{{", "}}"):
            return token[0]
        return _as_text(_lookup(found.group(1), ctx))

    return _PLACEHOLDER.sub(replace, template)


def render_value(value: Any, ctx: TemplateContext) -> Any:
    """`value` with templating applied to every string leaf, recursively (keys untouched)."""
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value)
        if whole and whole.group(1):
            found = _lookup(whole.group(1), ctx)
            if found is not _MISSING and not isinstance(found, str):
                return copy.deepcopy(found)
        return render(value, ctx)
    if isinstance(value, dict):
        return {key: render_value(item, ctx) for key, item in value.items()}
    if isinstance(value, list):
        return [render_value(item, ctx) for item in value]
    return value


def _lookup(path: str, ctx: TemplateContext) -> Any:
    root, *rest = path.split(".")
    if root == "match":
        return _match_group(ctx.match, rest)
    if root == "args":
        return _descend(ctx.args, rest)
    if root == "call":
        return _MISSING if ctx.call is None else _descend(ctx.call, rest)
    if root == "mcp":
        return _MISSING if ctx.mcp is None else _descend(ctx.mcp, rest)
    if rest or root not in ("prompt", "answer", "correction", "function", "crew", "history"):
        return _MISSING
    value = getattr(ctx, root)
    return _MISSING if value is None else value


def _match_group(match: re.Match[str] | None, rest: list[str]) -> Any:
    if match is None or len(rest) != 1:
        return _MISSING
    key: int | str = int(rest[0]) if rest[0].isdigit() else rest[0]
    try:
        group = match.group(key)
    except IndexError:  # no such group number or name
        return _MISSING
    return _MISSING if group is None else group


def _descend(value: Any, keys: list[str]) -> Any:
    for key in keys:
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            return _MISSING
    return value


def _as_text(value: Any) -> str:
    if value is _MISSING:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def history_text(turns: tuple[dict[str, str], ...]) -> str:
    """Earlier turns as `{history}` shows them: oldest first, `role: text` a line each."""
    return "\n".join(f"{t.get('role', '')}: {t.get('content', '')}" for t in turns)
