"""The `scripted` adapter: deterministic rules or a Python entrypoint (SPEC §8).

Used by tests and demos. Settings::

    adapter:
      type: scripted
      rules:                      # first match wins
        - when: "clause (\\d+)"   # regex, case-insensitive, searched in a message's prompt
          reply: "Clause {match.1} covers termination."
        - function: confirm       # matches a function call by name (`when` may narrow it)
          ask: "Proceed with {args.action}?"   # a pending question until `answer` is set
          result: {confirmed: "{answer}"}
        - default: "I can only discuss clauses."
      entrypoint: "package.module:function"     # optional: handles turns no rule matched

Rule actions, applied in this order: `ask` (returns the question while no answer is set:
a person answers it), `fail` (AdapterError), `ask_back` (in a conversation, a request back
to its other side; the next turn's `{answer}` is the reply), `ask_crew` ({crew, request,
handoff}: in a conversation, a request to another Crew; the next turn's `{answer}` is what
came of it), `handoff` ({agent,
message}), `call` ({target, function, args}: in a
workflow step, calls the function as the source workflow and waits; `{call.…}` is its
status), `mcp` ({server, tool, arguments}: calls an attached MCP server's tool through the
turn's admitted tools; `{mcp.text}`, `{mcp.outcome}` is what came of it — a refusal or
failure too, for the rule to show), then `reply` (final text), `result` or —
when the turn is a correction — `result_on_correction`, and `files` ({path: text}). Templates
are described in `scripted_template`.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentworks.crews.adapters import settings_checks as checks
from agentworks.crews.adapters.base import (
    AdapterError,
    CrewRequest,
    Handoff,
    TurnRequest,
    TurnResult,
)
from agentworks.crews.adapters.scripted_template import (
    TemplateContext,
    history_text,
    render,
    render_value,
)

SETTINGS_KEYS = ("type", "rules", "entrypoint")
MATCH_KEYS = ("when", "function", "default")
ACTION_KEYS = (
    "reply", "result", "result_on_correction", "ask", "files", "fail", "handoff", "call",
    "ask_crew", "ask_back", "mcp",
)  # fmt: skip
_ENTRYPOINT = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def validate(settings: dict[str, Any]) -> list[str]:
    """Problems with a scripted adapter's settings (empty when fine)."""
    where = "scripted adapter"
    problems = checks.unknown_keys(settings, SETTINGS_KEYS, where)
    rules = settings.get("rules", [])
    entrypoint = settings.get("entrypoint")
    if "rules" not in settings and entrypoint is None:
        problems.append(f"{where}: needs 'rules', an 'entrypoint', or both")
    if entrypoint is not None and (
        not isinstance(entrypoint, str) or not _ENTRYPOINT.match(entrypoint)
    ):
        problems.append(f"{where}: 'entrypoint' must look like 'package.module:function'")
    if not isinstance(rules, list):
        return [*problems, f"{where}: 'rules' must be a list"]
    for index, rule in enumerate(rules, start=1):
        problems.extend(_rule_problems(rule, f"{where}: rule {index}"))
    return problems


