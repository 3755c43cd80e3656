"""Following a Relay run from the CLI (`relays run|status|retry --wait`): progress lines on
stderr (status changes, each durable step as it completes), the final JSON on stdout, the
exit code of its outcome, and the human view of a run (`relays status RUN`).
"""

from __future__ import annotations

import json
import time
from typing import Any

from agentworks_cli.client import EXIT_OK, CliError, segment
from agentworks_cli.commands.call_waiting import (
    EXIT_CALL_FAILED,
    EXIT_CALL_STOPPED,
    EXIT_STOPPED_WAITING,
    POLL_SECONDS,
    error_line,
    note,
)
from agentworks_cli.commands.formatting import indent, one_line, shell, when
from agentworks_cli.commands.session import Session
from agentworks_cli.shapes import Shape

RUN = Shape("agentworks.relays.views", "RelayRunView")
RUN_EXIT = {
    "succeeded": EXIT_OK,
    "failed": EXIT_CALL_FAILED,
    "needs_reconciliation": EXIT_CALL_STOPPED,  # an attempt was lost inside a step
}


def run_path(run_id: str, tail: str = "") -> str:
    return f"/api/relay-runs/{segment(run_id)}{tail}"


def wait_and_show(session: Session, run: dict[str, Any]) -> int:
    """Polls the run until it ends; stdout gets its final JSON (with --json, the whole run)."""
    run_id = str(run["run_id"])
    follower = Follower()
    try:
        while True:
            follower.report(run)
            if run["terminal"]:
                break
            time.sleep(POLL_SECONDS)
            run = session.call("GET", run_path(run_id), shape=RUN)
    except KeyboardInterrupt:
        again = shell(session.command("relays", "status", run_id, "--wait"))
        raise CliError(
            f"stopped waiting; run {run_id} goes on: {again}", EXIT_STOPPED_WAITING
        ) from None
    code = RUN_EXIT.get(str(run["status"]), EXIT_CALL_FAILED)
    if session.json:
        session.print_json(run)
    elif code == EXIT_OK:
        session.print_json(run.get("result"))
    if code != EXIT_OK:
        _explain_failure(session, run)
    return code


class Follower:
    """Prints what changed since the last poll of one run, on stderr."""

    def __init__(self) -> None:
        self.status: str | None = None
        self.attempts = 0
        self.steps_shown: set[tuple[str, str, int]] = set()

    def report(self, run: dict[str, Any]) -> None:
        status = str(run["status"])
        changed = status != self.status or run["attempts"] != self.attempts
        if changed and not run["terminal"]:
            note(f"… {run['run_id']}: {self._status_text(run)}")
        for step in run.get("steps") or []:
            if step["status"] == "started":
                continue  # said once it completed (or turned out uncertain)
            key = (str(step["name"]), str(step["status"]), int(step["attempt"]))
            if key not in self.steps_shown:
                self.steps_shown.add(key)
                note(f"… step {one_line(step['name'])}: {_step_text(step)}")
        if changed and run["terminal"]:
            note(f"… {run['run_id']}: {self._status_text(run)}")
        self.status, self.attempts = status, int(run["attempts"])

    @staticmethod
    def _status_text(run: dict[str, Any]) -> str:
        text = str(run["status"])
        if run["attempts"]:
            text += f" (attempt {run['attempts']})"
        if run["status"] == "retrying" and run.get("error"):
            text += f": the attempt failed: {one_line(run['error'])}"
        return text


def _step_text(step: dict[str, Any]) -> str:
    text = f"{step['status']} (attempt {step['attempt']}"
    if step.get("safe"):
        text += ", safe to replay"
    if step.get("replays"):
        text += f", replayed {step['replays']}×"
    return text + ")"


def _explain_failure(session: Session, run: dict[str, Any]) -> None:
    run_id = str(run["run_id"])
    detail = f": {one_line(run['error'])}" if run.get("error") else ""
    error_line(f"run {run_id} {run['status']}{detail}")
    if run.get("evidence"):
        note("evidence: " + _compact(run["evidence"]))
    if run["status"] == "needs_reconciliation":
        note("check the side effects of its uncertain steps, then: " + _retry_command(session, run))
    else:
        note("retry it: " + _retry_command(session, run))


def _retry_command(session: Session, run: dict[str, Any]) -> str:
    words = ["relays", "retry", str(run["run_id"])]
    if run["status"] == "needs_reconciliation":
        words.append("--replay-uncertain")  # after checking the uncertain steps' effects
    return shell(session.command(*words, "--wait"))


def show_run(session: Session, run: dict[str, Any]) -> None:
    """The human view of a run: its facts, its durable steps, the outcome, what to do next."""
    run_id = str(run["run_id"])
    session.out(f"run:      {one_line(run_id)}")
    function = f"{one_line(run['relay'])} {one_line(run['function'])}"
    session.out(f"function: {function} (release {run['version']})")
    session.out(f"status:   {run['status']}" + (" (final)" if run["terminal"] else ""))
    session.out(f"attempts: {run['attempts']}")
    session.out(f"caller:   {one_line(run['caller'])}")
    session.out(f"created:  {when(run['created_at'])}")
    session.out(f"updated:  {when(run['updated_at'])}")
    steps = run.get("steps") or []
    if steps:
        session.out("steps:")
        rows = [
            (s["name"], s["status"], s["attempt"], "yes" if s["safe"] else "no", s["replays"])
            for s in steps
        ]
        session.out_table(("STEP", "STATUS", "ATTEMPT", "SAFE", "REPLAYS"), rows, indent="  ")
    calls = run.get("mcp_calls") or []
    if calls:
        session.out("mcp tool calls:" + (" (the first ones)" if run.get("mcp_calls_more") else ""))
        call_rows: list[tuple[object, ...]] = [
            (
                f"{c['server']}/{c['tool']}",
                c.get("step") or "-",
                c["outcome"],
                f"{c['duration_ms']} ms",
                c["result_bytes"],
                one_line(c.get("error") or ""),
            )
            for c in calls
        ]
        session.out_table(
            ("TOOL", "STEP", "OUTCOME", "TOOK", "BYTES", "ERROR"), call_rows, indent="  "
        )
    if run.get("error"):
        session.out(f"error:    {one_line(run['error'])}")
    if run.get("evidence"):
        session.out(f"evidence: {_compact(run['evidence'])}")
    if run["status"] == "succeeded":
        session.out("result:")
        for line in indent(json.dumps(run.get("result"), indent=2, ensure_ascii=False), "  "):
            session.out(line)
    if not run["terminal"]:
        session.out_command("wait:     ", "relays", "status", run_id, "--wait")
    elif run["status"] != "succeeded":
        session.out("retry:    " + _retry_command(session, run))


def _compact(value: Any) -> str:
    return one_line(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
