"""`agentworks conversations request|note|reply|list|show|cancel|pause|resume|close|delete` (C1,
C2, C4): requests, replies
and notes in a conversation with a Crew, and where each request stands."""

from __future__ import annotations

import argparse
import re
from typing import Any

from agentworks_cli import shapes
from agentworks_cli.client import EXIT_USAGE, CliError, given, segment
from agentworks_cli.commands.formatting import indent, one_line, when
from agentworks_cli.commands.messages import message_text
from agentworks_cli.commands.parsing import add_primary
from agentworks_cli.commands.session import Session, add_action, add_group
from agentworks_cli.commands.unknown_names import with_target_hint

_DURATION = re.compile(r"^(\d+)([smhd]?)$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    actions = add_group(
        commands,
        common,
        "conversations",
        "requests, replies and notes in conversations with a Crew",
    )

    request = actions.add_parser("request", parents=[common], help="ask a Crew for something")
    _where(request, first_contact=True)
    request.add_argument(
        "--deadline",
        metavar="DURATION",
        help="how long it may take: 90s, 30m, 2h or 3d (1 minute to 7 days; default 24h)",
    )
    request.add_argument("--handoff", action="store_true", help="you do not need the answer back")
    request.set_defaults(handler=run_send, kind="request")

    note = actions.add_parser("note", parents=[common], help="add information; starts no run")
    _where(note, first_contact=True)
    note.set_defaults(handler=run_send, kind="note")

    reply = actions.add_parser("reply", parents=[common], help="answer a request sent to you")
    _where(reply, first_contact=False)
    reply.add_argument("--to", required=True, metavar="MESSAGE_ID", help="the request answered")
    reply.set_defaults(handler=run_send, kind="reply")

    listed = add_action(
        actions, common, "list", run_list, "the conversations you may see, in the Inbox's tabs"
    )
    listed.add_argument(
        "--tab", choices=("needs_you", "active", "waiting_on_others", "closed"), help="one tab"
    )
    listed.add_argument("--agent", metavar="AGENT", help="one agent's only (crew:NAME)")
    listed.add_argument("--after", metavar="CURSOR", help="the next page (next_cursor)")
    listed.add_argument("--limit", type=int, metavar="N", help="conversations per page")

    show = add_action(
        actions, common, "show", run_show, "a conversation's requests and where each stands"
    )
    add_primary(show, "inbox", "INBOX", "--inbox", "your side of it")
    show.add_argument("--agent", metavar="NAME", help="as this registered name")

    _controls(actions, common)

    cancel = add_action(actions, common, "cancel", run_cancel, "cancel a request you sent")
    cancel.add_argument("message_id", metavar="MESSAGE_ID")
    cancel.add_argument("--agent", metavar="NAME", help="as this registered name")


def _controls(actions: Any, common: argparse.ArgumentParser) -> None:
    for action, what in (
        ("pause", "no new runs start until it resumes"),
        ("resume", "what arrived while paused starts its runs"),
        ("close", "for good: its open requests are cancelled"),
        ("delete", "close it and delete its messages; runs stay (account admins)"),
    ):
        parser = actions.add_parser(action, parents=[common], help=what)
        add_primary(parser, "inbox", "INBOX", "--inbox", "either side of it")
        if action != "delete":
            parser.add_argument("--agent", metavar="NAME", help="as this registered name")
        parser.set_defaults(handler=run_control, control=action)


def _where(parser: argparse.ArgumentParser, first_contact: bool) -> None:
    parser.add_argument("--agent", metavar="NAME", help="send as this registered name")
    if first_contact:
        where = parser.add_mutually_exclusive_group(required=True)
        where.add_argument("--target", metavar="crew:NAME", help="open a conversation")
        where.add_argument("--inbox", metavar="INBOX", help="continue this conversation")
    else:
        parser.add_argument("--inbox", required=True, metavar="INBOX", help="the conversation")
    parser.add_argument(
        "--message", required=True, metavar="TEXT", help="the body; '-' reads it from stdin"
    )
    parser.add_argument("--submission-id", metavar="ID", help="retry key")


def deadline_seconds(value: str) -> int | None:
    """'90s', '30m', '2h', '3d' or plain seconds; None when it is not a duration."""
    found = _DURATION.match(value.strip().lower())
    return int(found.group(1)) * _UNIT_SECONDS[found.group(2)] if found else None


def run_send(session: Session) -> int:
    args = session.args
    body: dict[str, Any] = {"message": message_text(args.message), "kind": args.kind}
    if getattr(args, "deadline", None):
        seconds = deadline_seconds(args.deadline)
        if seconds is None:
            raise CliError(
                f"--deadline {args.deadline!r}: give a duration such as 90s, 30m, 2h or 3d",
                EXIT_USAGE,
            )
        body["deadline_seconds"] = seconds
    if getattr(args, "handoff", False):
        body["handoff"] = True
    body |= given(
        target=getattr(args, "target", None),
        inbox_id=args.inbox,
        agent_name=args.agent,
        submission_id=args.submission_id,
        in_reply_to=getattr(args, "to", None),
    )
    try:
        receipt = session.call("POST", "/v1/messages", body=body, shape=shapes.RECEIPT)
    except CliError as error:
        raise with_target_hint(session, error, getattr(args, "target", None)) from None
    return session.show(receipt, _print_send)