def _rule_problems(rule: Any, where: str) -> list[str]:
    if not isinstance(rule, dict):
        return [f"{where} must be a mapping"]
    problems = checks.unknown_keys(rule, (*MATCH_KEYS, *ACTION_KEYS), where)
    if "default" in rule:
        if "when" in rule or "function" in rule:
            problems.append(f"{where}: 'default' cannot be combined with 'when' or 'function'")
        if not isinstance(rule["default"], str):
            problems.append(f"{where}: 'default' must be the reply text (a string)")
    elif "when" not in rule and "function" not in rule:
        problems.append(f"{where}: needs 'when' (a message regex), 'function' or 'default'")
    elif not any(key in rule for key in ACTION_KEYS):
        problems.append(f"{where}: needs an action ({', '.join(ACTION_KEYS)})")
    if "when" in rule:
        try:
            re.compile(str(rule["when"]), re.IGNORECASE)
        except re.error as exc:
            problems.append(f"{where}: 'when' is not a valid regex: {exc}")
    for key in ("when", "function", "reply", "ask", "fail", "ask_back"):
        if key in rule and not isinstance(rule[key], str):
            problems.append(f"{where}: '{key}' must be a string")
    files = rule.get("files", {})
    if not isinstance(files, dict) or not all(
        isinstance(path, str) and isinstance(text, str) for path, text in files.items()
    ):
        problems.append(f"{where}: 'files' must map paths to text")
    handoff = rule.get("handoff")
    if handoff is not None and not (
        isinstance(handoff, dict)
        and isinstance(handoff.get("agent"), str)
        and isinstance(handoff.get("message", ""), str)
    ):
        problems.append(f"{where}: 'handoff' must be {{agent: NAME, message: TEXT}}")
    ask_crew = rule.get("ask_crew")
    if ask_crew is not None and not (
        isinstance(ask_crew, dict)
        and isinstance(ask_crew.get("crew"), str)
        and isinstance(ask_crew.get("request"), str)
        and isinstance(ask_crew.get("handoff", False), bool)
    ):
        problems.append(
            f"{where}: 'ask_crew' must be {{crew: NAME, request: TEXT, handoff: true|false}}"
        )
    mcp = rule.get("mcp")
    if mcp is not None and not (
        isinstance(mcp, dict)
        and isinstance(mcp.get("server"), str)
        and isinstance(mcp.get("tool"), str)
        and isinstance(mcp.get("arguments", {}), dict)
        and not set(mcp) - {"server", "tool", "arguments"}
    ):
        problems.append(f"{where}: 'mcp' must be {{server: NAME, tool: NAME, arguments: {{…}}}}")
    return problems


@dataclass(frozen=True)
class _Rule:
    spec: dict[str, Any]
    pattern: re.Pattern[str] | None

    def match(self, request: TurnRequest) -> tuple[bool, re.Match[str] | None]:
        """(matched?, the regex match when `when` was used)."""
        if "default" in self.spec:
            return True, None
        if "function" in self.spec and (
            request.kind != "function" or request.function != self.spec["function"]
        ):
            return False, None
        if self.pattern is None:
            return "function" in self.spec, None
        if request.kind == "message" or "function" in self.spec:
            found = self.pattern.search(request.prompt)
            return found is not None, found
        return False, None


class ScriptedAdapter:
    """Answers each turn from the first matching rule, else the entrypoint, else a fallback."""

    def __init__(self, settings: dict[str, Any]) -> None:
        problems = validate(settings)
        if problems:
            raise AdapterError("; ".join(problems))
        self._rules = [
            _Rule(rule, re.compile(rule["when"], re.IGNORECASE) if "when" in rule else None)
            for rule in settings.get("rules", [])
        ]
        self._entrypoint_path: str | None = settings.get("entrypoint")
        self._entrypoint: Callable[[TurnRequest], Any] | None = None

    def run_turn(self, request: TurnRequest) -> TurnResult:
        """One turn: the first rule that matches decides; see the module docstring."""
        for rule in self._rules:
            matched, found = rule.match(request)
            if matched:
                return _apply(rule.spec, _context(request, found), request)
        if self._entrypoint_path:
            return self._call_entrypoint(request)
        if request.kind == "function":
            raise AdapterError(f"no rule for function {request.function}")
        return TurnResult(final_text="")

    def _call_entrypoint(self, request: TurnRequest) -> TurnResult:
        if self._entrypoint is None:
            self._entrypoint = load_entrypoint(self._entrypoint_path or "")
        try:
            returned = self._entrypoint(request)
        except AdapterError:
            raise
        except Exception as exc:  # a user's code: report it as this call's failure
            raise AdapterError(
                f"entrypoint {self._entrypoint_path} raised {type(exc).__name__}: {exc}"
            ) from exc
        if isinstance(returned, TurnResult):
            return returned
        if isinstance(returned, str):
            return TurnResult(final_text=returned)
        if isinstance(returned, dict | list):
            return TurnResult(final_text="", result=returned, has_result=True)
        raise AdapterError(
            f"entrypoint {self._entrypoint_path} returned {type(returned).__name__}; "
            "expected a TurnResult, a dict (the result) or a str (the final text)"
        )


