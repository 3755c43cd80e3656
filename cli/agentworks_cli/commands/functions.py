"""`agentworks functions list|call|status|read|reply|complete` (F2–F8, §8 mailbox).

`call --wait` and `status --wait` poll the call until it ends and exit by its outcome:
0 succeeded · 6 failed · 7 cancelled or interrupted · 8 still running when --timeout ran
out (the call goes on); Ctrl-C stops the waiting (130), not the call. A question the call
asks is printed on stderr with the exact `functions reply` command that answers it; with
a terminal on stdin and stderr (and no --json) the answer can be typed right there.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from typing import Any

from agentworks_cli import shapes
from agentworks_cli.client import EXIT_OK, EXIT_USAGE, CliError, given, segment
from agentworks_cli.commands.call_waiting import note, show_status, wait_and_show
from agentworks_cli.commands.formatting import clean, one_line, shell
from agentworks_cli.commands.parsing import add_primary
from agentworks_cli.commands.session import Session, add_action, add_group
from agentworks_cli.commands.unknown_names import with_target_hint

WAIT_HELP = "wait for the outcome, polling; exit 0 succeeded, 6 failed, 7 cancelled/interrupted"
EPILOG = """\
exit codes of --wait: 0 succeeded, 6 failed, 7 cancelled or interrupted,
                      8 still running after --timeout (the call goes on)
