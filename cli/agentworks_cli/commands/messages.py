"""`agentworks messages register|list|send|read|ack|state|wakeup|unregister` (M1–M10)."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from typing import Any

from agentworks import limits
from agentworks_cli import shapes
from agentworks_cli.client import EXIT_USAGE, CliError, given, segment
from agentworks_cli.commands.formatting import indent, one_line, table, when
from agentworks_cli.commands.parsing import add_primary
from agentworks_cli.commands.session import Session, add_action, add_group
from agentworks_cli.commands.unknown_names import with_agent_hint, with_target_hint

# Long polls shorter than this finish before a progress line would help anyone.
PROGRESS_AFTER_SECONDS = 2.0
PURPOSE_COLUMN_CHARS = 80


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    actions = add_group(commands, common, "messages", "direct messages between named agents")

    register = add_action(
        actions, common, "register", run_register, "register (or re-register) a named agent address"
    )
    add_primary(register, "agent", "NAME", "--agent", "e.g. reviewer")
    register.add_argument(
        "--allow-connection",
        action="append",
        metavar="CONNECTION_ID",
        help="another connection that may act as this name (repeatable; omitted keeps the "
        "current list)",
    )
    register.add_argument("--purpose", metavar="TEXT", help="what it works on (≤ 512 chars)")
    register.add_argument("--provider", metavar="P", help="e.g. claude, codex, script")

    add_action(actions, common, "list", run_list, "the account's directory of named agents")

    send = add_action(
        actions, common, "send", run_send, "send a first contact (--target) or reply (--inbox)"
    )
    send.add_argument("--agent", metavar="NAME", help="send as this registered name")
    where = send.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--target",
        metavar="TARGET",
        help="first contact: agent:NAME (e.g. agent:reviewer) or crew:NAME (a Crew answers "
        "in the same inbox)",
    )
    where.add_argument("--inbox", metavar="INBOX", help="continue the conversation of this inbox")
    send.add_argument(
        "--message", required=True, metavar="TEXT", help="the body; '-' reads it from stdin"
    )
    send.add_argument(
        "--submission-id",
        metavar="ID",
        help="retry key: resending with the same id and text returns the original message",
    )

    read = add_action(
        actions, common, "read", run_read, "read an inbox (--inbox) or a name's mailbox (--agent)"
    )
    read.add_argument("--agent", metavar="NAME", help="the name to read as (alone: its mailbox)")
    read.add_argument("--inbox", metavar="INBOX", help="read this inbox")
    read.add_argument(
        "--after", metavar="CURSOR", help="continue after this cursor ('0' = from the start)"
    )
    read.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="S",
        help=f"long-poll up to S seconds (≤ {limits.WAIT_MAX_SECONDS})",
    )
    read.add_argument("--limit", type=int, metavar="N", help=f"page size (≤ {limits.PAGE_MAX})")

    ack = add_action(actions, common, "ack", run_ack, "move a received message's receipt forward")
    add_primary(ack, "message_id", "MESSAGE", "--message-id", "the received message's id")
    ack.add_argument("--delivery", required=True, choices=("admitted", "processed", "typed"))

    state = add_action(
        actions,
        common,
        "state",
        run_state,
        "an inbox's state and delivery records, or a Crew's inboxes (no bodies)",
    )
    which = state.add_mutually_exclusive_group(required=True)
    which.add_argument("--inbox", metavar="INBOX")
    which.add_argument(
        "--target",
        metavar="crew:NAME",
        help="a Crew's conversations, delivery records and wakeups (account admins)",
    )
    state.add_argument("--agent", metavar="NAME", help="the name that owns the inbox")
    state.add_argument("--after", metavar="CURSOR", help="--target: the next page's cursor")
    state.add_argument("--limit", type=int, metavar="N", help="--target: inboxes a page (≤ 20)")

    wakeup = actions.add_parser(
        "wakeup",
        parents=[common],
        help="schedule, cancel or move another turn of a Crew in your conversation with it",
    )
    wakeups = wakeup.add_subparsers(dest="wakeup_action", metavar="ACTION", required=True)
    schedule = add_action(
        wakeups, common, "schedule", run_wakeup_schedule, "a wakeup 60 s to 7 days from now"
    )
    schedule.add_argument(
        "--inbox", required=True, metavar="INBOX", help="your inbox of a conversation with a Crew"
    )
    schedule.add_argument("--agent", metavar="NAME", help="act as this registered name")
    _when_arguments(schedule)
    cancel = add_action(wakeups, common, "cancel", run_wakeup_cancel, "cancel a scheduled wakeup")
    add_primary(cancel, "wakeup_id", "WAKEUP", "--wakeup-id", "the wakeup's id")
    reschedule = add_action(
        wakeups, common, "reschedule", run_wakeup_reschedule, "move a scheduled wakeup"
    )
    add_primary(reschedule, "wakeup_id", "WAKEUP", "--wakeup-id", "the wakeup's id")
    _when_arguments(reschedule)

    unregister = add_action(
        actions,
        common,
        "unregister",
        run_unregister,
        "remove a named agent address",
        aliases=["delete"],
    )
    add_primary(unregister, "agent", "NAME", "--agent", "the registered name")


def _when_arguments(parser: argparse.ArgumentParser) -> None:
    when = parser.add_mutually_exclusive_group(required=True)
    when.add_argument(
        "--at", metavar="TIME", help="ISO 8601, e.g. 2030-01-31T09:00:00Z (UTC without a zone)"
    )
    when.add_argument(
        "--delay",
        type=int,
        metavar="SECONDS",
        help=f"seconds from now ({limits.WAKEUP_MIN_SECONDS}–{limits.WAKEUP_MAX_SECONDS})",
    )


def run_register(session: Session) -> int:
    args = session.args
    body = given(
        agent_name=args.agent,
        allowed_connection_ids=args.allow_connection,
        purpose=args.purpose,
        provider=args.provider,
    )
    agent = session.call("POST", "/v1/agents", body=body, shape=shapes.AGENT)
    return session.show(agent, _print_register)


def _print_register(session: Session, agent: dict[str, Any]) -> None:
    session.out(
        f"registered {one_line(agent.get('agent_name'))} ({one_line(agent.get('agent_id'))})"
    )
    if agent.get("purpose"):
        session.out(f"purpose: {one_line(agent['purpose'])}")
    allowed = agent.get("allowed_connection_ids") or []
    session.out(f"connections allowed to act as it: {', '.join(map(one_line, allowed)) or '-'}")


def run_list(session: Session, listening: bool = False) -> int:
    """The directory; `listening` (agents --all) adds whether a listener is connected."""
    query = {"listening": "true"} if listening else None
    listed = session.call("GET", "/v1/agents", query=query, shape=shapes.AGENTS)
    return session.show(listed, partial(_print_agents, listening=listening))


def _print_agents(session: Session, listed: dict[str, Any], listening: bool) -> None:
    agents = listed.get("agents") or []
    if not agents:
        session.out("no agents registered; register one with:")
        session.out_command("  ", "messages", "register", "--agent", "NAME")
        return
    headers = ["NAME", "STATUS", "PROVIDER", "PURPOSE"]
    rows: list[list[object]] = [
        [
            a.get("agent_name"),
            "online" if a.get("online") else "offline",
            a.get("provider") or "-",
            _shorten(one_line(a.get("purpose") or "-"), PURPOSE_COLUMN_CHARS),
        ]
        for a in agents
    ]
    if listening:
        headers.insert(2, "LISTENER")
        for row, a in zip(rows, agents, strict=True):
            row.insert(2, "connected" if a.get("listening") else "-")
    session.out_table(headers, rows)


def run_send(session: Session) -> int:
    args = session.args
    body = given(
        message=message_text(args.message),
        target=args.target,
        inbox_id=args.inbox,
        agent_name=args.agent,
        submission_id=args.submission_id,
    )
    try:
        receipt = session.call("POST", "/v1/messages", body=body, shape=shapes.RECEIPT)
    except CliError as error:
        raise with_target_hint(session, error, args.target) from None
    return session.show(receipt, _print_send)


def _print_send(session: Session, receipt: dict[str, Any]) -> None:
    args = session.args
    session.out(
        f"sent message {one_line(receipt.get('message_id'))} "
        f"(receipt: {one_line(receipt.get('receipt'))})"
    )
    if receipt.get("replayed"):
        session.out("replayed: this submission id was sent before; nothing new was sent")
    session.out(f"inbox:        {one_line(receipt.get('inbox_id'))}")
    session.out(f"conversation: {one_line(receipt.get('conversation_id'))}")
    session.out(f"time:         {when(receipt.get('created_at'))}")
    words = ["messages", "read", *_agent_words(args.agent), "--inbox", receipt.get("inbox_id", "")]
    wait = ["--after", "0", "--wait", str(limits.WAIT_MAX_SECONDS)]
    session.out_command("read replies: ", *words, *wait)


def message_text(value: str) -> str:
    if value != "-":
        return value
    # A trailing newline comes from the shell or the editor, not from the author.
    return sys.stdin.read().rstrip("\n")


def run_read(session: Session) -> int:
    args = session.args
    if not args.agent and not args.inbox:
        raise CliError(
            "messages read needs --inbox INBOX or --agent NAME (the name's mailbox)", EXIT_USAGE
        )
    if args.wait < 0:
        raise CliError("--wait must be 0 or more seconds", EXIT_USAGE)
    if args.wait > PROGRESS_AFTER_SECONDS and sys.stderr.isatty():
        print(f"waiting up to {args.wait:g} s for new messages…", file=sys.stderr, flush=True)
    page = session.call(
        "GET",
        "/v1/messages",
        query={
            "inbox_id": args.inbox,
            "agent_name": args.agent,
            "after": args.after,
            "wait_seconds": args.wait or None,
            "limit": args.limit,
        },
        wait_seconds=args.wait,
        shape=shapes.PAGE,
    )
    return session.show(page, _print_read)


def _print_read(session: Session, page: dict[str, Any]) -> None:
    args = session.args
    messages = page.get("messages") or []
    where = "mailbox of " + one_line(args.agent) if page.get("kind") == "mailbox" else "inbox"
    if not messages:
        session.out(f"no new messages in the {where}")
    for index, message in enumerate(messages):
        if index:
            session.out("")
        _print_message(session, message, args.agent)
    cursor = page.get("next_cursor") or ""
    session.out("")
    session.out(f"next cursor: {cursor}")
    more = ["messages", "read", *_agent_words(args.agent)]
    if args.inbox:
        more += ["--inbox", args.inbox]
    more += ["--after", cursor]
    if args.wait:
        more += ["--wait", f"{args.wait:g}"]
    session.out_command("continue: ", *more)


def _print_message(session: Session, message: dict[str, Any], agent: str | None) -> None:
    reply_address = message.get("reply_address") or ""
    session.out(f"from:          {one_line(message.get('sender'))}")
    session.out(f"message_id:    {one_line(message.get('message_id'))}")
    session.out(f"time:          {when(message.get('created_at'))}")
    session.out(f"reply_address: {one_line(reply_address)}")
    if message.get("receipt"):
        session.out(f"receipt:       {one_line(message['receipt'])}")
    for line in indent(message.get("body", ""), "  | "):
        session.out(line)
    reply = ["messages", "send", *_agent_words(agent), "--inbox", reply_address]
    session.out_command("reply: ", *reply, "--message", "your reply")
    ack = ["messages", "ack", message.get("message_id", ""), "--delivery"]
    session.out_command("ack:   ", *ack, "admitted")


def run_ack(session: Session) -> int:
    args = session.args
    result = session.call(
        "POST",
        f"/v1/messages/{segment(args.message_id)}/ack",
        body={"delivery": args.delivery},
        shape=shapes.ACK,
    )
    return session.show(result, _print_ack)


def _print_ack(session: Session, result: dict[str, Any]) -> None:
    session.out(
        f"message {one_line(result.get('message_id'))} receipt: {one_line(result.get('receipt'))}"
    )


def run_state(session: Session) -> int:
    args = session.args
    if args.target:
        return _crew_state(session)
    if args.after or args.limit is not None:
        raise CliError("--after and --limit page a Crew's state (--target crew:NAME)", EXIT_USAGE)
    state = session.call(
        "GET",
        f"/v1/inboxes/{segment(args.inbox)}/state",
        query={"agent_name": args.agent},
        shape=shapes.INBOX_STATE,
    )
    return session.show(state, _print_state)


def _print_state(session: Session, state: dict[str, Any]) -> None:
    session.out(
        f"inbox:         {one_line(state.get('inbox_id'))} ({one_line(state.get('status'))})"
    )
    session.out(f"conversation:  {one_line(state.get('conversation_id'))}")
    session.out(f"peer:          {one_line(state.get('peer'))}")
    session.out(f"messages kept: {state.get('messages_retained')} of {state.get('history_limit')}")
    rate = f"rate:          {state.get('rate_used')} used, {state.get('rate_remaining')} left"
    if state.get("rate_remaining") == 0:
        rate += f" (retry after {state.get('retry_after')} s)"
    session.out(rate + " this hour")
    session.out(f"created:       {when(state.get('created_at'))}")
    session.out(f"last activity: {when(state.get('last_activity_at'))}")
    session.out(f"idle expiry:   {when(state.get('idle_expires_at'))}")
    records = state.get("delivery_records") or []
    session.out("")
    if not records:
        session.out("no messages sent from this inbox yet")
        return
    session.out("sent from this inbox (newest first):")
    rows = [(r.get("message_id"), when(r.get("created_at")), r.get("receipt")) for r in records]
    session.out_table(("MESSAGE_ID", "SENT", "RECEIPT"), rows, indent="  ")


def _crew_state(session: Session) -> int:
    args = session.args
    kind, _, name = str(args.target).partition(":")
    if kind != "crew" or not name:
        raise CliError("--target must be crew:NAME (for an inbox use --inbox)", EXIT_USAGE)
    if args.agent:
        raise CliError("--agent goes with --inbox", EXIT_USAGE)
    state = session.call(
        "GET",
        f"/v1/crews/{segment(name)}/state",
        query={"after": args.after, "limit": args.limit},
        shape=shapes.CREW_STATE,
    )
    return session.show(state, _print_crew_state)


def _print_crew_state(session: Session, state: dict[str, Any]) -> None:
    args = session.args
    paused = " (wakeups paused)" if state.get("scheduler_paused") else ""
    session.out(
        f"{one_line(state.get('target'))}: messaging {one_line(state.get('messaging'))}{paused}"
    )
    inboxes = state.get("inboxes") or []
    if not inboxes:
        session.out("no conversations")
    for inbox in inboxes:
        _print_crew_inbox(session, str(state.get("target") or ""), inbox)
    if state.get("next_cursor"):
        more = ["messages", "state", "--target", str(args.target), "--after"]
        session.out("")
        session.out_command("next page: ", *more, state["next_cursor"])


def _print_crew_inbox(session: Session, target: str, inbox: dict[str, Any]) -> None:
    session.out("")
    session.out(
        f"inbox {one_line(inbox.get('inbox_id'))} ({one_line(inbox.get('status'))}) with "
        f"{one_line(inbox.get('peer'))}, last activity {when(inbox.get('last_activity_at'))}"
    )
    if inbox.get("receiving_run_id"):
        session.out(f"  latest run: {one_line(inbox['receiving_run_id'])}")
    records = inbox.get("delivery_records") or []
    rows = [
        (
            r.get("message_id"),
            when(r.get("created_at")),
            r.get("receipt"),
            r.get("run_state") or "-",
        )
        for r in records
    ]
    for line in table(("MESSAGE_ID", "SENT", "RECEIPT", "RUN"), rows) if rows else []:
        session.out("  " + line)
    name = target.removeprefix("crew:")
    for record in records:
        if record.get("run_state") == "pending_review":
            words = ["crews", "release", "--crew", name, "--message-id", record["message_id"]]
            session.out_command("  release: ", *words)
    wakeups = inbox.get("wakeups") or []
    if wakeups:
        session.out("  wakeups:")
        rows = [
            (w.get("wakeup_id"), when(w.get("due_at")), w.get("state"), w.get("run_state") or "-")
            for w in wakeups
        ]
        session.out_table(("WAKEUP_ID", "DUE", "STATE", "RUN"), rows, indent="    ")
    for error in inbox.get("errors") or []:
        session.out(f"  error: {one_line(error)}")


def _when(args: argparse.Namespace) -> dict[str, Any]:
    return {"at": args.at} if args.at is not None else {"delay_seconds": args.delay}


def run_wakeup_schedule(session: Session) -> int:
    args = session.args
    body: dict[str, Any] = {"inbox_id": args.inbox, **_when(args)}
    if args.agent:
        body["agent_name"] = args.agent
    wakeup = session.call("POST", "/v1/wakeups", body=body, shape=shapes.WAKEUP)
    return session.show(wakeup, partial(_print_wakeup, verb="scheduled"))


def run_wakeup_cancel(session: Session) -> int:
    path = f"/v1/wakeups/{segment(session.args.wakeup_id)}"
    wakeup = session.call("DELETE", path, shape=shapes.WAKEUP)
    return session.show(wakeup, partial(_print_wakeup, verb="cancelled"))


def run_wakeup_reschedule(session: Session) -> int:
    args = session.args
    path = f"/v1/wakeups/{segment(args.wakeup_id)}/reschedule"
    wakeup = session.call("POST", path, body=_when(args), shape=shapes.WAKEUP)
    return session.show(wakeup, partial(_print_wakeup, verb="rescheduled"))


def _print_wakeup(session: Session, wakeup: dict[str, Any], verb: str) -> None:
    wakeup_id = str(wakeup.get("wakeup_id") or "")
    session.out(
        f"{verb} wakeup {one_line(wakeup_id)}: due {when(wakeup.get('due_at'))}, "
        f"state {one_line(wakeup.get('state'))}"
    )
    if wakeup.get("state") == "scheduled":
        cancel = ["messages", "wakeup", "cancel", wakeup_id]
        session.out_command("cancel: ", *cancel)
    inbox = str(wakeup.get("inbox_id") or "")
    read = ["messages", "read", "--inbox", inbox, "--wait", str(limits.WAIT_MAX_SECONDS)]
    session.out_command("answers: ", *read)


def run_unregister(session: Session) -> int:
    name = session.args.agent
    try:
        result = session.call("DELETE", f"/v1/agents/{segment(name)}", shape=shapes.UNREGISTERED)
    except CliError as error:
        raise with_agent_hint(session, error, name) from None
    return session.show(
        result,
        lambda session, gone: session.out(f"unregistered {one_line(gone.get('agent_name', name))}"),
    )


def _agent_words(agent: str | None) -> list[str]:
    return ["--agent", agent] if agent else []


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
