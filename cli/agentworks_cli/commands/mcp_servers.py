"""`agentworks mcp-servers add|list|show|update|remove` (issue 28): the account's attached
MCP servers. Attaching one takes an admin connection without target bounds; its headers
(`--header 'Authorization: Bearer …'` or `--bearer-from-env VAR`) go to the server's
secret and are never shown again, only their names."""

from __future__ import annotations

import argparse
import os
from typing import Any
from urllib.parse import quote

from agentworks_cli import shapes
from agentworks_cli.client import EXIT_OK, EXIT_USAGE, CliError
from agentworks_cli.commands.formatting import one_line, shell, table, when
from agentworks_cli.commands.session import Session

_BASE = "/v1/mcp-servers"


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    group = commands.add_parser(
        "mcp-servers",
        parents=[common],
        help="attach, show and remove MCP servers whose tools agents may be admitted to call",
        description="An attached MCP server is a named streamable-HTTP MCP endpoint with the "
        "headers to send it (kept in a secret, never shown). Attaching, changing and removing "
        "one takes an admin connection without target bounds.",
    )
    actions = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    add = actions.add_parser("add", parents=[common], help="attach a server (admin)")
    add.add_argument("name", metavar="NAME", help="e.g. github")
    add.add_argument("--url", required=True, help="the server's MCP endpoint (https://…/mcp)")
    _credential_options(add)
    add.set_defaults(handler=run_add)
    update = actions.add_parser(
        "update", parents=[common], help="change a server's URL and/or headers (admin)"
    )
    update.add_argument("name", metavar="NAME")
    update.add_argument("--url", help="a new MCP endpoint")
    _credential_options(update)
    update.set_defaults(handler=run_update)
    show = actions.add_parser("show", parents=[common], help="a server and its tools")
    show.add_argument("name", metavar="NAME")
    show.set_defaults(handler=run_show)
    listing = actions.add_parser("list", parents=[common], help="the account's servers")
    listing.set_defaults(handler=run_list)
    remove = actions.add_parser(
        "remove", parents=[common], help="detach a server (admin)", aliases=["delete"]
    )
    remove.add_argument("name", metavar="NAME")
    remove.set_defaults(handler=run_remove)


def _credential_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--header", action="append", default=[], metavar="'NAME: VALUE'",
        help="a header to send with every request (repeatable); kept in the server's secret",
    )  # fmt: skip
    parser.add_argument(
        "--bearer-from-env", metavar="VAR",
        help="send 'Authorization: Bearer <the value of VAR>' (keeps it out of shell history)",
    )  # fmt: skip


def _headers(args: argparse.Namespace) -> dict[str, str] | None:
    """The headers the options give; None when none are given."""
    headers: dict[str, str] = {}
    for given in args.header:
        name, colon, value = given.partition(":")
        if not colon or not name.strip() or not value.strip():
            raise CliError("--header takes 'NAME: VALUE', e.g. 'X-Api-Key: …'", EXIT_USAGE)
        headers[name.strip()] = value.strip()
    if args.bearer_from_env:
        token = os.environ.get(args.bearer_from_env, "")
        if not token:
            raise CliError(f"the environment variable {args.bearer_from_env} is empty", EXIT_USAGE)
        if any(k.lower() == "authorization" for k in headers):
            raise CliError(
                "give --bearer-from-env or an Authorization --header, not both", EXIT_USAGE
            )
        headers["Authorization"] = f"Bearer {token}"
    return headers if (args.header or args.bearer_from_env) else None


def _path(name: str) -> str:
    return f"{_BASE}/{quote(name, safe='')}"


def run_add(session: Session) -> int:
    body: dict[str, Any] = {"name": session.args.name, "url": session.args.url}
    headers = _headers(session.args)
    if headers is not None:
        body["headers"] = headers
    added = session.call("POST", _BASE, body=body, shape=shapes.MCP_SERVER)
    return _show(session, added, "attached")


def run_update(session: Session) -> int:
    body: dict[str, Any] = {}
    if session.args.url:
        body["url"] = session.args.url
    headers = _headers(session.args)
    if headers is not None:
        body["headers"] = headers
    if not body:
        raise CliError("nothing to change: give --url, --header or --bearer-from-env", EXIT_USAGE)
    updated = session.call("PATCH", _path(session.args.name), body=body, shape=shapes.MCP_SERVER)
    return _show(session, updated, "updated")


def run_show(session: Session) -> int:
    shown = session.call("GET", _path(session.args.name), shape=shapes.MCP_SERVER)
    return _show(session, shown, None)


def run_list(session: Session) -> int:
    listed = session.call("GET", _BASE, shape=shapes.MCP_SERVERS)
    if session.json:
        session.print_json(listed)
        return EXIT_OK
    servers = listed.get("mcp_servers") or []
    if not servers:
        session.out("no MCP servers attached; an admin attaches one with:")
        command = session.command(
            "mcp-servers", "add", "NAME", "--url", "https://…/mcp", "--bearer-from-env", "VAR"
        )
        session.out("  " + shell(command))
        return EXIT_OK
    rows = [
        (s.get("name"), s.get("url"), s.get("version"), when(s.get("updated_at"))) for s in servers
    ]
    for line in table(("NAME", "URL", "VERSION", "UPDATED"), rows):
        session.out(line)
    return EXIT_OK


def run_remove(session: Session) -> int:
    removed = session.call("DELETE", _path(session.args.name), shape=shapes.MCP_SERVER_REMOVED)
    if session.json:
        session.print_json(removed)
        return EXIT_OK
    session.out(f"removed MCP server {one_line(removed.get('name'))}")
    return EXIT_OK


def _show(session: Session, server: dict[str, Any], verb: str | None) -> int:
    if session.json:
        session.print_json(server)
        return EXIT_OK
    name = one_line(server.get("name"))
    head = f"{verb} MCP server {name}" if verb else f"MCP server {name}"
    session.out(f"{head} (version {server.get('version')})")
    session.out(f"url:     {one_line(server.get('url'))}")
    names = server.get("header_names") or []
    session.out(f"headers: {', '.join(one_line(n) for n in names) or 'none'} (values not shown)")
    session.out(f"updated: {when(server.get('updated_at'))}")
    if server.get("tools_error"):
        session.out(f"tools:   could not be fetched: {one_line(server.get('tools_error'))}")
    elif server.get("tools") is not None:
        session.out("tools:")
        for tool in server["tools"]:
            description = one_line(tool.get("description"))[:80]
            session.out(
                f"  {one_line(tool.get('name'))}" + (f"  {description}" if description else "")
            )
    return EXIT_OK
