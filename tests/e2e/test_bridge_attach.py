"""Attaching as a person does it (issue 25 items 1 and 4), with the bridge as its own process
against `agentworks dev`: `agentworks bridge install` puts the hooks (by the executable's full
path) and Claude Code's /agentworks command in a project; a bare `agentworks attach NAME` run
inside a chat attaches that chat, and from a terminal the project's one live chat (or names
them all); `agentworks detach NAME` works by name; `agents` says when hooks cannot run.

The chat is a stand-in `claude` process: it runs the installed hook commands as Claude Code
does (through a shell, the payload on stdin) and, as its shell tool, `agentworks attach`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.api_helpers import api, named_agent
from tests.e2e.conftest import LocalStack
from tests.e2e.test_bridge_process import AGENTWORKS, BridgeRun, bridge

pytestmark = pytest.mark.e2e
__all__ = ["bridge"]

CHAT = textwrap.dedent(
    """
    import json, os, subprocess, sys, time
    session_id, then = sys.argv[1], sys.argv[2:]
    settings = json.load(open(".claude/settings.local.json"))
    [group] = [g for g in settings["hooks"]["UserPromptSubmit"] if "bridge" in str(g)]
    payload = {"session_id": session_id, "cwd": os.getcwd(), "prompt": "hello",
               "hook_event_name": "UserPromptSubmit"}
    subprocess.run(["sh", "-c", group["hooks"][0]["command"]], input=json.dumps(payload),
                   text=True, check=True, capture_output=True)
    print("hooked", flush=True)
    if then and then[0] == "shell":  # the chat's shell tool runs a command
        done = subprocess.run(["sh", "-c", then[1]], capture_output=True, text=True)
        print(json.dumps({"code": done.returncode, "out": done.stdout, "err": done.stderr}))
    else:
        time.sleep(120)
    """
)


class Project:
    def __init__(self, local_stack: LocalStack, bridge: BridgeRun, root: Path) -> None:
        self.root = root / "app"
        self.root.mkdir()
        self.stand_in = root / "bin" / "claude"
        self.stand_in.parent.mkdir()
        self.stand_in.write_text(CHAT)
        self.config = local_stack.admin_config
        self.env = bridge.env
        self.chats: list[subprocess.Popen[str]] = []

    def cli(self, *words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(AGENTWORKS), "--config", str(self.config), *words],
            capture_output=True, text=True, env=self.env, timeout=60, cwd=self.root,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def chat(self, session_id: str, *then: str) -> subprocess.Popen[str]:
        """A live chat in the project whose first prompt ran the UserPromptSubmit hook."""
        process = subprocess.Popen(
            [sys.executable, str(self.stand_in), session_id, *then],
            cwd=self.root, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        self.chats.append(process)
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "hooked", process.stderr
        return process

    def close(self) -> None:
        for process in self.chats:
            process.kill()
            process.wait(10)


@pytest.fixture
def project(local_stack: LocalStack, bridge: BridgeRun, tmp_path: Path) -> Any:
    made = Project(local_stack, bridge, tmp_path)
    try:
        yield made
    finally:
        made.close()


def test_install_puts_hooks_by_full_path_and_the_claude_command(project: Project) -> None:
    done = project.cli("bridge", "install")
    assert done.returncode == 0, done.stderr
    settings = json.loads((project.root / ".claude" / "settings.local.json").read_text())
    command = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert command.split()[0] == str(AGENTWORKS.absolute())  # not a bare `agentworks`
    command_file = project.root / ".claude" / "commands" / "agentworks.md"
    assert "argument-hint: attach [NAME]" in command_file.read_text()
    assert (project.root / ".codex" / "hooks.json").exists()
    assert "trust each AgentWorks hook" in done.stdout  # Codex's trust, said
    assert project.cli("bridge", "install").stdout == done.stdout  # again: nothing new
    mine = "My own /agentworks command\n"
    command_file.write_text(mine)
    assert project.cli("bridge", "install").returncode == 0
    assert command_file.read_text() == mine  # the person's own file is theirs


def test_an_agent_attaches_its_own_chat_with_a_bare_attach(project: Project) -> None:
    assert project.cli("bridge", "install", "--provider", "claude").returncode == 0
    project.chat("aaaaaaaa-0000-4000-8000-000000000001")  # another live chat of the project
    inside = project.chat(
        "bbbbbbbb-0000-4000-8000-000000000002", "shell", f"{AGENTWORKS} attach own-chat"
    )
    out, _ = inside.communicate(timeout=60)
    said = json.loads(out.strip().splitlines()[-1])
    assert said["code"] == 0, said
    assert "attached as own-chat" in said["out"]
    listed = project.cli("agents").stdout
    assert "own-chat" in listed and "claude:bbbbbbbb-0000-4000-8000-000000000002" in listed
    assert "aaaaaaaa" not in listed


def test_from_a_terminal_the_projects_live_chat_is_attached_or_named(project: Project) -> None:
    assert project.cli("bridge", "install", "--provider", "claude").returncode == 0
    nothing = project.cli("attach", "early")
    assert nothing.returncode != 0 and "no live chat of" in nothing.stderr
    project.chat("cccccccc-0000-4000-8000-000000000003")
    done = project.cli("attach", "terminal-pick", "Picks up work")
    assert done.returncode == 0, done.stderr
    assert "attached as terminal-pick" in done.stdout
    assert "claude:cccccccc" in project.cli("agents").stdout
    project.chat("dddddddd-0000-4000-8000-000000000004")
    several = project.cli("attach", "which-one")
    assert several.returncode != 0 and "several live chats" in several.stderr
    assert "cccccccc" in several.stderr and "dddddddd" in several.stderr
    typo = project.cli("detach", "terminal-pik")  # issue 29: the nearest attached name
    assert typo.returncode == 1 and "did you mean terminal-pick?" in typo.stderr
    detached = project.cli("detach", "terminal-pick")
    assert detached.returncode == 0 and "no longer receives messages" in detached.stdout
    assert "terminal-pick" not in project.cli("agents").stdout


def test_agents_says_when_a_chats_hooks_cannot_run(project: Project) -> None:
    assert project.cli("bridge", "install", "--provider", "claude").returncode == 0
    project.chat("eeeeeeee-0000-4000-8000-000000000005")
    assert project.cli("attach", "hooked").returncode == 0
    assert "hooks:" not in project.cli("agents").stdout
    settings_file = project.root / ".claude" / "settings.local.json"
    settings = settings_file.read_text()
    settings_file.write_text(settings.replace(str(AGENTWORKS.absolute()), "agentworks"))
    listed = project.cli("agents").stdout
    assert "hooks: the Stop hook runs a bare `agentworks`" in listed
    moved = str(AGENTWORKS.absolute()).replace("agentworks", "gone/agentworks")
    settings_file.write_text(settings.replace(str(AGENTWORKS.absolute()), moved))
    assert f"runs {moved}, which is not there" in project.cli("agents").stdout


def _in_chat(project: Project, session_id: str, command: str) -> dict[str, Any]:
    """What `command` said, run by the chat's own shell tool."""
    chat = project.chat(session_id, "shell", command)
    out, _ = chat.communicate(timeout=60)
    return dict(json.loads(out.strip().splitlines()[-1]))


