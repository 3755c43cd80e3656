"""Tool results: structured content plus text, and the one error shape of every surface.

A domain error becomes `is_error=true` with `{"error": {"code", "message", ...}}`, the
same body the HTTP API returns, in both the structured and the text content.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from agentworks.errors import AgentWorksError, InvalidInput

M = TypeVar("M", bound=BaseModel)


def to_json_text(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2)


def ok_result(structured: dict[str, Any], text: str | None = None) -> CallToolResult:
    """A success: `structured` as structured content; `text` (default: the same JSON)."""
    return CallToolResult(
        content=[TextContent(type="text", text=to_json_text(structured) if text is None else text)],
        structured_content=structured,
    )


def error_result(error: AgentWorksError) -> CallToolResult:
    body = error.to_body()
    return CallToolResult(
        content=[TextContent(type="text", text=to_json_text(body))],
        structured_content=body,
        is_error=True,
    )


def invalid_arguments(error: ValidationError) -> InvalidInput:
    """Argument problems as one `invalid_request`, worded like the HTTP API's."""
    problems = []
    for item in error.errors():
        where = ".".join(str(p) for p in item.get("loc", ()))
        problems.append(f"{where or 'arguments'}: {item.get('msg', 'invalid')}")
    return InvalidInput("; ".join(problems)[:1000] or "Invalid arguments.")


def build_model(model: type[M], **fields: Any) -> M:
    """A request model of the domain, its validation errors in the domain's shape."""
    try:
        return model(**fields)
    except ValidationError as error:
        raise invalid_arguments(error) from None
