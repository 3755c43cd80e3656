"""What a running command needs: its arguments, the selected config, a client, output."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentworks_cli.client import EXIT_OK, ApiClient, Config, load_config, resolve_config_path
from agentworks_cli.commands.formatting import shell, table

if TYPE_CHECKING:
    from agentworks_cli.shapes import Shape


@dataclass
class Session:
    args: argparse.Namespace
    config_flag: str | None
    json: bool
    # Runs another command line in this process (main's): `bridge message` runs
    # `messages …` as the chat it is attached to.
    run_command: Callable[[Sequence[str]], int]

    @property
    def config_path(self) -> Path:
        return resolve_config_path(self.config_flag)

    def config(self) -> Config:
        return load_config(self.config_path)

    def client(self) -> ApiClient:
        config = self.config()
        return ApiClient(config.url, config.token, config.path)

    def call(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
        wait_seconds: float = 0.0,
        shape: Shape | None = None,
    ) -> Any:
        """The decoded answer; read with `shape` (the server's response model) when given."""
        answer = self.client().request(
            method, path, query=query, body=body, wait_seconds=wait_seconds
        )
        return answer if shape is None else shape.parse(answer)

    def print_json(self, body: Any) -> None:
        print(json.dumps(body, indent=2, ensure_ascii=False), file=sys.stdout)

    def out(self, line: str = "") -> None:
        print(line, file=sys.stdout)

    def show(self, body: Any, summary: Callable[[Session, Any], object]) -> int:
        """Every command's two outputs: with --json the server's answer as it came, else
        `summary(self, body)`, the human one (a command names it `_print_ACTION`)."""
        if self.json:
            self.print_json(body)
        else:
            summary(self, body)
        return EXIT_OK

    def out_table(
        self, headers: Sequence[str], rows: Iterable[Sequence[object]], indent: str = ""
    ) -> None:
        for line in table(headers, rows):
            self.out(indent + line)

    def out_command(self, label: str, *words: str) -> None:
        """A line that ends in a copy-paste command: `label` then `agentworks WORDS…`."""
        self.out(label + shell(self.command(*words)))

    def command(self, *words: str) -> list[str]:
        """A copy-paste `agentworks …` command that uses the same config as this one."""
        prefix = ["agentworks"]
        if self.config_flag:
            prefix += ["--config", self.config_flag]
        return [*prefix, *words]


def add_group(
    commands: Any, common: argparse.ArgumentParser, name: str, help: str, **options: Any
) -> Any:
    """A command group with the common options; returns the subparsers its ACTIONs join."""
    if "epilog" in options:  # every epilog here is a preformatted table of exit codes
        options.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
    group = commands.add_parser(name, parents=[common], help=help, **options)
    return group.add_subparsers(dest="action", metavar="ACTION", required=True)


def add_action(
    actions: Any,
    common: argparse.ArgumentParser,
    name: str,
    handler: Callable[[Session], int],
    help: str,
    **options: Any,
) -> argparse.ArgumentParser:
    """One ACTION of a command group, with the common options, run by `handler`."""
    if "epilog" in options:  # every epilog here is a preformatted table of exit codes
        options.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
    parser: argparse.ArgumentParser = actions.add_parser(
        name, parents=[common], help=help, **options
    )
    parser.set_defaults(handler=handler)
    return parser


def common_options() -> argparse.ArgumentParser:
    """--config and --json, accepted before or after the subcommand.

    SUPPRESS keeps a subcommand's parser from overwriting a value given before it.
    """
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--config",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="CLI config to use (default: $AGENTWORKS_CONFIG, else ~/.agentworks/config.json)",
    )
    parent.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print the server's JSON instead of the human summary",
    )
    return parent
