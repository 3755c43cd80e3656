"""The real CLIs answer from the scripted model (the harness itself works): Claude Code's
`-p --output-format json` result and Codex's `exec --json` agent_message are the scripted
text, and each CLI's request reached the server in its own API's shape."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.clis.conftest import (
    CLAUDE,
    CLAUDE_VERSION,
    CODEX,
    CODEX_VERSION,
    agent_messages,
    claude,
    codex,
    codex_env,
)
from tests.support.scripted_model import ScriptedModel, Text


def test_the_pinned_versions_are_the_ones_installed(tmp_path: Path):
    for executable, version in ((CLAUDE, CLAUDE_VERSION), (CODEX, CODEX_VERSION)):
        done = subprocess.run(
            [str(executable), "--version"], capture_output=True, text=True, timeout=30,
            env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert version in done.stdout


def test_claude_print_returns_the_scripted_text(model: ScriptedModel, tmp_path: Path):
    model.add(Text("Hello from the scripted model."))
    project = tmp_path / "project"
    project.mkdir()
    result = claude(model, tmp_path / "home", project, "hello")
    assert result["result"] == "Hello from the scripted model."
    assert result["is_error"] is False
    [asked] = model.conversation()
    assert asked.path.startswith("/v1/messages")
    assert asked.headers.get("x-api-key") == "sk-ant-scripted"
    assert asked.body["stream"] is True
    assert "hello" in asked.text


def test_codex_exec_returns_the_scripted_agent_message(model: ScriptedModel, tmp_path: Path):
    model.add(Text("Hello from the scripted model."))
    project = tmp_path / "project"
    project.mkdir()
    events = codex(codex_env(model, tmp_path / "home"), project, "hello")
    assert agent_messages(events) == ["Hello from the scripted model."]
    assert events[-1]["type"] == "turn.completed"
    [asked] = model.conversation()
    assert asked.path == "/v1/responses"
    assert asked.body["model"] == "scripted-model"
    assert "hello" in asked.text
