"""`agentworks ops redrive` and `ops prune-versions`: operating a deployed stack with your
AWS credentials (not a connection token), as `bootstrap` does. docs/operations.md and
docs/deploy.md say when to use them."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from agentworks_cli.client import EXIT_OK, EXIT_REFUSED, EXIT_USAGE, CliError
from agentworks_cli.commands.formatting import one_line
from agentworks_cli.commands.session import Session, add_action, add_group

REDRIVE_MAX = 100  # messages one run replays unless --max says otherwise


def add_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    actions = add_group(
        commands,
        common,
        "ops",
        "operate a deployed stack with your AWS credentials (docs/operations.md)",
    )
    redrive = add_action(
        actions,
        common,
        "redrive",
        run_redrive,
        "replay what a dead-letter queue kept",
        description="Replays each message of a failure queue on the function it names: a "
        "failed tick's event, a schedule's undelivered event, or a notifier or webhooks batch "
        "(its records read again from the stream). A message is deleted once its replay "
        "succeeded; one that fails again stays. AWS credentials and region come from the "
        "usual places (AWS_PROFILE, AWS_DEFAULT_REGION; AWS_ENDPOINT_URL for the local stack).",
    )
    redrive.add_argument(
        "--queue-url",
        required=True,
        metavar="URL",
        help="the stack's TickDeadLetterQueueUrl, NotifierFailedBatchesQueueUrl or "
        "WebhooksFailedBatchesQueueUrl output (or the queue's name)",
    )
    redrive.add_argument(
        "--function",
        metavar="NAME",
        help="invoke this function (name or ARN) instead of the one each message names",
    )
    redrive.add_argument(
        "--dry-run", action="store_true", help="list what would be replayed; change nothing"
    )
    redrive.add_argument(
        "--max", type=int, default=REDRIVE_MAX, help=f"at most N messages (default {REDRIVE_MAX})"
    )
    prune = add_action(
        actions,
        common,
        "prune-versions",
        run_prune_versions,
        "delete a function's old published versions (McpFunction's SnapStart ones)",
        description="Deletes the function's published versions but the newest --keep and "
        "every version an alias points to. Each deploy that changes McpFunction publishes a "
        "version that the stack keeps (SAM retains it) and SnapStart bills for its snapshot. "
        "AWS credentials and region come from the usual places.",
    )
    prune.add_argument(
        "--function",
        required=True,
        metavar="NAME",
        help="the function's name or ARN (the stack's McpFunctionName output)",
    )
    prune.add_argument(
        "--keep", type=int, default=3, help="newest versions to keep besides aliased ones (3)"
    )
    prune.add_argument("--dry-run", action="store_true", help="list what would go; delete nothing")


@contextmanager
def aws_errors(command: str, failure: str) -> Iterator[None]:
    """What an ops command needs and what AWS answers, as one line of the CLI's error shape:
    a missing package (`make install`), or `failure: <AWS's message>`."""
    try:
        from botocore.exceptions import BotoCoreError, ClientError
    except ModuleNotFoundError as exc:
        raise CliError(f"{command} needs {exc.name}; run `make install` first") from None
    try:
        yield
    except ModuleNotFoundError as exc:
        raise CliError(f"{command} needs {exc.name}; run `make install` first") from None
    except (BotoCoreError, ClientError) as exc:
        raise CliError(f"{failure}: {one_line(str(exc))}") from None


def run_redrive(session: Session) -> int:
    args = session.args
    if args.max < 1:
        raise CliError("--max must be at least 1", EXIT_USAGE)
    with aws_errors("ops redrive", f"cannot redrive {args.queue_url}"):
        # Lazy: only the ops commands talk to AWS directly.
        import boto3

        from agentworks_cli.dead_letters import Redrive

        sqs = boto3.client("sqs")
        queue_url = args.queue_url
        if not queue_url.startswith(("https://", "http://")):
            queue_url = sqs.get_queue_url(QueueName=queue_url)["QueueUrl"]
        from botocore.config import Config

        # The regional endpoint (as the tests' stream reader uses): not an account-based one
        # built from the credentials, which emulators such as moto do not answer.
        streams = boto3.client(
            "dynamodbstreams", config=Config(account_id_endpoint_mode="disabled")
        )
        redrive = Redrive(sqs, boto3.client("lambda"), streams, function=args.function)
        replays = redrive.run(queue_url, dry_run=args.dry_run, limit=args.max)
    if session.json:
        session.print_json([r.as_dict() for r in replays])
    else:
        for replay in replays:
            target = (replay.function or "-").rsplit(":function:", 1)[-1]
            line = f"{replay.outcome:<12}  {replay.kind:<12}  {target}  {one_line(replay.summary)}"
            session.out(line + (f"  ({one_line(replay.detail)})" if replay.detail else ""))
        verb = "would replay" if args.dry_run else "replayed"
        done = sum(r.outcome in ("replayed", "would replay") for r in replays)
        session.out(f"{verb} {done} of {len(replays)} message(s) of {queue_url.rsplit('/', 1)[-1]}")
    failed = any(r.outcome in ("failed", "skipped") for r in replays)
    return EXIT_REFUSED if failed and not args.dry_run else EXIT_OK


def run_prune_versions(session: Session) -> int:
    args = session.args
    if args.keep < 1:
        raise CliError("--keep must be at least 1", EXIT_USAGE)
    with aws_errors("ops prune-versions", f"cannot prune {args.function}"):
        import boto3

        from agentworks_cli.versions import prune_versions

        fates = prune_versions(boto3.client("lambda"), args.function, args.keep, args.dry_run)
    if session.json:
        session.print_json([f.as_dict() for f in fates])
    else:
        for fate in fates:
            detail = f"  ({one_line(fate.detail)})" if fate.detail else ""
            session.out(f"{fate.version:>6}  {fate.outcome}{detail}")
        gone = sum(f.outcome in ("deleted", "would delete") for f in fates)
        verb = "would delete" if args.dry_run else "deleted"
        session.out(f"{verb} {gone} of {len(fates)} version(s) of {args.function}")
    return EXIT_REFUSED if any(f.outcome == "failed" for f in fates) else EXIT_OK
