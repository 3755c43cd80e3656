"""What the real CLIs give their hooks, kept in tests/fixtures/hooks/real/ and checked here
against the pinned CLIs: a project hook that dumps its stdin records a first headless run
and a resumed one (with the second run's first Stop answering `decision: block`, as the
bridge does when a message waits). The unit tests feed these payloads to the hook command;
this test says when a CLI release changes them.

`AGENTWORKS_RECORD_HOOKS=1` rewrites the fixtures from the run (paths made neutral:
HOME → /home/dev, the project → /home/dev/app).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from tests.clis.conftest import REPO, claude, codex, codex_env
from tests.support.scripted_model import ScriptedModel

FIXTURES = REPO / "tests" / "fixtures" / "hooks" / "real"
DUMP_HOOK = Path(__file__).with_name("dump_hook.py")
CONTINUE = "A message waits for you (scripted Stop continuation)."
RECORD = os.environ.get("AGENTWORKS_RECORD_HOOKS") == "1"


def _hooks(events: list[str]) -> dict[str, Any]:
    def handler(event: str) -> dict[str, Any]:
        command = f"{sys.executable} {DUMP_HOOK} {event}"
        return {"hooks": [{"type": "command", "command": command, "timeout": 20}]}

    return {"hooks": {event: [handler(event)] for event in events}}


def _captured(folder: Path, home: Path, project: Path) -> list[tuple[str, dict[str, Any]]]:
    """(event, payload) in arrival order, with this machine's paths made neutral."""
    slug = re.sub(r"[^A-Za-z0-9]", "-", str(project))
    found = []
    for path in sorted(folder.glob("*.json")):
        text = path.read_text()
        for mine, neutral in ((str(project), "/home/dev/app"), (str(home), "/home/dev"),
                              (slug, "-home-dev-app")):  # fmt: skip
            text = text.replace(mine, neutral)
        found.append((path.stem.split("-", 1)[1], json.loads(text)))
    return found


def _shape(payload: dict[str, Any]) -> dict[str, Any]:
    """What a CLI release must keep: the keys, and the values the bridge branches on."""
    kept = ("hook_event_name", "source", "reason", "stop_hook_active", "prompt")
    return {"keys": sorted(payload), **{k: payload[k] for k in kept if k in payload}}


def _judge(cli: str, captured: list[tuple[str, dict[str, Any]]]) -> None:
    if RECORD:
        for old in FIXTURES.glob(f"{cli}_*.json"):
            old.unlink()
        FIXTURES.mkdir(parents=True, exist_ok=True)
        for number, (event, payload) in enumerate(captured):
            path = FIXTURES / f"{cli}_{number:02d}_{event}.json"
            path.write_text(json.dumps(payload, indent=2) + "\n")
    recorded = [
        (path.stem.split("_", 2)[2], json.loads(path.read_text()))
        for path in sorted(FIXTURES.glob(f"{cli}_*.json"))
    ]
    assert recorded, f"no recorded {cli} payloads: run with AGENTWORKS_RECORD_HOOKS=1"
    assert [(e, _shape(p)) for e, p in captured] == [(e, _shape(p)) for e, p in recorded]


def test_claude_hook_payloads_of_a_print_run_and_a_resumed_one(
    model: ScriptedModel, tmp_path: Path
):
    home, project, dump = tmp_path / "home", tmp_path / "project", tmp_path / "dump"
    (project / ".claude").mkdir(parents=True)
    dump.mkdir()
    events = ["SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"]
    (project / ".claude" / "settings.local.json").write_text(json.dumps(_hooks(events)))
    session = "0f0e0d0c-0b0a-4908-8706-050403020100"

    claude(model, home, project, "--session-id", session, "first prompt",
           DUMP_HOOK_DIR=str(dump))  # fmt: skip
    claude(model, home, project, "--resume", session, "second prompt",
           DUMP_HOOK_DIR=str(dump), DUMP_HOOK_BLOCK_ONCE=CONTINUE)  # fmt: skip

    captured = _captured(dump, home, project)
    # What the bridge relies on, said plainly (SPEC §9b): every -p run ends with SessionEnd
    # (reason "other"); --resume starts the same session id with SessionStart "resume"; a
    # blocked Stop fires again with stop_hook_active true after the continuation.
    assert [e for e, _ in captured] == [
        "SessionStart", "UserPromptSubmit", "Stop", "SessionEnd",
        "SessionStart", "UserPromptSubmit", "Stop", "Stop", "SessionEnd",
    ]  # fmt: skip
    assert {p["session_id"] for _, p in captured} == {session}
    assert [p["reason"] for e, p in captured if e == "SessionEnd"] == ["other", "other"]
    assert [p["source"] for e, p in captured if e == "SessionStart"] == ["startup", "resume"]
    assert [p["stop_hook_active"] for e, p in captured if e == "Stop"] == [False, False, True]
    assert sum(r.text.count(CONTINUE) for r in model.conversation()) == 1
    _judge("claude", captured)


def test_codex_hook_payloads_of_an_exec_run_and_a_resumed_one(model: ScriptedModel, tmp_path: Path):
    home, project, dump = tmp_path / "home", tmp_path / "project", tmp_path / "dump"
    (project / ".codex").mkdir(parents=True)
    dump.mkdir()
    events = ["SessionStart", "UserPromptSubmit", "Stop"]
    (project / ".codex" / "hooks.json").write_text(json.dumps(_hooks(events)))
    env = codex_env(model, home, trusted=(project,), DUMP_HOOK_DIR=str(dump))

    # Codex skips project hooks no person trusted in /hooks; this run bypasses that trust.
    first = codex(env, project, "--dangerously-bypass-hook-trust", "first prompt")
    thread = first[0]["thread_id"]
    codex({**env, "DUMP_HOOK_BLOCK_ONCE": CONTINUE}, project,
          "--dangerously-bypass-hook-trust", "resume", thread, "second prompt")  # fmt: skip

    captured = _captured(dump, home, project)
    assert [e for e, _ in captured] == [
        "SessionStart", "UserPromptSubmit", "Stop",
        "SessionStart", "UserPromptSubmit", "Stop", "Stop",
    ]  # fmt: skip
    assert {p["session_id"] for _, p in captured} == {thread}
    assert [p["source"] for e, p in captured if e == "SessionStart"] == ["startup", "resume"]
    assert [p["stop_hook_active"] for e, p in captured if e == "Stop"] == [False, False, True]
    assert sum(r.text.count(CONTINUE) for r in model.conversation()) == 1
    _judge("codex", captured)


def test_codex_runs_no_project_hook_nobody_trusted(model: ScriptedModel, tmp_path: Path):
    home, project, dump = tmp_path / "home", tmp_path / "project", tmp_path / "dump"
    (project / ".codex").mkdir(parents=True)
    dump.mkdir()
    (project / ".codex" / "hooks.json").write_text(json.dumps(_hooks(["SessionStart", "Stop"])))
    env = codex_env(model, home, trusted=(project,), DUMP_HOOK_DIR=str(dump))
    events = codex(env, project, "a prompt")
    assert events[-1]["type"] == "turn.completed"  # the turn ran…
    assert not list(dump.glob("*.json")), "…and no untrusted hook did"
