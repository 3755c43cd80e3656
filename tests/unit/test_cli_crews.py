"""`agentworks crews …` and `agentworks functions …` against a tiny in-test HTTP server with
scripted answers: the requests sent, Crew files (YAML/JSON), human and --json output, the
--wait loop (progress, questions, outcome exit codes) and error lines (F1–F8); and the
commands of messages to Crews: `messages state --target crew:NAME`, `messages wakeup …`,
`crews release|decline`, `functions complete` (M8–M10, §8 mailbox)."""

from __future__ import annotations

import base64
import io
import json
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from agentworks_cli.client import CONFIG_ENV
from agentworks_cli.commands import call_waiting
from agentworks_cli.main import main

TOKEN = "aw1.acc1.con_admin.secret"

CREW_YAML = """\
name: contracts
instructions: Answer questions about contract clauses.
messaging: on
adapter:
  type: scripted
  rules:
    - function: summarize
      result: {summary: "{args.text}"}
functions:
  - name: summarize
    description: Summarize a text
    input_schema:
      type: object
      properties: {text: {type: string}}
      required: [text]
"""

CREW_VIEW = {
    "crew_id": "crew_01",
    "target": "crew:contracts",
    "version": 1,
    "running": 0,
    "created_at": "2027-01-15T08:00:00.000+00:00",
    "updated_at": "2027-01-15T08:00:00.000+00:00",
    "name": "contracts",
    "instructions": "Answer questions about contract clauses.",
    "messaging": "on",
    "adapter": {"type": "scripted", "rules": []},
    "access": [],
    "may_ask": [],
    "visibility": "account",
    "mcp_tools": [],
    "owner_connection_id": "con_admin",
    "functions": [
        {
            "name": "summarize",
            "description": "Summarize a text",
            "input_schema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
            "output_schema": None,
        }
    ],
}


def status(state: str, **changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "call_id": "call_1",
        "target": "crew:contracts",
        "function": "summarize",
        "state": state,
        "terminal": state in {"succeeded", "failed", "cancelled", "interrupted"},
        "progress": [],
        "errors": [],
        "pending_inputs": [],
        "final_text": None,
        "result": None,
        "result_file": None,
        "files": [],
        "turns": 0,
        "created_at": "2027-01-15T08:00:00+00:00",
        "updated_at": "2027-01-15T08:00:01+00:00",
    }
    body.update(changes)
    return body


QUESTION = {"request_id": "req_1", "question": "Proceed with deploy?", "asked_at": "2027-01-15"}


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any


