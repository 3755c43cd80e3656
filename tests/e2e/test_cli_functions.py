"""Crews and structured functions through the `agentworks` CLI, run as a subprocess against
the local stack (F1–F8): an admin defines the Crew from a YAML file, a caller discovers and
calls its functions, waits for outcomes, answers a question and reads a file."""

from __future__ import annotations

import json
import queue
import re
import subprocess
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_cli_messages import Cli

pytestmark = pytest.mark.e2e

# The product docs' Crew file, plus a function that writes a file and one that fails.
# `messaging: on` is bare on purpose: YAML reads it as true, the server as "on".
CREW_YAML = """\
name: {name}
instructions: Answer questions about contract clauses.
messaging: on
adapter:
  type: scripted
  rules:
    - when: "clause (\\\\d+)"
      reply: "Clause {{match.1}} covers termination."
    - function: summarize
      result: {{summary: "{{args.text}}"}}
    - function: confirm
      ask: "Proceed with {{args.action}}?"
      result: {{confirmed: "{{answer}}"}}
    - function: report
      reply: Report written.
      files:
        report.txt: "Report on {{args.topic}}"
    - function: refuse
      fail: "Refused: {{args.why}}"
    - default: I can only discuss clauses.
functions:
  - name: summarize
    description: Summarize a text
    input_schema:
      type: object
      properties: {{text: {{type: string}}}}
      required: [text]
    output_schema:
      type: object
      properties: {{summary: {{type: string}}}}
      required: [summary]
  - name: confirm
    description: Ask a person before acting
    input_schema:
      type: object
      properties: {{action: {{type: string}}}}
      required: [action]
  - name: report
    description: Write a report file
    input_schema:
      type: object
      properties: {{topic: {{type: string}}}}
      required: [topic]
  - name: refuse
    description: Always fails
    input_schema:
      type: object
      properties: {{why: {{type: string}}}}
"""

REPLY_COMMAND = re.compile(r"functions reply (\S+) --request-id (\S+) --answer")


@pytest.fixture
def cli(local_stack: Any) -> Cli:
    return Cli(local_stack)


def _crew_file(tmp_path: Path, name: str) -> Path:
    path = tmp_path / "crew.yaml"
    path.write_text(CREW_YAML.format(name=name))
    return path


def _caller(cli: Cli, tmp_path: Path) -> Path:
    """A non-admin connection that may call functions, saved as its own CLI config."""
    path = tmp_path / "caller.json"
    cli.ok(
        "connections", "create", "--name", f"caller-{uuid.uuid4().hex[:8]}",
        "--scopes", "functions:call,functions:read", "--save-config", str(path),
    )  # fmt: skip
    return path


def test_crew_functions_through_the_cli(cli: Cli, tmp_path: Path) -> None:
    """F1 create/get/update/delete from a YAML file; F2 list, call --wait, status, read;
    F3 a schema rejection; F7 a question answered with `functions reply`."""
    crew_file = _crew_file(tmp_path, "contracts")
    created = cli.ok("crews", "create", "--file", str(crew_file))
    assert created.out.startswith("created crew:contracts (version 1, crew_")
    shown = cli.ok("crews", "get", "contracts", "--json").json()
    assert shown["messaging"] == "on" and shown["target"] == "crew:contracts"
    caller = _caller(cli, tmp_path)
    listed = cli.ok("crews", "list", config=caller).out
    assert any(line.split()[:1] == ["crew:contracts"] for line in listed.splitlines()), listed

    functions = cli.ok(
        "functions", "list", "--target", "crew:contracts", "--json", config=caller
    ).json()
    assert [f["name"] for f in functions["functions"]] == [
        "summarize", "confirm", "report", "refuse",
    ]  # fmt: skip

    # F2/F3: call and wait for the checked result.
    done = cli.ok(
        "functions", "call", "--target", "crew:contracts", "--function", "summarize",
        "--args", '{"text": "Either party may end it."}', "--submission-id", "e2e-1",
        "--wait", "--json",
        config=caller,
    ).json()  # fmt: skip
    assert done["state"] == "succeeded" and done["terminal"] is True
    assert done["result"] == {"summary": "Either party may end it."}
    human = cli.ok("functions", "status", "--call-id", done["call_id"], config=caller).out
    assert "state:    succeeded (final)" in human.splitlines()
    # F4: the same submission id returns the same call.
    again = cli.ok(
        "functions", "call", "--target", "crew:contracts", "--function", "summarize",
        "--args", '{"text": "Either party may end it."}', "--submission-id", "e2e-1", "--json",
        config=caller,
    ).json()  # fmt: skip
    assert again["call_id"] == done["call_id"] and again["replayed"] is True

    rejected = cli(
        "functions", "call", "--target", "crew:contracts", "--function", "summarize",
        "--args", '{"text": 42}',
        config=caller,
    )  # fmt: skip
    assert rejected.code == 1 and rejected.out == ""
    assert rejected.err.startswith("error: ") and rejected.err.count("\n") == 1
    assert "args.text" in rejected.err

    # F2 read: the report function writes a file; `read` prints exactly its content.
    report = cli.ok(
        "functions", "call", "--target", "crew:contracts", "--function", "report",
        "--args", '{"topic": "renewals"}', "--wait",
        config=caller,
    )  # fmt: skip
    assert "  | Report written." in report.out.splitlines()
    call_id = re.search(r"^call:\s+(\S+)$", report.out, re.M)
    assert call_id is not None, report.out
    read = cli.ok(
        "functions", "read", "--call-id", call_id.group(1), "--file", "report.txt",
        config=caller,
    )  # fmt: skip
    assert read.out == "Report on renewals"
    assert "report.txt: page 0 of pages 0–0, 18 bytes in all" in read.err
    beyond = cli.ok(
        "functions", "read", "--call-id", call_id.group(1), "--file", "report.txt",
        "--page", "1", "--json",
        config=caller,
    ).json()  # fmt: skip
    assert beyond["content"] == "" and beyond["pages"] == 1

    # F1: update from the file (version 2), delete; the Crew is then unavailable (exit 4).
    crew_file.write_text(crew_file.read_text().replace("contract clauses", "contracts"))
    updated = cli.ok("crews", "update", "--file", str(crew_file), "--json").json()
    assert updated["version"] == 2 and updated["instructions"].endswith("about contracts.")
    assert cli.ok("crews", "delete", "contracts").out == "deleted crew:contracts\n"
    gone = cli("crews", "get", "contracts", config=caller)
    assert gone.code == 4 and gone.err.startswith("error: ")


