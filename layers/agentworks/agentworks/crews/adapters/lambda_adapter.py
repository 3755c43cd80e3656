"""The `lambda` adapter: a user's Lambda function is the agent (SPEC §8).

Settings::

    adapter:
      type: lambda
      function_name: my-agent          # name or ARN
      qualifier: live                  # optional alias or version

The function is invoked synchronously with a JSON object of the turn (`request_payload`)
and must answer a JSON object::

    {"final_text"?: str, "result"?: any, "question"?: str, "files"?: {path: text},
     "cost_usd"?: number, "progress"?: [str]}

`result` present (even null) is the structured result (F6); `question` raises a pending
input (F7). Unknown keys are ignored. A function error, or an answer that is not such an
object, fails the turn with the function's own message.

A function serves only the account its `agentworks:account` tag names (function_bindings):
checked when the adapter is saved and before every invoke.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

from agentworks.crews.adapters import settings_checks as checks
from agentworks.crews.adapters.base import AdapterError, TurnRequest, TurnResult
from agentworks.crews.adapters.function_bindings import BindingUnknown, FunctionBindings, refusal
from agentworks.crews.adapters.output_files import safe_relative_path

SETTINGS_KEYS = ("type", "function_name", "qualifier")

# The step runner's role may invoke only functions named `<stack name>-agent-*` (template.yaml,
# LambdaAdapterNamedFunctions; AGENT_FUNCTION_PREFIX): refusing other names here gives a clear
# 400 at definition time instead of an AccessDenied on the first call. A stack named
# `agentworks` (samconfig.toml's default) gives this prefix.
FUNCTION_NAME_PREFIX = "agentworks-agent-"


def function_name_prefix() -> str:
    """The name every agent function of this deployment starts with (its stack's name)."""
    return os.environ.get("AGENT_FUNCTION_PREFIX") or FUNCTION_NAME_PREFIX


def function_name_of(reference: str) -> str:
    """The bare function name of a name, `name:qualifier`, partial or full ARN."""
    after = reference.split(":function:", 1)[1] if ":function:" in reference else reference
    return after.split(":", 1)[0]


def unqualified(reference: str) -> str:
    """The function a reference names, without a version or alias (tags are the function's)."""
    if ":function:" in reference:
        before, after = reference.split(":function:", 1)
        return f"{before}:function:{after.split(':', 1)[0]}"
    return reference.split(":", 1)[0]


def validate(settings: dict[str, Any]) -> list[str]:
    """Problems with a lambda adapter's settings (empty when fine)."""
    where = "lambda adapter"
    problems = [
        *checks.unknown_keys(settings, SETTINGS_KEYS, where),
        *checks.required_str(settings, "function_name", where),
        *checks.optional_str(settings, "qualifier", where),
    ]
    reference = settings.get("function_name")
    if isinstance(reference, str) and reference.strip():
        name = function_name_of(reference.strip())
        prefix = function_name_prefix()
        if not name.startswith(prefix) or name == prefix:
            problems.append(
                f"{where}: function {name!r} cannot be invoked: the step runner may only "
                f"invoke functions named '{prefix}*' in its own account and "
                f"region; name your function e.g. '{prefix}{name}'"
            )
    return problems


def account_problems(
    account_id: str, settings: dict[str, Any], bindings: FunctionBindings
) -> list[str]:
    """Why `account_id` may not use these (valid) settings' function: empty when its tag
    binds it to that account. BindingUnknown when the tag cannot be read now."""
    reference = unqualified(str(settings["function_name"]).strip())
    if bindings.may_use(account_id, reference):
        return []
    return [refusal(function_name_of(reference))]


def request_payload(request: TurnRequest) -> dict[str, Any]:
    """The JSON object the user's function receives for one turn."""
    return {
        "crew_name": request.crew_name,
        "kind": request.kind,
        "prompt": request.prompt,
        "function": request.function,
        "args": request.args,
        "answer": request.answer,
        "correction": request.correction,
        "instructions": request.instructions,
        "output_schema": request.output_schema,
        "history": [dict(entry) for entry in request.history],
        **_mcp_tools(request),
    }


def _mcp_tools(request: TurnRequest) -> dict[str, Any]:
    """Issue 28: the turn's admitted MCP tools and a token for calling them, valid no longer
    than the turn: `POST /v1/mcp-servers/{server}/tools/{name}:call` with
    `Authorization: Bearer <mcp_call_token>` and the arguments as the body."""
    if request.mcp_tools is None:
        return {}
    tools = request.mcp_tools.tools()
    token = request.mcp_tools.call_token(tools)
    if token is None:
        return {}
    return {
        "mcp_tools": [
            {
                "server": t.server,
                "name": t.name,
                "description": t.description,
                "input_schema": t.input_schema,
                "call_path": f"/v1/mcp-servers/{t.server}/tools/{t.name}:call",
            }
            for t in tools
        ],
        "mcp_call_token": token,
    }


class LambdaAdapter:
    """Invokes the configured function once per turn (RequestResponse)."""

    def __init__(
        self,
        settings: dict[str, Any],
        client_factory: Callable[[], Any],
        bindings: FunctionBindings,
    ) -> None:
        problems = validate(settings)
        if problems:
            raise AdapterError("; ".join(problems))
        self._settings = settings
        self._function_name: str = settings["function_name"]
        self._qualifier: str | None = settings.get("qualifier")
        self._client_factory = client_factory
        self._bindings = bindings

    def run_turn(self, request: TurnRequest) -> TurnResult:
        """Invoke the function and turn its JSON answer into a TurnResult; refused, without
        invoking, when the function is not bound to the turn's account."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            refused = account_problems(request.account_id, self._settings, self._bindings)
        except BindingUnknown as exc:
            raise AdapterError(f"{exc}; try again") from exc
        if refused:
            raise AdapterError("; ".join(refused))

        params: dict[str, Any] = {
            "FunctionName": self._function_name,
            "InvocationType": "RequestResponse",
            "Payload": json.dumps(request_payload(request), ensure_ascii=False).encode("utf-8"),
        }
        if self._qualifier:
            params["Qualifier"] = self._qualifier
        try:
            response = self._client_factory().invoke(**params)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            raise AdapterError(
                f"invoking Lambda function {self._function_name} failed: "
                f"{error.get('Code', 'Error')}: {error.get('Message', '')}"
            ) from exc
        except BotoCoreError as exc:
            raise AdapterError(
                f"invoking Lambda function {self._function_name} failed: {exc}"
            ) from exc
        body = _read_payload(response.get("Payload"))
        if response.get("FunctionError"):
            raise AdapterError(
                f"Lambda function {self._function_name} failed: {_function_error(body)}"
            )
        return self._parse(body)

    def _parse(self, body: bytes) -> TurnResult:
        where = f"Lambda function {self._function_name}"
        try:
            answer = json.loads(body) if body else None
        except ValueError as exc:
            raise AdapterError(f"{where} answered with invalid JSON: {exc}") from exc
        if not isinstance(answer, dict):
            raise AdapterError(
                f"{where} must answer a JSON object with final_text, result, question or "
                f"files; it answered {type(answer).__name__}"
            )
        return parse_answer(answer, where)


def parse_answer(answer: dict[str, Any], where: str) -> TurnResult:
    """The TurnResult for a function's JSON answer (AdapterError when a field is wrong)."""
    for key in ("final_text", "question"):
        if answer.get(key) is not None and not isinstance(answer[key], str):
            raise AdapterError(f"{where}: '{key}' must be a string")
    files_in = answer.get("files") or {}
    if not isinstance(files_in, dict):
        raise AdapterError(f"{where}: 'files' must map relative paths to text")
    files: dict[str, bytes] = {}
    for path, text in files_in.items():
        safe = safe_relative_path(path)
        if safe is None or not isinstance(text, str):
            raise AdapterError(f"{where}: file {path!r} needs a relative path and text content")
        files[safe] = text.encode("utf-8")
    cost = answer.get("cost_usd", 0.0)
    if isinstance(cost, bool) or not isinstance(cost, int | float) or cost < 0:
        raise AdapterError(f"{where}: 'cost_usd' must be a non-negative number")
    progress = answer.get("progress") or []
    if not isinstance(progress, list) or not all(isinstance(item, str) for item in progress):
        raise AdapterError(f"{where}: 'progress' must be a list of strings")
    question = answer.get("question")
    return TurnResult(
        final_text=None if question is not None else (answer.get("final_text") or ""),
        result=answer.get("result"),
        has_result="result" in answer and question is None,
        files=files,
        question=question,
        cost_usd=float(cost),
        progress=list(progress),
    )


def _read_payload(payload: Any) -> bytes:
    if payload is None:
        return b""
    if hasattr(payload, "read"):  # botocore StreamingBody
        data = payload.read()
        return data if isinstance(data, bytes) else bytes(data)
    return payload if isinstance(payload, bytes) else str(payload).encode("utf-8")


def _function_error(body: bytes) -> str:
    """`errorType: errorMessage` from a Lambda error payload (or the raw text)."""
    try:
        error = json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace")[:2000] or "no error message"
    if isinstance(error, dict) and "errorMessage" in error:
        kind = error.get("errorType")
        return f"{kind}: {error['errorMessage']}" if kind else str(error["errorMessage"])
    return json.dumps(error)[:2000]