class ScriptedServer:
    """Answers (method, path) with scripted replies in order (the last one repeats)."""

    def __init__(self) -> None:
        self.routes: dict[tuple[str, str], list[tuple[int, Any]]] = {}
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                with fake.lock:
                    fake.seen.append(
                        Seen(
                            self.command,
                            parts.path,
                            parse_qs(parts.query),
                            json.loads(raw) if raw else None,
                        )
                    )
                    script = fake.routes.get((self.command, parts.path))
                    if not script:
                        code, body = 404, {"error": {"code": "unavailable", "message": "No."}}
                    else:
                        code, body = script.pop(0) if len(script) > 1 else script[0]
                payload = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                if code == 429:
                    self.send_header("Retry-After", "5")
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def on(self, method: str, path: str, *replies: Any, status: int = 200) -> None:
        self.routes[(method, path)] = [(status, body) for body in replies]

    def requests(self, method: str, path: str) -> list[Seen]:
        return [s for s in self.seen if s.method == method and s.path == path]

    @property
    def last(self) -> Seen:
        return self.seen[-1]


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    fake = ScriptedServer()
    thread = threading.Thread(target=fake.httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    yield fake
    fake.httpd.shutdown()
    fake.httpd.server_close()


@pytest.fixture(autouse=True)
def config(tmp_path: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "admin.json"
    path.write_text(json.dumps({"url": server.url, "token": TOKEN, "account_id": "acc1"}))
    monkeypatch.setenv(CONFIG_ENV, str(path))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    # Polls of --wait without waiting; no terminal unless a test says so.
    monkeypatch.setattr(call_waiting, "POLL_SECONDS", 0.0)
    monkeypatch.setattr(call_waiting, "stderr_is_terminal", lambda: False)
    monkeypatch.setattr(call_waiting, "stdin_is_terminal", lambda: False)
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str) -> str:
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


# ---------------------------------------------------------------- crews (F1)


def test_f1_crews_create_from_yaml_with_bare_on(server, tmp_path, capsys):
    """F1: a YAML Crew file is sent as JSON; YAML's bare `on` travels as true (the server
    reads it as "on")."""
    server.on("POST", "/v1/crews", CREW_VIEW, status=201)
    crew_file = tmp_path / "crew.yaml"
    crew_file.write_text(CREW_YAML)
    code, out, err = run(capsys, "crews", "create", "--file", str(crew_file))
    assert code == 0, err
    sent = server.last.body
    assert sent["name"] == "contracts" and sent["messaging"] is True
    assert sent["adapter"]["rules"][0]["result"] == {"summary": "{args.text}"}
    assert sent["functions"][0]["input_schema"]["required"] == ["text"]
    assert out.startswith("created crew:contracts (version 1, crew_01)")
    assert "summarize" in out and "agentworks functions list --target crew:contracts" in out


def test_f1_crews_create_from_json_and_stdin(server, tmp_path, capsys, monkeypatch):
    server.on("POST", "/v1/crews", CREW_VIEW, status=201)
    crew_file = tmp_path / "crew.json"
    crew_file.write_text(json.dumps({"name": "contracts", "adapter": {"type": "scripted"}}))
    code, out, _ = run(capsys, "crews", "create", "--file", str(crew_file), "--json")
    assert code == 0 and json.loads(out) == CREW_VIEW
    assert server.last.body == {"name": "contracts", "adapter": {"type": "scripted"}}
    monkeypatch.setattr("sys.stdin", io.StringIO(CREW_YAML))
    assert run(capsys, "crews", "create", "-f", "-")[0] == 0
    assert server.last.body["messaging"] is True


def test_f1_crews_update_puts_to_the_files_name(server, tmp_path, capsys):
    server.on("PUT", "/v1/crews/contracts", {**CREW_VIEW, "version": 2})
    crew_file = tmp_path / "crew.yml"
    crew_file.write_text(CREW_YAML)
    code, out, _ = run(capsys, "crews", "update", "--file", str(crew_file))
    assert code == 0
    assert server.last.method == "PUT" and server.last.path == "/v1/crews/contracts"
    assert out.startswith("updated crew:contracts (version 2")
    nameless = tmp_path / "nameless.yaml"
    nameless.write_text("adapter: {type: scripted}\n")
    code, _, err = run(capsys, "crews", "update", "--file", str(nameless))
    assert code == 2 and "needs a name" in one_error_line(err)


def test_f1_crews_get_list_delete(server, capsys):
    server.on("GET", "/v1/crews/contracts", CREW_VIEW)
    server.on("GET", "/v1/crews", {"crews": [CREW_VIEW]})
    server.on("DELETE", "/v1/crews/contracts", {"target": "crew:contracts", "deleted": True})
    code, out, _ = run(capsys, "crews", "get", "contracts")
    assert code == 0 and "messaging: on" in out and "access:    the account" in out
    code, out, _ = run(capsys, "crews", "list")
    header, row = out.splitlines()
    assert header.split() == [
        "TARGET", "VERSION", "ADAPTER", "MESSAGING", "RUNNING", "UPDATED", "FUNCTIONS"
    ]  # fmt: skip
    # Dates as every other command shows them (from the API's ISO 8601 times).
    assert row.split() == [
        "crew:contracts", "1", "scripted", "on", "0", "2027-01-15", "08:00:00", "UTC", "summarize"
    ]  # fmt: skip
    code, out, _ = run(capsys, "crews", "delete", "contracts")
    assert code == 0 and out == "deleted crew:contracts\n"
    assert server.last.method == "DELETE"


def test_crews_list_empty_says_how_to_create(server, capsys):
    server.on("GET", "/v1/crews", {"crews": []})
    code, out, _ = run(capsys, "crews", "list")
    assert code == 0 and "agentworks crews create --file crew.yaml" in out


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("broken.yaml", "name: [unclosed", "not valid YAML"),
        ("broken.json", "{", "not valid JSON"),
        ("list.yaml", "- a\n- b\n", "must hold one mapping"),
        ("missing.yaml", None, "no Crew file at"),
    ],
)
def test_crew_file_problems_are_usage_errors(server, tmp_path, capsys, name, content, expected):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    code, _, err = run(capsys, "crews", "create", "--file", str(path))
    assert code == 2 and expected in one_error_line(err)
    assert server.seen == []