"""


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    actions = add_group(
        commands,
        common,
        "functions",
        "discover and call a Crew's typed functions",
        description="Typed functions of Crews: discover them, call one, follow the call "
        "to its outcome, answer its questions and read its files.",
        epilog=EPILOG,
    )

    listing = add_action(
        actions, common, "list", run_list, "a Crew's functions and their input/output schemas"
    )
    listing.add_argument("--target", required=True, metavar="crew:NAME|workflow:NAME")

    call = add_action(
        actions,
        common,
        "call",
        run_call,
        "call a function: checked args, a call_id at once, the outcome later",
        epilog=EPILOG,
    )
    call.add_argument("--target", required=True, metavar="crew:NAME|workflow:NAME")
    call.add_argument("--function", required=True, metavar="NAME")
    call.add_argument(
        "--args",
        default="{}",
        metavar="JSON",
        help="the arguments, a JSON object ('-' reads stdin, @PATH reads a file; default {})",
    )
    call.add_argument(
        "--submission-id",
        metavar="ID",
        help="retry key: calling again with the same id and args returns the original call",
    )
    _wait_arguments(call)

    status = add_action(
        actions,
        common,
        "status",
        run_status,
        "a call's state, progress, questions and outcome",
        epilog=EPILOG,
        aliases=["show"],
    )
    _call_id(status)
    _wait_arguments(status)

    read = add_action(
        actions,
        common,
        "read",
        run_read,
        "a call's file, one page (≤ 2 MiB) at a time, to stdout; without --file, the call's files",
    )
    _call_id(read)
    read.add_argument(
        "--file", metavar="PATH", help="a path the call's status lists (omit to list them)"
    )
    read.add_argument("--page", type=int, default=0, metavar="N", help="0, 1, … (default 0)")

    reply = add_action(
        actions, common, "reply", run_reply, "answer the question a call is waiting on"
    )
    _call_id(reply)
    reply.add_argument(
        "--request-id", required=True, metavar="ID", help="the question's request_id"
    )
    reply.add_argument(
        "--answer", required=True, metavar="TEXT", help="your answer ('-' reads stdin)"
    )

    complete = add_action(
        actions,
        common,
        "complete",
        run_complete,
        "post the outcome of work a Crew handed to your agent name (mailbox adapter)",
    )
    _call_id(complete, "from the work message")
    complete.add_argument(
        "--agent", required=True, metavar="NAME", help="your name, the one the work went to"
    )
    complete.add_argument(
        "--result",
        metavar="JSON",
        help="the result, JSON matching the output schema ('-' reads stdin, @PATH a file)",
    )
    complete.add_argument("--text", metavar="TEXT", help="your answer as text ('-' reads stdin)")


def _call_id(parser: argparse.ArgumentParser, help: str = "call_…") -> None:
    add_primary(parser, "call_id", "CALL", "--call-id", help)


def _wait_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wait", action="store_true", help=WAIT_HELP)
    parser.add_argument(
        "--timeout",
        type=float,
        default=0.0,
        metavar="S",
        help="with --wait: give up waiting after S seconds (exit 8; default: no limit)",
    )


# ---- commands ----


def run_list(session: Session) -> int:
    target = session.args.target
    try:
        listed = session.call(
            "GET", "/v1/functions", query={"target": target}, shape=shapes.FUNCTIONS
        )
    except CliError as error:
        raise with_target_hint(session, error, target) from None
    return session.show(listed, _print_list)


def _print_list(session: Session, listed: dict[str, Any]) -> None:
    target = str(listed.get("target") or session.args.target)
    session.out(f"{one_line(target)} (version {listed.get('version')})")
    functions = listed.get("functions") or []
    if not functions:
        session.out("no functions")
        return
    for spec in functions:
        session.out("")
        name = str(spec.get("name") or "")
        session.out(f"{one_line(name)}: {one_line(spec.get('description') or '-')}")
        session.out(f"  input:  {_compact(spec.get('input_schema'))}")
        if spec.get("output_schema") is not None:
            session.out(f"  output: {_compact(spec['output_schema'])}")
        example = json.dumps(_example_args(spec.get("input_schema")), ensure_ascii=False)
        words = ["functions", "call", "--target", target, "--function", name, "--args", example]
        session.out_command("  call:   ", *words, "--wait")


def run_call(session: Session) -> int:
    args = session.args
    _check_timeout(args)
    body = given(
        target=args.target,
        function=args.function,
        args=parse_args_json(args.args),
        submission_id=args.submission_id,
    )
    try:
        accepted = session.call("POST", "/v1/calls", body=body, shape=shapes.CALL_ACCEPTED)
    except CliError as error:
        raise with_target_hint(session, error, args.target) from None
    if args.wait:
        if accepted.get("replayed"):
            note("replayed: this submission id already started this call; nothing new started")
        return wait_and_show(session, accepted, args.timeout)
    return session.show(accepted, _print_call)


def _print_call(session: Session, accepted: dict[str, Any]) -> None:
    call_id = str(accepted.get("call_id") or "")
    session.out(
        f"accepted call {one_line(call_id)} ({one_line(accepted.get('target'))} "
        f"{one_line(accepted.get('function'))}), state: {one_line(accepted.get('state'))}"
    )
    if accepted.get("replayed"):
        session.out("replayed: this submission id already started this call; nothing new started")
    session.out_command("status: ", "functions", "status", call_id)
    session.out("wait:   " + shell(session.command("functions", "status", call_id, "--wait")))


def run_status(session: Session) -> int:
    args = session.args
    _check_timeout(args)
    status = session.call("GET", f"/v1/calls/{segment(args.call_id)}", shape=shapes.CALL)
    if args.wait:
        return wait_and_show(session, status, args.timeout)
    if session.json:
        session.print_json(status)
    else:
        show_status(session, status)
    return EXIT_OK


def run_read(session: Session) -> int:
    args = session.args
    if args.page < 0:
        raise CliError("--page must be 0 or more", EXIT_USAGE)
    if args.file is None:
        return _list_files(session, args.call_id)
    page = session.call(
        "GET",
        f"/v1/calls/{segment(args.call_id)}/files",
        query={"path": args.file, "page": args.page},
        shape=shapes.FILE_PAGE,
    )
    return session.show(page, _print_read)


def _print_read(session: Session, page: dict[str, Any]) -> None:
    args = session.args
    content = str(page.get("content") or "")
    number, pages = int(page.get("page") or 0), int(page.get("pages") or 1)
    if page.get("encoding") == "base64":
        data = base64.b64decode(content)
        if sys.stdout.isatty():
            raise CliError(
                f"{args.file} is binary ({page.get('size')} bytes); redirect stdout to a file "
                "(… > out.bin) or use --json",
                EXIT_USAGE,
            )
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(content)
        if sys.stdout.isatty() and content and not content.endswith("\n"):
            sys.stdout.write("\n")
        sys.stdout.flush()
    # stdout holds the file's bytes only (redirectable); the page facts go to stderr.
    note(
        f"{one_line(page.get('path'))}: page {number} of pages 0–{pages - 1}, "
        f"{page.get('size')} bytes in all"
    )
    if number + 1 < pages:
        words = ["functions", "read", args.call_id, "--file", args.file]
        note("next page: " + shell(session.command(*words, "--page", str(number + 1))))


def _list_files(session: Session, call_id: str) -> int:
    """The files a call wrote, each with the command that reads it (from its status)."""
    status = session.call("GET", f"/v1/calls/{segment(call_id)}", shape=shapes.CALL)
    files = [f for f in status.get("files") or [] if isinstance(f, dict)]
    if session.json:
        session.print_json(
            {"call_id": status.get("call_id"), "result_file": status.get("result_file"),
             "files": files}
        )  # fmt: skip
        return EXIT_OK
    if not files:
        state = one_line(status.get("state"))
        session.out(f"call {one_line(call_id)} has no files (state: {state})")
        return EXIT_OK
    read = ["functions", "read", call_id, "--file"]
    rows = [
        (f.get("path"), f"{f.get('size')} bytes", shell(session.command(*read, str(f["path"]))))
        for f in files
    ]
    session.out_table(("PATH", "SIZE", "READ"), rows)
    return EXIT_OK


def run_reply(session: Session) -> int:
    args = session.args
    answer = sys.stdin.read().rstrip("\n") if args.answer == "-" else args.answer
    status = session.call(
        "POST",
        f"/v1/calls/{segment(args.call_id)}/reply",
        body={"request_id": args.request_id, "answer": answer},
        shape=shapes.CALL,
    )
    return session.show(status, _print_reply)


def _print_reply(session: Session, status: dict[str, Any]) -> None:
    args = session.args
    session.out(
        f"answered {one_line(args.request_id)}; call {one_line(status.get('call_id'))} is "
        f"{one_line(status.get('state'))}"
    )
    wait = ["functions", "status", str(status.get("call_id") or args.call_id)]
    session.out_command("wait: ", *wait, "--wait")


def run_complete(session: Session) -> int:
    args = session.args
    if args.result is None and args.text is None:
        raise CliError("functions complete needs --result JSON, --text TEXT or both", EXIT_USAGE)
    if args.result == "-" and args.text == "-":
        raise CliError("only one of --result and --text can read stdin", EXIT_USAGE)
    body: dict[str, Any] = {"agent_name": args.agent}
    if args.text is not None:
        body["final_text"] = sys.stdin.read().rstrip("\n") if args.text == "-" else args.text
    if args.result is not None:
        body["result"] = parse_json_value(args.result, "--result")
    status = session.call(
        "POST", f"/v1/calls/{segment(args.call_id)}/result", body=body, shape=shapes.CALL
    )
    return session.show(status, _print_complete)


def _print_complete(session: Session, status: dict[str, Any]) -> None:
    args = session.args
    session.out(
        f"posted the outcome of call {one_line(status.get('call_id'))} as "
        f"agent:{one_line(args.agent)}; it is {one_line(status.get('state'))}"
    )


# ---- helpers ----


def parse_args_json(value: str) -> dict[str, Any]:
    """--args: a JSON object given inline, on stdin ('-') or in a file (@PATH)."""
    parsed = parse_json_value(value, "--args")
    if not isinstance(parsed, dict):
        raise CliError('--args must be a JSON object, e.g. {"text": "…"}', EXIT_USAGE)
    return parsed


def parse_json_value(value: str, option: str) -> Any:
    """A JSON value given inline, on stdin ('-') or in a file (@PATH)."""
    where = option
    raw = value
    if value == "-":
        raw, where = sys.stdin.read(), f"{option} from stdin"
    elif value.startswith("@"):
        where = f"{option} file {value[1:]}"
        try:
            with open(value[1:], encoding="utf-8") as handle:
                raw = handle.read()
        except OSError as exc:
            raise CliError(f"cannot read {where}: {exc.strerror or exc}", EXIT_USAGE) from None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise CliError(
            f'{where} is not valid JSON ({exc}); e.g. {option} \'{{"text": "…"}}\'', EXIT_USAGE
        ) from None


def _check_timeout(args: argparse.Namespace) -> None:
    if args.timeout < 0:
        raise CliError("--timeout must be 0 (no limit) or more seconds", EXIT_USAGE)
    if args.timeout and not args.wait:
        raise CliError("--timeout goes with --wait", EXIT_USAGE)


def _compact(schema: Any) -> str:
    return clean(json.dumps(schema, ensure_ascii=False, separators=(",", ":")))


_PLACEHOLDERS: dict[str, Any] = {
    "string": "…",
    "integer": 0,
    "number": 0,
    "boolean": False,
    "array": [],
    "object": {},
}


def _example_args(schema: Any) -> dict[str, Any]:
    """A skeleton of the required arguments, for a copy-paste call."""
    if not isinstance(schema, dict):
        return {}
    properties = schema.get("properties") or {}
    example: dict[str, Any] = {}
    for name in schema.get("required") or []:
        kind = (properties.get(name) or {}).get("type")
        example[str(name)] = _PLACEHOLDERS.get(kind if isinstance(kind, str) else "", "…")
    return example
