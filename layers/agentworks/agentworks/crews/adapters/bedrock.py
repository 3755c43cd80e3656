"""The `bedrock` adapter: Amazon Bedrock's Converse API with the platform tools (SPEC §8).

Settings::

    adapter:
      type: bedrock
      model_id: us.anthropic.claude-3-5-haiku-20241022-v1:0   # model, inference profile or ARN
      max_tokens: 2048        # optional
      temperature: 0.2        # optional
      max_turns: 8            # optional: bound of the tool-use loop (Converse calls per turn)
      pricing: {input_per_million: 0.8, output_per_million: 4.0}   # optional, USD

One turn runs the Converse tool-use loop: call `converse`; while the model stops for
`tool_use`, run the platform tools (`bedrock_tools`) locally — and the turn's admitted MCP
tools and a workflow step's functions (`bedrock_session_tools`) — and send their results
back.
`human_feedback` ends the turn with a question (F7); `end_turn` ends it with the text as the
final answer and, with an output schema, the `write_result` value as the result (F6).

Cost: input/output tokens × the `pricing` setting, else × `PRICES_PER_MILLION` matched by
model-id substring (on-demand list prices when written, so an estimate); 0 for unknown models.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agentworks.crews.adapters import bedrock_tools
from agentworks.crews.adapters import settings_checks as checks
from agentworks.crews.adapters.base import AdapterError, TurnRequest, TurnResult
from agentworks.crews.adapters.bedrock_session_tools import SessionTools

SETTINGS_KEYS = ("type", "model_id", "max_tokens", "temperature", "max_turns", "pricing")
DEFAULT_MAX_TURNS = 8

# USD per million (input, output) tokens. The longest key contained in the model id wins, so
# cross-region profiles ("us.anthropic…") and ARNs resolve too.
PRICES_PER_MILLION: dict[str, tuple[float, float]] = {
    "anthropic.claude-3-haiku": (0.25, 1.25),
    "anthropic.claude-3-5-haiku": (0.80, 4.00),
    "anthropic.claude-haiku-4-5": (1.00, 5.00),
    "anthropic.claude-3-5-sonnet": (3.00, 15.00),
    "anthropic.claude-3-7-sonnet": (3.00, 15.00),
    "anthropic.claude-sonnet-4": (3.00, 15.00),
    "anthropic.claude-opus-4": (15.00, 75.00),
    "amazon.nova-micro": (0.035, 0.14),
    "amazon.nova-lite": (0.06, 0.24),
    "amazon.nova-pro": (0.80, 3.20),
}
# Stop reasons whose text is a usable answer; any other (guardrail, filter, malformed
# output, context overflow) fails the turn.
_ANSWER_STOPS = {"end_turn", "stop_sequence", "max_tokens"}


def validate(settings: dict[str, Any]) -> list[str]:
    """Problems with a bedrock adapter's settings (empty when fine)."""
    where = "bedrock adapter"
    problems = checks.unknown_keys(settings, SETTINGS_KEYS, where)
    problems += checks.required_str(settings, "model_id", where)
    problems += checks.optional_int(settings, "max_tokens", where, 1, 1_000_000)
    problems += checks.optional_number(settings, "temperature", where, 0.0, 1.0)
    problems += checks.optional_int(settings, "max_turns", where, 1, 100)
    pricing = settings.get("pricing")
    if pricing is not None:
        if not isinstance(pricing, dict):
            problems.append(f"{where}: 'pricing' must be {{input_per_million, output_per_million}}")
        else:
            keys = ("input_per_million", "output_per_million")
            problems += checks.unknown_keys(pricing, keys, f"{where} pricing")
            for key in keys:
                if key not in pricing:
                    problems.append(f"{where}: pricing needs '{key}'")
                problems += checks.optional_number(pricing, key, f"{where} pricing", 0.0, 1e6)
    return problems


def prices_for(model_id: str, pricing: dict[str, float] | None = None) -> tuple[float, float]:
    """USD per million (input, output) tokens for `model_id`; (0, 0) when unknown."""
    if pricing:
        return float(pricing["input_per_million"]), float(pricing["output_per_million"])
    matches = [key for key in PRICES_PER_MILLION if key in model_id]
    return PRICES_PER_MILLION[max(matches, key=len)] if matches else (0.0, 0.0)


