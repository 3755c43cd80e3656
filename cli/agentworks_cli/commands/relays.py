"""`agentworks relays publish|list|releases|run|status|retry` (R1–R4): Python code published
as content-hashed releases, run as durable runs pinned to one release.

`publish` checks the folder here first (a malformed one is refused with its file and line,
nothing is sent); a single .py file is published as a Relay of one function, `run`. `run`
answers with the run id at once; `--wait` follows the run to its end and exits by its
outcome: 0 succeeded · 6 failed · 7 needs reconciliation.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentworks_cli.client import EXIT_OK, EXIT_REFUSED, EXIT_USAGE, CliError, given, segment
from agentworks_cli.commands.call_waiting import note
from agentworks_cli.commands.formatting import one_line, when
from agentworks_cli.commands.parsing import add_primary
from agentworks_cli.commands.relay_runs import RUN, run_path, show_run, wait_and_show
from agentworks_cli.commands.session import Session, add_action, add_group
from agentworks_cli.shapes import Shape

if TYPE_CHECKING:
    from agentworks.relays.package import RelayPackage

_VIEWS = "agentworks.relays.views"
RELEASE = Shape(_VIEWS, "ReleaseView")
RELEASES = Shape(_VIEWS, "ReleaseList")
RELAYS = Shape(_VIEWS, "RelayList")
HASH_CHARS = 12  # of a content hash, in human output

EPILOG = """\
exit codes of --wait: 0 succeeded, 6 failed, 7 needs reconciliation
                      (check the uncertain step's side effects, then retry
                      with --replay-uncertain)
