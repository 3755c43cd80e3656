"""The CLI's grammar: `agentworks GROUP VERB OBJECT [--options]`.

An action's primary object (the run, the call, the webhook …) is positional; the older
`--run-id ID` form of it is still accepted. A mistyped group or verb is answered with the
nearest one.
"""

from __future__ import annotations

import argparse
import difflib
import re
from dataclasses import dataclass
from typing import NoReturn

_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)'")


@dataclass(frozen=True)
class _Primary:
    dest: str
    metavar: str

    @property
    def flag_dest(self) -> str:
        return f"{self.dest}_from_flag"


class Parser(argparse.ArgumentParser):
    """argparse, plus the positional-or-flag primary object and "did you mean …"."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.primaries: list[_Primary] = []

    def parse_known_args(  # type: ignore[override]
        self, args: list[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        for primary in self.primaries:
            positional = getattr(parsed, primary.dest, None)
            flagged = getattr(parsed, primary.flag_dest, None)
            if positional is not None and flagged is not None and positional != flagged:
                self.error(f"{primary.metavar} given twice ({positional} and {flagged})")
            value = positional if positional is not None else flagged
            if value is None:
                self.error(f"the {primary.metavar} is required: {self.prog} {primary.metavar}")
            setattr(parsed, primary.dest, value)
            delattr(parsed, primary.flag_dest)
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        super().error(message + self._did_you_mean(message))

    def _did_you_mean(self, message: str) -> str:
        typed = _INVALID_CHOICE.search(message)
        if typed is None:
            return ""
        choices = [
            str(choice)
            for action in self._actions
            if action.choices is not None
            for choice in action.choices
        ]
        nearest = difflib.get_close_matches(typed.group(1), choices, n=1, cutoff=0.6)
        return f"; did you mean '{nearest[0]}'?" if nearest else ""


def add_primary(
    parser: argparse.ArgumentParser, dest: str, metavar: str, flag: str, help: str
) -> None:
    """The action's object as a positional METAVAR; `flag` (its older form) still works."""
    if not isinstance(parser, Parser):
        raise TypeError("add_primary needs a parser made by agentworks_cli's Parser")
    parser.add_argument(dest, nargs="?", metavar=metavar, help=help)
    parser.add_argument(
        flag, dest=f"{dest}_from_flag", metavar=metavar, help=f"{metavar}, the older form"
    )
    parser.primaries.append(_Primary(dest, metavar))