def _print_send(session: Session, receipt: dict[str, Any]) -> None:
    args = session.args
    session.out(f"sent {args.kind} {one_line(receipt.get('message_id'))}")
    session.out(f"inbox: {one_line(receipt.get('inbox_id'))}")
    if args.kind == "request":
        words = ["conversations", "show", receipt.get("inbox_id", "")]
        session.out_command("where it stands: ", *words)


def run_list(session: Session) -> int:
    args = session.args
    query = {
        k: v
        for k, v in (("tab", args.tab), ("agent", args.agent), ("after", args.after))
        if v is not None
    }
    if args.limit is not None:
        query["limit"] = str(args.limit)
    listing = session.call("GET", "/v1/conversations", query=query, shape=shapes.CONVERSATIONS)
    return session.show(listing, _print_list)


def _print_list(session: Session, listing: dict[str, Any]) -> None:
    counts = listing.get("counts", {})
    session.out(
        f"Needs You {counts.get('needs_you', 0)} · Active {counts.get('active', 0)} · "
        f"Waiting on Others {counts.get('waiting_on_others', 0)} · "
        f"Closed {counts.get('closed', 0)}"
    )
    rows = [
        (
            c["conversation_id"],
            " → ".join(a["address"] for a in c["agents"]),
            c["tab_label"],
            c["status"],
            ", ".join(r["label"] for r in c["open_requests"]),
        )
        for c in listing.get("conversations", [])
    ]
    if not rows:
        session.out("no conversations")
    session.out_table(("CONVERSATION", "AGENTS", "TAB", "STATUS", "OPEN REQUESTS"), rows)
    if listing.get("next_cursor"):
        words = ["conversations", "list", "--after", listing["next_cursor"]]
        session.out_command("more: ", *words)


# Pages of the inbox read for answers (100 messages each); older answers: messages read.
ANSWER_PAGES = 5
ANSWER_PAGE_SIZE = 100


def run_show(session: Session) -> int:
    args = session.args
    query = {"inbox_id": args.inbox}
    if args.agent:
        query["agent_name"] = args.agent
    listing = session.call("GET", "/v1/requests", query=query, shape=shapes.REQUESTS)
    return session.show(listing, _print_show)


def _answers(session: Session) -> dict[str, list[dict[str, Any]]]:
    """The replies in this side's inbox, by the request they answer: a request's record
    says where it stands, its answer is a message of the conversation."""
    args = session.args
    query: dict[str, Any] = {"inbox_id": args.inbox, "agent_name": args.agent, "after": "0"}
    query["limit"] = ANSWER_PAGE_SIZE
    answers: dict[str, list[dict[str, Any]]] = {}
    for _ in range(ANSWER_PAGES):
        try:
            page = session.call("GET", "/v1/messages", query=query, shape=shapes.PAGE)
        except CliError as error:  # e.g. a connection that may send but not read
            session.out(f"answers not shown: {error.message}")
            break
        for message in page["messages"]:
            if message.get("in_reply_to"):
                answers.setdefault(message["in_reply_to"], []).append(message)
        if not page["messages"] or page["next_cursor"] == query["after"]:
            break
        query["after"] = page["next_cursor"]
    return answers


def _print_show(session: Session, listing: dict[str, Any]) -> None:
    requests = listing.get("requests", [])
    if not requests:
        session.out("no requests in this conversation")
        return
    rows = [
        (
            r["message_id"],
            r["label"],
            when(r.get("deadline_at")),
            "yes" if r.get("handoff") else "",
            r.get("reason") or "",
        )
        for r in requests
    ]
    session.out_table(("REQUEST", "STATE", "DEADLINE", "HAND-OFF", "REASON"), rows)
    answers = _answers(session)
    for request in requests:
        for answer in answers.get(request["message_id"], []):
            session.out(f"answer to {request['message_id']} from {one_line(answer['sender'])}:")
            for line in indent(answer["body"], "  "):
                session.out(line)


def run_cancel(session: Session) -> int:
    args = session.args
    body: dict[str, Any] = {"agent_name": args.agent} if args.agent else {}
    path = f"/v1/requests/{segment(args.message_id)}/cancel"
    view = session.call("POST", path, body=body, shape=shapes.REQUEST)
    return session.show(view, _print_cancel)


def _print_cancel(session: Session, view: dict[str, Any]) -> None:
    session.out(f"request {one_line(view.get('message_id'))}: {one_line(view.get('label'))}")


def run_control(session: Session) -> int:
    args = session.args
    inbox = segment(args.inbox)
    if args.control == "delete":
        view = session.call("DELETE", f"/v1/conversations/{inbox}", shape=shapes.CONVERSATION)
    else:
        body: dict[str, Any] = {"agent_name": args.agent} if args.agent else {}
        path = f"/v1/conversations/{inbox}/{args.control}"
        view = session.call("POST", path, body=body, shape=shapes.CONVERSATION)
    return session.show(view, _print_control)


def _print_control(session: Session, view: dict[str, Any]) -> None:
    line = f"conversation {one_line(view.get('conversation_id'))}: {one_line(view.get('status'))}"
    if view.get("cancelled_requests"):
        line += f" ({view['cancelled_requests']} open requests cancelled)"
    if view.get("started_runs"):
        line += f" ({view['started_runs']} held messages started their runs)"
    session.out(line)
