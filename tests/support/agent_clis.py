"""Stand-ins for the `claude` and `codex` executables (issue 10 item 6): put first on PATH,
they print what each CLI documents for a headless run (CLI-HOOKS.md; Claude Code's
`--output-format json` result object, Codex's `exec --json` JSONL events) and record every
command line, so tests never run the real CLIs or reach their networks.

What the prompt (the argument after `--`) asks for:
- `FAIL`: the CLI fails (Claude: `is_error` with exit 1; Codex: `turn.failed`, exit 1);
- `SLEEP <seconds>`: it takes that long first;
- a first prompt asking for "only a JSON value": a wrong answer (not JSON), so the step's
  correction turn runs; the correction (a resumed turn) answers `{"verdict": "ok"}`;
- anything else: "<command> answered: <prompt>".
A resumed turn (`--resume ID` / `resume ID`) keeps the session id; a first one gets a new one.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

COST_USD = 0.0125  # what the Claude stand-in reports per turn
LOG_ENV = "AGENTWORKS_STAND_IN_LOG"

_SCRIPT = r"""
import json, os, re, sys, time, uuid

command, argv = sys.argv[1], sys.argv[2:]
prompt = argv[argv.index("--") + 1] if "--" in argv else ""
options = argv[: argv.index("--")] if "--" in argv else argv
resume = None
if command == "claude" and "--resume" in options:
    resume = options[options.index("--resume") + 1]
if command == "codex" and "resume" in options:
    resume = options[options.index("resume") + 1]
with open(os.environ["AGENTWORKS_STAND_IN_LOG"], "a") as log:
    record = {"command": command, "argv": argv, "cwd": os.getcwd(), "pid": os.getpid()}
    log.write(json.dumps(record) + "\n")
slept = re.search(r"SLEEP (\d+(?:\.\d+)?)", prompt)
if slept:
    time.sleep(float(slept.group(1)))
session = resume or str(uuid.uuid4())
failed = "FAIL" in prompt
if prompt.startswith("Your last answer does not satisfy"):
    answer = '{"verdict": "ok"}'
elif "only a JSON value" in prompt:
    answer = "Looks fine to me."
else:
    answer = f"{command} answered: {prompt}"
if command == "claude":
    result = {
        "type": "result",
        "subtype": "error_during_execution" if failed else "success",
        "is_error": failed,
        "duration_ms": 1200,
        "num_turns": 1,
        "result": "Stand-in failure: the prompt asked for it" if failed else answer,
        "session_id": session,
        "total_cost_usd": 0.0125,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    print(json.dumps(result))
    sys.exit(1 if failed else 0)
events = [{"type": "thread.started", "thread_id": session}, {"type": "turn.started"}]
if failed:
    events.append({"type": "turn.failed", "error": {"message": "Stand-in failure: asked for it"}})
else:
    events += [
        {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "hm"}},
        {"type": "item.completed", "item": {"id": "item_1", "type": "agent_message",
                                            "text": answer}},
        {"type": "turn.completed",
         "usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 5}},
    ]
for event in events:
    print(json.dumps(event))
sys.exit(1 if failed else 0)
"""


def install(bin_dir: Path, log: Path) -> dict[str, str]:
    """Writes `claude` and `codex` into `bin_dir`; returns the environment that puts them
    first on PATH and records their command lines in `log` (one JSON line per run)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "stand_in_cli.py"
    script.write_text(_SCRIPT)
    for command in ("claude", "codex"):
        path = bin_dir / command
        path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" {command} "$@"\n')
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    log.touch()
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        LOG_ENV: str(log),
    }


def runs(log: Path) -> list[dict[str, Any]]:
    """Each recorded run: its command, argv, working directory and pid, oldest first."""
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