def test_yaml_without_pyyaml_says_what_to_do(server, tmp_path, capsys, monkeypatch):
    """PyYAML is not in the runtime layer: a YAML file then gets a clear error, and a JSON
    file (even named .yaml) still works."""
    monkeypatch.setitem(sys.modules, "yaml", None)
    crew_file = tmp_path / "crew.yaml"
    crew_file.write_text(CREW_YAML)
    code, _, err = run(capsys, "crews", "create", "--file", str(crew_file))
    assert code == 2
    line = one_error_line(err)
    assert "needs PyYAML" in line and "pip install pyyaml" in line and "JSON" in line
    server.on("POST", "/v1/crews", CREW_VIEW, status=201)
    crew_file.write_text(json.dumps({"name": "contracts", "adapter": {"type": "scripted"}}))
    assert run(capsys, "crews", "create", "--file", str(crew_file))[0] == 0


def test_server_refusals_are_one_line_with_exit_codes(server, tmp_path, capsys):
    bad = {"error": {"code": "invalid_request", "message": "Invalid Crew definition: x"}}
    server.on("POST", "/v1/crews", bad, status=400)
    crew_file = tmp_path / "crew.yaml"
    crew_file.write_text(CREW_YAML)
    code, out, err = run(capsys, "crews", "create", "--file", str(crew_file))
    assert code == 1 and out == ""
    assert one_error_line(err) == "error: Invalid Crew definition: x\n"
    code, _, _ = run(capsys, "crews", "get", "ghost")
    assert code == 4


# ---------------------------------------------------------------- functions (F2–F8)


def test_f2_functions_list_shows_schemas_and_a_call_command(server, capsys):
    listed = {"target": "crew:contracts", "version": 3, "functions": CREW_VIEW["functions"]}
    server.on("GET", "/v1/functions", listed)
    code, out, _ = run(capsys, "functions", "list", "--target", "crew:contracts")
    assert code == 0
    assert server.last.query == {"target": ["crew:contracts"]}
    assert out.startswith("crew:contracts (version 3)")
    assert 'input:  {"type":"object","properties":{"text":{"type":"string"}}' in out
    assert (
        "agentworks functions call --target crew:contracts --function summarize "
        '--args \'{"text": "…"}\' --wait'
    ) in out
    code, out, _ = run(capsys, "functions", "list", "--target", "crew:contracts", "--json")
    assert json.loads(out) == listed


def test_f2_call_without_wait_prints_the_call_id_and_next_commands(server, capsys):
    server.on("POST", "/v1/calls", {**status("accepted"), "replayed": False}, status=202)
    code, out, _ = run(
        capsys, "functions", "call", "--target", "crew:contracts", "--function", "summarize",
        "--args", '{"text": "hi"}', "--submission-id", "sub-1",
    )  # fmt: skip
    assert code == 0
    assert server.last.body == {
        "target": "crew:contracts",
        "function": "summarize",
        "args": {"text": "hi"},
        "submission_id": "sub-1",
    }
    assert "accepted call call_1" in out
    assert "agentworks functions status call_1 --wait" in out


def test_f4_replayed_call_is_said(server, capsys):
    server.on("POST", "/v1/calls", {**status("running"), "replayed": True})
    code, out, _ = run(
        capsys, "functions", "call", "--target", "crew:contracts", "--function", "summarize",
        "--submission-id", "sub-1",
    )  # fmt: skip
    assert code == 0 and "replayed:" in out
    assert server.last.body["args"] == {}


