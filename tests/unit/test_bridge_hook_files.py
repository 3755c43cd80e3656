"""The bridge's hooks go into a project's hook files beside the person's own, once, and come
out again leaving the person's content as it was."""

from __future__ import annotations

import copy
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentworks_cli.bridge import hook_files
from agentworks_cli.bridge.hook_files import HookFileError

# Hook files as people write them: other settings, other events, their own handlers on the
# events we use too, matchers, odd-but-valid entries.
CLAUDE_FILES: list[dict[str, Any]] = [
    {
        "permissions": {"allow": ["Bash(npm run test:*)"], "deny": ["Read(./.env)"]},
        "env": {"DEBUG": "1"},
        "model": "sonnet",
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {
                            "type": "command",
                            "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/check-bash.sh',
                        }
                    ],
                }
            ],
            "Stop": [
                {"hooks": [{"type": "command", "command": "npx tsc --noEmit", "timeout": 120}]}
            ],
            "SessionStart": [
                {"matcher": "startup", "hooks": [{"type": "command", "command": "cat notes.md"}]}
            ],
        },
    },
    {"permissions": {"allow": []}, "enableAllProjectMcpServers": True},
    {
        "hooks": {
            "UserPromptSubmit": [
                {
                    "hooks": [
                        {"type": "prompt", "prompt": "Check the prompt for secrets: $ARGUMENTS"},
                        {"type": "command", "command": "./scripts/log-prompt.py", "async": True},
                    ]
                }
            ],
            "SessionEnd": [{"hooks": [{"type": "command", "command": "rm -f /tmp/lock"}]}],
        }
    },
]
CODEX_FILES: list[dict[str, Any]] = [
    {
        "hooks": {
            "SessionStart": [
                {
                    "matcher": "startup|resume",
                    "hooks": [
                        {
                            "type": "command",
                            "command": "python3 .codex/hooks/session_start.py",
                            "statusMessage": "Loading notes",
                        }
                    ],
                }
            ],
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5}],
                }
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "make lint", "timeout": 60}]}],
        }
    },
    {"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "./after.sh"}]}]}},
]
CURSOR_FILES: list[dict[str, Any]] = [
    {
        "version": 1,
        "hooks": {
            "afterFileEdit": [{"command": "./hooks/format.sh"}],
            "beforeShellExecution": [{"command": "./hooks/guard.sh"}],
            "stop": [{"command": "./hooks/chime.sh"}],
        },
    },
    {"version": 1, "hooks": {"beforeSubmitPrompt": [{"command": "./hooks/audit.sh"}]}},
]
USER_FILES = [
    *(("claude", document) for document in CLAUDE_FILES),
    *(("codex", document) for document in CODEX_FILES),
    *(("cursor", document) for document in CURSOR_FILES),
]
EVENT_KEYS = {
    "claude": {
        "Stop": "stop",
        "UserPromptSubmit": "user-prompt-submit",
        "SessionStart": "session-start",
        "SessionEnd": "session-end",
    },
    "codex": {
        "Stop": "stop",
        "UserPromptSubmit": "user-prompt-submit",
        "SessionStart": "session-start",
    },
    "cursor": {"stop": "stop"},
}


def write_json(path: Path, document: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=4) + "\n", encoding="utf-8")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def our_commands(provider: str, document: dict[str, Any]) -> dict[str, list[str]]:
    """Event key → the `bridge hook` command lines found under it."""
    found: dict[str, list[str]] = {}
    for key, entries in document.get("hooks", {}).items():
        handlers = [entry for entry in entries if isinstance(entry, dict)]
        if provider != "cursor":
            handlers = [h for group in handlers for h in group.get("hooks", [])]
        commands = [h["command"] for h in handlers if "bridge hook" in h.get("command", "")]
        if commands:
            found[key] = commands
    return found


def expected_commands(provider: str) -> dict[str, list[str]]:
    return {
        key: [f"agentworks bridge hook {event} --provider {provider}"]
        for key, event in EVENT_KEYS[provider].items()
    }


# ---------------------------------------------------------------- install


