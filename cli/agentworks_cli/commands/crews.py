"""`agentworks crews create|update|get|list|delete|release|decline` (F1, M10; all but get and
list take the admin scope).

A Crew file is YAML or JSON. PyYAML comes with the local extras, not with the runtime,
so it is imported only when a YAML file is read; YAML's bare on/off (booleans) are fine
for `messaging`: the server reads them as "on"/"off".
"""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial
from pathlib import Path
from typing import Any

from agentworks_cli import shapes
from agentworks_cli.client import EXIT_USAGE, CliError, given, segment
from agentworks_cli.commands.formatting import one_line, when
from agentworks_cli.commands.session import Session, add_action, add_group

INSTRUCTIONS_SHOWN_CHARS = 200
JSON_SUFFIXES = (".json",)


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    actions = add_group(
        commands,
        common,
        "crews",
        "define, show and delete Crews (agents with typed functions)",
        description="Crews are agents that expose typed functions; call them with "
        "`agentworks functions`. Defining one takes the admin scope.",
    )

    create = add_action(
        actions, common, "create", run_create, "create a Crew from its file (YAML or JSON; admin)"
    )
    _file_argument(create)
    update = add_action(
        actions,
        common,
        "update",
        run_update,
        "replace a Crew's definition with its file (same name; admin)",
    )
    _file_argument(update)
    get = add_action(actions, common, "get", run_get, "show a Crew's definition", aliases=["show"])
    get.add_argument("name", metavar="NAME", help="e.g. contracts")
    add_action(actions, common, "list", run_list, "the Crews you may use")
    delete = add_action(
        actions, common, "delete", run_delete, "delete a Crew (admin); past call records remain"
    )
    delete.add_argument("name", metavar="NAME")
    release = add_action(
        actions,
        common,
        "release",
        run_release,
        "let a message waiting for review through to the Crew (admin)",
    )
    _review_arguments(release)
    decline = add_action(
        actions, common, "decline", run_decline, "turn down a message waiting for review (admin)"
    )
    _review_arguments(decline)
    decline.add_argument("--reason", metavar="TEXT", help="why; the sender reads it")


def _review_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--crew", required=True, metavar="NAME", help="e.g. contracts")
    parser.add_argument(
        "--message-id",
        required=True,
        metavar="ID",
        help="the message (see: agentworks messages state --target crew:NAME)",
    )


def _file_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--file",
        "-f",
        required=True,
        metavar="PATH",
        help="the Crew file: .yaml/.yml or .json ('-' reads stdin)",
    )


# ---- the Crew file ----


def read_crew_file(path_text: str) -> dict[str, Any]:
    """The Crew file's content as an object; CliError (usage) saying what is wrong."""
    return read_definition_file(path_text, "Crew file", "name, adapter, functions, …")


def read_definition_file(path_text: str, what: str, holds: str) -> dict[str, Any]:
    """A YAML or JSON definition file (a Crew's, an adapter profile's) as an object."""
    if path_text == "-":
        raw, where = sys.stdin.read(), "stdin"
    else:
        path = Path(path_text).expanduser()
        where = str(path)
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise CliError(f"no {what} at {where}", EXIT_USAGE) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(f"cannot read the {what} {where}: {exc}", EXIT_USAGE) from None
    if where.lower().endswith(JSON_SUFFIXES):
        data = _parse_json(raw, where, what)
    else:
        data = _parse_yaml(raw, where, what)
    if not isinstance(data, dict):
        raise CliError(
            f"the {what} {where} must hold one mapping ({holds})",
            EXIT_USAGE,
        )
    return data


