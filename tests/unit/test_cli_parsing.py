"""The CLI's argument parsing, config resolution and start-up cost (no server needed)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agentworks_cli.client import CONFIG_ENV, resolve_config_path
from agentworks_cli.main import build_parser, main


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def parse(*argv: str):
    return build_parser().parse_args(list(argv))


# ---- global options ----


@pytest.mark.parametrize(
    "argv",
    [
        ["--config", "/tmp/c.json", "messages", "list"],
        ["messages", "list", "--config", "/tmp/c.json"],
        ["messages", "--config", "/tmp/c.json", "list"],
    ],
)
def test_config_flag_is_accepted_before_or_after_the_subcommand(argv):
    assert parse(*argv).config == "/tmp/c.json"


@pytest.mark.parametrize(
    "argv", [["--json", "whoami"], ["whoami", "--json"], ["--json", "connections", "list"]]
)
def test_json_flag_is_accepted_before_or_after_the_subcommand(argv):
    assert parse(*argv).json is True


def test_without_flags_the_options_are_absent_not_overwritten():
    args = parse("--config", "/a.json", "--json", "messages", "list")
    assert (args.config, args.json) == ("/a.json", True)
    bare = parse("messages", "list")
    assert not hasattr(bare, "config") and not hasattr(bare, "json")


# ---- commands as the product docs write them (M1, M3, M4, M6, M7, M8, A2) ----


def test_docs_commands_parse():
    """The seed's copy-paste commands are valid as written."""
    for line in (
        "messages register --agent reviewer",
        "messages list",
        "messages send --agent worker --target agent:reviewer --message x",
        "messages read --agent reviewer --after 0 --wait 25",
        "messages send --agent reviewer --inbox inbox-example --message y",
        "messages unregister --agent reviewer",
        "messages ack --message-id m1 --delivery admitted",
        "messages state --inbox i1 --agent worker",
        "connections create --name worker --scopes messages:read,messages:send",
        "connections list",
        "connections revoke c1",
        "login --url http://127.0.0.1:8787 --token aw1.a.b.c",
        "whoami",
        "dev --port 9000",
    ):
        assert parse(*line.split()).handler is not None, line


def test_scopes_and_target_bounds_accept_commas_and_repeats():
    args = parse(
        "connections", "create", "--name", "w",
        "--scopes", "messages:read,messages:send", "functions:call",
        "--target-bounds", "crew:x,crew:y",
    )  # fmt: skip
    assert [s for group in args.scopes for s in group] == [
        "messages:read",
        "messages:send",
        "functions:call",
    ]
    assert [s for group in args.target_bounds for s in group] == ["crew:x", "crew:y"]


def test_allow_connection_is_repeatable_and_absent_when_omitted():
    """M5: omitted → the server keeps the existing allow-list, so nothing is sent."""
    args = parse(
        "messages", "register", "--agent", "r", "--allow-connection", "c1",
        "--allow-connection", "c2",
    )  # fmt: skip
    assert args.allow_connection == ["c1", "c2"]
    assert parse("messages", "register", "--agent", "r").allow_connection is None


@pytest.mark.parametrize(
    "argv",
    [
        ["messages", "send", "--message", "hi"],  # neither --target nor --inbox
        ["messages", "send", "--target", "agent:a", "--inbox", "i", "--message", "hi"],
        ["messages", "send", "--target", "agent:a"],  # no --message
        ["messages", "ack", "--message-id", "m", "--delivery", "stored"],  # receiver-only states
        ["messages", "read", "--wait", "soon"],
        ["messages"],
        ["connections", "revoke"],
        ["nonsense"],
    ],
)
def test_usage_errors_exit_2(argv, capsys):
    assert main(argv) == 2
    assert "usage:" in capsys.readouterr().err


def test_read_needs_an_inbox_or_an_agent(capsys):
    assert main(["messages", "read", "--after", "0"]) == 2
    err = capsys.readouterr().err
    assert err == "error: messages read needs --inbox INBOX or --agent NAME (the name's mailbox)\n"


def test_help_exits_0(capsys):
    assert main(["--help"]) == 0
    assert "exit codes" in capsys.readouterr().out


# ---- config resolution: --config > AGENTWORKS_CONFIG > ~/.agentworks/config.json ----


def test_config_flag_wins_over_environment(tmp_path):
    env = {CONFIG_ENV: str(tmp_path / "env.json")}
    assert resolve_config_path(str(tmp_path / "flag.json"), env) == tmp_path / "flag.json"


def test_environment_wins_over_default(tmp_path):
    env = {CONFIG_ENV: str(tmp_path / "env.json")}
    assert resolve_config_path(None, env) == tmp_path / "env.json"


def test_default_is_in_the_home_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_config_path(None, {}) == tmp_path / ".agentworks" / "config.json"


def test_missing_config_is_one_line_with_what_to_do(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "absent.json"))
    assert main(["whoami"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert captured.err.startswith(f"error: no AgentWorks config at {tmp_path / 'absent.json'}")
    assert "agentworks login --url URL --token TOKEN" in captured.err


@pytest.mark.parametrize(
    "content", ["not json", "[1, 2]", json.dumps({"url": "http://x"}), json.dumps({"token": "t"})]
)
def test_broken_config_is_one_line_not_a_traceback(tmp_path, capsys, content):
    path = tmp_path / "config.json"
    path.write_text(content)
    assert main(["--config", str(path), "messages", "list"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: config ") and err.count("\n") == 1
    assert "Traceback" not in err


# ---- start-up: client commands never load the server-side stack ----

HEAVY = ("boto3", "botocore", "moto", "pydantic", "aws_lambda_powertools", "agentworks")
# The CLI's help texts quote the product's bounds; limits.py imports nothing.
LIGHT = ("agentworks", "agentworks.limits")


def test_client_commands_import_no_heavy_modules(tmp_path):
    config = tmp_path / "config.json"
    # A closed loopback port: refused at once, and the command still runs its whole path.
    config.write_text(json.dumps({"url": f"http://127.0.0.1:{closed_port()}", "token": "t"}))
    script = (
        "import sys\n"
        "from agentworks_cli.main import main\n"
        f"rc = main(['--config', {str(config)!r}, 'messages', 'list'])\n"
        f"heavy = sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r} "
        f"and m not in {LIGHT!r})\n"
        "print(rc, heavy)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "3 []", result.stdout + result.stderr


def test_console_script_runs(tmp_path):
    script = Path(sys.executable).with_name("agentworks")
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "messages" in result.stdout