def test_an_attached_chat_messages_from_its_shell_as_its_own_name(
    local_stack: LocalStack, project: Project
) -> None:
    """Issue 25 item 6: `agentworks bridge message …` acts as the attachment of the chat it
    runs in (its own child connection and name), for a chat whose tools are not loaded."""
    assert project.cli("bridge", "install", "--provider", "claude").returncode == 0
    session_id = "ffffffff-0000-4000-8000-000000000006"
    said = _in_chat(project, session_id, f"{AGENTWORKS} attach shell-sender")
    assert said["code"] == 0, said
    peer = named_agent(local_stack, "shell-peer")
    sent = _in_chat(
        project, session_id,
        f"{AGENTWORKS} bridge message send --provider claude --target agent:shell-peer "
        "--message 'from the shell' --json",
    )  # fmt: skip
    assert sent["code"] == 0, sent
    status, page, _ = api(local_stack, "GET", "/v1/messages?agent_name=shell-peer", peer)
    assert status == 200, page
    [received] = [m for m in page["messages"] if m["body"] == "from the shell"]
    assert received["sender"] == "agent:shell-sender"
    peers = _in_chat(project, session_id, f"{AGENTWORKS} bridge message peers")
    assert peers["code"] == 0 and "shell-peer" in peers["out"], peers
    first = _in_chat(project, session_id, f"{AGENTWORKS} bridge message purpose Sends things")
    assert first["code"] == 0, first
    again = _in_chat(project, session_id, f"{AGENTWORKS} bridge message purpose Sends more")
    assert again["code"] != 0 and "at most once a minute" in again["err"], again
    outside = project.cli("bridge", "message", "peers")  # a terminal, not the chat's shell
    assert outside.returncode != 0 and "not an attached chat's shell" in outside.stderr
