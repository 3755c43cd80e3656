"""`agentworks audit list` and `agentworks webhooks …` (C6; an admin connection without
target bounds): the audit log of conversations with a Crew, and the outbound webhooks that
send their events."""

from __future__ import annotations

import argparse
import json
from typing import Any

from agentworks_cli import shapes
from agentworks_cli.client import CliError
from agentworks_cli.commands.formatting import one_line
from agentworks_cli.commands.parsing import add_primary
from agentworks_cli.commands.session import Session, add_action, add_group

EVENTS = ("agent_asked", "request_needs_review", "request_answered", "conversation_closed")


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    actions = add_group(
        commands,
        common,
        "audit",
        "the audit log of conversations with a Crew (admin)",
        description="Every change to a conversation with a Crew — messages, request states, "
        "release, decline, cancel, expiry, pause, resume, close, delete — and who made it.",
    )
    listing = add_action(actions, common, "list", run_audit_list, "a page of entries, oldest first")
    listing.add_argument("--inbox", metavar="INBOX_ID", help="one conversation's entries only")
    listing.add_argument("--limit", type=int, metavar="N", help="entries per page (1-100)")
    listing.add_argument("--after", metavar="CURSOR", help="go on from a page's next_cursor")

    hook_actions = add_group(
        commands,
        common,
        "webhooks",
        "outbound webhooks for conversation events (admin)",
        description="Subscribe a URL to conversation events, signed with the account's "
        "webhook key (`agentworks workflow webhook-key`). Events: " + ", ".join(EVENTS) + ".",
    )
    create = add_action(hook_actions, common, "create", run_webhooks_create, "subscribe a URL")
    create.add_argument(
        "--url", required=True, help="https:// to a public address (docs/outbound.md)"
    )
    create.add_argument(
        "--events",
        default=",".join(EVENTS),
        help="comma-separated events (default: all)",
    )
    add_action(hook_actions, common, "list", run_webhooks_list, "the account's webhooks")
    delete = add_action(hook_actions, common, "delete", run_webhooks_delete, "delete a webhook")
    add_primary(delete, "webhook_id", "WEBHOOK", "--id", "wh_…")
    deliveries = add_action(
        hook_actions,
        common,
        "deliveries",
        run_webhooks_deliveries,
        "a webhook's newest deliveries and attempts",
    )
    add_primary(deliveries, "webhook_id", "WEBHOOK", "--id", "wh_…")


def _actor(actor: dict[str, Any]) -> str:
    if actor["kind"] == "platform":
        return "platform"
    if actor["kind"] == "run":
        return f"{actor['run_id']} as {actor.get('connection_id') or '?'}"
    return str(actor.get("connection_id") or "?")


def run_audit_list(session: Session) -> int:
    args = session.args
    query = {"inbox_id": args.inbox, "limit": args.limit, "after": args.after}
    page = session.call("GET", "/v1/audit", query=query, shape=shapes.AUDIT)
    return session.show(page, _print_audit_list)


def _print_audit_list(session: Session, page: dict[str, Any]) -> None:
    rows = [
        [
            e["at"],
            e["conversation_id"],
            e["action"],
            e.get("state") or "",
            e.get("message_id") or "",
            _actor(e["actor"]),
        ]
        for e in page["entries"]
    ]
    session.out_table(["AT", "CONVERSATION", "ACTION", "STATE", "MESSAGE", "BY"], rows)
    if not rows:
        session.out("no audit entries")
    if page.get("next_cursor"):
        session.out(f"more: agentworks audit list --after {page['next_cursor']}")


def run_webhooks_create(session: Session) -> int:
    args = session.args
    events = [e.strip() for e in str(args.events).split(",") if e.strip()]
    unknown = sorted(set(events) - set(EVENTS))
    if unknown:
        raise CliError(f"unknown events {', '.join(unknown)}; choose from {', '.join(EVENTS)}")
    body = {"url": args.url, "events": events}
    made = session.call("POST", "/v1/webhooks", body=body, shape=shapes.WEBHOOK)
    return session.show(made, _print_webhook)


def _print_webhook(session: Session, made: dict[str, Any]) -> None:
    session.out(f"{made['webhook_id']}  {one_line(made['url'])}  {','.join(made['events'])}")
    # The receiver verifies each delivery with the account's webhook key: say which key and
    # where to get it, without printing the secret itself.
    try:
        key = session.call("GET", "/v1/workflows/webhook-key", shape=shapes.WEBHOOK_KEY)
    except CliError:  # the webhook is made; the hint is a courtesy
        key = {"header": "its signature header", "key": ""}
    session.out(
        f"signed in {key['header']} with the account's webhook key {_key_hint(key['key'])} "
        "(t=<unix seconds>,v1=<hex HMAC-SHA256 of '<t>.<body>'>)"
    )
    session.out_command("the whole key: ", "workflow", "webhook-key")


def _key_hint(key: str) -> str:
    return f"{key[:4]}…{key[-4:]}" if len(key) > 12 else "…"


def run_webhooks_list(session: Session) -> int:
    listed = session.call("GET", "/v1/webhooks", shape=shapes.WEBHOOKS)
    return session.show(listed, _print_webhooks_list)


def _print_webhooks_list(session: Session, listed: dict[str, Any]) -> None:
    rows = [[w["webhook_id"], w["url"], ",".join(w["events"])] for w in listed["webhooks"]]
    session.out_table(["WEBHOOK", "URL", "EVENTS"], rows)
    session.out(f"signed in {listed['signature_header']} (agentworks workflow webhook-key)")


def run_webhooks_delete(session: Session) -> int:
    path = f"/v1/webhooks/{session.args.webhook_id}"
    gone = session.call("DELETE", path, shape=shapes.WEBHOOK_DELETED)
    return session.show(gone, lambda session, gone: session.out(f"deleted {gone['webhook_id']}"))


def run_webhooks_deliveries(session: Session) -> int:
    path = f"/v1/webhooks/{session.args.webhook_id}/deliveries"
    found = session.call("GET", path, shape=shapes.WEBHOOK_DELIVERIES)
    return session.show(found, _print_webhooks_deliveries)


def _print_webhooks_deliveries(session: Session, found: dict[str, Any]) -> None:
    rows = [
        [
            d["created_at"],
            d["event"],
            d["state"],
            json.dumps([a.get("status_code") or a.get("error") for a in d["attempts"]]),
        ]
        for d in found["deliveries"]
    ]
    session.out_table(["AT", "EVENT", "STATE", "ATTEMPTS"], rows)