"""
WAIT_HELP = "follow the run to its end: progress on stderr, the final JSON on stdout"


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    actions = add_group(
        commands,
        common,
        "relays",
        "publish Python Relays and run their functions durably",
        description="A Relay is a folder of Python code and its relay.yaml. Publishing makes\n"
        "its source the active release; a run is pinned to one release, and its durable\n"
        "steps are not redone when it is retried.",
        epilog=EPILOG,
    )

    publish = add_action(
        actions,
        common,
        "publish",
        run_publish,
        "publish a Relay folder, or one .py file, as the active release (admin)",
        description="DIR is a Relay folder (relay.yaml and its modules). FILE is one .py "
        "file: it becomes a Relay with one function, run, taking any JSON object, whose "
        "entrypoint is the file's `run`. Publishing identical source changes nothing.",
    )
    publish.add_argument("path", metavar="DIR|FILE")
    publish.add_argument(
        "--name",
        metavar="NAME",
        help="publish under this name (default: relay.yaml's; for a FILE, its name with "
        "'_' as '-')",
    )

    add_action(actions, common, "list", run_list, "the account's Relays")

    releases = add_action(
        actions, common, "releases", run_releases, "a Relay's releases, the latest first"
    )
    releases.add_argument("relay", metavar="NAME")

    run = add_action(
        actions,
        common,
        "run",
        run_run,
        "run a Relay function: a run id at once, the outcome later",
        epilog=EPILOG,
    )
    run.add_argument("relay", metavar="NAME")
    run.add_argument("function", metavar="FUNCTION")
    given = run.add_mutually_exclusive_group()
    given.add_argument("--input", metavar="JSON", help="the input, a JSON object (default {})")
    given.add_argument(
        "--input-file", metavar="PATH", help="read the input JSON object from a file ('-': stdin)"
    )
    run.add_argument(
        "--key",
        metavar="KEY",
        help="idempotency key: the same key returns the original run instead of starting "
        "another (default: a fresh random key, so every command is a new run; pass --key to "
        "make retries safe)",
    )
    run.add_argument(
        "--version", type=int, metavar="N", help="run this release (default: the active one)"
    )
    run.add_argument("--wait", action="store_true", help=WAIT_HELP)

    status = add_action(
        actions,
        common,
        "status",
        run_status,
        "a run's status, durable steps and final JSON",
        epilog=EPILOG,
        aliases=["show"],
    )
    add_primary(status, "run_id", "RUN", "--run-id", "rrun_…")
    status.add_argument("--wait", action="store_true", help=WAIT_HELP)

    retry = add_action(
        actions,
        common,
        "retry",
        run_retry,
        "run a failed run again: completed steps are reused, not redone",
        epilog=EPILOG,
    )
    add_primary(retry, "run_id", "RUN", "--run-id", "rrun_…")
    retry.add_argument(
        "--replay-uncertain",
        action="store_true",
        help="for a run that needs reconciliation: you checked the side effects of its "
        "uncertain steps, so they run again",
    )
    retry.add_argument("--wait", action="store_true", help=WAIT_HELP)


# ---- publishing ----


def run_publish(session: Session) -> int:
    path = Path(session.args.path).expanduser()
    package = _package(path, session.args.name)
    body: dict[str, Any] = {"files": {p: c.decode("utf-8") for p, c in package.files.items()}}
    if session.args.name and path.is_dir():
        body["name"] = session.args.name  # a FILE's relay.yaml carries the name already
    release = session.call("POST", "/api/relays", body=body, shape=RELEASE)
    return session.show(release, _print_publish)


def _print_publish(session: Session, release: dict[str, Any]) -> None:
    relay = str(release["relay"])
    head = f"{one_line(relay)} version {release['version']} (hash {_short(release)})"
    if release["created"]:
        session.out(f"published {head}" + (", active" if release["active"] else ""))
    else:
        session.out(f"{head}: unchanged (identical source)")
    for function in release["functions"]:
        described = f": {one_line(function['description'])}" if function["description"] else ""
        session.out(f"  {one_line(function['name'])}{described}")
    first = str(release["functions"][0]["name"]) if release["functions"] else "FUNCTION"
    words = ["relays", "run", relay, first, "--input", "JSON", "--wait"]
    session.out_command("run it: ", *words)


def _package(path: Path, name: str | None) -> RelayPackage:
    """The Relay at `path`, checked here; a CliError naming the file and line if malformed."""
    from agentworks.relays.manifest import RelayFolderError
    from agentworks.relays.package import package_files, package_folder

    try:
        if path.is_dir():
            return package_folder(path)
        if path.is_file():
            return package_files(_single_file_relay(path, name))
    except RelayFolderError as error:
        raise CliError(f"{path} is not a Relay: {error.message}", EXIT_REFUSED) from None
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}", EXIT_USAGE) from None
    raise CliError(f"no Relay folder or .py file at {path}", EXIT_USAGE)


def _single_file_relay(path: Path, name: str | None) -> dict[str, bytes]:
    """One .py file as a Relay: relay.yaml with one function, `run`, taking any object."""
    from agentworks.relays.manifest import NAME

    module = path.stem
    if path.suffix != ".py" or not module.isidentifier():
        raise CliError(
            f"{path}: a single-file Relay is a .py file named as a Python module "
            "(letters, digits, '_'); or publish a folder with its relay.yaml",
            EXIT_USAGE,
        )
    relay = name or module.lower().replace("_", "-")
    if not NAME.match(relay):
        raise CliError(
            f"{relay!r} is not a Relay name (1–63 lower-case letters, digits and '-', from a "
            "letter); pass --name NAME",
            EXIT_USAGE,
        )
    manifest = (
        f"name: {relay}\n"
        f"description: {json.dumps(path.name)}\n"
        "functions:\n"
        "  - name: run\n"
        f"    entrypoint: {module}:run\n"
        "    input_schema: {type: object}\n"
    )
    return {"relay.yaml": manifest.encode(), path.name: path.read_bytes()}


def _short(release: dict[str, Any]) -> str:
    return str(release["content_hash"])[:HASH_CHARS]


# ---- reading ----


def run_list(session: Session) -> int:
    listed = session.call("GET", "/api/relays", shape=RELAYS)
    return session.show(listed, _print_list)


def _print_list(session: Session, listed: dict[str, Any]) -> None:
    relays = listed["relays"]
    if not relays:
        session.out("no Relays yet; publish one with:")
        session.out_command("  ", "relays", "publish", "DIR")
        return
    rows = [
        (r["relay"], r["active_version"], r["latest_version"], when(r["updated_at"]),
         r["description"])
        for r in relays
    ]  # fmt: skip
    session.out_table(("RELAY", "ACTIVE", "LATEST", "UPDATED", "DESCRIPTION"), rows)


def run_releases(session: Session) -> int:
    path = f"/api/relays/{segment(session.args.relay)}/releases"
    listed = session.call("GET", path, shape=RELEASES)
    return session.show(listed, _print_releases)


def _print_releases(session: Session, listed: dict[str, Any]) -> None:
    rows = [
        (r["version"], "*" if r["active"] else "", _short(r), when(r["published_at"]),
         ", ".join(f["name"] for f in r["functions"]))
        for r in listed["releases"]
    ]  # fmt: skip
    session.out(f"{one_line(listed['relay'])}: active version {listed['active_version']}")
    session.out_table(("VERSION", "ACTIVE", "HASH", "PUBLISHED", "FUNCTIONS"), rows)


# ---- runs ----


def run_run(session: Session) -> int:
    args = session.args
    key = args.key or f"cli-{uuid.uuid4().hex}"
    body = given(
        function=args.function, input=_input(args), idempotency_key=key, version=args.version
    )
    path = f"/api/relays/{segment(args.relay)}/runs"
    run = session.call("POST", path, body=body, shape=RUN)
    if args.wait:
        if run["replayed"]:
            note(f"replayed: key {key} already started run {run['run_id']}; nothing new started")
        return wait_and_show(session, run)
    if session.json:
        session.print_json(run)
        return EXIT_OK
    session.out(
        f"started run {one_line(run['run_id'])} ({one_line(run['relay'])} "
        f"{one_line(run['function'])}, release {run['version']}): {run['status']}"
    )
    if run["replayed"]:
        session.out(f"replayed: key {key} already started this run; nothing new started")
    elif args.key is None:
        session.out(f"key: {key} (run again with --key {key} to get this run, not a new one)")
    return _next_steps(session, run)


def run_status(session: Session) -> int:
    run = session.call("GET", run_path(session.args.run_id), shape=RUN)
    if session.args.wait:
        return wait_and_show(session, run)
    return session.show(run, show_run)


def run_retry(session: Session) -> int:
    body = {"replay_uncertain": bool(session.args.replay_uncertain)}
    run = session.call("POST", run_path(session.args.run_id, "/retry"), body=body, shape=RUN)
    if session.args.wait:
        return wait_and_show(session, run)
    if session.json:
        session.print_json(run)
        return EXIT_OK
    session.out(f"retrying run {one_line(run['run_id'])}: {run['status']}")
    return _next_steps(session, run)


def _next_steps(session: Session, run: dict[str, Any]) -> int:
    run_id = str(run["run_id"])
    session.out_command("status: ", "relays", "status", run_id)
    if not run["terminal"]:
        session.out_command("wait:   ", "relays", "status", run_id, "--wait")
    return EXIT_OK


def _input(args: argparse.Namespace) -> dict[str, Any]:
    """--input JSON or --input-file PATH ('-': stdin): a JSON object; {} when neither."""
    where, raw = "--input", args.input
    if args.input_file is not None:
        where = "--input-file" if args.input_file == "-" else f"--input-file {args.input_file}"
        try:
            raw = sys.stdin.read() if args.input_file == "-" else _read(args.input_file)
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise CliError(f"cannot read {where}: {reason}", EXIT_USAGE) from None
    if raw is None:
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise CliError(f"{where} is not valid JSON: {exc}", EXIT_USAGE) from None
    if not isinstance(value, dict):
        raise CliError(f'{where} must be a JSON object, e.g. \'{{"text": "…"}}\'', EXIT_USAGE)
    return value


def _read(path: str) -> str:
    return Path(path).expanduser().read_text(encoding="utf-8")
