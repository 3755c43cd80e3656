"""`agentworks inbox`: a one-time sign-in link to the web Inbox (C5), printed and opened in a
browser when one can be (a display, not CI). The link's code is in its fragment, so it
never reaches a server log; it works once, within 5 minutes, and gives a session cookie of
this config's connection (HttpOnly, SameSite=Strict, an hour)."""

from __future__ import annotations

import argparse
import os
import sys
import webbrowser
from typing import Any

from agentworks_cli import shapes
from agentworks_cli.client import EXIT_OK
from agentworks_cli.commands.session import Session, add_action


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    inbox = add_action(
        commands,
        common,
        "inbox",
        run_inbox,
        "sign in to the web Inbox with a one-time link",
        description="Prints a one-time link to the web Inbox (valid 5 minutes, one use) and "
        "opens it in a browser when a display is available.",
    )
    inbox.add_argument("--no-open", action="store_true", help="print the link only")


def can_open_browser(environ: dict[str, str] | None = None) -> bool:
    """A browser may be opened: not in CI, and a display (or a desktop platform)."""
    env = os.environ if environ is None else environ
    if env.get("CI") or env.get("AGENTWORKS_NO_BROWSER"):
        return False
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))


def run_inbox(session: Session) -> int:
    link = session.call("POST", "/v1/session/links", shape=shapes.SESSION_LINK)
    url = session.config().url.rstrip("/") + link["path"]
    if session.json:
        session.print_json({**link, "url": url})
        return EXIT_OK
    session.out(url)
    session.out(f"(one use, until {link['expires_at']})")
    if not session.args.no_open and can_open_browser():
        webbrowser.open(url)
    return EXIT_OK
