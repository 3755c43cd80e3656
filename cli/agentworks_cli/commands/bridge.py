"""`agentworks bridge start|stop|status|run|hook|install`, `agentworks attach|detach|agents`.

The bridge (agentworks_cli.bridge) runs once per computer; hooks reach it over its local
socket. `hook` is what the installed CLI hooks run: it reads the hook payload on stdin,
asks the bridge, prints what the CLI expects, and never touches the network itself.
"""

from __future__ import annotations

import argparse
import difflib
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
from agentworks_cli.commands.session import Session, add_action, add_group

EVENTS = ("stop", "user-prompt-submit", "session-start", "session-end")
MESSAGE_ACTIONS = ("ack", "reply", "send", "read", "peers", "purpose")
START_TIMEOUT_SECONDS = 10.0


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    actions = add_group(
        commands, common, "bridge", "the local bridge that delivers messages into chats"
    )
    start = add_action(actions, common, "start", run_start, "start it in the background")
    actions.add_parser("stop", parents=[common], help="stop it").set_defaults(handler=run_stop)
    actions.add_parser(
        "status", parents=[common], help="attachments, routes and the runner"
    ).set_defaults(handler=run_status)
    foreground = add_action(actions, common, "run", run_foreground, "run in the foreground")
    for parser in (start, foreground):
        _runner_options(parser)
    hook = add_action(actions, common, "hook", run_hook, "what installed CLI hooks run")
    hook.add_argument("event", choices=EVENTS)
    hook.add_argument("--provider", choices=PROVIDERS, required=True)
    install = add_action(
        actions,
        common,
        "install",
        run_install,
        "put the hooks (and Claude Code's /agentworks command) in a project",
        description="Installs the bridge's hooks in the project's own hook files, naming this "
        "agentworks by its full path, and Claude Code's .claude/commands/agentworks.md, so "
        "`/agentworks attach NAME` typed in a chat works. Attaches nothing.",
    )
    install.add_argument(
        "--provider", choices=(*PROVIDERS, "all"), default="all",
        help="which CLI (default: claude and codex)",
    )  # fmt: skip
    install.add_argument("--project", type=Path, default=Path("."), help="default: .")

    message = add_action(
        actions,
        common,
        "message",
        run_message,
        "the attached chat's messaging, from its own shell (when its tools are not loaded)",
        description="Acts as the attachment of the chat this command runs in (its own "
        "connection and name): ack --message-id ID [--delivery admitted|processed]; reply "
        "--inbox INBOX --message TEXT; send --target agent:NAME --message TEXT; read [--inbox "
        "INBOX] [--after CURSOR]; peers; purpose TEXT (one line, at most 512 characters, at "
        "most one change a minute).",
    )
    message.add_argument("what", choices=MESSAGE_ACTIONS, metavar="|".join(MESSAGE_ACTIONS))
    message.add_argument("--provider", choices=PROVIDERS, help="which chat, if nested")
    message.add_argument("rest", nargs=argparse.REMAINDER, help="the action's options")

    attach = add_action(
        commands,
        common,
        "attach",
        run_attach,
        "attach a coding-agent chat to a name (person only)",
        description="Without --session: run inside a chat (its shell tool), it attaches that "
        "chat; from a terminal, it attaches the live chat of this project (or asks which). "
        "A chat is seen once one of its hooks ran: `agentworks bridge install` first.",
    )
    attach.add_argument("name", nargs="?", help="the agent name (default: a short stable one)")
    attach.add_argument("purpose", nargs="?", help="one paragraph, at most 512 characters")
    attach.add_argument("--provider", choices=PROVIDERS, help="with --session")
    attach.add_argument("--session", metavar="ID", help="the chat's session id, if you know it")
    attach.add_argument(
        "--project", type=Path, default=Path("."), help="where to install the hooks (default .)"
    )

    detach = add_action(
        commands, common, "detach", run_detach, "detach a chat (by its name, or pick)"
    )
    detach.add_argument("name", nargs="?", help="the attached name")
    detach.add_argument("--provider", choices=PROVIDERS, help="with --session")
    detach.add_argument("--session", metavar="ID")
    detach.add_argument("--project", type=Path, default=Path("."), help="default: .")

    channel = add_action(
        commands,
        common,
        "channel",
        run_channel,
        "Claude channel route: an MCP stdio server for one chat",
    )
    channel.add_argument("--provider", choices=("claude",), default="claude")
    channel.add_argument("--session", required=True, metavar="ID", help="the chat's session id")

    agents = add_action(
        commands,
        common,
        "agents",
        run_agents,
        "attached chats (--all: directory)",
        aliases=["agent"],
    )
    agents.add_argument("--all", action="store_true", help="the account's whole directory")


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
    from agentworks_cli.bridge.discovery import calling_cli

    provider = session.args.provider
    request = {"op": "hook", "provider": provider, "event": session.args.event,
               "cli": calling_cli(provider)}  # fmt: skip
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