@pytest.mark.parametrize(
    ("value", "expected"),
    [("{oops", "not valid JSON"), ("[1, 2]", "must be a JSON object"), ("@/nope", "cannot read")],
)
def test_bad_args_are_usage_errors(server, capsys, value, expected):
    code, _, err = run(
        capsys, "functions", "call", "--target", "crew:c", "--function", "f", "--args", value
    )
    assert code == 2 and expected in one_error_line(err)
    assert server.seen == []


def test_args_from_a_file_and_stdin(server, tmp_path, capsys, monkeypatch):
    server.on("POST", "/v1/calls", {**status("accepted"), "replayed": False}, status=202)
    args_file = tmp_path / "args.json"
    args_file.write_text('{"text": "from a file"}')
    base = ["functions", "call", "--target", "crew:c", "--function", "f", "--args"]
    assert run(capsys, *base, f"@{args_file}")[0] == 0
    assert server.last.body["args"] == {"text": "from a file"}
    monkeypatch.setattr("sys.stdin", io.StringIO('{"text": "from stdin"}'))
    assert run(capsys, *base, "-")[0] == 0
    assert server.last.body["args"] == {"text": "from stdin"}


def test_f3_schema_rejection_and_busy_are_one_line(server, capsys):
    """F3: 422 invalid_arguments (exit 1, the path in --json); F5: busy is 429 (exit 5)."""
    rejected = {
        "error": {
            "code": "invalid_arguments",
            "message": "args don't match summarize's input schema: args.text must be string",
            "path": "args.text",
        }
    }
    server.on("POST", "/v1/calls", rejected, status=422)
    argv = ["functions", "call", "--target", "crew:contracts", "--function", "summarize"]
    code, out, err = run(capsys, *argv, "--args", '{"text": 1}', "--json")
    assert code == 1 and json.loads(out)["error"]["path"] == "args.text"
    assert "args.text must be string" in one_error_line(err)
    busy = {"error": {"code": "busy", "message": "crew:contracts is running 3 calls."}}
    server.on("POST", "/v1/calls", busy, status=429)
    code, _, err = run(capsys, *argv, "--args", '{"text": "x"}', "--wait")
    assert code == 5 and "running 3 calls" in one_error_line(err)


def test_f2_call_wait_polls_to_succeeded(server, capsys):
    """F2: --wait follows the call to its terminal state; exit 0 and the result."""
    server.on("POST", "/v1/calls", {**status("accepted"), "replayed": False}, status=202)
    server.on(
        "GET",
        "/v1/calls/call_1",
        status("running", progress=["turn 1 started"]),
        status("running", progress=["turn 1 started"]),
        status("succeeded", turns=1, result={"summary": "hi"}, final_text="Done."),
    )
    code, out, err = run(
        capsys, "functions", "call", "--target", "crew:contracts", "--function", "summarize",
        "--args", '{"text": "hi"}', "--wait",
    )  # fmt: skip
    assert code == 0, err
    assert len(server.requests("GET", "/v1/calls/call_1")) == 3
    assert "state:    succeeded (final)" in out
    assert '"summary": "hi"' in out and "  | Done." in out
    assert err == ""  # not a terminal: no progress chatter


def test_wait_reports_progress_on_a_terminal(server, capsys, monkeypatch):
    monkeypatch.setattr(call_waiting, "stderr_is_terminal", lambda: True)
    server.on(
        "GET",
        "/v1/calls/call_1",
        status("running", progress=["turn 1 started"]),
        status("running", progress=["turn 1 started", "searching"]),
        status("succeeded", progress=["turn 1 started", "searching"], result={}),
    )
    code, _, err = run(capsys, "functions", "status", "--call-id", "call_1", "--wait")
    assert code == 0
    assert err.splitlines() == [
        "… turn 1 started",
        "… call_1: running",
        "… searching",
        "… call_1: succeeded",
    ]


