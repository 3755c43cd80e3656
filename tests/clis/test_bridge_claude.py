"""The bridge judged by the real Claude Code (issue 25 item 7): against `agentworks dev`, a
person attaches a chat with `agentworks attach` (which installs the project's hooks), another
agent sends to that name, and the message reaches the model in the next request of a
`claude -p --resume` turn — once — through the real Stop hook; a chat that is not attached,
in the same project, gets nothing (B, §9 and §9b).

Claude Code ends every `-p` run with SessionEnd: the next resumed turn attaches the chat
again, and receives. A typed `/agentworks attach` reaches the hook through the command file
`agentworks attach` installs (Claude Code rejects an unknown slash command before any hook).
The hooks name `agentworks` by its full path: the CLI's PATH here does not have it.
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path

from tests.clis.conftest import VENV_BIN, Bridge, claude, path_without_agentworks, send
from tests.e2e.api_helpers import named_agent, read_pages
from tests.e2e.conftest import LocalStack
from tests.support.scripted_model import Recorded, ScriptedModel, Text, ToolCall, Turn


class Chat:
    """One Claude Code session in a project, run headless turn by turn."""

    def __init__(self, model: ScriptedModel, bridge: Bridge, root: Path) -> None:
        self.model, self.bridge = model, bridge
        self.home, self.project = root / "home", root / "project"
        self.project.mkdir(parents=True, exist_ok=True)
        self.session = str(uuid.uuid4())
        self._started = False

    def turn(
        self,
        prompt: str,
        answer: str = "Noted.",
        *then: Turn,
        args: tuple[str, ...] = (),
        **env: str,
    ) -> list[str]:
        """One `claude -p` turn (the first creates the session, later ones resume it): the
        model answers `answer`, then plays `then` (after a Stop continuation); the text of
        each conversation request the model received during it."""
        self.model.add(Text(answer), *then)
        before = len(self.model.conversation())
        flag = "--resume" if self._started else "--session-id"
        result = claude(
            self.model, self.home, self.project, *args, flag, self.session, prompt,
            AGENTWORKS_BRIDGE_HOME=str(self.bridge.home), **env,
        )  # fmt: skip
        self._started = True
        assert result["session_id"] == self.session
        return [request.text for request in self.model.conversation()[before:]]


def test_a_message_reaches_the_model_at_the_next_stop_of_a_resumed_turn_once(
    local_stack: LocalStack, bridge: Bridge, model: ScriptedModel, tmp_path: Path
):
    chat = Chat(model, bridge, tmp_path)
    chat.turn("Start a session.")  # the session exists before the person attaches it
    bridge.cli("attach", "claude-judge", "Takes messages in a real Claude Code chat",
               "--provider", "claude", "--session", chat.session,
               "--project", str(chat.project))  # fmt: skip
    sender = named_agent(local_stack, "judge-sender")
    send(local_stack, sender, "claude-judge", "Please review pull request 41.")
    bridge.wait_queued(1)

    # Another chat of the same project (same hooks) is not attached: its turn gets nothing.
    other = Chat(model, bridge, tmp_path)
    assert not any("pull request 41" in text for text in other.turn("Unrelated work."))
    assert bridge.queued() == 1

    # The attached chat's next turn: the Stop hook hands the message over, Claude continues
    # with it as the next request, and the message is never handed over a second time.
    asked = chat.turn("Carry on.", answer="Reviewing it now.")
    assert len(asked) == 2, "the Stop hook's continuation is one more model request"
    assert "pull request 41" not in asked[0]
    assert asked[1].count("Please review pull request 41.") == 1
    assert bridge.queued() == 0


def _reply_command(request: Recorded) -> dict[str, str]:
    """What a model does with a delivery: run the reply command it names, in that inbox."""
    [inbox] = set(re.findall(r"--inbox (ibx_[A-Za-z0-9_]+)", request.text))
    [agent] = set(re.findall(r"--agent (\S+) --inbox", request.text))
    command = (
        f"agentworks messages send --agent {agent} --inbox {inbox} --message 'Reviewed: LGTM.'"
    )
    return {"command": command, "description": "Reply to the message"}


def test_the_chat_replies_in_the_same_inbox_with_the_command_the_delivery_names(
    local_stack: LocalStack, bridge: Bridge, model: ScriptedModel, tmp_path: Path
):
    chat = Chat(model, bridge, tmp_path)
    chat.turn("Start a session.")
    bridge.cli("attach", "claude-replier", "Answers review requests",
               "--provider", "claude", "--session", chat.session,
               "--project", str(chat.project))  # fmt: skip
    sender = named_agent(local_stack, "reply-asker")
    inbox = send(local_stack, sender, "claude-replier", "Can you review pull request 43?")
    bridge.wait_queued(1)

    # The person's own CLI login (as on their computer) is what `agentworks` uses in the chat.
    asked = chat.turn(
        "Carry on.", "Noted.", ToolCall("Bash", _reply_command), Text("Replied."),
        args=("--allowedTools", "Bash(agentworks messages send:*)"),
        AGENTWORKS_CONFIG=str(local_stack.admin_config),
        PATH=f"{VENV_BIN}{os.pathsep}{path_without_agentworks()}",  # the person's own shell
    )  # fmt: skip
    assert len(asked) == 3, asked[-1][-2000:]  # the prompt, the delivery, the tool's result
    replies = read_pages(local_stack, sender, {"inbox_id": inbox})
    assert [(m["sender"], m["body"]) for m in replies] == [
        ("agent:claude-replier", "Reviewed: LGTM.")
    ], asked[-1][-2000:]


def test_a_second_resumed_turn_still_receives_messages(
    local_stack: LocalStack, bridge: Bridge, model: ScriptedModel, tmp_path: Path
):
    chat = Chat(model, bridge, tmp_path)
    chat.turn("Start a session.")
    bridge.cli("attach", "claude-judge-2", "Takes messages in a real Claude Code chat",
               "--provider", "claude", "--session", chat.session,
               "--project", str(chat.project))  # fmt: skip
    chat.turn("A first resumed turn, with nothing waiting.")
    sender = named_agent(local_stack, "judge-sender-2")
    send(local_stack, sender, "claude-judge-2", "Second-turn message for the judge.")
    bridge.wait_queued(1)
    asked = chat.turn("Carry on again.")
    assert sum(text.count("Second-turn message for the judge.") for text in asked) == 1


def _typed_attach(chat: Chat, bridge: Bridge, name: str) -> dict[str, object]:
    """The person types `/agentworks attach NAME` in the chat (a resumed `-p` run)."""
    return claude(
        chat.model, chat.home, chat.project, "--resume", chat.session,
        f"/agentworks attach {name}", AGENTWORKS_BRIDGE_HOME=str(bridge.home),
    )  # fmt: skip


def _hooks_installed(bridge: Bridge, project: Path) -> None:
    """The project's hooks, as `agentworks attach` of another chat left them."""
    other = str(uuid.uuid4())
    bridge.cli("attach", f"hooks-{other[:8]}", "Installs the hooks", "--provider", "claude",
               "--session", other, "--project", str(project))  # fmt: skip


