"""Following a function call to its end from the CLI (`call --wait`, `status --wait`):
polling, progress and questions on stderr (a person at a terminal may answer right there),
the exit code of its outcome, and the human view of a call's status.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from agentworks_cli import shapes
from agentworks_cli.client import EXIT_OK, CliError, segment
from agentworks_cli.commands.formatting import clean, indent, one_line, shell, when
from agentworks_cli.commands.session import Session

EXIT_CALL_FAILED = 6
EXIT_CALL_STOPPED = 7  # cancelled or interrupted
EXIT_WAIT_TIMEOUT = 8
EXIT_STOPPED_WAITING = 130  # Ctrl-C, as for every command
OUTCOME_EXIT = {
    "succeeded": EXIT_OK,
    "failed": EXIT_CALL_FAILED,
    "cancelled": EXIT_CALL_STOPPED,
    "interrupted": EXIT_CALL_STOPPED,
}
# Between two polls of a waiting call: quick enough to feel live, light on the API.
POLL_SECONDS = 0.75


def wait_and_show(session: Session, status: dict[str, Any], timeout: float) -> int:
    try:
        final = Waiter(session).until_terminal(status, timeout)
    except KeyboardInterrupt:
        # Ctrl-C stops the waiting, not the call: say how to pick it up again.
        call_id = str(status.get("call_id") or "")
        wait = shell(session.command("functions", "status", call_id, "--wait"))
        raise CliError(
            f"stopped waiting; call {call_id} goes on: {wait}", EXIT_STOPPED_WAITING
        ) from None
    if session.json:
        session.print_json(final)
    else:
        show_status(session, final)
    state = str(final.get("state"))
    code = OUTCOME_EXIT.get(state, EXIT_OK)
    if code != EXIT_OK:
        errors = "; ".join(one_line(e) for e in final.get("errors") or [])
        detail = f": {errors}" if errors else ""
        error_line(f"call {one_line(final.get('call_id'))} {state}{detail}")
    return code


class Waiter:
    """Polls one call to a terminal state, reporting on stderr as it goes."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.live = stderr_is_terminal()  # state and progress lines only for a person
        self.can_ask = self.live and stdin_is_terminal() and not session.json
        self.state: str | None = None
        self.progress_shown = 0
        self.questions_shown: set[str] = set()

    def until_terminal(self, status: dict[str, Any], timeout: float) -> dict[str, Any]:
        call_id = str(status.get("call_id") or "")
        deadline = time.monotonic() + timeout if timeout > 0 else None
        while True:
            status = self.report(status)
            if status.get("terminal"):
                return status
            if deadline is not None and time.monotonic() >= deadline:
                wait = shell(self.session.command("functions", "status", call_id))
                raise CliError(
                    f"call {call_id} is still {status.get('state')} after {timeout:g} s; it "
                    f"goes on: {wait} --wait",
                    EXIT_WAIT_TIMEOUT,
                    {"error": {"code": "wait_timeout", "message": "still running",
                               "call": status}},
                )  # fmt: skip
            time.sleep(POLL_SECONDS)
            status = self.session.call("GET", f"/v1/calls/{segment(call_id)}", shape=shapes.CALL)

    def report(self, status: dict[str, Any]) -> dict[str, Any]:
        """Prints what is new; returns the status to go on with (after an answer, its reply)."""
        # Progress first: it happened before the call reached the state it is in now.
        progress = status.get("progress") or []
        if self.live:
            for line in progress[self.progress_shown :]:
                note(f"… {one_line(line)}")
        self.progress_shown = len(progress)
        state = str(status.get("state"))
        if self.live and state != self.state:
            note(f"… {status.get('call_id')}: {state}")
        self.state = state
        for pending in status.get("pending_inputs") or []:
            request_id = str(pending.get("request_id"))
            if request_id in self.questions_shown:
                continue
            self.questions_shown.add(request_id)
            answered = self.ask(status, pending)
            if answered is not None:
                return self.report(answered)
        return status

    def ask(self, status: dict[str, Any], pending: dict[str, Any]) -> dict[str, Any] | None:
        """Shows a question (always: a script must not hang silently); a person may answer."""
        call_id, request_id = str(status.get("call_id")), str(pending.get("request_id"))
        command = reply_command(self.session, call_id, request_id)
        note(f"question from {one_line(status.get('target'))} (request_id {request_id}):")
        for line in indent(pending.get("question", ""), "  | "):
            note(line)
        note("answer with: " + command)
        if not self.can_ask:
            return None
        print("your answer (empty: answer later): ", end="", file=sys.stderr, flush=True)
        answer = sys.stdin.readline().strip()
        if not answer:
            return None
        try:
            answered = self.session.call(
                "POST",
                f"/v1/calls/{segment(call_id)}/reply",
                body={"request_id": request_id, "answer": answer},
                shape=shapes.CALL,
            )
        except CliError as error:  # answered elsewhere or the call ended: keep following it
            note(f"the answer was not taken: {error.message}")
            return None
        return dict(answered)