def _parse_json(raw: str, where: str, what: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise CliError(f"the {what} {where} is not valid JSON: {exc}", EXIT_USAGE) from None


def _parse_yaml(raw: str, where: str, what: str) -> Any:
    try:
        import yaml
    except ModuleNotFoundError:
        # JSON is YAML too: a JSON file under another name still works without PyYAML.
        try:
            return json.loads(raw)
        except ValueError:
            raise CliError(
                f"reading the YAML {what} {where} needs PyYAML, which is not installed; "
                "install it (pip install pyyaml, or the local extras: pip install -e "
                "'.[local]') or write the file as JSON",
                EXIT_USAGE,
            ) from None
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        detail = one_line(str(exc))
        raise CliError(f"the {what} {where} is not valid YAML: {detail}", EXIT_USAGE) from None


# ---- commands ----


def run_create(session: Session) -> int:
    definition = read_crew_file(session.args.file)
    crew = session.call("POST", "/v1/crews", body=definition, shape=shapes.CREW)
    return session.show(crew, partial(_print_crew, verb="created"))


def run_update(session: Session) -> int:
    definition = read_crew_file(session.args.file)
    name = definition.get("name")
    if not isinstance(name, str) or not name.strip():
        raise CliError("the Crew file needs a name (the Crew to update)", EXIT_USAGE)
    crew = session.call(
        "PUT", f"/v1/crews/{segment(name.strip())}", body=definition, shape=shapes.CREW
    )
    return session.show(crew, partial(_print_crew, verb="updated"))


def run_get(session: Session) -> int:
    crew = session.call("GET", f"/v1/crews/{segment(session.args.name)}", shape=shapes.CREW)
    return session.show(crew, _print_crew)


def run_list(session: Session) -> int:
    return session.show(session.call("GET", "/v1/crews", shape=shapes.CREWS), _print_crews)


def _print_crews(session: Session, listed: dict[str, Any]) -> None:
    crews = listed.get("crews") or []
    if not crews:
        session.out("no Crews you may use; an admin creates one with:")
        session.out_command("  ", "crews", "create", "--file", "crew.yaml")
        return
    rows = [
        (
            c.get("target"),
            c.get("version"),
            (c.get("adapter") or {}).get("type", "-"),
            c.get("messaging"),
            c.get("running"),
            when(c.get("updated_at")),
            ", ".join(f.get("name", "") for f in c.get("functions") or []) or "-",
        )
        for c in crews
    ]
    headers = ("TARGET", "VERSION", "ADAPTER", "MESSAGING", "RUNNING", "UPDATED", "FUNCTIONS")
    session.out_table(headers, rows)


def run_delete(session: Session) -> int:
    name = session.args.name
    deleted = session.call("DELETE", f"/v1/crews/{segment(name)}", shape=shapes.CREW_DELETED)
    fallback = "crew:" + name
    return session.show(
        deleted,
        lambda session, gone: session.out(f"deleted {one_line(gone.get('target', fallback))}"),
    )


def run_release(session: Session) -> int:
    args = session.args
    outcome = session.call(
        "POST",
        f"/v1/crews/{segment(args.crew)}/release",
        body={"message_id": args.message_id},
        shape=shapes.REVIEW,
    )
    return session.show(outcome, _print_released)


def _print_released(session: Session, outcome: dict[str, Any]) -> None:
    session.out(
        f"released {one_line(outcome.get('message_id'))} to {one_line(outcome.get('target'))}: "
        f"run {one_line(outcome.get('run_id'))} {one_line(outcome.get('state'))}"
    )
    session.out_command(
        "follow: ", "messages", "state", "--target", str(outcome.get("target") or "")
    )


def run_decline(session: Session) -> int:
    args = session.args
    body = given(message_id=args.message_id, reason=args.reason)
    outcome = session.call(
        "POST", f"/v1/crews/{segment(args.crew)}/decline", body=body, shape=shapes.REVIEW
    )
    return session.show(outcome, _print_declined)


def _print_declined(session: Session, outcome: dict[str, Any]) -> None:
    reason = f" ({one_line(outcome['reason'])})" if outcome.get("reason") else ""
    session.out(
        f"declined {one_line(outcome.get('message_id'))} for "
        f"{one_line(outcome.get('target'))}{reason}; the sender was told"
    )


def _print_crew(session: Session, crew: dict[str, Any], verb: str | None = None) -> None:
    target = one_line(crew.get("target"))
    head = f"{verb} {target}" if verb else target
    session.out(f"{head} (version {crew.get('version')}, {one_line(crew.get('crew_id'))})")
    session.out(f"adapter:   {one_line((crew.get('adapter') or {}).get('type', '-'))}")
    session.out(f"messaging: {one_line(crew.get('messaging'))}")
    access = crew.get("access") or []
    session.out(f"access:    {', '.join(map(one_line, access)) if access else 'the account'}")
    session.out(f"running:   {crew.get('running', 0)} call(s)")
    session.out(f"updated:   {when(crew.get('updated_at'))}")
    instructions = one_line(crew.get("instructions") or "")
    if instructions:
        if len(instructions) > INSTRUCTIONS_SHOWN_CHARS:
            instructions = instructions[: INSTRUCTIONS_SHOWN_CHARS - 1] + "…"
        session.out(f"instructions: {instructions}")
    functions = crew.get("functions") or []
    session.out("")
    if not functions:
        session.out("no functions")
        return
    rows = [(f.get("name"), f.get("description") or "-") for f in functions]
    session.out_table(("FUNCTION", "DESCRIPTION"), rows)
    session.out("")
    session.out_command("schemas: ", "functions", "list", "--target", str(target))