def test_question_answered_with_functions_reply_while_waiting(
    cli: Cli, local_stack: Any, tmp_path: Path
) -> None:
    """F7: `call --wait` prints the question and the exact `functions reply` command on
    stderr and keeps waiting; running that command lets the call finish with the answer."""
    cli.ok("crews", "create", "--file", str(_crew_file(tmp_path, "approvals")))
    caller = _caller(cli, tmp_path)
    waiting = subprocess.Popen(
        [
            *cli.command, "--config", str(caller), "functions", "call",
            "--target", "crew:approvals", "--function", "confirm",
            "--args", '{"action": "deploy"}', "--wait", "--json",
        ],
        env=cli.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    assert waiting.stderr is not None
    reader = threading.Thread(
        target=lambda: [lines.put(line) for line in waiting.stderr or []], daemon=True
    )
    reader.start()
    try:
        seen: list[str] = []
        found = None
        while found is None:
            try:
                line = lines.get(timeout=60)
            except queue.Empty:
                pytest.fail(f"no question within 60 s; stderr so far: {seen}")
            seen.append(line)
            found = REPLY_COMMAND.search(line)
        assert any("Proceed with deploy?" in line for line in seen), seen
        call_id, request_id = found.group(1), found.group(2)
        replied = cli.ok(
            "functions", "reply", "--call-id", call_id, "--request-id", request_id,
            "--answer", "yes",
            config=caller,
        )  # fmt: skip
        assert replied.out.startswith(f"answered {request_id}; call {call_id} is running")
        out, _ = waiting.communicate(timeout=60)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait()
    assert waiting.returncode == 0, out
    final = json.loads(out)
    assert final["call_id"] == call_id and final["state"] == "succeeded"
    assert final["result"] == {"confirmed": "yes"}
    cli.ok("crews", "delete", "approvals")


def test_failed_call_exits_6_with_one_error_line(cli: Cli, tmp_path: Path) -> None:
    """F2: --wait turns the outcome into the exit code (6 = failed), the reason in one line."""
    cli.ok("crews", "create", "--file", str(_crew_file(tmp_path, "refusals")))
    caller = _caller(cli, tmp_path)
    result = cli(
        "functions", "call", "--target", "crew:refusals", "--function", "refuse",
        "--args", '{"why": "policy"}', "--wait",
        config=caller,
    )  # fmt: skip
    assert result.code == 6, result
    assert "state:    failed (final)" in result.out.splitlines()
    assert result.err.startswith("error: call call_") and result.err.count("\n") == 1
    assert "failed: Refused: policy" in result.err
    missing = cli("functions", "status", "--call-id", "call_unknown", config=caller)
    assert missing.code == 4
    cli.ok("crews", "delete", "refusals")