def load_entrypoint(path: str) -> Callable[[TurnRequest], Any]:
    """Import `package.module:attr.path` and return the callable it names."""
    module_name, _, attr_path = path.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for attr in attr_path.split("."):
            target = getattr(target, attr)
    except (ImportError, AttributeError) as exc:
        raise AdapterError(f"cannot load entrypoint {path}: {exc}") from exc
    if not callable(target):
        raise AdapterError(f"entrypoint {path} is not callable")
    return target


def _context(request: TurnRequest, found: re.Match[str] | None) -> TemplateContext:
    return TemplateContext(
        prompt=request.prompt,
        answer=request.answer,
        correction=request.correction,
        function=request.function,
        crew=request.crew_name,
        args=request.args or {},
        match=found,
        history=history_text(request.history),
    )


def _called(spec: Any, ctx: TemplateContext, request: TurnRequest) -> TemplateContext:
    """W10: the rule's function call, made as the source workflow; its status in `call`."""
    if request.functions is None:
        raise AdapterError("only a workflow step's session can call functions")
    if not isinstance(spec, dict) or not spec.get("target") or not spec.get("function"):
        raise AdapterError("a call rule names target, function and (optionally) args")
    args = render_value(spec.get("args") or {}, ctx)
    status = request.functions.call_and_wait(
        render(str(spec["target"]), ctx), render(str(spec["function"]), ctx), args
    )
    if status.get("state") != "succeeded":
        errors = "; ".join(status.get("errors") or []) or str(status.get("state"))
        raise AdapterError(f"the call {status.get('call_id')} did not succeed: {errors}")
    return dataclasses.replace(ctx, call=status)


def _mcp_called(
    spec: dict[str, Any], ctx: TemplateContext, request: TurnRequest
) -> TemplateContext:
    """Issue 28: the rule's MCP tool call through the turn's admitted tools; what came of it
    (a refusal or failure too) in `mcp`."""
    if request.mcp_tools is None:
        raise AdapterError("this turn has no access to attached MCP servers")
    outcome = request.mcp_tools.call(
        render(spec["server"], ctx),
        render(spec["tool"], ctx),
        render_value(spec.get("arguments") or {}, ctx),
    )
    shown = {
        "outcome": outcome.outcome,
        "is_error": outcome.is_error,
        "text": outcome.text,
        "content": outcome.content,
        "structured": outcome.structured_content,
    }
    return dataclasses.replace(ctx, mcp=shown)


def _apply(rule: dict[str, Any], ctx: TemplateContext, request: TurnRequest) -> TurnResult:
    if "ask" in rule and request.answer is None:
        return TurnResult(question=render(rule["ask"], ctx))
    if "fail" in rule:
        raise AdapterError(render(rule["fail"], ctx))
    if "ask_back" in rule and request.answer is None:
        return TurnResult(ask_back=render(rule["ask_back"], ctx))
    if "ask_crew" in rule and request.answer is None:
        spec = rule["ask_crew"]
        return TurnResult(
            crew_request=CrewRequest(
                render(spec["crew"], ctx), render(spec["request"], ctx), spec.get("handoff", False)
            )
        )
    if "handoff" in rule:
        spec = rule["handoff"]
        return TurnResult(
            handoff=Handoff(render(spec["agent"], ctx), render(spec.get("message", ""), ctx))
        )
    if "call" in rule:
        ctx = _called(rule["call"], ctx, request)
    if "mcp" in rule:
        ctx = _mcp_called(rule["mcp"], ctx, request)
    outcome = TurnResult(final_text=render(rule.get("reply", rule.get("default", "")), ctx))
    result_key = (
        "result_on_correction"
        if request.correction is not None and "result_on_correction" in rule
        else "result"
    )
    if result_key in rule:
        outcome.result = render_value(rule[result_key], ctx)
        outcome.has_result = True
    for path, text in rule.get("files", {}).items():
        outcome.files[render(path, ctx)] = render(text, ctx).encode("utf-8")
    return outcome
