"""`agentworks listen --agent NAME | --inbox INBOX`: the push channel (docs/push.md), one
line per notice, reconnecting when the server closes the socket (every 2 hours on AWS)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any
from urllib.parse import urlencode

from agentworks_cli.bridge.push_client import BACKOFF_MAX_SECONDS, notices
from agentworks_cli.client import EXIT_OK, EXIT_UNREACHABLE, CliError, http_error
from agentworks_cli.commands.session import Session, add_action


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    listen = add_action(
        commands,
        common,
        "listen",
        run_listen,
        "wait for new messages over the push channel (no polling)",
        description="Prints a line per notice: which inbox has new messages and how to read "
        "them. Reconnects by itself; Ctrl-C stops.",
    )
    where = listen.add_mutually_exclusive_group(required=True)
    where.add_argument("--agent", metavar="NAME", help="every inbox of this registered name")
    where.add_argument("--inbox", metavar="INBOX", help="one conversation's inbox")
    listen.add_argument("--push-url", metavar="URL", help="the stack's PushUrl (default: config)")
    listen.add_argument("--once", action="store_true", help="exit after the first notice")


def _push_url(session: Session) -> str:
    url = session.args.push_url or session.config().push_url
    if not url:
        raise CliError(
            "no push URL: pass --push-url (the stack's PushUrl output, wss://…) or add "
            f'"push_url" to {session.config_path}'
        )
    return str(url).rstrip("/")


def _connect(url: str, token: str) -> Any:
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    try:
        return connect(
            url, additional_headers={"Authorization": f"Bearer {token}"}, open_timeout=10
        )
    except InvalidStatus as refused:
        response = refused.response
        raise http_error(response.status_code, bytes(response.body or b"")) from None
    except OSError as error:
        raise CliError(
            f"cannot reach the push channel at {url}: {error.strerror or error}", EXIT_UNREACHABLE
        ) from None


def _say(session: Session, notice: dict[str, Any]) -> None:
    if session.json:
        print(json.dumps(notice), flush=True)
        return
    inbox = notice.get("inbox_id", "")
    read = " ".join(session.command("messages", "read", "--inbox", str(inbox)))
    print(f"new messages in {inbox} (up to {notice.get('message_id')}): {read}", flush=True)


def run_listen(session: Session) -> int:
    args = session.args
    config = session.config()
    query = {"agent_name": args.agent} if args.agent else {"inbox_id": args.inbox}
    url = f"{_push_url(session)}/?{urlencode(query)}"
    what = f"agent {args.agent}" if args.agent else f"inbox {args.inbox}"
    pause, connected = 1.0, False
    while True:
        try:
            socket = _connect(url, config.token)
        except CliError as error:
            if not connected or error.exit_code != EXIT_UNREACHABLE:
                raise
            # It answered before (a restart, a network blip): keep trying, as a bridge would.
            print(f"{error}; retrying in {pause:g} s", file=sys.stderr, flush=True)
            time.sleep(pause)
            pause = min(pause * 2, BACKOFF_MAX_SECONDS)
            continue
        print(f"listening for {what} (Ctrl-C stops)", file=sys.stderr, flush=True)
        pause, connected = 1.0, True
        try:
            for notice in notices(socket):
                _say(session, notice)
                if args.once:
                    return EXIT_OK
        except KeyboardInterrupt:
            return EXIT_OK
        except Exception:  # closed by the server (2-hour limit, a restart): reconnect
            print(f"the push channel closed; reconnecting in {pause:g} s", file=sys.stderr)
            time.sleep(pause)
            pause = min(pause * 2, BACKOFF_MAX_SECONDS)
        finally:
            socket.close()