@pytest.mark.parametrize("provider", hook_files.PROVIDERS)
def test_each_provider_gets_its_own_file_and_events(provider: str, tmp_path: Path) -> None:
    path = hook_files.install(provider, tmp_path)

    assert (
        path
        == tmp_path
        / {
            "claude": ".claude/settings.local.json",
            "codex": ".codex/hooks.json",
            "cursor": ".cursor/hooks.json",
        }[provider]
    )
    assert our_commands(provider, read_json(path)) == expected_commands(provider)
    assert hook_files.hook_events(provider) == tuple(EVENT_KEYS[provider].values())


def test_claude_handler_shape(tmp_path: Path) -> None:
    document = read_json(hook_files.install("claude", tmp_path))

    assert document["hooks"]["Stop"] == [
        {
            "hooks": [
                {
                    "type": "command",
                    "command": "agentworks bridge hook stop --provider claude",
                    "timeout": 20,
                }
            ]
        }
    ]
    assert "SessionEnd" not in read_json(hook_files.install("codex", tmp_path))["hooks"]


def test_cursor_file_shape(tmp_path: Path) -> None:
    document = read_json(hook_files.install("cursor", tmp_path))

    assert document == {
        "version": 1,
        "hooks": {
            "stop": [{"command": "agentworks bridge hook stop --provider cursor", "loop_limit": 10}]
        },
    }


@pytest.mark.parametrize(("provider", "user_document"), USER_FILES)
def test_install_keeps_the_persons_hooks_and_settings(
    provider: str, user_document: dict[str, Any], tmp_path: Path
) -> None:
    path = hook_files.hook_file(provider, tmp_path)
    write_json(path, user_document)

    hook_files.install(provider, tmp_path)

    merged = read_json(path)
    assert our_commands(provider, merged) == expected_commands(provider)
    for key, value in user_document.items():
        if key != "hooks":
            assert merged[key] == value
    for event, entries in user_document.get("hooks", {}).items():
        # The person's entries stay first, in their order; ours follows.
        assert merged["hooks"][event][: len(entries)] == entries


@pytest.mark.parametrize(("provider", "user_document"), USER_FILES)
def test_installing_twice_changes_nothing(
    provider: str, user_document: dict[str, Any], tmp_path: Path
) -> None:
    path = hook_files.hook_file(provider, tmp_path)
    write_json(path, user_document)
    hook_files.install(provider, tmp_path)
    first = path.read_bytes()

    hook_files.install(provider, tmp_path)

    assert path.read_bytes() == first
    assert our_commands(provider, read_json(path)) == expected_commands(provider)


def test_an_upgrade_replaces_our_old_hook(tmp_path: Path) -> None:
    path = hook_files.hook_file("claude", tmp_path)
    old = {"type": "command", "command": "/old/bin/agentworks bridge hook stop --provider claude"}
    mine = {"type": "command", "command": "say done"}
    write_json(path, {"hooks": {"Stop": [{"hooks": [mine]}, {"hooks": [{**old, "timeout": 5}]}]}})

    hook_files.install("claude", tmp_path)

    assert read_json(path)["hooks"]["Stop"] == [
        {"hooks": [mine]},
        {
            "hooks": [
                {
                    "type": "command",
                    "command": "agentworks bridge hook stop --provider claude",
                    "timeout": 20,
                }
            ]
        },
    ]


def test_an_upgrade_replaces_a_cursor_loop_limit(tmp_path: Path) -> None:
    path = hook_files.hook_file("cursor", tmp_path)
    stale = {"command": "agentworks bridge hook stop --provider cursor", "loop_limit": 3}
    write_json(path, {"version": 1, "hooks": {"stop": [stale]}})
    assert not hook_files.installed("cursor", tmp_path)

    hook_files.install("cursor", tmp_path)

    assert read_json(path)["hooks"]["stop"] == [{**stale, "loop_limit": 10}]
    assert hook_files.installed("cursor", tmp_path)


def test_a_command_path_with_spaces_is_quoted_and_still_recognized(tmp_path: Path) -> None:
    command = "/Users/Jane Doe/.venv/bin/agentworks"
    path = hook_files.install("cursor", tmp_path, command)
    hook_files.install("cursor", tmp_path, command)

    assert read_json(path)["hooks"]["stop"] == [
        {
            "command": "'/Users/Jane Doe/.venv/bin/agentworks' bridge hook stop --provider cursor",
            "loop_limit": 10,
        }
    ]
    assert hook_files.installed("cursor", tmp_path, command)
    assert hook_files.uninstall("cursor", tmp_path)


