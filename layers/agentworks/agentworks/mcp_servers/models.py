"""What an attached MCP server's definition may be: a name, a URL that obeys the outbound
rules, and the headers sent with every request (kept in its secret, never shown)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from agentworks import limits
from agentworks.errors import InvalidInput
from agentworks.outbound.urls import RefusedUrl, check_on_save

NAME = re.compile(rf"^[a-z0-9][a-z0-9._-]{{0,{limits.MCP_SERVER_NAME_MAX_CHARS - 1}}}$")
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$")
# Headers the MCP client sets itself, or that would change how the request travels.
_RESERVED_HEADERS = frozenset(
    {
        "accept",
        "connection",
        "content-length",
        "content-type",
        "host",
        "keep-alive",
        "last-event-id",
        "mcp-protocol-version",
        "mcp-session-id",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
_UNSENDABLE_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def checked_name(name: Any) -> str:
    """A server's name as stored (lower case), or InvalidInput."""
    if not isinstance(name, str) or not NAME.match(name.lower()):
        raise InvalidInput(
            f"An MCP server's name is 1–{limits.MCP_SERVER_NAME_MAX_CHARS} letters, digits, "
            "'.', '_' or '-', starting with a letter or digit (e.g. github).",
            field="name",
        )
    return name.lower()


def checked_url(url: Any) -> str:
    """The URL, if the outbound rules allow it now (https; no private, loopback or
    link-local address; loopback only with the local stack's option)."""
    if not isinstance(url, str) or not url or len(url) > limits.MCP_SERVER_URL_MAX_CHARS:
        raise InvalidInput(
            f"An MCP server needs a URL of at most {limits.MCP_SERVER_URL_MAX_CHARS} "
            "characters (https://…/mcp).",
            field="url",
        )
    try:
        return check_on_save(url)
    except RefusedUrl as refused:
        raise InvalidInput(f"Refused MCP server URL: {refused}.", field="url") from None


def checked_headers(headers: Any) -> dict[str, str]:
    """Header name → value, each sendable, none the client sets itself; the message of a
    refusal never repeats a value (it may be a secret)."""
    if headers is None:
        return {}
    if not isinstance(headers, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise InvalidInput("headers is a mapping of header name to text.", field="headers")
    if len(headers) > limits.MCP_SERVER_HEADERS_MAX:
        raise InvalidInput(
            f"At most {limits.MCP_SERVER_HEADERS_MAX} headers per MCP server.", field="headers"
        )
    seen: dict[str, str] = {}
    for name, value in headers.items():
        if not _HEADER_NAME.match(name):
            raise InvalidInput(f"'{name[:64]}' is not a header name.", field="headers")
        if name.lower() in _RESERVED_HEADERS:
            raise InvalidInput(
                f"The header {name} is set by the MCP client itself.", field="headers"
            )
        if name.lower() in {k.lower() for k in seen}:
            raise InvalidInput(f"The header {name} is given twice.", field="headers")
        if (
            not value
            or len(value) > limits.MCP_SERVER_HEADER_VALUE_MAX_CHARS
            or _UNSENDABLE_VALUE.search(value)
            or not value.isascii()
        ):
            raise InvalidInput(
                f"The value of header {name} must be 1–"
                f"{limits.MCP_SERVER_HEADER_VALUE_MAX_CHARS} printable ASCII characters.",
                field="headers",
            )
        seen[name] = value
    return seen


class McpServerDefinition(BaseModel):
    """The body of `add`: name, url and the headers to send (e.g. Authorization)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    url: str
    headers: dict[str, str] | None = None

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, value: Any) -> str:
        return checked_name(value)


class McpServerChange(BaseModel):
    """The body of `update`: a new URL, new headers (rotates the secret), or both."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = None
    headers: dict[str, str] | None = None


@dataclass(frozen=True)
class Definition:
    name: str
    url: str
    headers: dict[str, str]


def parse_definition(data: Any) -> Definition:
    """An add request's body → its checked definition, or InvalidInput."""
    if not isinstance(data, dict):
        raise InvalidInput("An MCP server is a mapping: name, url and optional headers.")
    try:
        parsed = McpServerDefinition.model_validate(data)
    except ValidationError as invalid:
        raise _invalid(invalid) from None
    return Definition(parsed.name, checked_url(parsed.url), checked_headers(parsed.headers))


def parse_change(data: Any) -> tuple[str | None, dict[str, str] | None]:
    """An update request's body → (new URL or None, new headers or None), or InvalidInput."""
    if not isinstance(data, dict):
        raise InvalidInput("An update is a mapping: url and/or headers.")
    try:
        parsed = McpServerChange.model_validate(data)
    except ValidationError as invalid:
        raise _invalid(invalid) from None
    if parsed.url is None and parsed.headers is None:
        raise InvalidInput("Nothing to change: give url, headers or both.")
    url = checked_url(parsed.url) if parsed.url is not None else None
    headers = checked_headers(parsed.headers) if parsed.headers is not None else None
    return url, headers


def _invalid(invalid: ValidationError) -> InvalidInput:
    first = invalid.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "body"
    # The message of a custom check is ours (it says what to do); pydantic's says the type.
    message = str(first.get("ctx", {}).get("error", "")) or first.get("msg", "invalid")
    field = where.split(".")[0]
    if first.get("type") == "extra_forbidden":
        message = "unknown field (name, url and headers are the fields)"
    return InvalidInput(f"Invalid MCP server: {where}: {message}", field=field)