@pytest.mark.parametrize(("state", "code"), [("failed", 6), ("interrupted", 7), ("cancelled", 7)])
def test_wait_exit_code_says_how_the_call_ended(server, capsys, state, code):
    server.on(
        "GET",
        "/v1/calls/call_1",
        status("running"),
        status(state, errors=["The agent failed."] if state == "failed" else []),
    )
    for extra in ([], ["--json"]):
        got, out, err = run(capsys, "functions", "status", "--call-id", "call_1", "--wait", *extra)
        assert got == code
        assert one_error_line(err).startswith(f"error: call call_1 {state}")
        if extra:
            assert json.loads(out)["state"] == state
    assert "The agent failed." in err or state != "failed"


def test_f7_wait_prints_the_question_and_the_reply_command(server, capsys):
    """F7: a script waiting on a call sees the question and the exact command that answers
    it, and keeps waiting (no prompt without a terminal)."""
    asking = status("input_required", function="confirm", pending_inputs=[QUESTION])
    server.on(
        "GET",
        "/v1/calls/call_1",
        asking,
        asking,
        status("running", function="confirm"),
        status("succeeded", function="confirm", result={"confirmed": "yes"}),
    )
    code, out, err = run(capsys, "functions", "status", "--call-id", "call_1", "--wait")
    assert code == 0
    assert err.count("Proceed with deploy?") == 1  # once per question, not per poll
    assert (
        "answer with: agentworks functions reply call_1 --request-id req_1 --answer 'your answer'"
    ) in err
    assert server.requests("POST", "/v1/calls/call_1/reply") == []
    assert '"confirmed": "yes"' in out


def test_f7_wait_on_a_terminal_prompts_for_the_answer(server, capsys, monkeypatch):
    monkeypatch.setattr(call_waiting, "stderr_is_terminal", lambda: True)
    monkeypatch.setattr(call_waiting, "stdin_is_terminal", lambda: True)
    monkeypatch.setattr("sys.stdin", io.StringIO("ship it\n"))
    asking = status("input_required", function="confirm", pending_inputs=[QUESTION])
    server.on("GET", "/v1/calls/call_1", asking, status("succeeded", result={"confirmed": "ok"}))
    server.on("POST", "/v1/calls/call_1/reply", status("running", function="confirm"))
    code, _, err = run(capsys, "functions", "status", "--call-id", "call_1", "--wait")
    assert code == 0
    [sent] = server.requests("POST", "/v1/calls/call_1/reply")
    assert sent.body == {"request_id": "req_1", "answer": "ship it"}
    assert "your answer (empty: answer later): " in err


def test_wait_timeout_exits_8_and_the_call_goes_on(server, capsys):
    server.on("GET", "/v1/calls/call_1", status("running"))
    code, _, err = run(
        capsys, "functions", "status", "--call-id", "call_1", "--wait", "--timeout", "0.05"
    )
    assert code == 8
    line = one_error_line(err)
    assert "still running after 0.05 s" in line
    assert "agentworks functions status call_1 --wait" in line
    code, _, err = run(capsys, "functions", "status", "--call-id", "call_1", "--timeout", "5")
    assert code == 2 and "--timeout goes with --wait" in err


def test_status_without_wait_shows_question_files_and_exit_0(server, capsys):
    server.on(
        "GET",
        "/v1/calls/call_1",
        status(
            "failed",
            errors=["boom"],
            files=[{"path": "report.txt", "size": 12}],
            pending_inputs=[],
        ),
    )
    code, out, _ = run(capsys, "functions", "status", "--call-id", "call_1")
    assert code == 0  # status reports; only --wait turns the outcome into an exit code
    assert "state:    failed (final)" in out and "  - boom" in out
    assert "agentworks functions read call_1 --file report.txt" in out
    server.on("GET", "/v1/calls/call_2", status("input_required", pending_inputs=[QUESTION]))
    code, out, _ = run(capsys, "functions", "status", "--call-id", "call_2")
    assert "question (request_id req_1):" in out and "  | Proceed with deploy?" in out
    assert "agentworks functions reply call_1 --request-id req_1" in out