def test_a_command_that_is_not_agentworks_is_refused(tmp_path: Path) -> None:
    # We could not recognize its hooks later, so upgrades and removal would miss them.
    with pytest.raises(ValueError, match="not an agentworks executable"):
        hook_files.install("claude", tmp_path, "/usr/local/bin/aw")
    assert not hook_files.hook_file("claude", tmp_path).exists()


def test_installed_follows_install_and_uninstall(tmp_path: Path) -> None:
    assert not hook_files.installed("codex", tmp_path)
    hook_files.install("codex", tmp_path)
    assert hook_files.installed("codex", tmp_path)
    assert not hook_files.installed("claude", tmp_path)
    hook_files.uninstall("codex", tmp_path)
    assert not hook_files.installed("codex", tmp_path)


def test_unknown_provider(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown provider"):
        hook_files.install("emacs", tmp_path)


# ---------------------------------------------------------------- uninstall


@pytest.mark.parametrize(("provider", "user_document"), USER_FILES)
def test_uninstall_restores_the_persons_content(
    provider: str, user_document: dict[str, Any], tmp_path: Path
) -> None:
    path = hook_files.hook_file(provider, tmp_path)
    write_json(path, user_document)
    hook_files.install(provider, tmp_path)

    assert hook_files.uninstall(provider, tmp_path)

    assert read_json(path) == user_document
    assert not hook_files.uninstall(provider, tmp_path)


@pytest.mark.parametrize("provider", hook_files.PROVIDERS)
def test_uninstall_deletes_a_file_we_created(provider: str, tmp_path: Path) -> None:
    path = hook_files.install(provider, tmp_path)

    assert hook_files.uninstall(provider, tmp_path)

    assert not path.exists()
    assert path.parent.is_dir()  # the folder may hold other things: left alone


def test_uninstall_leaves_a_file_without_our_hooks_byte_for_byte(tmp_path: Path) -> None:
    path = hook_files.hook_file("claude", tmp_path)
    path.parent.mkdir()
    path.write_text('{"model":"opus",  "hooks": {"Stop": []}}', encoding="utf-8")

    assert not hook_files.uninstall("claude", tmp_path)
    assert path.read_text(encoding="utf-8") == '{"model":"opus",  "hooks": {"Stop": []}}'


def test_uninstall_takes_our_handler_out_of_the_persons_group(tmp_path: Path) -> None:
    path = hook_files.hook_file("codex", tmp_path)
    theirs = {"type": "command", "command": "make lint"}
    ours = {"type": "command", "command": "agentworks bridge hook stop --provider codex"}
    write_json(path, {"hooks": {"Stop": [{"matcher": "", "hooks": [theirs, ours]}]}})

    assert hook_files.uninstall("codex", tmp_path)

    assert read_json(path) == {"hooks": {"Stop": [{"matcher": "", "hooks": [theirs]}]}}


def test_uninstall_without_a_file(tmp_path: Path) -> None:
    assert not hook_files.uninstall("cursor", tmp_path)
    assert not (tmp_path / ".cursor").exists()


# ---------------------------------------------------------------- malformed files

MALFORMED = [
    ("{ not json", "not valid JSON"),
    ('["a", "list"]', "not a JSON object"),
    ('{"hooks": "Stop"}', '"hooks" is not a JSON object'),
    ('{"hooks": {"Stop": {"hooks": []}}}', '"hooks"."Stop" is not a JSON list'),
    (b"\xff\xfe{}", "not valid JSON"),
]


@pytest.mark.parametrize(("content", "reason"), MALFORMED)
@pytest.mark.parametrize("operation", [hook_files.install, hook_files.uninstall])
def test_a_malformed_file_is_refused_and_untouched(
    content: str | bytes, reason: str, operation: Any, tmp_path: Path
) -> None:
    path = hook_files.hook_file("claude", tmp_path)
    path.parent.mkdir()
    raw = content if isinstance(content, bytes) else content.encode()
    path.write_bytes(raw)

    with pytest.raises(HookFileError) as refused:
        operation("claude", tmp_path)

    message = str(refused.value)
    assert str(path) in message
    assert reason in message
    assert "Fix or move the file" in message
    assert path.read_bytes() == raw
    assert os.listdir(path.parent) == [path.name]


def test_a_cursor_stop_that_is_not_a_list_is_refused(tmp_path: Path) -> None:
    path = hook_files.hook_file("cursor", tmp_path)
    write_json(path, {"version": 1, "hooks": {"stop": "./chime.sh"}})

    with pytest.raises(HookFileError, match=r'"hooks"\."stop" is not a JSON list'):
        hook_files.install("cursor", tmp_path)


# ---------------------------------------------------------------- writing


def test_the_files_mode_is_kept(tmp_path: Path) -> None:
    path = hook_files.hook_file("claude", tmp_path)
    write_json(path, {"model": "opus"})
    path.chmod(0o600)

    hook_files.install("claude", tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    hook_files.uninstall("claude", tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_new_file_follows_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o027)
    try:
        path = hook_files.install("cursor", tmp_path)
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_symlinked_file_is_written_through_its_link(tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.local.json"
    write_json(real, {"model": "opus"})
    link = hook_files.hook_file("claude", tmp_path / "project")
    link.parent.mkdir(parents=True)
    link.symlink_to(real)

    hook_files.install("claude", tmp_path / "project")

    assert link.is_symlink()
    assert read_json(real)["model"] == "opus"
    assert our_commands("claude", read_json(real)) == expected_commands("claude")


def test_a_failed_write_leaves_the_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = hook_files.hook_file("claude", tmp_path)
    write_json(path, {"model": "opus"})
    before = path.read_bytes()

    def refuse(*_: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(hook_files.os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        hook_files.install("claude", tmp_path)

    assert path.read_bytes() == before
    assert os.listdir(path.parent) == [path.name]


# ---------------------------------------------------------------- any content survives

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)
user_commands = st.text(min_size=1, max_size=30).filter(lambda text: "bridge" not in text)
claude_handlers = st.fixed_dictionaries(
    {"type": st.just("command"), "command": user_commands},
    optional={"timeout": st.integers(1, 600), "async": st.booleans()},
)
claude_entries = st.fixed_dictionaries(
    {"hooks": st.lists(claude_handlers, min_size=1, max_size=3)},
    optional={"matcher": st.text(max_size=10)},
) | json_values.filter(lambda value: not isinstance(value, dict))
cursor_entries = st.fixed_dictionaries(
    {"command": user_commands}, optional={"loop_limit": st.integers(1, 50)}
)
# Event keys include ours and others; lists are non-empty (a list that only our hook filled
# is dropped on removal, so an empty one the person left would not come back).
claude_event_keys = st.sampled_from(
    ["Stop", "UserPromptSubmit", "SessionStart", "SessionEnd", "PreToolUse", "Notification"]
)
cursor_event_keys = st.sampled_from(["stop", "afterFileEdit", "beforeShellExecution"])
other_settings = st.dictionaries(
    st.text(max_size=8).filter(lambda key: key not in {"hooks", "version"}), json_values, max_size=3
)


def user_documents(
    event_keys: st.SearchStrategy[str], entries: st.SearchStrategy[Any], base: dict[str, Any]
) -> st.SearchStrategy[dict[str, Any]]:
    hooks = st.dictionaries(event_keys, st.lists(entries, min_size=1, max_size=3), min_size=1)
    with_hooks = st.builds(lambda o, h: {**base, **o, "hooks": h}, other_settings, hooks)
    without_hooks = other_settings.filter(bool).map(lambda o: {**base, **o})
    return with_hooks | without_hooks


PROPERTY = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@PROPERTY
@given(
    provider=st.sampled_from(["claude", "codex"]),
    document=user_documents(claude_event_keys, claude_entries, {}),
)
def test_any_grouped_user_file_survives_install_and_uninstall(
    provider: str, document: dict[str, Any], tmp_path: Path
) -> None:
    assert_round_trip(provider, document, tmp_path)


@PROPERTY
@given(document=user_documents(cursor_event_keys, cursor_entries, {"version": 1}))
def test_any_cursor_user_file_survives_install_and_uninstall(
    document: dict[str, Any], tmp_path: Path
) -> None:
    assert_round_trip("cursor", document, tmp_path)


def assert_round_trip(provider: str, document: dict[str, Any], project: Path) -> None:
    path = hook_files.hook_file(provider, project)
    write_json(path, document)
    original = copy.deepcopy(document)

    hook_files.install(provider, project)
    hook_files.install(provider, project)
    assert our_commands(provider, read_json(path)) == expected_commands(provider)
    assert hook_files.uninstall(provider, project)

    assert read_json(path) == original