def test_typing_agentworks_attach_in_a_claude_chat_reaches_the_bridge(
    local_stack: LocalStack, bridge: Bridge, model: ScriptedModel, tmp_path: Path
):
    chat = Chat(model, bridge, tmp_path)
    chat.turn("Start a session.")
    _hooks_installed(bridge, chat.project)
    before = len(model.conversation())
    result = _typed_attach(chat, bridge, "typed-judge")
    assert "attached as typed-judge" in str(result["result"])
    assert len(model.conversation()) == before  # the model never saw the command
    assert f"claude:{chat.session}" in bridge.cli("agents").stdout


def test_with_a_command_file_typed_attach_binds_the_exact_session_before_the_model(
    local_stack: LocalStack, bridge: Bridge, model: ScriptedModel, tmp_path: Path
):
    chat = Chat(model, bridge, tmp_path)
    chat.turn("Start a session.")
    _hooks_installed(bridge, chat.project)
    commands = chat.project / ".claude" / "commands"
    commands.mkdir(parents=True, exist_ok=True)  # a file of the person's own replaces ours
    (commands / "agentworks.md").write_text(
        "---\ndescription: Attach this chat to AgentWorks, or detach it\n---\n$ARGUMENTS\n"
    )
    before = len(model.conversation())
    result = _typed_attach(chat, bridge, "typed-judge-2")
    # Claude shows the hook's block reason to the person; the model is never asked.
    assert "AgentWorks: this chat is attached as typed-judge-2." in str(result["result"])
    assert len(model.conversation()) == before
    listed = [line for line in bridge.cli("agents").stdout.splitlines() if "typed-judge-2" in line]
    assert len(listed) == 1 and f"claude:{chat.session}" in listed[0]


