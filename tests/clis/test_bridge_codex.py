"""The bridge judged by the real Codex (issue 25 item 7): against `agentworks dev`, a person
attaches a Codex thread with `agentworks attach --provider codex` (the project's
.codex/hooks.json), another agent sends to that name, and the message reaches the model once
in the next request of a `codex exec resume` turn through the real Stop hook; a thread that
is not attached, in the same project, gets nothing. Codex has no SessionEnd, so a later
resumed turn still receives (B, §9 and §9b).

Codex runs a project's hooks only when the project is trusted (config.toml `[projects."…"]
trust_level = "trusted"`) and each hook was trusted by a person in /hooks (recorded under
`hooks.state` with the hook's hash); these runs pass `--dangerously-bypass-hook-trust`.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from agentworks_cli.bridge import codex_trust
from tests.clis.conftest import CODEX, Bridge, agent_messages, codex, codex_env, send
from tests.e2e.api_helpers import named_agent
from tests.e2e.conftest import LocalStack
from tests.support.scripted_model import ScriptedModel, Text

BYPASS = "--dangerously-bypass-hook-trust"


class Thread:
    """One Codex thread in a project, run headless turn by turn."""

    def __init__(self, model: ScriptedModel, bridge: Bridge, root: Path) -> None:
        self.model = model
        self.project = root / "project"
        self.project.mkdir(parents=True, exist_ok=True)
        self.env = codex_env(model, root / "home", trusted=(self.project,),
                             AGENTWORKS_BRIDGE_HOME=str(bridge.home))  # fmt: skip
        self.thread_id: str | None = None

    def turn(self, prompt: str, answer: str = "Noted.") -> list[str]:
        """One `codex exec` turn (the first starts the thread, later ones resume it); the
        text of each request the model received during it."""
        self.model.add(Text(answer))
        before = len(self.model.conversation())
        resume = ["resume", self.thread_id] if self.thread_id else []
        events = codex(self.env, self.project, BYPASS, *resume, prompt)
        started = next(e for e in events if e["type"] == "thread.started")["thread_id"]
        assert self.thread_id in (None, started)
        self.thread_id = started
        assert events[-1]["type"] == "turn.completed", events[-1]
        assert answer in agent_messages(events)
        return [request.text for request in self.model.conversation()[before:]]


def test_a_message_reaches_codex_at_the_next_stop_of_a_resumed_turn_once(
    local_stack: LocalStack, bridge: Bridge, model: ScriptedModel, tmp_path: Path
):
    thread = Thread(model, bridge, tmp_path)
    thread.turn("Start a thread.")
    assert thread.thread_id is not None
    bridge.cli("attach", "codex-judge", "Takes messages in a real Codex thread",
               "--provider", "codex", "--session", thread.thread_id,
               "--project", str(thread.project))  # fmt: skip
    sender = named_agent(local_stack, "codex-sender")
    send(local_stack, sender, "codex-judge", "Please triage issue 77.")
    bridge.wait_queued(1)

    other = Thread(model, bridge, tmp_path)  # same project and hooks, not attached
    assert not any("issue 77" in text for text in other.turn("Unrelated work."))
    assert bridge.queued() == 1

    asked = thread.turn("Carry on.", answer="Triaging it now.")
    assert len(asked) == 2, "the Stop hook's continuation is one more model request"
    assert "issue 77" not in asked[0]
    assert asked[1].count("Please triage issue 77.") == 1
    assert bridge.queued() == 0

    # No SessionEnd in Codex: the thread stays attached, the next resumed turn receives too.
    send(local_stack, sender, "codex-judge", "And issue 78, please.")
    bridge.wait_queued(1)
    asked = thread.turn("Carry on again.", answer="On it.")
    assert len(asked) == 2
    assert asked[1].count("And issue 78, please.") == 1
    first = "Please triage issue 77."
    assert asked[1].count(first) == asked[0].count(first) == 1  # history, not a second turn


def test_typed_agentworks_attach_binds_the_thread_and_its_next_turn_receives(
    local_stack: LocalStack, bridge: Bridge, model: ScriptedModel, tmp_path: Path
):
    thread = Thread(model, bridge, tmp_path)
    thread.turn("Start a thread.")
    assert thread.thread_id is not None
    other = str(uuid.uuid4())  # the project's hooks, as attaching another thread left them
    bridge.cli("attach", f"hooks-{other[:8]}", "Installs the hooks", "--provider", "codex",
               "--session", other, "--project", str(thread.project))  # fmt: skip

    before = len(model.conversation())
    events = codex(thread.env, thread.project, BYPASS, "resume", thread.thread_id,
                   "/agentworks attach typed-codex")  # fmt: skip
    assert events[-1]["type"] == "turn.completed"
    assert len(model.conversation()) == before  # the UserPromptSubmit hook consumed it
    listed = [line for line in bridge.cli("agents").stdout.splitlines() if "typed-codex" in line]
    assert len(listed) == 1 and f"codex:{thread.thread_id}" in listed[0]

    sender = named_agent(local_stack, "typed-sender")
    send(local_stack, sender, "typed-codex", "Welcome aboard, typed-codex.")
    bridge.wait_queued(1)
    asked = thread.turn("Carry on.")
    assert len(asked) == 2
    assert asked[1].count("Welcome aboard, typed-codex.") == 1


def test_agents_says_codex_skips_the_hooks_until_the_person_trusts_them(
    local_stack: LocalStack, model: ScriptedModel, tmp_path: Path, monkeypatch: Any
):
    """Issue 25 item 5: Codex runs a project hook only once a person trusted it in /hooks
    (bound to its content). `agents` says so, asking Codex itself (`codex app-server`
    `hooks/list`), until Codex's config records that trust; the bridge never writes it."""
    home = tmp_path / "bridge"
    thread = Thread(model, Bridge(home, local_stack.admin_config, {}), tmp_path)
    codex_home = {"HOME": thread.env["HOME"], "CODEX_HOME": thread.env["CODEX_HOME"]}
    env = {**os.environ, **codex_home, "AGENTWORKS_BRIDGE_HOME": str(home),
           "PATH": f"{CODEX.parent}{os.pathsep}{os.environ.get('PATH', '')}"}  # fmt: skip
    bridge = Bridge(home, local_stack.admin_config, env)
    bridge.start()
    try:
        thread.turn("Start a thread.")
        assert thread.thread_id is not None
        attached = bridge.cli("attach", "codex-trusting", "Waits for trust", "--provider",
                              "codex", "--session", thread.thread_id,
                              "--project", str(thread.project))  # fmt: skip
        assert "trust each AgentWorks hook" in attached.stdout  # said at attach
        thread.turn("A turn whose hooks tell the bridge where the thread runs.")
        listed = bridge.cli("agents").stdout
        assert "hooks: hooks untrusted (" in listed and "open /hooks in Codex" in listed

        # The person trusts each hook in /hooks: Codex records its current hash.
        for name, value in codex_home.items():
            monkeypatch.setenv(name, value)
        hooks = codex_trust._listed(thread.project, str(CODEX))
        assert hooks and {h["trustStatus"] for h in hooks} == {"untrusted"}
        config = Path(codex_home["CODEX_HOME"]) / "config.toml"
        config.write_text(config.read_text() + "".join(
            f'\n[hooks.state."{h["key"]}"]\ntrusted_hash = "{h["currentHash"]}"\n' for h in hooks
        ))  # fmt: skip
        assert "hooks:" not in bridge.cli("agents").stdout
    finally:
        bridge.stop()
