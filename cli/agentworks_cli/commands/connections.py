"""`agentworks connections create|list|revoke` (A2; admin scope)."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path
from typing import Any

from agentworks_cli import shapes
from agentworks_cli.client import EXIT_OK, EXIT_USAGE, CliError, segment, write_config_file
from agentworks_cli.commands.formatting import one_line, shell, when
from agentworks_cli.commands.session import Session, add_action, add_group


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    actions = add_group(
        commands,
        common,
        "connections",
        "create, list and revoke connections (tokens) of the account",
    )

    create = add_action(
        actions, common, "create", run_create, "create a connection; its token is shown once"
    )
    create.add_argument("--name", required=True, help="a label, e.g. worker")
    create.add_argument(
        "--scopes",
        action="extend",
        nargs="+",
        type=_comma_list,
        metavar="SCOPE[,SCOPE]",
        help="e.g. messages:read,messages:send (default: every scope but admin, "
        "workflows:runner and mcp-servers:call)",
    )
    create.add_argument(
        "--target-bounds",
        action="extend",
        nargs="+",
        type=_comma_list,
        metavar="TARGET[,TARGET]",
        help="the only targets it may touch, e.g. crew:contracts (default: none, or the "
        "creating connection's own bounds; never wider than them)",
    )
    create.add_argument(
        "--expires-in", type=int, metavar="SECONDS", help="expire after this many seconds"
    )
    create.add_argument(
        "--save-config",
        metavar="PATH",
        help="also write a CLI config for the new connection (same server, mode 0600)",
    )

    add_action(actions, common, "list", run_list, "list the account's connections")

    revoke = add_action(
        actions,
        common,
        "revoke",
        run_revoke,
        "revoke a connection (takes effect at once)",
        aliases=["delete"],
    )
    revoke.add_argument("connection_id", metavar="CONNECTION_ID")


def _comma_list(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _flatten(groups: list[list[str]] | None) -> list[str] | None:
    return None if groups is None else [item for group in groups for item in group]


def run_create(session: Session) -> int:
    args = session.args
    config = session.config()
    save_path = Path(args.save_config).expanduser() if args.save_config else None
    # Overwriting the config this command runs with would silently swap the admin's
    # token for the new one; refuse before anything is created.
    if save_path is not None and save_path.resolve() == config.path.resolve():
        raise CliError(
            f"--save-config {save_path} is the config this command uses; choose another path",
            EXIT_USAGE,
        )
    if args.expires_in is not None and args.expires_in <= 0:
        raise CliError("--expires-in must be a positive number of seconds", EXIT_USAGE)
    body: dict[str, Any] = {"name": args.name}
    if args.scopes is not None:
        body["scopes"] = _flatten(args.scopes)
    if args.target_bounds is not None:
        body["target_bounds"] = _flatten(args.target_bounds)
    if args.expires_in is not None:
        body["expires_in_seconds"] = args.expires_in
    created = session.call("POST", "/v1/connections", body=body, shape=shapes.ISSUED_CONNECTION)

    save_error: CliError | None = None
    if save_path is not None:
        try:
            write_config_file(
                save_path,
                {
                    "url": config.url,
                    "token": created.get("token"),
                    # Connections never cross accounts (A1): the new one is in ours.
                    "account_id": config.account_id,
                    "connection_id": created.get("connection_id"),
                    "name": created.get("name"),
                    "push_url": config.push_url,
                },
            )
        except CliError as exc:
            save_error = exc  # still show the token below: it cannot be fetched again

    if session.json:
        session.print_json(created)
    else:
        session.out(f"created connection {one_line(created.get('connection_id'))}")
        session.out(f"name:    {one_line(created.get('name'))}")
        session.out(f"scopes:  {', '.join(map(one_line, created.get('scopes') or [])) or '-'}")
        if created.get("target_bounds") is not None:
            session.out(f"bounds:  {', '.join(map(one_line, created['target_bounds'])) or '-'}")
        if created.get("expires_at"):
            session.out(f"expires: {when(created['expires_at'])}")
        session.out(f"token:   {created.get('token')}")
        session.out(
            "warning: the token is shown only once; store it now (it cannot be shown again)"
        )
        if save_path is not None and save_error is None:
            session.out(f"config:  {save_path} (mode 0600); use it with:")
            session.out("  " + shell(["agentworks", "--config", str(save_path), "whoami"]))
    if save_error is not None:
        raise save_error
    return EXIT_OK


def run_list(session: Session) -> int:
    listed = session.call("GET", "/v1/connections", shape=shapes.CONNECTIONS)
    return session.show(listed, _print_list)


def _print_list(session: Session, listed: dict[str, Any]) -> None:
    connections = listed.get("connections") or []
    if not connections:
        session.out("no connections")
        return
    rows = [
        (
            c.get("connection_id"),
            c.get("name"),
            c.get("status"),
            ",".join(c.get("scopes") or []),
            when(c.get("created_at")),
            when(c.get("expires_at")) if c.get("expires_at") else "-",
        )
        for c in connections
    ]
    session.out_table(("CONNECTION_ID", "NAME", "STATUS", "SCOPES", "CREATED", "EXPIRES"), rows)


def run_revoke(session: Session) -> int:
    connection_id = session.args.connection_id
    revoked = session.call(
        "DELETE", f"/v1/connections/{segment(connection_id)}", shape=shapes.CONNECTION
    )
    return session.show(revoked, partial(_print_revoked, connection_id=connection_id))


def _print_revoked(session: Session, revoked: dict[str, Any], connection_id: str) -> None:
    session.out(
        f"revoked connection {one_line(revoked.get('connection_id', connection_id))} "
        f"({one_line(revoked.get('name'))}); its token no longer works"
    )
