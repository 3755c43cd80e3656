"""`agentworks`: the command line client of an AgentWorks server (and `dev`, the local stack).

Exit codes: 0 ok · 1 refused or other error · 2 usage · 3 server unreachable ·
4 not found / unavailable · 5 rate-limited (or a busy Crew); `functions … --wait` adds
6 call failed · 7 call cancelled or interrupted · 8 still running at --timeout. Errors are
one `error: …` line on stderr (with --json the error JSON is printed on stdout too); never
a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence

from agentworks_cli.client import EXIT_OK, EXIT_REFUSED, CliError
from agentworks_cli.commands import (
    account,
    adapters,
    audit,
    bridge,
    connections,
    conversations,
    crews,
    functions,
    inbox,
    listen,
    mcp_servers,
    messages,
    ops,
    relays,
    usage,
    workflows,
)
from agentworks_cli.commands.parsing import Parser
from agentworks_cli.commands.session import Session, common_options

EXIT_INTERRUPTED = 130

EPILOG = """\
exit codes: 0 ok, 1 refused or other error, 2 usage, 3 server unreachable,
            4 not found or unavailable, 5 rate-limited or a busy Crew;
            functions call/status --wait, workflow … --watch, relays … --wait:
            6 the call or run failed, 7 it was cancelled or interrupted (a relay
            run: needs reconciliation), 8 still running at --timeout

start here:
  agentworks dev                                  # local stack; writes an admin config
  agentworks whoami
  agentworks messages register reviewer
  agentworks messages read --agent reviewer --after 0 --wait 25
  agentworks functions list --target crew:contracts
  agentworks functions call --target crew:contracts --function summarize \\
      --args '{"text": "…"}' --wait
  agentworks workflow run-file WORKFLOW.md --input '{"AREA": "auth"}' --watch
"""


def build_parser() -> argparse.ArgumentParser:
    common = common_options()
    parser = Parser(
        prog="agentworks",
        description="Messages between AI agents, typed functions of Crews and staged "
        "workflows, on your AgentWorks server.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    account.add_parsers(commands, common)
    connections.add_parsers(commands, common)
    messages.add_parsers(commands, common)
    crews.add_parsers(commands, common)
    conversations.add_parsers(commands, common)
    inbox.add_parsers(commands, common)
    functions.add_parsers(commands, common)
    adapters.add_parsers(commands, common)
    mcp_servers.add_parsers(commands, common)
    workflows.add_parsers(commands, common)
    relays.add_parsers(commands, common)
    listen.add_parsers(commands, common)
    bridge.add_parsers(commands, common)
    ops.add_parsers(commands, common)
    usage.add_parsers(commands, common)
    audit.add_parsers(commands, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (the console script exits with it)."""
    _tolerate_unencodable_output()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2, argparse's message)
        return exc.code if isinstance(exc.code, int) else EXIT_REFUSED
    session = Session(
        args=args,
        config_flag=getattr(args, "config", None),
        json=getattr(args, "json", False),
        run_command=main,
    )
    try:
        return int(args.handler(session))
    except CliError as error:
        if session.json:
            session.print_json(error.body)
        _error_line(error.message)
        return error.exit_code
    except KeyboardInterrupt:
        _error_line("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # `agentworks … | head`: the reader left; nothing more to say.
        return EXIT_OK
    except Exception as exc:  # never a traceback to the person
        _error_line(f"unexpected {type(exc).__name__}: {exc}")
        return EXIT_REFUSED


def _error_line(message: str) -> None:
    print(f"error: {' '.join(message.split())}", file=sys.stderr, flush=True)


def _tolerate_unencodable_output() -> None:
    # A message body may hold characters the terminal's encoding lacks; show them
    # escaped rather than crash.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(Exception):
                reconfigure(errors="backslashreplace")


if __name__ == "__main__":
    sys.exit(main())
