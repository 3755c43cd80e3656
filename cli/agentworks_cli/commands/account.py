"""`agentworks dev`, `bootstrap`, `login` and `whoami`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from agentworks_cli import shapes
from agentworks_cli.client import (
    DEFAULT_URL,
    EXIT_OK,
    EXIT_USAGE,
    ApiClient,
    CliError,
    normalize_url,
    write_config_file,
)
from agentworks_cli.commands.formatting import one_line
from agentworks_cli.commands.session import Session, add_action

DEFAULT_PORT = 8787


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    dev = add_action(
        commands,
        common,
        "dev",
        run_dev,
        "run the local stack (HTTP API + MCP on embedded moto)",
        description="Start the whole stack on this machine and write an admin config.",
    )
    dev.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    dev.add_argument(
        "--push-port",
        type=int,
        default=None,
        help="the push channel's WebSocket port (default: --port + 1)",
    )
    dev.add_argument("--host", default="127.0.0.1", help="interface to listen on")
    dev.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="PATH",
        help="where the stack keeps its state across restarts (default ~/.agentworks/dev)",
    )
    dev.add_argument(
        "--ephemeral", action="store_true", help="keep everything in memory: lost on stop"
    )
    dev.add_argument(
        "--reset", action="store_true", help="empty the data folder first (asks to confirm)"
    )
    dev.add_argument("--yes", action="store_true", help="with --reset: don't ask")
    dev.add_argument(
        "--fsync-every",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how often the journal reaches the disk (default 1: a power cut loses at most "
        "the last second; a killed process never loses an answered write); 0 fsyncs every "
        "write before answering it",
    )
    dev.add_argument(
        "--allow-loopback-webhooks",
        action="store_true",
        help="let notifyUrl and conversation webhooks reach receivers on this machine "
        "(127.0.0.1, ::1, localhost; http:// to them too), for developing a receiver; by "
        "default, as deployed, only public https:// addresses are sent to",
    )
    dev.add_argument(
        "--allow-unsandboxed-relays",
        action="store_true",
        help="where no sandbox for relay code exists (bubblewrap missing or unable to make "
        "namespaces), run every account's relays anyway; by default only the first "
        "account's run, since unsandboxed relay code can read what your user can "
        "(docs/relays.md)",
    )

    bootstrap = add_action(
        commands,
        common,
        "bootstrap",
        run_bootstrap,
        "create the first account and admin token of a deployed stack (A6)",
        description="Writes the account and an admin connection straight into the deployed "
        "identity table with your AWS credentials, then saves a CLI config for it. Run once.",
    )
    bootstrap.add_argument(
        "--identity-table", required=True, help="the stack's IdentityTableName output"
    )
    bootstrap.add_argument("--url", required=True, help="the stack's ApiUrl output")
    bootstrap.add_argument("--account-name", default="main", help="a label for the account")

    login = add_action(
        commands,
        common,
        "login",
        run_login,
        "check a token against a server and save it as the CLI config",
    )
    login.add_argument("--url", required=True, help=f"server URL, e.g. {DEFAULT_URL}")
    login.add_argument(
        "--token", required=True, help="connection token (aw1.…); '-' reads it from stdin"
    )

    add_action(
        commands,
        common,
        "whoami",
        run_whoami,
        "show the account and connection of the config's token",
    )


def run_dev(session: Session) -> int:
    args = session.args
    if not 0 < args.port < 65536:
        raise CliError("--port must be between 1 and 65535", EXIT_USAGE)
    if args.push_port is not None and not 0 < args.push_port < 65536:
        raise CliError("--push-port must be between 1 and 65535", EXIT_USAGE)
    try:
        # Lazy: only `dev` pays for moto and the handlers.
        from agentworks_local.dev_command import run_dev as start
    except ModuleNotFoundError as exc:
        missing = exc.name or "a module"
        raise CliError(
            f"the local stack needs {missing}, which is not installed; install the local "
            "extras: pip install -e '.[local]' (or run `make run`)"
        ) from None
    if args.ephemeral and args.data_dir is not None:
        raise CliError("--ephemeral keeps no state, so it takes no --data-dir", EXIT_USAGE)
    if args.ephemeral and args.fsync_every is not None:
        raise CliError("--ephemeral keeps no journal, so it takes no --fsync-every", EXIT_USAGE)
    if args.fsync_every is not None and not 0 <= args.fsync_every <= 60:
        raise CliError("--fsync-every must be 0 to 60 seconds", EXIT_USAGE)
    from agentworks_local.durable_state import DEFAULT_DATA_DIR, DEFAULT_SYNC_EVERY_SECONDS

    data_dir = None if args.ephemeral else (args.data_dir or DEFAULT_DATA_DIR)
    return int(
        start(
            args.port,
            session.config_path,
            host=args.host,
            data_dir=data_dir,
            reset=args.reset,
            assume_yes=args.yes,
            allow_loopback_webhooks=args.allow_loopback_webhooks,
            allow_unsandboxed_relays=args.allow_unsandboxed_relays,
            fsync_every=(
                DEFAULT_SYNC_EVERY_SECONDS if args.fsync_every is None else args.fsync_every
            ),
            push_port=args.push_port,
        )
    )


def run_bootstrap(session: Session) -> int:
    args = session.args
    url = normalize_url(args.url)
    if not url.startswith(("http://", "https://")):
        raise CliError(f"--url must start with http:// or https:// (got {url!r})", EXIT_USAGE)
    try:
        # Lazy: only this command talks to AWS directly.
        import boto3
        from botocore.exceptions import BotoCoreError, ClientError

        from agentworks.identity.connection_store import ConnectionStore
        from agentworks.identity.service import IdentityService
    except ModuleNotFoundError as exc:
        raise CliError(f"bootstrap needs {exc.name}; run `make install` first") from None
    store = ConnectionStore(boto3.client("dynamodb"), args.identity_table)
    try:
        issued = IdentityService(store).bootstrap(args.account_name)
    except (BotoCoreError, ClientError) as exc:
        raise CliError(f"cannot write to {args.identity_table}: {one_line(str(exc))}") from None
    connection = issued.connection
    write_config_file(
        session.config_path,
        {
            "url": url,
            "token": issued.token,
            "account_id": connection.account_id,
            "connection_id": connection.connection_id,
        },
    )
    if session.json:
        session.print_json(
            {
                "account_id": connection.account_id,
                "connection_id": connection.connection_id,
                "token": issued.token,
                "config": str(session.config_path),
            }
        )
        return EXIT_OK
    session.out(f"account:    {connection.account_id}")
    session.out(f"connection: {connection.connection_id} (admin)")
    session.out(f"token:      {issued.token}")
    session.out("            (shown once; it is saved in the config below)")
    session.out(f"config:     {session.config_path} (mode 0600)")
    session.out("next:       agentworks whoami")
    return EXIT_OK


def run_login(session: Session) -> int:
    args = session.args
    url = normalize_url(args.url)
    if not url.startswith(("http://", "https://")):
        raise CliError(f"--url must start with http:// or https:// (got {url!r})", EXIT_USAGE)
    token = sys.stdin.readline().strip() if args.token == "-" else args.token.strip()
    if not token:
        raise CliError("--token is empty", EXIT_USAGE)
    who = shapes.WHOAMI.parse(ApiClient(url, token).request("GET", "/v1/whoami"))
    path = session.config_path
    write_config_file(
        path,
        {
            "url": url,
            "token": token,
            "account_id": who.get("account_id"),
            "connection_id": who.get("connection_id"),
        },
    )
    if session.json:
        session.print_json(who)
        return EXIT_OK
    session.out(f"logged in to {url} as connection {one_line(who.get('connection_id'))}")
    session.out(f"account: {one_line(who.get('account_id'))}")
    session.out(f"scopes:  {', '.join(one_line(s) for s in who.get('scopes') or []) or '-'}")
    session.out(f"config:  {path} (mode 0600)")
    return EXIT_OK


def run_whoami(session: Session) -> int:
    config = session.config()
    who = shapes.WHOAMI.parse(ApiClient(config.url, config.token).request("GET", "/v1/whoami"))
    if session.json:
        session.print_json(who)
        return EXIT_OK
    bounds = who.get("target_bounds")
    session.out(f"server:        {config.url}")
    session.out(f"config:        {config.path}")
    session.out(f"account:       {one_line(who.get('account_id'))}")
    session.out(f"connection:    {one_line(who.get('connection_id'))}")
    session.out(f"scopes:        {', '.join(one_line(s) for s in who.get('scopes') or []) or '-'}")
    session.out(
        "target bounds: "
        + ("none (any target)" if bounds is None else ", ".join(map(one_line, bounds)) or "-")
    )
    return EXIT_OK