def run_install(session: Session) -> int:
    providers = ("claude", "codex") if session.args.provider == "all" else (session.args.provider,)
    for line in _install(providers, session.args.project.resolve()):
        session.out(line)
    return EXIT_OK


def _install(providers: tuple[str, ...], project: Path) -> list[str]:
    from agentworks_cli.bridge import commands, hook_files

    try:
        executable = hook_files.agentworks_executable()
        said = []
        for provider in providers:
            path = hook_files.install(provider, project, executable)
            command_file = commands.install_command_file(provider, project)
            extra = f"; /agentworks command: {command_file}" if command_file else ""
            said.append(f"{provider}: hooks in {path}{extra}")
            if provider == "codex":
                said.append(CODEX_TRUST)
    except hook_files.HookFileError as error:
        raise CliError(str(error)) from None
    return said


CODEX_TRUST = (
    "codex: Codex runs these hooks only once you trust them: trust the project when Codex "
    "asks, then open /hooks in Codex and trust each AgentWorks hook (Stop, UserPromptSubmit, "
    "SessionStart); a changed hook file needs trusting again"
)


def run_attach(session: Session) -> int:
    args = session.args
    chat = _the_chat(args, for_attach=True)
    answer = _ask({"op": "attach", "provider": chat[0], "session_id": chat[1],
                   "name": args.name, "purpose": args.purpose})  # fmt: skip
    installed = _install((chat[0],), args.project.resolve())
    session.out(str(answer["said"]))
    for line in installed:
        session.out(f"  {line}")
    return EXIT_OK


def run_message(session: Session) -> int:
    """`agentworks messages …` as the attachment of the chat this runs in."""
    from agentworks.limits import PURPOSE_MAX_CHARS
    from agentworks_cli.bridge import discovery

    args = session.args
    rest, provider = _without_provider(list(args.rest), args.provider)
    chats = discovery.live_chats(_ask({"op": "sessions"})["sessions"])
    own = discovery.own_chat([c for c in chats if provider in (None, c.provider)])
    if own is None or own.agent_name is None:
        raise CliError(
            "`agentworks bridge message` acts as the chat it runs in, and this is not an "
            "attached chat's shell: `agentworks attach NAME` there first, or use "
            "`agentworks messages …` with your own login"
        )
    attachment = _ask({"op": "attachment", "session": own.session})
    name, config = str(attachment["agent_name"]), str(attachment["config_path"])
    if args.what == "purpose":
        purpose = " ".join(rest).strip()
        if not purpose or len(purpose) > PURPOSE_MAX_CHARS or "\n" in purpose:
            raise CliError(f"a purpose is one line of 1 to {PURPOSE_MAX_CHARS} characters",
                           EXIT_USAGE)  # fmt: skip
        answer = _ask({"op": "attach", "provider": own.provider, "session_id": own.session_id,
                       "name": name, "purpose": purpose})  # fmt: skip
        if "error" in answer:
            raise CliError(str(answer["error"]))
        session.out(f"{name}: purpose set")
        return EXIT_OK
    words = {
        "ack": [
            "messages",
            "ack",
            *(["--delivery", "admitted"] if "--delivery" not in rest else []),
        ],
        "reply": ["messages", "send", "--agent", name],
        "send": ["messages", "send", "--agent", name],
        "read": ["messages", "read", "--agent", name],
        "peers": ["messages", "list"],
    }[args.what]
    common = ["--json"] if session.json else []
    return session.run_command(["--config", config, *words, *rest, *common])


