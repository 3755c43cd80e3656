"""`agentworks bridge start|stop|status|run|hook`, `agentworks attach|detach|agents`.

The bridge (agentworks_cli.bridge) runs once per computer; hooks reach it over its local
socket. `hook` is what the installed CLI hooks run: it reads the hook payload on stdin,
asks the bridge, prints what the CLI expects, and never touches the network itself.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agentworks_cli.bridge.hook_files import PROVIDERS
from agentworks_cli.client import EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE, CliError
from agentworks_cli.commands.session import Session

EVENTS = ("stop", "user-prompt-submit", "session-start", "session-end")
START_TIMEOUT_SECONDS = 10.0


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    group = commands.add_parser(
        "bridge", parents=[common], help="the local bridge that delivers messages into chats"
    )
    actions = group.add_subparsers(dest="action", metavar="ACTION", required=True)
    start = actions.add_parser("start", parents=[common], help="start it in the background")
    start.set_defaults(handler=run_start)
    actions.add_parser("stop", parents=[common], help="stop it").set_defaults(handler=run_stop)
    actions.add_parser(
        "status", parents=[common], help="attachments, routes and the runner"
    ).set_defaults(handler=run_status)
    foreground = actions.add_parser("run", parents=[common], help="run in the foreground")
    foreground.set_defaults(handler=run_foreground)
    for parser in (start, foreground):
        _runner_options(parser)
    hook = actions.add_parser("hook", parents=[common], help="what installed CLI hooks run")
    hook.add_argument("event", choices=EVENTS)
    hook.add_argument("--provider", choices=PROVIDERS, required=True)
    hook.set_defaults(handler=run_hook)

    attach = commands.add_parser(
        "attach", parents=[common], help="attach a coding-agent chat to a name (person only)"
    )
    attach.add_argument("name", nargs="?", help="the agent name (default: a short stable one)")
    attach.add_argument("purpose", nargs="?", help="one paragraph, at most 512 characters")
    attach.add_argument("--provider", choices=PROVIDERS, required=True)
    attach.add_argument("--session", required=True, metavar="ID", help="the chat's session id")
    attach.add_argument(
        "--project", type=Path, default=Path("."), help="where to install the hooks (default .)"
    )
    attach.set_defaults(handler=run_attach)

    detach = commands.add_parser("detach", parents=[common], help="detach a chat")
    detach.add_argument("--provider", choices=PROVIDERS, required=True)
    detach.add_argument("--session", required=True, metavar="ID")
    detach.set_defaults(handler=run_detach)

    channel = commands.add_parser(
        "channel", parents=[common], help="Claude channel route: an MCP stdio server for one chat"
    )
    channel.add_argument("--provider", choices=("claude",), default="claude")
    channel.add_argument("--session", required=True, metavar="ID", help="the chat's session id")
    channel.set_defaults(handler=run_channel)

    agents = commands.add_parser(
        "agents", aliases=["agent"], parents=[common], help="attached chats (--all: directory)"
    )
    agents.add_argument("--all", action="store_true", help="the account's whole directory")
    agents.set_defaults(handler=run_agents)


def _runner_options(parser: argparse.ArgumentParser) -> None:
    """The runner opt-in (issue 10 item 6), kept in the bridge's folder until changed."""
    parser.add_argument(
        "--runner", action=argparse.BooleanOptionalAction, default=None,
        help="run the account's cli workflow steps on this computer (claude/codex on PATH; "
        "the login needs the workflows:runner scope); --no-runner stops that",
    )  # fmt: skip
    parser.add_argument(
        "--runner-dir", type=Path, metavar="DIR",
        help="the folder the CLI sessions run in (default: the current one, when opting in)",
    )  # fmt: skip
    parser.add_argument("--runner-name", metavar="NAME", help="shown for this runner")
    parser.add_argument(
        "--runner-poll", type=float, metavar="SECONDS",
        help="between claims while no step waits (default 10)",
    )  # fmt: skip


def _apply_runner_options(session: Session) -> None:
    from agentworks_cli.bridge.daemon import bridge_home
    from agentworks_cli.bridge.runner import load_settings, opt_in

    args = session.args
    home = bridge_home()
    known = load_settings(home)
    changing = args.runner_dir or args.runner_name or args.runner_poll
    if args.runner is None and not (changing and known):
        return
    enabled = args.runner if args.runner is not None else bool(known and known.enabled)
    if args.runner_poll is not None and not 1 <= args.runner_poll <= 3600:
        raise CliError("--runner-poll is 1 to 3600 seconds", EXIT_USAGE)
    if args.runner_dir is not None and not args.runner_dir.is_dir():
        raise CliError(f"--runner-dir {args.runner_dir} is not a folder", EXIT_USAGE)
    opt_in(home, enabled, args.runner_dir, args.runner_name, args.runner_poll)