def test_an_agent_attaches_its_own_chat_from_its_bash_tool(
    local_stack: LocalStack, bridge: Bridge, model: ScriptedModel, tmp_path: Path
):
    """Issue 25 item 1: `agentworks attach NAME` with no session id, run by the chat's own
    Bash tool, attaches that chat (its Claude process is an ancestor of the command), not
    another live chat of the project."""
    chat = Chat(model, bridge, tmp_path)
    chat.turn("Start a session.")
    bridge.cli("bridge", "install", "--provider", "claude", "--project", str(chat.project))
    command = f"{VENV_BIN / 'agentworks'} attach self-attached 'Attached from its own shell'"
    model.add(ToolCall("Bash", {"command": command, "description": "Attach this chat"}),
              Text("Attached."))  # fmt: skip
    claude(
        model, chat.home, chat.project, "--allowedTools", f"Bash({VENV_BIN / 'agentworks'}:*)",
        "--resume", chat.session, "Attach yourself to AgentWorks as self-attached.",
        AGENTWORKS_BRIDGE_HOME=str(bridge.home),
    )  # fmt: skip
    said = model.conversation()[-1].text
    assert "AgentWorks: this chat is attached as self-attached." in said, said[-2000:]
    listed = [line for line in bridge.cli("agents").stdout.splitlines() if "self-attached" in line]
    assert len(listed) == 1 and f"claude:{chat.session}" in listed[0]


def _attachment_token(bridge: Bridge, name: str) -> str:
    """The token of the attachment's own child connection (what its chat's MCP server uses)."""
    import json
    import sqlite3

    with sqlite3.connect(f"file:{bridge.home / 'journal.sqlite3'}?mode=ro", uri=True) as db:
        [(config,)] = db.execute(
            "SELECT config_path FROM attachments WHERE agent_name = ?", (name,)
        ).fetchall()
    return str(json.loads(Path(config).read_text())["token"])


def _mcp_loaded(local_stack: LocalStack) -> None:
    """The local stack loads its MCP function on the first request: one without a token
    (401) loads it, so Claude Code's own connection meets a warm endpoint."""
    from tests.e2e.conftest import http

    status, _, _ = http("POST", f"{local_stack.url}/mcp", body={"jsonrpc": "2.0", "id": 1,
                        "method": "ping"}, timeout=120)  # fmt: skip
    assert status == 401


def _mcp_reply(request: Recorded) -> dict[str, str]:
    [inbox] = set(re.findall(r"--inbox (ibx_[A-Za-z0-9_]+)", request.text))
    [agent] = set(re.findall(r"--agent (\S+) --inbox", request.text))
    return {"action": "send", "agent_name": agent, "inbox_id": inbox, "message": "MCP: LGTM."}


