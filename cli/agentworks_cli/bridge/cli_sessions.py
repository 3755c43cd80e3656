"""One claimed job's turn as a headless CLI run (issue 10 item 6): its command line, and
what the CLI printed read as the report.

Claude Code: `claude -p --output-format json [--model M] [args] [--resume ID] -- PROMPT`
prints one JSON object (`result`, `session_id`, `total_cost_usd`, `is_error`). Codex:
`codex exec --json [--model M] [args] [resume ID] -- PROMPT` prints JSONL events
(`thread.started` with the `thread_id`, `item.completed` items of type `agent_message`,
`turn.completed`, `turn.failed` / `error`); it reports tokens, not dollars, so its cost is 0.
The prompt goes after `--`, so no prompt is read as an option; everything else on the line is
checked against the adapter's rules again here, whatever the server sent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentworks import limits
from agentworks.crews.adapters.cli import COMMANDS, MODEL, SESSION_ID, check_args

TAIL_CHARS = 600  # of a CLI's stderr, when it failed without saying why


class Refused(Exception):
    """The job asks for something this runner does not run (reported as the step's error)."""


@dataclass(frozen=True)
class Outcome:
    output: str | None
    session_id: str | None
    cost_usd: float
    error: str | None

    def report(self) -> dict[str, Any]:
        """The finish body's fields (the runner adds its id)."""
        body: dict[str, Any] = {"cost_usd": self.cost_usd}
        if self.error is not None:
            body["error"] = _shortened(self.error, limits.RUNNER_ERROR_MAX_CHARS)
        else:
            body["output"] = _shortened(self.output or "", limits.RUNNER_OUTPUT_MAX_CHARS)
        if self.session_id is not None:
            body["session_id"] = self.session_id
        return body


def command_line(job: dict[str, Any], executable: str) -> list[str]:
    """The argv for the job's turn; Refused when anything on it is not allowed."""
    command, model, resume = job.get("command"), job.get("model"), job.get("resume")
    args, prompt = job.get("args") or [], job.get("prompt")
    if command not in COMMANDS:
        raise Refused(f"this runner runs {', '.join(COMMANDS)}, not {command!r}")
    problems = check_args(str(command), args)
    if model is not None and (not isinstance(model, str) or not MODEL.match(model)):
        problems.append(f"model {model!r} is not a model name")
    if resume is not None and (not isinstance(resume, str) or not SESSION_ID.match(resume)):
        problems.append("the session id to resume is malformed")
    if not isinstance(prompt, str) or len(prompt) > limits.RUNNER_PROMPT_MAX_CHARS:
        problems.append("the prompt is missing or too long")
    if problems:
        raise Refused("; ".join(problems))
    chosen = ["--model", model] if model else []
    if command == "claude":
        argv = [executable, "-p", "--output-format", "json", *chosen, *args]
        argv += ["--resume", resume] if resume else []
    else:
        argv = [executable, "exec", "--json", *chosen, *args]
        argv += ["resume", resume] if resume else []
    return [*argv, "--", prompt]


def outcome(command: str, stdout: str, stderr: str, returncode: int) -> Outcome:
    """What the CLI's run comes to, from what it printed and its exit code."""
    read = _claude if command == "claude" else _codex
    found = read(stdout, stderr, returncode)
    if found.error is None and (found.session_id is None or not SESSION_ID.match(found.session_id)):
        return Outcome(None, None, found.cost_usd, f"{command} reported no usable session id")
    return found


def _claude(stdout: str, stderr: str, code: int) -> Outcome:
    result = _json_object(stdout)
    if result is None:
        return Outcome(
            None, None, 0.0, f"claude exited {code} without its JSON result{_tail(stderr)}"
        )
    session = result.get("session_id") if isinstance(result.get("session_id"), str) else None
    cost = _cost(result.get("total_cost_usd"))
    if result.get("is_error") or code != 0:
        why = result.get("result") or result.get("subtype") or f"exit code {code}"
        return Outcome(None, session, cost, f"claude: {why}")
    text = result.get("result")
    return Outcome(text if isinstance(text, str) else "", session, cost, None)


def _codex(stdout: str, stderr: str, code: int) -> Outcome:
    thread, messages, failure, completed = None, [], None, False
    for line in stdout.splitlines():
        event = _json_object(line)
        if event is None:
            continue
        kind = event.get("type")
        if kind == "thread.started" and isinstance(event.get("thread_id"), str):
            thread = thread or event["thread_id"]
        elif kind == "item.completed":
            item = event.get("item") or {}
            if item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                messages.append(item["text"])
        elif kind == "turn.completed":
            completed = True
        elif kind == "turn.failed":
            failure = str((event.get("error") or {}).get("message") or "the turn failed")
        elif kind == "error" and failure is None:
            failure = str(event.get("message") or "error")
    if (failure is not None and not completed) or code != 0:
        why = failure or f"exited {code}{_tail(stderr)}"
        return Outcome(None, thread, 0.0, f"codex: {why}")
    return Outcome(messages[-1] if messages else "", thread, 0.0, None)


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _cost(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return 0.0
    return float(min(max(value, 0.0), limits.RUNNER_COST_MAX_USD))


def _tail(stderr: str) -> str:
    text = stderr.strip()
    return f": {text[-TAIL_CHARS:]}" if text else ""


def _shortened(text: str, most: int) -> str:
    marker = "\n[shortened to fit the report]"
    return text if len(text) <= most else text[: most - len(marker)] + marker
