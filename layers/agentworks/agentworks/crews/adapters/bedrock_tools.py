"""The platform tools a Bedrock model is offered, and their local execution (SPEC §8, F6, F7).

- `human_feedback(question)` raises a pending question for a person (F7); the turn stops.
- `write_result(result)` (only with an output schema) records the structured result: the
  platform's FUNCTION_RESULT_FILE (F6). The last call wins.
- `write_file(path, content)` adds a text file to the call's output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agentworks.crews.adapters.output_files import safe_relative_path

# A tool the turn adds (bedrock_session_tools): (text, is_error), or None when not its own.
ExtraTool = Callable[[str, Any], "tuple[str, bool] | None"]

HUMAN_FEEDBACK = "human_feedback"
WRITE_RESULT = "write_result"
WRITE_FILE = "write_file"


@dataclass
class ToolEffects:
    """What the tools did during one turn."""

    result: Any = None
    has_result: bool = False
    files: dict[str, bytes] = field(default_factory=dict)
    question: str | None = None
    progress: list[str] = field(default_factory=list)


def tool_config(output_schema: dict[str, Any] | None) -> dict[str, Any]:
    """Converse `toolConfig` offering the platform tools for this turn."""
    tools = [
        _spec(
            HUMAN_FEEDBACK,
            "Ask a person one clear question when you need a decision or information only "
            "they can give. Your turn ends; you continue when they answer.",
            {"question": {"type": "string", "description": "The question for the person."}},
        ),
        _spec(
            WRITE_FILE,
            "Write a UTF-8 text file into this call's output folder.",
            {
                "path": {"type": "string", "description": "Relative path, e.g. report.md."},
                "content": {"type": "string", "description": "The whole file content."},
            },
        ),
    ]
    if output_schema is not None:
        result_property: dict[str, Any] = {
            "description": "The result: JSON matching the output schema in your instructions."
        }
        if output_schema.get("type") == "object":
            result_property["type"] = "object"
        tools.append(
            _spec(
                WRITE_RESULT,
                "Deliver the function's structured result (validated against the output "
                "schema). Call it once, then finish with a one-line summary.",
                {"result": result_property},
            )
        )
    return {"tools": tools}


def _spec(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return {"toolSpec": {"name": name, "description": description, "inputSchema": {"json": schema}}}


def run_tool_uses(
    content: list[dict[str, Any]],
    effects: ToolEffects,
    offered: set[str],
    extra: ExtraTool | None = None,
) -> list[dict[str, Any]]:
    """Execute every toolUse block of an assistant message; return the toolResult blocks.
    `extra` runs the turn's added tools (MCP, functions); their errors carry `status`."""
    results = []
    for block in content:
        use = block.get("toolUse")
        if use is None:
            continue
        name, args = use.get("name", ""), use.get("input") or {}
        ran = extra(name, args) if extra is not None and name in offered else None
        result: dict[str, Any] = {"toolUseId": use["toolUseId"]}
        if ran is not None:
            result["content"] = [{"text": ran[0]}]
            if ran[1]:
                result["status"] = "error"
        else:
            result["content"] = [{"text": _run_one(name, args, effects, offered)}]
        results.append({"toolResult": result})
    return results


def _run_one(name: str, args: Any, effects: ToolEffects, offered: set[str]) -> str:
    # Errors go back to the model as text (no `status` field: not every model accepts it).
    if name not in offered:
        return f"Error: unknown tool '{name}'. Available: {', '.join(sorted(offered))}."
    if not isinstance(args, dict):
        return "Error: tool input must be a JSON object."
    if name == HUMAN_FEEDBACK:
        question = args.get("question")
        if not isinstance(question, str) or not question.strip():
            return "Error: 'question' must be a non-empty string."
        effects.question = question
        return "Question sent to a person; stop now and wait for the answer."
    if name == WRITE_RESULT:
        if "result" not in args:
            return "Error: 'result' is required."
        effects.result, effects.has_result = args["result"], True
        return "Result recorded."
    path, text = args.get("path"), args.get("content")
    if not isinstance(text, str):
        return "Error: 'content' must be a string."
    safe = safe_relative_path(path)
    if safe is None:
        return "Error: 'path' must be a relative path inside the output folder (no '..')."
    effects.files[safe] = text.encode("utf-8")
    effects.progress.append(f"wrote {safe}")
    return f"Wrote {safe} ({len(effects.files[safe])} bytes)."
