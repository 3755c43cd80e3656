"""The real CLIs answer from the scripted model (the harness itself works): Claude Code's
`-p --output-format json` result and Codex's `exec --json` agent_message are the scripted
text, and each CLI's request reached the server in its own API's shape."""

from __future__ import annotations

import json
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
from tests.support.scripted_model import ScriptedModel, Text, ToolCall


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


def test_claude_runs_a_scripted_tool_call_and_returns_its_result(
    model: ScriptedModel, tmp_path: Path
):
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("the word of the day is parsnip\n")
    model.add(ToolCall("Read", {"file_path": str(project / "notes.txt")}), Text("Parsnip."))
    result = claude(model, tmp_path / "home", project, "What does notes.txt say?")
    assert result["result"] == "Parsnip."
    first, second = model.conversation()
    assert "parsnip" not in first.text
    [tool_result] = [
        block
        for message in second.body["messages"]
        for block in (message["content"] if isinstance(message["content"], list) else [])
        if block.get("type") == "tool_result"
    ]
    assert "the word of the day is parsnip" in json.dumps(tool_result)


def test_codex_runs_a_scripted_function_call_and_returns_its_output(
    model: ScriptedModel, tmp_path: Path
):
    project = tmp_path / "project"
    project.mkdir()
    model.add(ToolCall("exec_command", {"cmd": "true"}), Text("Ran it."))
    events = codex(codex_env(model, tmp_path / "home"), project, "Run true.")
    assert agent_messages(events) == ["Ran it."]
    _, second = model.conversation()
    [call] = [item for item in second.body["input"] if item.get("type") == "function_call"]
    [output] = [i for i in second.body["input"] if i.get("type") == "function_call_output"]
    assert call["name"] == "exec_command" and output["call_id"] == call["call_id"]
