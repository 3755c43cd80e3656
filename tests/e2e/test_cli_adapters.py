"""Adapter profiles through the `agentworks` CLI, run as a subprocess against the local
stack (issue 8): the example profile file is created, listed, shown (human and --json,
parsed with the API's models), replaced and deleted; a bad file says what is wrong."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.e2e.test_cli_messages import Cli

pytestmark = pytest.mark.e2e

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "claude-code-adapter.yaml"


@pytest.fixture
def cli(local_stack: object) -> Cli:
    return Cli(local_stack)


def test_an_admin_manages_adapter_profiles_with_the_cli(cli: Cli, tmp_path: Path) -> None:
    name = f"claude-code-{uuid.uuid4().hex[:6]}"  # the stack may be shared by several tests
    profile = tmp_path / "adapter.yaml"
    profile.write_text(EXAMPLE.read_text().replace("name: claude-code", f"name: {name}"))

    created = cli.ok("adapters", "create", "--file", str(profile))
    assert f"created adapter profile {name} (version 1)" in created.out
    assert '"reply": "Found 2 bugs in {match.1}."' in created.out  # an admin sees settings

    listed = cli.ok("adapters", "list")
    assert any(line.split()[:3] == [name, "scripted", "1"] for line in listed.out.splitlines())
    shown = cli.ok("adapters", "get", name, "--json").json()
    assert (shown["name"], shown["type"], shown["version"]) == (name, "scripted", 1)

    profile.write_text(f"name: {name}\ntype: scripted\nrules:\n  - default: Only this.\n")
    updated = cli.ok("adapters", "update", "--file", str(profile), "--json").json()
    assert updated["version"] == 2 and updated["settings"]["rules"] == [{"default": "Only this."}]

    assert cli.ok("adapters", "delete", name).out.strip() == f"deleted adapter profile {name}"
    gone = cli("adapters", "get", name)
    assert gone.code == 4 and "Traceback" not in gone.err, gone


def test_a_bad_profile_file_says_what_is_wrong(cli: Cli, tmp_path: Path) -> None:
    unknown_type = tmp_path / "telepathy.yaml"
    unknown_type.write_text("name: mind\ntype: telepathy\n")
    refused = cli("adapters", "create", "--file", str(unknown_type))
    assert refused.code != 0 and "adapter type 'telepathy' is unknown" in refused.err, refused
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [x\n")
    refused = cli("adapters", "create", "--file", str(broken))
    assert refused.code == 2 and "adapter profile file" in refused.err, refused
    assert "not valid YAML" in refused.err and "Traceback" not in refused.err
    missing = cli("adapters", "create", "--file", str(tmp_path / "none.yaml"))
    assert missing.code == 2 and "no adapter profile file at" in missing.err, missing
