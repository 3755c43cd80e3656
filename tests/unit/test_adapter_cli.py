"""§8 `cli` adapter and the runner's side of it (issue 10 item 6): a turn becomes work for
a runner; the allow-list holds both where a profile is defined and where the runner builds
the command line; the CLIs' documented output (CLI-HOOKS.md: Claude Code's JSON result,
Codex's `exec --json` events) reads as the report."""

from __future__ import annotations

import json

import pytest

from agentworks import limits
from agentworks.crews.adapters.base import AdapterError, TurnRequest
from agentworks.crews.adapters.cli import CliAdapter, check_args, job_prompt, validate
from agentworks_cli.bridge import cli_sessions

CLAUDE = {"type": "cli", "command": "claude", "model": "sonnet", "args": ["--max-turns", "5"]}


def _request(**fields: object) -> TurnRequest:
    return TurnRequest("workflow:w", "", CLAUDE, "message", "Review auth.ts", **fields)  # type: ignore[arg-type]


def _job(**fields: object) -> dict[str, object]:
    return {"command": "claude", "model": None, "args": [], "prompt": "Hi", "resume": None,
            **fields}  # fmt: skip


def test_a_turn_becomes_runner_work_that_resumes_the_steps_session() -> None:
    work = CliAdapter(CLAUDE).run_turn(_request(session_id="s-1")).runner_work
    assert work is not None
    assert (work.command, work.model, work.args, work.resume) == (
        "claude", "sonnet", ("--max-turns", "5"), "s-1",
    )  # fmt: skip
    assert work.timeout_seconds == limits.RUNNER_TIMEOUT_DEFAULT_SECONDS
    assert CliAdapter(CLAUDE).run_turn(_request()).runner_work.resume is None  # type: ignore[union-attr]


def test_the_prompt_carries_the_schema_first_and_a_correction_alone() -> None:
    schema = {"type": "object"}
    assert job_prompt(_request()) == "Review auth.ts"
    first = job_prompt(_request(output_schema=schema))
    assert (
        first.startswith("Review auth.ts\n\nAnswer with only a JSON value") and '"object"' in first
    )
    fix = job_prompt(_request(output_schema=schema, correction="missing verdict"))
    assert "missing verdict" in fix and "Review auth.ts" not in fix


def test_a_prompt_past_the_limit_fails_the_turn() -> None:
    at = "x" * limits.RUNNER_PROMPT_MAX_CHARS
    assert CliAdapter(CLAUDE).run_turn(TurnRequest("w", "", CLAUDE, "message", at)).runner_work
    with pytest.raises(AdapterError, match="30,001 characters"):
        CliAdapter(CLAUDE).run_turn(TurnRequest("w", "", CLAUDE, "message", at + "x"))


@pytest.mark.parametrize(
    ("args", "ok"),
    [
        (["--permission-mode", "acceptEdits", "--max-turns", "200"], True),
        (["--permission-mode", "bypassPermissions"], False),
        (["--dangerously-skip-permissions"], False),
        (["--allowedTools", "Bash"], False),
        (["--max-turns", "0"], False),
        (["--max-turns", "201"], False),
        (["--max-turns", "-1"], False),
        (["--permission-mode"], False),
        ("--max-turns 3", False),
        (["--max-turns", "1"] * 4, True),  # 8 entries
        (["--max-turns", "1"] * 4 + ["--permission-mode"], False),  # 9
    ],
)
def test_claude_args_allow_list(args: object, ok: bool) -> None:
    assert (check_args("claude", args) == []) is ok


def test_codex_args_allow_list() -> None:
    assert check_args("codex", ["--sandbox", "workspace-write", "--full-auto"]) == []
    assert check_args("codex", ["--sandbox", "danger-full-access"])
    assert check_args("codex", ["--dangerously-bypass-approvals-and-sandbox"])
    assert check_args("codex", ["-c", "sandbox_mode=danger-full-access"])
    assert validate({"type": "cli", "command": "codex", "args": ["--max-turns", "3"]})


