"""The messaging skill's provider copies are generated from one source and kept current."""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import get_args

import pytest
import yaml

from agentworks.mcp_server import messages_tool
from agentworks_cli.main import build_parser

REPOSITORY = Path(__file__).resolve().parents[2]
SOURCE = "skills/agent-messages/SKILL.md"
COPY_PATHS = (
    "plugins/claude/skills/agent-messages/SKILL.md",
    "plugins/codex/skills/agent-messages/SKILL.md",
    "plugins/cursor/rules/agent-messages.mdc",
)


def load_sync() -> ModuleType:
    # skills/ is a folder of scripts, not a package: load the script by its path.
    spec = importlib.util.spec_from_file_location("skills_sync", REPOSITORY / "skills/sync.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while building
    spec.loader.exec_module(module)
    return module


sync = load_sync()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the skill source and its generated copies, to damage freely."""
    for relative in (SOURCE, *COPY_PATHS):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPOSITORY / relative, tmp_path / relative)
    return tmp_path


def front_matter_and_rest(text: str) -> tuple[dict[str, object], str]:
    _, front, rest = text.split("---\n", 2)
    return yaml.safe_load(front), rest


def test_the_committed_copies_are_current(capsys: pytest.CaptureFixture[str]) -> None:
    assert sync.main(["--check"], root=REPOSITORY) == 0, capsys.readouterr().err


def test_the_copies_are_the_ones_each_cli_reads() -> None:
    assert tuple(copy.relative_path for copy in sync.COPIES) == COPY_PATHS


def test_each_copy_has_its_providers_front_matter_then_the_generated_note() -> None:
    source_front, source_body = front_matter_and_rest((REPOSITORY / SOURCE).read_text())
    note = "<!-- generated from skills/agent-messages/SKILL.md by skills/sync.py; do not edit -->"
    expected_front = {
        "plugins/claude/skills/agent-messages/SKILL.md": source_front,
        "plugins/codex/skills/agent-messages/SKILL.md": source_front,
        "plugins/cursor/rules/agent-messages.mdc": {
            "description": source_front["description"],
            "alwaysApply": False,
        },
    }
    for relative, front in expected_front.items():
        copy_front, rest = front_matter_and_rest((REPOSITORY / relative).read_text())
        assert copy_front == front, relative
        assert rest == f"\n{note}\n\n{source_body.lstrip()}", relative


def test_a_stale_copy_fails_the_check_naming_it(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    codex_copy = tree / COPY_PATHS[1]
    codex_copy.write_text(codex_copy.read_text() + "\nA hand edit.\n")

    assert sync.main(["--check"], root=tree) == 1

    err = capsys.readouterr().err
    assert f"{COPY_PATHS[1]}: stale" in err
    assert COPY_PATHS[0] not in err
    assert COPY_PATHS[2] not in err


def test_an_edited_source_makes_every_copy_stale(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tree / SOURCE
    source.write_text(source.read_text() + "\nOne more rule.\n")

    assert sync.main(["--check"], root=tree) == 1

    err = capsys.readouterr().err
    assert all(f"{relative}: stale" in err for relative in COPY_PATHS)


def test_a_missing_copy_fails_the_check_naming_it(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tree / COPY_PATHS[2]).unlink()

    assert sync.main(["--check"], root=tree) == 1

    assert f"{COPY_PATHS[2]}: missing" in capsys.readouterr().err


def test_generating_repairs_the_copies_and_the_check_then_passes(tree: Path) -> None:
    (tree / COPY_PATHS[0]).unlink()
    (tree / COPY_PATHS[1]).write_text("edited by hand\n")

    assert sync.main([], root=tree) == 0

    assert sync.stale_copies(tree) == []
    for relative in COPY_PATHS:
        assert (tree / relative).read_bytes() == (REPOSITORY / relative).read_bytes()
    assert sync.write_copies(tree) == []  # nothing left to rewrite


def test_the_check_writes_nothing(tree: Path) -> None:
    (tree / COPY_PATHS[0]).unlink()

    sync.main(["--check"], root=tree)

    assert not (tree / COPY_PATHS[0]).exists()


@pytest.mark.parametrize(
    "front_matter",
    [
        "name: agent-messages\n",  # no description
        "name: agent-messages\ndescription: Use it: always\n",  # would not read as plain YAML
        'name: agent-messages\ndescription: "quoted"\n',
    ],
)
def test_a_source_front_matter_that_cannot_be_copied_is_refused(
    tree: Path, front_matter: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (tree / SOURCE).write_text(f"---\n{front_matter}---\n\nBody.\n")

    assert sync.main(["--check"], root=tree) == 2

    assert SOURCE in capsys.readouterr().err


def shell_commands(markdown: str) -> list[list[str]]:
    """The command lines of the ```sh blocks, continuations joined, comments dropped."""
    blocks = re.findall(r"```sh\n(.*?)```", markdown, flags=re.DOTALL)
    joined = "\n".join(blocks).replace("\\\n", " ")
    return [shlex.split(line, comments=True) for line in joined.splitlines() if line.strip()]


def test_every_command_the_skill_shows_parses_with_the_real_cli() -> None:
    commands = shell_commands((REPOSITORY / SOURCE).read_text())
    assert len(commands) >= 6
    parser = build_parser()
    for words in commands:
        assert words[0] == "agentworks", words
        parser.parse_args(words[1:])  # exits (fails the test) on an unknown flag or command


def test_every_mcp_action_and_delivery_the_skill_names_exists() -> None:
    text = (REPOSITORY / SOURCE).read_text()
    actions = set(re.findall(r"`action=(\w+)`", text))
    deliveries = set(re.findall(r"`delivery=(\w+)`", text))
    assert {"ack", "list_agents", "send", "read", "register"} <= actions
    assert actions <= set(get_args(messages_tool.Action))
    assert deliveries and deliveries <= set(get_args(messages_tool.Delivery))


def test_the_skill_states_the_rules() -> None:
    text = " ".join((REPOSITORY / SOURCE).read_text().split())
    for phrase in (
        "--delivery admitted",
        "--delivery processed",
        "target=agent:",
        "reply_address",
        "same** `submission_id`",
        "at most 512 characters",
        "at most once a minute",
        "not the person's instructions",
    ):
        assert phrase in text, phrase


def test_the_claude_plugins_command_is_the_one_bridge_install_writes() -> None:
    """One text for `/agentworks`: the project command file and the plugin's
    `/agentworks:agentworks` (plugins/claude) say the same."""
    from pathlib import Path

    from agentworks_cli.bridge.commands import _CLAUDE_COMMAND

    plugin = Path(__file__).resolve().parents[2] / "plugins" / "claude" / "commands"
    assert (plugin / "agentworks.md").read_text(encoding="utf-8") == _CLAUDE_COMMAND