def test_f7_reply_sends_the_answer(server, capsys, monkeypatch):
    server.on("POST", "/v1/calls/call_1/reply", status("running"))
    argv = ["functions", "reply", "--call-id", "call_1", "--request-id", "req_1", "--answer"]
    code, out, _ = run(capsys, *argv, "yes")
    assert code == 0 and server.last.body == {"request_id": "req_1", "answer": "yes"}
    assert out.startswith("answered req_1; call call_1 is running")
    monkeypatch.setattr("sys.stdin", io.StringIO("a longer\nanswer\n"))
    assert run(capsys, *argv, "-")[0] == 0
    assert server.last.body["answer"] == "a longer\nanswer"
    conflict = {"error": {"code": "conflict", "message": "No pending input with that id."}}
    server.on("POST", "/v1/calls/call_1/reply", conflict, status=409)
    code, _, err = run(capsys, *argv, "late")
    assert code == 1 and one_error_line(err) == "error: No pending input with that id.\n"


def test_f2_read_writes_the_page_to_stdout_and_facts_to_stderr(server, capsys):
    page = {
        "call_id": "call_1", "path": "report.txt", "page": 0, "pages": 2, "size": 3_000_000,
        "encoding": "utf-8", "content": "line one\nline two\n",
    }  # fmt: skip
    server.on("GET", "/v1/calls/call_1/files", page)
    code, out, err = run(capsys, "functions", "read", "--call-id", "call_1", "--file", "report.txt")
    assert code == 0
    assert server.last.query == {"path": ["report.txt"], "page": ["0"]}
    assert out == "line one\nline two\n"  # exactly the file's bytes: redirectable
    assert "report.txt: page 0 of pages 0–1, 3000000 bytes in all" in err
    assert "next page: agentworks functions read call_1 --file report.txt --page 1" in err
    code, out, _ = run(
        capsys, "functions", "read", "--call-id", "call_1", "--file", "report.txt", "--json"
    )
    assert json.loads(out) == page


def test_read_decodes_base64_pages(server, capfdbinary):
    data = bytes(range(256))
    page = {
        "call_id": "call_1", "path": "blob.bin", "page": 0, "pages": 1, "size": 256,
        "encoding": "base64", "content": base64.b64encode(data).decode(),
    }  # fmt: skip
    server.on("GET", "/v1/calls/call_1/files", page)
    assert main(["functions", "read", "--call-id", "call_1", "--file", "blob.bin"]) == 0
    assert capfdbinary.readouterr().out == data


def test_f2_read_without_file_lists_the_calls_files(server, capsys):
    files = [{"path": "report.txt", "size": 12}, {"path": "data/out.json", "size": 3}]
    server.on("GET", "/v1/calls/call_1", status("succeeded", files=files))
    code, out, _ = run(capsys, "functions", "read", "--call-id", "call_1")
    assert code == 0 and server.last.path == "/v1/calls/call_1"
    header, first, second = out.splitlines()
    assert header.split() == ["PATH", "SIZE", "READ"]
    assert first.startswith("report.txt") and "12 bytes" in first
    assert first.endswith("agentworks functions read call_1 --file report.txt")
    assert second.endswith("--file data/out.json")
    code, out, _ = run(capsys, "functions", "read", "--call-id", "call_1", "--json")
    assert json.loads(out) == {"call_id": "call_1", "result_file": None, "files": files}
    server.on("GET", "/v1/calls/call_1", status("running"))
    code, out, _ = run(capsys, "functions", "read", "--call-id", "call_1")
    assert code == 0 and out == "call call_1 has no files (state: running)\n"


def test_read_page_must_not_be_negative(server, capsys):
    code, _, err = run(capsys, "functions", "read", "--call-id", "c", "--file", "f", "--page", "-1")
    assert code == 2 and "--page" in one_error_line(err) and server.seen == []