def test_the_chat_answers_a_delivered_message_through_the_mcp_tool(
    local_stack: LocalStack, bridge: Bridge, model: ScriptedModel, tmp_path: Path
):
    """The real Claude Code calls the platform's MCP endpoint (streamable HTTP, with the
    attachment's own connection) to reply in the inbox the delivery names."""
    import json

    chat = Chat(model, bridge, tmp_path)
    chat.turn("Start a session.")
    bridge.cli("attach", "mcp-replier", "Answers over MCP", "--provider", "claude",
               "--session", chat.session, "--project", str(chat.project))  # fmt: skip
    servers = {"agentworks": {
        "type": "http", "url": f"{local_stack.url}/mcp",
        "headers": {"Authorization": f"Bearer {_attachment_token(bridge, 'mcp-replier')}"},
    }}  # fmt: skip
    sender = named_agent(local_stack, "mcp-asker")
    inbox = send(local_stack, sender, "mcp-replier", "Can you review pull request 44?")
    bridge.wait_queued(1)
    _mcp_loaded(local_stack)
    asked = chat.turn(
        "Carry on.", "Noted.", ToolCall("mcp__agentworks__messages", _mcp_reply), Text("Done."),
        args=("--mcp-config", json.dumps({"mcpServers": servers}),
              "--allowedTools", "mcp__agentworks__messages"),
        MCP_TIMEOUT="120000", MCP_TOOL_TIMEOUT="120000",  # a loaded machine: connect slowly
    )  # fmt: skip
    assert len(asked) == 3, asked[-1][-2000:]  # the prompt, the delivery, the tool's result
    replies = read_pages(local_stack, sender, {"inbox_id": inbox})
    said = [(m["sender"], m["body"]) for m in replies]
    assert said == [("agent:mcp-replier", "MCP: LGTM.")], asked[-1][-2000:]  # the tool result


def test_a_kill_9_of_the_bridge_never_doubles_a_delivery(
    local_stack: LocalStack, bridge: Bridge, model: ScriptedModel, tmp_path: Path
):
    chat = Chat(model, bridge, tmp_path)
    chat.turn("Start a session.")
    bridge.cli("attach", "killed-bridge", "Survives crashes", "--provider", "claude",
               "--session", chat.session, "--project", str(chat.project))  # fmt: skip
    sender = named_agent(local_stack, "kill-sender")
    send(local_stack, sender, "killed-bridge", "Delivered across a kill -9.")
    bridge.wait_queued(1)
    assert bridge.process is not None
    bridge.process.kill()  # SIGKILL, with the message queued
    bridge.process.wait(10)
    bridge.start()
    asked = chat.turn("Carry on.")
    assert sum(text.count("Delivered across a kill -9.") for text in asked) == 1
    bridge.process.kill()  # and again after the delivery: the restart hands it over no more
    bridge.process.wait(10)
    bridge.start()
    asked = chat.turn("Carry on again.")
    assert len(asked) == 1, "no Stop continuation: nothing was handed over a second time"
    assert bridge.queued() == 0


def test_the_plugins_namespaced_command_attaches_too(
    local_stack: LocalStack, bridge: Bridge, model: ScriptedModel, tmp_path: Path
):
    """`/agentworks:agentworks attach NAME`, the command of the AgentWorks plugin for Claude
    Code (plugins/claude), reaches the same hook, with no project command file."""
    chat = Chat(model, bridge, tmp_path)
    chat.turn("Start a session.")
    _hooks_installed(bridge, chat.project)
    (chat.project / ".claude" / "commands" / "agentworks.md").unlink()
    plugin = Path(__file__).resolve().parents[2] / "plugins" / "claude"
    before = len(model.conversation())
    result = claude(
        chat.model, chat.home, chat.project, "--plugin-dir", str(plugin),
        "--resume", chat.session, "/agentworks:agentworks attach plugged-in",
        AGENTWORKS_BRIDGE_HOME=str(bridge.home),
    )  # fmt: skip
    assert "AgentWorks: this chat is attached as plugged-in." in str(result["result"]), result
    assert len(model.conversation()) == before  # the model never saw the command