class BedrockAdapter:
    """Runs one agent turn as a bounded Converse tool-use loop."""

    def __init__(self, settings: dict[str, Any], client_factory: Callable[[], Any]) -> None:
        problems = validate(settings)
        if problems:
            raise AdapterError("; ".join(problems))
        self._model_id: str = settings["model_id"]
        self._max_turns: int = settings.get("max_turns", DEFAULT_MAX_TURNS)
        self._inference = {
            name: settings[key]
            for key, name in (("max_tokens", "maxTokens"), ("temperature", "temperature"))
            if key in settings
        }
        self._prices = prices_for(self._model_id, settings.get("pricing"))
        self._client_factory = client_factory

    def run_turn(self, request: TurnRequest) -> TurnResult:
        """Converse until the model answers, asks a person, or `max_turns` runs out."""
        client = self._client_factory()
        messages = build_messages(request)
        tools = bedrock_tools.tool_config(request.output_schema)
        platform = {tool["toolSpec"]["name"] for tool in tools["tools"]}
        # Issue 28: the admitted MCP tools and a workflow step's functions, beside them.
        session = SessionTools.of(request, platform)
        tools["tools"].extend(session.specs)
        offered = platform | session.names()
        effects = bedrock_tools.ToolEffects()
        tokens = [0, 0]
        for _ in range(self._max_turns):
            response = self._converse(client, request, messages, tools)
            usage = response.get("usage") or {}
            tokens[0] += int(usage.get("inputTokens", 0))
            tokens[1] += int(usage.get("outputTokens", 0))
            message = response["output"]["message"]
            messages.append(message)
            reason = response.get("stopReason")
            content = message.get("content", [])
            if reason == "tool_use" and not any("toolUse" in block for block in content):
                reason = "end_turn"  # nothing to run: the text is the answer
            if reason != "tool_use":
                return self._answer(reason, message, effects, self._cost(tokens))
            effects.progress.extend(text for text in _texts(message) if text.strip())
            results = bedrock_tools.run_tool_uses(content, effects, offered, session.run)
            if effects.question is not None:
                return TurnResult(
                    question=effects.question,
                    files=effects.files,
                    cost_usd=self._cost(tokens),
                    progress=effects.progress,
                )
            messages.append({"role": "user", "content": results})
        raise AdapterError(
            f"the model was still calling tools after {self._max_turns} Converse calls "
            "(max_turns); raise max_turns or simplify the task"
        )

    def _converse(
        self, client: Any, request: TurnRequest, messages: list[dict[str, Any]], tools: Any
    ) -> dict[str, Any]:
        from botocore.exceptions import BotoCoreError, ClientError

        params: dict[str, Any] = {
            "modelId": self._model_id,
            "system": [{"text": system_prompt(request)}],
            "messages": messages,
            "toolConfig": tools,
        }
        if self._inference:
            params["inferenceConfig"] = self._inference
        try:
            return client.converse(**params)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            code = error.get("Code", "Error")
            hint = _HINTS.get(code, "")
            raise AdapterError(
                f"Bedrock converse failed for model {self._model_id}: "
                f"{code}: {error.get('Message', '')}{hint}"
            ) from exc
        except BotoCoreError as exc:
            raise AdapterError(
                f"Bedrock converse failed for model {self._model_id}: {exc}"
            ) from exc

    def _answer(
        self,
        reason: str | None,
        message: dict[str, Any],
        effects: bedrock_tools.ToolEffects,
        cost: float,
    ) -> TurnResult:
        if reason not in _ANSWER_STOPS:
            raise AdapterError(
                f"Bedrock model {self._model_id} stopped without an answer: {reason}"
            )
        if reason == "max_tokens":
            effects.progress.append("the answer was cut at max_tokens")
        return TurnResult(
            final_text="\n".join(_texts(message)),
            result=effects.result,
            has_result=effects.has_result,
            files=effects.files,
            cost_usd=cost,
            progress=effects.progress,
        )

    def _cost(self, tokens: list[int]) -> float:
        input_price, output_price = self._prices
        return round((tokens[0] * input_price + tokens[1] * output_price) / 1_000_000, 8)


_HINTS = {
    "AccessDeniedException": (
        " (enable access to this model in the Bedrock console of this region and allow "
        "bedrock:InvokeModel to the step runner's role)"
    ),
    "ResourceNotFoundException": " (check model_id: is the model offered in this region?)",
    "ThrottlingException": " (the account's Bedrock quota is exhausted; retry the call later)",
}


def system_prompt(request: TurnRequest) -> str:
    """The Crew's instructions, plus what a function call must deliver."""
    parts = [request.instructions.strip() or f"You are {request.crew_name}, a hosted agent."]
    if request.kind == "function":
        parts.append(f"You are carrying out one call of the function `{request.function}`.")
        if request.output_schema is not None:
            schema = json.dumps(request.output_schema, ensure_ascii=False, sort_keys=True)
            parts.append(
                "The result must be JSON matching this JSON Schema:\n"
                f"{schema}\n"
                "Deliver it by calling the write_result tool, then finish with a one-line "
                "summary. The platform validates the result."
            )
        else:
            parts.append("Your final answer is the function's result.")
    parts.append(
        "Use write_file for files worth keeping. If only a person can decide or supply "
        "something, call human_feedback with one clear question."
    )
    return "\n\n".join(parts)


def build_messages(request: TurnRequest) -> list[dict[str, Any]]:
    """History, then the prompt, the person's answer and the correction, as Converse messages.

    Consecutive turns of one role merge (Converse wants alternating roles) and the
    conversation starts with the user.
    """
    turns: list[tuple[str, str]] = [
        ("assistant" if entry.get("role") == "assistant" else "user", entry.get("content", ""))
        for entry in request.history
    ]
    turns.append(("user", request.prompt or "(no text)"))
    if request.answer is not None:
        turns.append(("user", f"A person answered your human_feedback question:\n{request.answer}"))
    if request.correction is not None:
        turns.append(
            (
                "user",
                "Your previous result did not validate against the output schema:\n"
                f"{request.correction}\nCall write_result again with a corrected result.",
            )
        )
    messages: list[dict[str, Any]] = []
    for role, text in turns:
        if not text or not text.strip():
            continue  # Converse rejects blank text blocks
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].append({"text": text})
        else:
            messages.append({"role": role, "content": [{"text": text}]})
    if messages[0]["role"] == "assistant":
        messages.insert(0, {"role": "user", "content": [{"text": "(earlier conversation)"}]})
    return messages


def _texts(message: dict[str, Any]) -> list[str]:
    return [block["text"] for block in message.get("content", []) if "text" in block]