def test_ctrl_c_while_waiting_says_the_call_goes_on(server, capsys, monkeypatch):
    server.on("GET", "/v1/calls/call_1", status("running"))

    def interrupted(_seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(call_waiting.time, "sleep", interrupted)
    code, _, err = run(capsys, "functions", "status", "--call-id", "call_1", "--wait")
    assert code == 130
    line = one_error_line(err)
    assert "stopped waiting; call call_1 goes on" in line
    assert "agentworks functions status call_1 --wait" in line


# ---------------------------------------------------------------- messages to Crews (M8–M10, §8)

WAKEUP = {
    "wakeup_id": "wku_1",
    "inbox_id": "ibx_1a",
    "due_at": "2027-01-15T08:02:00.000+00:00",
    "state": "scheduled",
    "run_id": None,
    "run_state": None,
    "error": None,
    "created_at": "2027-01-15T08:00:00.000+00:00",
}
STATE = {
    "target": "crew:contracts",
    "crew_id": "crew_1",
    "messaging": "review",
    "scheduler_paused": True,
    "inboxes": [
        {
            "inbox_id": "ibx_1b",
            "conversation_id": "cnv_1",
            "peer": "agent:asker",
            "status": "active",
            "created_at": "2027-01-15T08:00:00.000+00:00",
            "last_activity_at": "2027-01-15T08:00:00.000+00:00",
            "receiving_run_id": None,
            "delivery_records": [
                {
                    "message_id": "msg_1b0000000001",
                    "created_at": "2027-01-15T08:00:00.000+00:00",
                    "receipt": "stored",
                    "run_state": "pending_review",
                    "run_id": None,
                    "error": None,
                }
            ],
            "wakeups": [WAKEUP],
            "errors": [],
        }
    ],
    "next_cursor": "ibx_1b",
}


def test_m8_messages_state_of_a_crew(server, capsys):
    server.on("GET", "/v1/crews/contracts/state", STATE)
    code, out, err = run(capsys, "messages", "state", "--target", "crew:contracts", "--limit", "1")
    assert code == 0, err
    assert server.last.query == {"limit": ["1"]}
    assert "crew:contracts: messaging review (wakeups paused)" in out
    assert "pending_review" in out and "wku_1" in out
    assert "agentworks crews release --crew contracts --message-id msg_1b0000000001" in out
    assert "next page: agentworks messages state --target crew:contracts --after ibx_1b" in out
    code, out, _ = run(capsys, "messages", "state", "--target", "crew:contracts", "--json")
    assert code == 0 and json.loads(out) == STATE


def test_m8_messages_state_usage_errors(server, capsys):
    code, _, err = run(capsys, "messages", "state", "--target", "agent:x")
    assert code == 2 and "crew:NAME" in one_error_line(err)
    code, _, err = run(capsys, "messages", "state", "--inbox", "ibx_1a", "--after", "x")
    assert code == 2 and "--target" in one_error_line(err)
    assert server.seen == []


def test_m9_wakeup_schedule_cancel_reschedule(server, capsys):
    server.on("POST", "/v1/wakeups", WAKEUP, status=201)
    code, out, err = run(
        capsys, "messages", "wakeup", "schedule", "--inbox", "ibx_1a", "--delay", "120"
    )
    assert code == 0, err
    assert server.last.body == {"inbox_id": "ibx_1a", "delay_seconds": 120}
    assert out.startswith("scheduled wakeup wku_1: due 2027-01-15 08:02:00 UTC, state scheduled")
    assert "agentworks messages wakeup cancel wku_1" in out
    code, _, _ = run(
        capsys,
        "messages", "wakeup", "schedule", "--inbox", "ibx_1a", "--agent", "asker",
        "--at", "2030-01-31T09:00:00Z",
    )  # fmt: skip
    assert code == 0
    assert server.last.body == {
        "inbox_id": "ibx_1a",
        "at": "2030-01-31T09:00:00Z",
        "agent_name": "asker",
    }
    server.on("POST", "/v1/wakeups/wku_1/reschedule", WAKEUP)
    code, _, _ = run(
        capsys, "messages", "wakeup", "reschedule", "--wakeup-id", "wku_1", "--delay", "600"
    )
    assert code == 0 and server.last.body == {"delay_seconds": 600}
    server.on("DELETE", "/v1/wakeups/wku_1", dict(WAKEUP, state="cancelled"))
    code, out, _ = run(capsys, "messages", "wakeup", "cancel", "--wakeup-id", "wku_1")
    assert code == 0 and out.startswith("cancelled wakeup wku_1")
    # Exactly one of --at and --delay.
    code, _, _ = run(capsys, "messages", "wakeup", "schedule", "--inbox", "ibx_1a")
    assert code == 2


def test_m9_wakeup_refusals_are_one_error_line(server, capsys):
    server.on(
        "POST",
        "/v1/wakeups",
        {"error": {"code": "invalid_request", "message": "A wakeup is due 60 s to 7 days."}},
        status=400,
    )
    code, _, err = run(capsys, "messages", "wakeup", "schedule", "--inbox", "i", "--delay", "5")
    assert code == 1 and "60 s to 7 days" in one_error_line(err)


def test_m10_crews_release_and_decline(server, capsys):
    server.on(
        "POST",
        "/v1/crews/contracts/release",
        {"target": "crew:contracts", "message_id": "msg_1", "state": "running", "run_id": "run_1"},
    )
    code, out, err = run(capsys, "crews", "release", "--crew", "contracts", "--message-id", "msg_1")
    assert code == 0, err
    assert server.last.body == {"message_id": "msg_1"}
    assert out.startswith("released msg_1 to crew:contracts: run run_1 running")
    server.on(
        "POST",
        "/v1/crews/contracts/decline",
        {"target": "crew:contracts", "message_id": "msg_1", "state": "declined", "reason": "No."},
    )
    code, out, _ = run(
        capsys,
        "crews", "decline", "--crew", "contracts", "--message-id", "msg_1", "--reason", "No.",
    )  # fmt: skip
    assert code == 0 and server.last.body == {"message_id": "msg_1", "reason": "No."}
    assert out.startswith("declined msg_1 for crew:contracts (No.)")


def test_s8_functions_complete_posts_the_outcome(server, capsys):
    server.on("POST", "/v1/calls/call_1/result", status("running"))
    code, out, err = run(
        capsys,
        "functions", "complete", "--call-id", "call_1", "--agent", "worker",
        "--result", '{"summary": "x"}', "--text", "Done.",
    )  # fmt: skip
    assert code == 0, err
    assert server.last.body == {
        "agent_name": "worker",
        "final_text": "Done.",
        "result": {"summary": "x"},
    }
    assert out.startswith("posted the outcome of call call_1 as agent:worker")
    code, _, err = run(capsys, "functions", "complete", "--call-id", "c", "--agent", "w")
    assert code == 2 and "--result" in one_error_line(err)
    code, _, err = run(
        capsys, "functions", "complete", "--call-id", "c", "--agent", "w", "--result", "{oops"
    )
    assert code == 2 and "not valid JSON" in one_error_line(err)


def test_status_shows_the_mcp_tool_calls_of_the_calls_turns(server, capsys):
    """Issue 28: `functions status` lists each MCP tool call (server/tool, outcome, time,
    size); a call without any shows no such section."""
    calls = [
        {"server": "tools", "tool": "echo", "outcome": "ok", "duration_ms": 12, "result_bytes": 40},
        {
            "server": "tools",
            "tool": "big",
            "outcome": "refused",
            "duration_ms": 0,
            "result_bytes": 0,
        },
    ]
    server.on("GET", "/v1/calls/call_1", status("succeeded", result={}, mcp_calls=calls))
    code, out, _ = run(capsys, "functions", "status", "--call-id", "call_1")
    assert code == 0
    assert "mcp tool calls:\n  - tools/echo: ok, 12 ms, 40 bytes\n  - tools/big: refused" in out
    server.on("GET", "/v1/calls/call_1", status("succeeded", result={}))
    assert "mcp tool calls" not in run(capsys, "functions", "status", "--call-id", "call_1")[1]


def test_workflow_status_shows_each_steps_mcp_tool_calls() -> None:
    from agentworks_cli.commands.workflows import run_lines

    step = {
        "label": "look",
        "status": "succeeded",
        "mcpCalls": [
            {"server": "tools", "tool": "echo", "outcome": "ok", "durationMs": 7, "resultBytes": 3}
        ],
    }
    run = {
        "runId": "run_1",
        "workflowId": "research",
        "status": "succeeded",
        "stages": [{"label": "stage 1", "steps": [step]}],
    }
    lines = run_lines(None, run)  # type: ignore[arg-type]
    assert "look mcp tool calls:" in lines
    assert "  - tools/echo: ok, 7 ms, 3 bytes" in lines