def test_command_lines_put_the_prompt_after_the_options_end() -> None:
    claude = cli_sessions.command_line(
        _job(model="opus", args=["--permission-mode", "plan"], resume="abc-1",
             prompt="--model evil"), "/bin/claude",
    )  # fmt: skip
    assert claude == [
        "/bin/claude", "-p", "--output-format", "json", "--model", "opus",
        "--permission-mode", "plan", "--resume", "abc-1", "--", "--model evil",
    ]  # fmt: skip
    codex = cli_sessions.command_line(_job(command="codex", resume="t-1"), "/bin/codex")
    assert codex == ["/bin/codex", "exec", "--json", "resume", "t-1", "--", "Hi"]


@pytest.mark.parametrize(
    "job",
    [
        _job(command="bash"),
        _job(args=["--dangerously-skip-permissions"]),
        _job(model="x; rm -rf /"),
        _job(resume="--fork-session"),
        _job(prompt="x" * (limits.RUNNER_PROMPT_MAX_CHARS + 1)),
    ],
)
def test_the_runner_refuses_what_the_allow_list_refuses_whatever_the_server_sent(job) -> None:
    with pytest.raises(cli_sessions.Refused):
        cli_sessions.command_line(job, "/bin/claude")


def test_claude_result_objects_read_as_reports() -> None:
    ok = {"type": "result", "subtype": "success", "is_error": False, "result": "Done.",
          "session_id": "5e55-1", "total_cost_usd": 0.034}  # fmt: skip
    read = cli_sessions.outcome("claude", json.dumps(ok), "", 0)
    assert read == cli_sessions.Outcome("Done.", "5e55-1", 0.034, None)
    failed = {**ok, "subtype": "error_max_turns", "is_error": True, "result": None}
    read = cli_sessions.outcome("claude", json.dumps(failed), "", 1)
    assert read.error == "claude: error_max_turns" and read.cost_usd == 0.034
    crashed = cli_sessions.outcome("claude", "", "Error: not logged in\n", 1)
    assert crashed.error == "claude exited 1 without its JSON result: Error: not logged in"
    nameless = cli_sessions.outcome("claude", json.dumps({**ok, "session_id": None}), "", 0)
    assert nameless.error == "claude reported no usable session id"
    odd_cost = cli_sessions.outcome("claude", json.dumps({**ok, "total_cost_usd": "x"}), "", 0)
    assert odd_cost.cost_usd == 0.0


def test_codex_events_read_as_reports() -> None:
    events = [
        {"type": "thread.started", "thread_id": "0199-a"},
        {"type": "turn.started"},
        {"type": "item.completed", "item": {"id": "i0", "type": "reasoning", "text": "…"}},
        {"type": "item.completed", "item": {"id": "i1", "type": "agent_message", "text": "One"}},
        {"type": "item.completed", "item": {"id": "i2", "type": "agent_message", "text": "Two"}},
        {"type": "turn.completed", "usage": {"input_tokens": 1, "output_tokens": 2}},
    ]
    text = "\n".join(json.dumps(e) for e in events) + "\nnot json\n"
    assert cli_sessions.outcome("codex", text, "", 0) == cli_sessions.Outcome(
        "Two", "0199-a", 0.0, None
    )
    failed = [events[0], {"type": "turn.failed", "error": {"message": "rate limited"}}]
    read = cli_sessions.outcome("codex", "\n".join(json.dumps(e) for e in failed), "", 1)
    assert read.error == "codex: rate limited" and read.session_id == "0199-a"


def test_reports_are_shortened_to_fit_their_bounds() -> None:
    long = cli_sessions.Outcome("x" * (limits.RUNNER_OUTPUT_MAX_CHARS + 5), "s", 0.0, None)
    assert len(long.report()["output"]) == limits.RUNNER_OUTPUT_MAX_CHARS
    error = cli_sessions.Outcome(None, None, 0.0, "e" * (limits.RUNNER_ERROR_MAX_CHARS + 5))
    assert len(error.report()["error"]) == limits.RUNNER_ERROR_MAX_CHARS
    assert "output" not in error.report()
