"""`agentworks workflow start|run-file|status|list|cancel|resolve|retry|webhook-key|register|
registered|unregister` (W4–W7, W11):
staged runs of agent sessions. `start` takes the workflow_start JSON, `run-file` a
WORKFLOW.md; both answer with the runId at once, and `--watch` redraws the run's stages and
steps until it ends (the exit code says how it ended)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from agentworks_cli import shapes
from agentworks_cli.client import EXIT_OK, EXIT_USAGE, CliError, segment
from agentworks_cli.commands.call_waiting import (
    EXIT_CALL_FAILED,
    EXIT_CALL_STOPPED,
    EXIT_STOPPED_WAITING,
    POLL_SECONDS,
    mcp_call_lines,
)
from agentworks_cli.commands.crews import read_definition_file
from agentworks_cli.commands.formatting import one_line, shell, table, when
from agentworks_cli.commands.parsing import add_primary
from agentworks_cli.commands.session import Session, add_action, add_group

RUN_EXIT = {"succeeded": EXIT_OK, "failed": EXIT_CALL_FAILED, "cancelled": EXIT_CALL_STOPPED}
OUTPUT_CHARS = 60  # of a step's output in the table; `--json` has all of it


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    actions = add_group(
        commands,
        common,
        "workflow",
        "start and follow staged multi-agent workflows",
        description="A workflow is stages of steps: a stage's steps run in parallel, the next "
        "stage starts when all of them ended. Steps name an adapter profile "
        "(agentworks adapters list) or continue an earlier step's session (sessionRef).",
    )

    start = add_action(actions, common, "start", run_start, "start a run from its JSON")
    start.add_argument(
        "--file", "-f", required=True, metavar="STAGES.json",
        help="the workflow_start JSON (or YAML); '-' reads stdin",
    )  # fmt: skip
    _input_option(start)
    _watch_option(start)

    run_file = add_action(actions, common, "run-file", run_run_file, "start a WORKFLOW.md")
    run_file.add_argument("path", metavar="WORKFLOW.md")
    _input_option(run_file)
    _watch_option(run_file)

    status = add_action(
        actions, common, "status", run_status, "a run's stages and steps", aliases=["show"]
    )
    _run_id_option(status)
    _watch_option(status)

    add_action(actions, common, "list", run_list, "your latest runs")

    cancel = add_action(actions, common, "cancel", run_cancel, "stop a running run")
    _run_id_option(cancel)

    resolve = add_action(actions, common, "resolve", run_resolve, "answer a waiting step")
    _run_id_option(resolve)
    resolve.add_argument("--step", required=True, metavar="LABEL")
    resolve.add_argument("--answer", required=True, metavar="TEXT")
    resolve.add_argument("--item", type=int, default=0, metavar="N", help="a pipeline's item")

    retry = add_action(
        actions, common, "retry", run_retry, "a new run from a failed or cancelled one"
    )
    _run_id_option(retry)
    _input_option(retry)
    _watch_option(retry)

    add_action(
        actions,
        common,
        "webhook-key",
        run_webhook_key,
        "the key that signs notifyUrl webhooks (admin)",
    )

    register = add_action(
        actions, common, "register", run_register, "register a WORKFLOW.md and its triggers (admin)"
    )
    register.add_argument("path", metavar="WORKFLOW.md")
    registered = add_action(
        actions,
        common,
        "registered",
        run_registered,
        "registered workflows, or one with its triggers",
    )
    registered.add_argument("workflow_id", nargs="?", metavar="WORKFLOW_ID")
    unregister = add_action(
        actions,
        common,
        "unregister",
        run_unregister,
        "remove a registered workflow; its schedules stop firing (admin)",
        aliases=["delete"],
    )
    unregister.add_argument("workflow_id", metavar="WORKFLOW_ID")


def _run_id_option(parser: argparse.ArgumentParser) -> None:
    add_primary(parser, "run_id", "RUN", "--run-id", "wfrun_…")


def _input_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input", metavar="JSON", help='variables for {{NAME}}, e.g. \'{"AREA": "auth"}\''
    )


def _watch_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--watch", action="store_true", help="redraw the stages and steps until the run ends"
    )


def _variables(session: Session) -> dict[str, Any] | None:
    raw = getattr(session.args, "input", None)
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise CliError(f"--input is not valid JSON: {exc}", EXIT_USAGE) from None
    if not isinstance(value, dict):
        raise CliError('--input is a JSON object of variables: {"NAME": "value"}', EXIT_USAGE)
    return value


def _run_path(run_id: str, tail: str = "") -> str:
    return f"/v1/workflows/{segment(run_id)}{tail}"


def run_start(session: Session) -> int:
    definition = read_definition_file(session.args.file, "workflow file", "workflowId and stages")
    variables = _variables(session)
    if variables is not None:
        definition["input"] = {**(definition.get("input") or {}), **variables}
    started = session.call("POST", "/v1/workflows", body=definition, shape=shapes.RUN_STARTED)
    return _started(session, started)


def _workflow_file(path_text: str) -> str:
    path = Path(path_text).expanduser()
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"no WORKFLOW.md at {path}", EXIT_USAGE) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"cannot read {path}: {exc}", EXIT_USAGE) from None


def run_run_file(session: Session) -> int:
    body: dict[str, Any] = {"content": _workflow_file(session.args.path)}
    variables = _variables(session)
    if variables is not None:
        body["input"] = variables
    started = session.call("POST", "/v1/workflows/run-file", body=body, shape=shapes.RUN_STARTED)
    return _started(session, started)


def run_retry(session: Session) -> int:
    body: dict[str, Any] = {}
    variables = _variables(session)
    if variables is not None:
        body["input"] = variables
    started = session.call(
        "POST", _run_path(session.args.run_id, "/retry"), body=body, shape=shapes.RUN_STARTED
    )
    return _started(session, started)


def _started(session: Session, started: dict[str, Any]) -> int:
    run_id = str(started["runId"])
    if session.args.watch:
        return _watch(session, run_id)
    if session.json:
        session.print_json(started)
        return EXIT_OK
    retry = f" (a retry of {started['retryOf']})" if started.get("retryOf") else ""
    session.out(f"started run {run_id}{retry}")
    session.out("follow it: " + shell(session.command("workflow", "status", run_id, "--watch")))
    return EXIT_OK


def run_status(session: Session) -> int:
    if session.args.watch:
        return _watch(session, session.args.run_id)
    return _show(session, session.call("GET", _run_path(session.args.run_id), shape=shapes.RUN))


def _watch(session: Session, run_id: str) -> int:
    """Polls until the run ends; on a terminal, redraws the table in place."""
    live = sys.stdout.isatty() and not session.json
    drawn: list[str] = []
    try:
        while True:
            run = session.call("GET", _run_path(run_id), shape=shapes.RUN)
            lines = run_lines(session, run)
            if not session.json and lines != drawn:
                if live and drawn:
                    sys.stdout.write(f"\x1b[{len(drawn)}F\x1b[J")  # back up, clear below
                for line in lines:
                    session.out(line)
                sys.stdout.flush()
                drawn = lines
            if run["status"] in RUN_EXIT:
                if session.json:
                    session.print_json(run)
                return RUN_EXIT[run["status"]]
            time.sleep(POLL_SECONDS)
    except KeyboardInterrupt:
        again = shell(session.command("workflow", "status", run_id, "--watch"))
        raise CliError(f"stopped watching; run {run_id} goes on: {again}",
                       EXIT_STOPPED_WAITING) from None  # fmt: skip


def run_lines(session: Session, run: dict[str, Any]) -> list[str]:
    """The human view of a run: a headline, one table row per step (per item of a
    pipeline), and how to answer what waits on a person."""
    cost = f"${run.get('cost', 0):.4f}"
    head = f"run {run['runId']} ({one_line(run['workflowId'])}): {run['status']}, cost {cost}"
    if run.get("retryOf"):
        head += f", retry of {run['retryOf']}"
    groups = [(None, run["stages"])] if run["stages"] else []
    groups += [(item["item"], item["stages"]) for item in run.get("items") or []]
    rows, waiting = [], []
    for item, stages in groups:
        for stage in stages:
            for step in stage["steps"]:
                rows.append(_step_row(item, stage["label"], step))
                if step["status"] == "waiting":
                    waiting.append((item, step))
    headers: tuple[str, ...] = ("ITEM", "STAGE", "STEP", "STATUS", "SESSION", "ENDED", "OUTPUT")
    if not run.get("items"):
        headers, rows = headers[1:], [row[1:] for row in rows]
    lines = [head, *table(headers, rows)]
    for item, stages in groups:
        for stage in stages:
            for step in stage["steps"]:
                calls = mcp_call_lines(step.get("mcpCalls") or [], "durationMs", "resultBytes")
                if calls:
                    label = step["label"] if item is None else f"{step['label']} (item {item})"
                    lines.append(f"{label} {calls[0]}")
                    lines.extend(calls[1:])
    if run.get("error"):
        lines.append(f"error: {one_line(run['error'])}")
    for item, step in waiting:
        lines.append(f"{step['label']} asks: {one_line(step.get('question'))}")
        words = ["workflow", "resolve", run["runId"], "--step", step["label"]]
        words += ["--item", str(item)] if item else []
        lines.append("  answer it: " + shell(session.command(*words, "--answer", "TEXT")))
    return lines


def _step_row(item: int | None, stage: str, step: dict[str, Any]) -> tuple[object, ...]:
    output = one_line(step.get("error") or step.get("output") or "")
    if len(output) > OUTPUT_CHARS:
        output = output[: OUTPUT_CHARS - 1] + "…"
    status = step["status"] + (" (replayed)" if step.get("replayed") else "")
    ended = when(step.get("endedAt"))
    return (item, stage, step["label"], status, step.get("sessionId") or "-", ended, output)


def run_list(session: Session) -> int:
    listed = session.call("GET", "/v1/workflows", shape=shapes.RUNS)
    return session.show(listed, _print_list)


def _print_list(session: Session, listed: dict[str, Any]) -> None:
    runs = listed.get("runs") or []
    if not runs:
        session.out("no workflow runs yet; start one with:")
        session.out_command("  ", "workflow", "run-file", "WORKFLOW.md")
        return
    rows = [
        (r["runId"], r["workflowId"], r["status"], when(r["createdAt"]), r.get("retryOf") or "")
        for r in runs
    ]
    session.out_table(("RUN", "WORKFLOW", "STATUS", "CREATED", "RETRY OF"), rows)


def run_cancel(session: Session) -> int:
    run = session.call("POST", _run_path(session.args.run_id, "/cancel"), shape=shapes.RUN)
    return _show(session, run)


def run_resolve(session: Session) -> int:
    body = {"step": session.args.step, "answer": session.args.answer, "item": session.args.item}
    run = session.call(
        "POST", _run_path(session.args.run_id, "/resolve"), body=body, shape=shapes.RUN
    )
    return _show(session, run)


def _show(session: Session, run: dict[str, Any]) -> int:
    if session.json:
        session.print_json(run)
    else:
        for line in run_lines(session, run):
            session.out(line)
    return EXIT_OK


def run_webhook_key(session: Session) -> int:
    key = session.call("GET", "/v1/workflows/webhook-key", shape=shapes.WEBHOOK_KEY)
    return session.show(key, _print_webhook_key)


def _print_webhook_key(session: Session, key: dict[str, Any]) -> None:
    session.out(key["key"])
    session.out(f"(verify {key['header']}: t=<unix seconds>,v1=<hex HMAC-SHA256 of '<t>.<body>'>)")


def run_register(session: Session) -> int:
    body = {"content": _workflow_file(session.args.path)}
    registered = session.call("PUT", "/v1/workflow-definitions", body=body, shape=shapes.REGISTERED)
    return session.show(registered, _print_register)


def _print_register(session: Session, registered: dict[str, Any]) -> None:
    session.out(f"registered {registered['workflowId']} (version {registered['version']})")
    _show_triggers(session, registered)


def run_registered(session: Session) -> int:
    if session.args.workflow_id is None:
        listed = session.call("GET", "/v1/workflow-definitions", shape=shapes.REGISTERED_LIST)
        if session.json:
            session.print_json(listed)
            return EXIT_OK
        rows = [
            (w["workflowId"], w["version"], w["triggers"], when(w.get("updatedAt")))
            for w in listed["workflows"]
        ]
        if not rows:
            session.out("no registered workflows; register one with:")
            session.out_command("  ", "workflow", "register", "WORKFLOW.md")
        session.out_table(("WORKFLOW", "VERSION", "TRIGGERS", "UPDATED"), rows)
        return EXIT_OK
    path = f"/v1/workflow-definitions/{segment(session.args.workflow_id)}"
    found = session.call("GET", path, shape=shapes.REGISTERED)
    return session.show(found, _print_registered)


def run_unregister(session: Session) -> int:
    path = f"/v1/workflow-definitions/{segment(session.args.workflow_id)}"
    gone = session.call("DELETE", path, shape=shapes.UNREGISTERED_WORKFLOW)
    return session.show(gone, _print_unregister)


def _print_unregister(session: Session, gone: dict[str, Any]) -> None:
    session.out(f"unregistered {gone['workflowId']}: its triggers are gone; runs stay")


def _print_registered(session: Session, found: dict[str, Any]) -> None:
    session.out(f"{found['workflowId']} (version {found['version']})")
    _show_triggers(session, found)


def _show_triggers(session: Session, registered: dict[str, Any]) -> None:
    for trigger in registered["triggers"]:
        where = trigger.get("path") or f"next run {when(trigger.get('nextRunAt'))}"
        session.out(f"  {trigger['kind']} {trigger['name']}: {where}")
        if trigger.get("secret"):
            session.out(f"    secret (shown once; sign with it): {trigger['secret']}")
        for fired in trigger.get("runs") or []:
            session.out(
                f"    {when(fired['at'] / 1000)} {fired['runId']} {fired.get('error') or ''}"
            )