def _socket() -> Path:
    from agentworks_cli.bridge.daemon import bridge_home, socket_path

    return socket_path(bridge_home())


def _ask(request: dict[str, Any]) -> dict[str, Any]:
    from agentworks_cli.bridge.local_socket import ask

    answer = ask(_socket(), request)
    if answer is None:
        raise CliError("the bridge is not running; start it with `agentworks bridge start`",
                       EXIT_UNREACHABLE)  # fmt: skip
    if "error" in answer:
        raise CliError(str(answer["error"]))
    return answer


def run_hook(session: Session) -> int:
    """Silent and quick unless the bridge has something for this exact chat."""
    from agentworks_cli.bridge.local_socket import ask

    try:
        payload = json.loads(sys.stdin.read() or "{}")
    except ValueError:
        return EXIT_OK
    if not isinstance(payload, dict) or not _socket().exists():
        return EXIT_OK
    request = {"op": "hook", "provider": session.args.provider, "event": session.args.event}
    answer = ask(_socket(), {**request, "payload": payload})
    if not answer or "output" not in answer:
        return EXIT_OK
    print(json.dumps(answer["output"]), flush=True)
    if answer.get("message_ids"):
        ask(_socket(), {"op": "emitted", "session": answer["session"],
                        "message_ids": answer["message_ids"]})  # fmt: skip
    return EXIT_OK


def run_foreground(session: Session) -> int:
    from agentworks_cli.bridge.daemon import BridgeProcess, bridge_home

    _apply_runner_options(session)
    process = BridgeProcess(bridge_home(), str(session.config_path))
    signal.signal(signal.SIGTERM, lambda *_: process.stopping.set())
    try:
        process.run()
    except KeyboardInterrupt:
        process.stopping.set()
        process.stop()
    return EXIT_OK


def run_start(session: Session) -> int:
    from agentworks_cli.bridge.daemon import bridge_home

    if _socket().exists() and _alive():
        if session.args.runner is not None:
            raise CliError("the bridge is already running; `agentworks bridge stop`, then "
                           "start it with the runner option you want")  # fmt: skip
        session.out("the bridge is already running")
        return EXIT_OK
    _apply_runner_options(session)
    home = bridge_home()
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    log = open(home / "bridge.log", "ab")  # noqa: SIM115 (handed to the child)
    command = [sys.executable, "-m", "agentworks_cli.main", "--config", str(session.config_path),
               "bridge", "run"]  # fmt: skip
    subprocess.Popen(command, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                     start_new_session=True, env=os.environ.copy())  # fmt: skip
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if _alive():
            session.out(f"bridge started; log in {home / 'bridge.log'}")
            return EXIT_OK
        time.sleep(0.1)
    raise CliError(f"the bridge did not start; see {home / 'bridge.log'}")


def _alive() -> bool:
    from agentworks_cli.bridge.local_socket import ask

    return ask(_socket(), {"op": "status"}, timeout=2) is not None


def run_stop(session: Session) -> int:
    from agentworks_cli.bridge.daemon import bridge_home

    lock = bridge_home() / "bridge.lock"
    pid = lock.read_text().strip() if lock.exists() else ""
    if not pid.isdigit() or not _alive():
        session.out("the bridge is not running")
        return EXIT_OK
    os.kill(int(pid), signal.SIGTERM)
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while _socket().exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    session.out("bridge stopped")
    return EXIT_OK


def run_status(session: Session) -> int:
    from agentworks_cli.bridge.daemon import status_lines

    answer = _ask({"op": "status"})
    if session.json:
        session.print_json(answer)
    else:
        for line in status_lines(answer):
            session.out(line)
    return EXIT_OK


def run_attach(session: Session) -> int:
    args = session.args
    answer = _ask({"op": "attach", "provider": args.provider, "session_id": args.session,
                   "name": args.name, "purpose": args.purpose})  # fmt: skip
    from agentworks_cli.bridge import hook_files

    installed = hook_files.install(args.provider, args.project.resolve())
    session.out(f"{answer['said']} Hooks: {installed}")
    return EXIT_OK


def run_detach(session: Session) -> int:
    args = session.args
    session.out(str(_ask({"op": "detach", "provider": args.provider,
                          "session_id": args.session})["said"]))  # fmt: skip
    return EXIT_OK


def run_agents(session: Session) -> int:
    if session.args.all:
        from agentworks_cli.commands.messages import run_list

        return int(run_list(session, listening=True))
    return run_status(session)


def run_channel(session: Session) -> int:
    from agentworks_cli.bridge.channel import serve

    serve(_socket(), session.args.provider, session.args.session)
    return EXIT_OK
