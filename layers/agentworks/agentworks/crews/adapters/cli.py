"""The `cli` adapter: a workflow step's turn runs as a real local coding-agent session on a
computer whose bridge opted in as a runner (SPEC §8, issue 10 item 6).

Settings::

    adapter:
      type: cli
      command: claude            # or codex: the executable the runner finds on its PATH
      model: sonnet              # optional: --model
      args: [--permission-mode, acceptEdits]   # optional, from ALLOWED_ARGS only
      timeout_seconds: 1800      # optional: the runner stops the CLI after this long

A turn becomes RunnerWork: the platform stores it as a runner job and the state machine
waits until a runner claims it, runs the CLI headless (`claude -p … --output-format json`,
`codex exec --json …`), resuming the step's session when it continues one, and reports.
The allow-list is checked here when the profile is defined and again by the runner before
it starts anything: a profile cannot switch a person's CLI out of its permission checks.

Standard library and `agentworks.limits` only: the bridge imports this module.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentworks import limits
from agentworks.crews.adapters import settings_checks as checks
from agentworks.crews.adapters.base import AdapterError, RunnerWork, TurnRequest, TurnResult

SETTINGS_KEYS = ("type", "command", "model", "args", "timeout_seconds")
COMMANDS = ("claude", "codex")
MODEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,99}$")
# What a reported session id may look like: it goes back on the CLI's command line.
SESSION_ID = re.compile(
    rf"^[A-Za-z0-9][A-Za-z0-9._:-]{{0,{limits.RUNNER_SESSION_ID_MAX_CHARS - 1}}}$"
)
# Per command, each flag a profile may pass and its values: a set (one of them), a range
# (an integer in it) or None (a flag without a value). Nothing that skips permission
# prompts or the sandbox (bypassPermissions, --dangerously-*, danger-full-access), adds
# tools, directories, MCP servers or settings.
ALLOWED_ARGS: dict[str, dict[str, frozenset[str] | range | None]] = {
    "claude": {
        "--permission-mode": frozenset({"default", "acceptEdits", "plan"}),
        "--max-turns": range(1, 201),
    },
    "codex": {
        "--sandbox": frozenset({"read-only", "workspace-write"}),
        "--full-auto": None,
        "--skip-git-repo-check": None,
    },
}


def check_args(command: str, args: Any) -> list[str]:
    """Problems with a profile's `args` for `command` (empty when every one is allowed)."""
    where = "cli adapter"
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        return [f"{where}: 'args' is a list of strings"]
    if len(args) > limits.RUNNER_ARGS_MAX:
        return [f"{where}: 'args' holds at most {limits.RUNNER_ARGS_MAX} entries"]
    allowed = ALLOWED_ARGS.get(command, {})
    known = ", ".join(sorted(allowed)) or "none"
    problems, at = [], 0
    while at < len(args):
        flag = args[at]
        if flag not in allowed:
            problems.append(f"{where}: argument {flag!r} is not allowed for {command} ({known})")
            at += 1
            continue
        values = allowed[flag]
        if values is None:
            at += 1
            continue
        value = args[at + 1] if at + 1 < len(args) else None
        if value is None or not _allowed_value(values, value):
            problems.append(f"{where}: {flag} takes {_describe(values)}")
        at += 2
    return problems


def _allowed_value(values: frozenset[str] | range, value: str) -> bool:
    if isinstance(values, range):
        return value.isdigit() and int(value) in values
    return value in values


def _describe(values: frozenset[str] | range) -> str:
    if isinstance(values, range):
        return f"an integer from {values.start} to {values.stop - 1}"
    return "one of " + ", ".join(sorted(values))


def validate(settings: dict[str, Any]) -> list[str]:
    """Problems with a cli adapter's settings (empty when fine)."""
    where = "cli adapter"
    problems = checks.unknown_keys(settings, SETTINGS_KEYS, where)
    command = settings.get("command")
    if command not in COMMANDS:
        problems.append(f"{where}: 'command' is one of {', '.join(COMMANDS)}")
    model = settings.get("model")
    if model is not None and (not isinstance(model, str) or not MODEL.match(model)):
        problems.append(
            f"{where}: 'model' is a model name: 1–100 letters, digits, '.', '_', ':', '/' or "
            "'-', from a letter or digit"
        )
    if "args" in settings and command in COMMANDS:
        problems += check_args(str(command), settings["args"])
    problems += checks.optional_int(
        settings,
        "timeout_seconds",
        where,
        limits.RUNNER_TIMEOUT_MIN_SECONDS,
        limits.RUNNER_TIMEOUT_MAX_SECONDS,
    )
    return problems


class CliAdapter:
    """Turns each turn into work for a local runner."""

    def __init__(self, settings: dict[str, Any]) -> None:
        problems = validate(settings)
        if problems:
            raise AdapterError("; ".join(problems))
        self._settings = settings

    def run_turn(self, request: TurnRequest) -> TurnResult:
        prompt = job_prompt(request)
        if len(prompt) > limits.RUNNER_PROMPT_MAX_CHARS:
            raise AdapterError(
                f"the prompt is {len(prompt):,} characters; a cli step hands the CLI at most "
                f"{limits.RUNNER_PROMPT_MAX_CHARS:,} (shorten the prompt or its variables)"
            )
        settings = self._settings
        return TurnResult(
            runner_work=RunnerWork(
                command=str(settings["command"]),
                prompt=prompt,
                model=settings.get("model"),
                args=tuple(settings.get("args") or ()),
                timeout_seconds=int(
                    settings.get("timeout_seconds") or limits.RUNNER_TIMEOUT_DEFAULT_SECONDS
                ),
                resume=request.session_id,
            )
        )


def job_prompt(request: TurnRequest) -> str:
    """What the CLI is asked. A resumed session holds its history, so a correction or an
    answer is sent alone; a first prompt carries the output schema it must satisfy."""
    if request.correction is not None:
        return (
            "Your last answer does not satisfy the step's output schema: "
            f"{request.correction}\nAnswer again with only the corrected JSON value."
        )
    if request.answer is not None:
        return request.answer
    if request.output_schema is None:
        return request.prompt
    schema = json.dumps(request.output_schema, ensure_ascii=False, sort_keys=True)
    return (
        f"{request.prompt}\n\nAnswer with only a JSON value (no other text) matching this "
        f"JSON Schema:\n{schema}"
    )
