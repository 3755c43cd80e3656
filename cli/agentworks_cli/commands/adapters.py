"""`agentworks adapters create|update|get|list|delete` (issue 8): the account's adapter
profiles, which workflow steps name with `adapter`. Defining one takes an admin connection
without target bounds; a profile file is YAML or JSON, the adapter block of a Crew with a
name (examples/claude-code-adapter.yaml)."""

from __future__ import annotations

import argparse
import json
from functools import partial
from typing import Any

from agentworks_cli import shapes
from agentworks_cli.client import EXIT_USAGE, CliError, segment
from agentworks_cli.commands.crews import read_definition_file
from agentworks_cli.commands.formatting import indent, one_line, when
from agentworks_cli.commands.session import Session, add_action, add_group

_WHAT, _HOLDS = "adapter profile file", "name, type and the type's settings"


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    actions = add_group(
        commands,
        common,
        "adapters",
        "define, show and delete adapter profiles (what workflow steps run with)",
        description="An adapter profile is a named adapter block (scripted, bedrock, lambda, "
        "mailbox, cli) that workflow steps name with `adapter`. Defining one takes an admin "
        "connection without target bounds.",
    )
    for action, help_text, handler in (
        ("create", "create a profile from its file (YAML or JSON; admin)", run_create),
        ("update", "replace a profile's settings with its file (same name; admin)", run_update),
    ):
        parser = actions.add_parser(action, parents=[common], help=help_text)
        parser.add_argument(
            "--file", "-f", required=True, metavar="PATH",
            help="the profile file: .yaml/.yml or .json ('-' reads stdin)",
        )  # fmt: skip
        parser.set_defaults(handler=handler)
    get = add_action(actions, common, "get", run_get, "show a profile", aliases=["show"])
    get.add_argument("name", metavar="NAME", help="e.g. claude-code")
    add_action(actions, common, "list", run_list, "the account's profiles")
    delete = add_action(actions, common, "delete", run_delete, "delete a profile (admin)")
    delete.add_argument("name", metavar="NAME")


def _path(name: str) -> str:
    return f"/v1/adapters/{segment(name)}"


def run_create(session: Session) -> int:
    definition = read_definition_file(session.args.file, _WHAT, _HOLDS)
    created = session.call("POST", "/v1/adapters", body=definition, shape=shapes.ADAPTER)
    return session.show(created, partial(_print_profile, verb="created"))


def run_update(session: Session) -> int:
    definition = read_definition_file(session.args.file, _WHAT, _HOLDS)
    name = definition.get("name")
    if not isinstance(name, str) or not name.strip():
        raise CliError("the adapter profile file needs a name (the profile to update)", EXIT_USAGE)
    updated = session.call("PUT", _path(name.strip()), body=definition, shape=shapes.ADAPTER)
    return session.show(updated, partial(_print_profile, verb="updated"))


def run_get(session: Session) -> int:
    return session.show(
        session.call("GET", _path(session.args.name), shape=shapes.ADAPTER), _print_profile
    )


def run_list(session: Session) -> int:
    listed = session.call("GET", "/v1/adapters", shape=shapes.ADAPTERS)
    return session.show(listed, _print_list)


def _print_list(session: Session, listed: dict[str, Any]) -> None:
    profiles = listed.get("adapters") or []
    if not profiles:
        session.out("no adapter profiles yet; an admin creates one with:")
        session.out_command("  ", "adapters", "create", "--file", "adapter.yaml")
        return
    rows = [
        (p.get("name"), p.get("type"), p.get("version"), when(p.get("updated_at")))
        for p in profiles
    ]
    session.out_table(("NAME", "TYPE", "VERSION", "UPDATED"), rows)


def run_delete(session: Session) -> int:
    deleted = session.call("DELETE", _path(session.args.name), shape=shapes.ADAPTER_DELETED)
    return session.show(deleted, _print_delete)


def _print_delete(session: Session, deleted: dict[str, Any]) -> None:
    session.out(f"deleted adapter profile {one_line(deleted.get('name'))}")


def _print_profile(session: Session, profile: dict[str, Any], verb: str | None = None) -> None:
    name = one_line(profile.get("name"))
    head = f"{verb} adapter profile {name}" if verb else f"adapter profile {name}"
    session.out(f"{head} (version {profile.get('version')})")
    session.out(f"type:    {one_line(profile.get('type'))}")
    session.out(f"updated: {when(profile.get('updated_at'))}")
    settings = profile.get("settings")
    if settings is None:
        session.out("settings: shown to an admin of the account")
    else:
        session.out("settings:")
        for line in indent(json.dumps(settings, indent=2, ensure_ascii=False), "  "):
            session.out(line)