def reply_command(session: Session, call_id: str, request_id: str) -> str:
    words = ["functions", "reply", call_id, "--request-id", request_id]
    return shell(session.command(*words, "--answer", "your answer"))


def mcp_call_lines(calls: list[dict[str, Any]], duration: str, size: str) -> list[str]:
    """The MCP tool calls a call's or a step's turns made (issue 28), one line each."""
    if not calls:
        return []
    lines = ["mcp tool calls:"]
    for c in calls:
        where = f"{one_line(c.get('server'))}/{one_line(c.get('tool'))}"
        lines.append(
            f"  - {where}: {one_line(c.get('outcome'))}, {c.get(duration, 0)} ms, "
            f"{c.get(size, 0)} bytes"
        )
    return lines


def show_status(session: Session, status: dict[str, Any]) -> None:
    call_id = str(status.get("call_id") or "")
    state = one_line(status.get("state"))
    session.out(f"call:     {one_line(call_id)}")
    session.out(f"function: {one_line(status.get('target'))} {one_line(status.get('function'))}")
    session.out(f"state:    {state}" + (" (final)" if status.get("terminal") else ""))
    session.out(f"turns:    {status.get('turns', 0)}")
    session.out(f"created:  {when(status.get('created_at'))}")
    session.out(f"updated:  {when(status.get('updated_at'))}")
    progress = status.get("progress") or []
    if progress:
        session.out("progress:")
        for line in progress:
            session.out(f"  - {one_line(line)}")
    for pending in status.get("pending_inputs") or []:
        request_id = str(pending.get("request_id"))
        session.out(f"question (request_id {one_line(request_id)}):")
        for line in indent(pending.get("question", ""), "  | "):
            session.out(line)
        session.out("  answer: " + reply_command(session, call_id, request_id))
    for line in mcp_call_lines(status.get("mcp_calls") or [], "duration_ms", "result_bytes"):
        session.out(line)
    errors = status.get("errors") or []
    if errors:
        session.out("errors:")
        for line in errors:
            session.out(f"  - {one_line(line)}")
    if status.get("final_text"):
        session.out("final text:")
        for line in indent(status["final_text"], "  | "):
            session.out(line)
    if status.get("result") is not None:
        session.out("result:")
        rendered = json.dumps(status["result"], indent=2, ensure_ascii=False)
        for line in indent(rendered, "  "):
            session.out(line)
    read = ["functions", "read", call_id, "--file"]
    if status.get("result_file"):
        path = str(status["result_file"])
        session.out(f"result file: {clean(path)}: " + shell(session.command(*read, path)))
    files = status.get("files") or []
    if files:
        session.out("files:")
        rows = [
            (f.get("path"), f"{f.get('size')} bytes", shell(session.command(*read, f["path"])))
            for f in files
        ]
        session.out_table(("PATH", "SIZE", "READ"), rows, indent="  ")
    if not status.get("terminal"):
        wait = ["functions", "status", call_id, "--wait"]
        session.out_command("wait: ", *wait)


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


def stdin_is_terminal() -> bool:
    return sys.stdin.isatty()


def note(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def error_line(message: str) -> None:
    print(f"error: {' '.join(message.split())}", file=sys.stderr, flush=True)