def _without_provider(rest: list[str], provider: str | None) -> tuple[list[str], str | None]:
    """`--provider P` may come after the action too (`bridge message send --provider claude`)."""
    kept: list[str] = []
    words = iter(rest)
    for word in words:
        if word == "--provider":
            provider = next(words, provider)
        elif word.startswith("--provider="):
            provider = word.split("=", 1)[1]
        else:
            kept.append(word)
    if provider is not None and provider not in PROVIDERS:
        raise CliError(f"--provider must be one of {', '.join(PROVIDERS)}", EXIT_USAGE)
    return kept, provider


def run_detach(session: Session) -> int:
    args = session.args
    if args.name and not args.session:
        attachments = _ask({"op": "status"})["attachments"]
        attached = [a for a in attachments if a["agent_name"] == args.name]
        if not attached:
            names = [str(a["agent_name"]) for a in attachments]
            nearest = difflib.get_close_matches(args.name, names, n=1)
            hint = f"did you mean {nearest[0]}? " if nearest else ""
            raise CliError(
                f"no chat is attached as {args.name} ({hint}`agentworks agents` lists them)"
            )
        provider, session_id = str(attached[-1]["session"]).split(":", 1)
    else:
        provider, session_id = _the_chat(args, for_attach=False)
    session.out(str(_ask({"op": "detach", "provider": provider, "session_id": session_id})["said"]))
    return EXIT_OK


def _the_chat(args: argparse.Namespace, for_attach: bool) -> tuple[str, str]:
    """(provider, session id): given, the chat this command runs in, or the project's."""
    from agentworks_cli.bridge import discovery

    if args.session:
        if not args.provider:
            raise CliError("--session needs --provider (claude, codex or cursor)", EXIT_USAGE)
        return str(args.provider), str(args.session)
    chats = discovery.live_chats(_ask({"op": "sessions"})["sessions"])
    own = discovery.own_chat(chats)
    if own is not None:
        return own.provider, own.session_id
    project = args.project.resolve()
    candidates = discovery.of_project(chats, project)
    if not for_attach:
        candidates = [c for c in candidates if c.agent_name]
    if args.provider:
        candidates = [c for c in candidates if c.provider == args.provider]
    if len(candidates) == 1:
        return candidates[0].provider, candidates[0].session_id
    if not candidates:
        raise CliError(
            f"no live chat of {project} has run an AgentWorks hook yet. Run `agentworks bridge "
            "install` here, start (or restart) claude or codex in this folder and send it a "
            "prompt, then run this again; or type `/agentworks attach NAME` in the chat"
        )
    return _pick(candidates)


def _pick(candidates: list[Any]) -> tuple[str, str]:
    listed = "\n".join(f"  {n}. {c.describe()}" for n, c in enumerate(candidates, 1))
    if not sys.stdin.isatty():
        raise CliError(
            f"several live chats here; say which with --provider P --session ID:\n{listed}"
        )
    print(f"Live chats of this project:\n{listed}", file=sys.stderr)
    answer = input(f"Which one (1-{len(candidates)})? ").strip()
    if not answer.isdigit() or not 1 <= int(answer) <= len(candidates):
        raise CliError("no chat picked", EXIT_USAGE)
    chosen = candidates[int(answer) - 1]
    return chosen.provider, chosen.session_id


def run_agents(session: Session) -> int:
    if session.args.all:
        from agentworks_cli.commands.messages import run_list

        return int(run_list(session, listening=True))
    return run_status(session)


def run_channel(session: Session) -> int:
    from agentworks_cli.bridge.channel import serve

    serve(_socket(), session.args.provider, session.args.session)
    return EXIT_OK
