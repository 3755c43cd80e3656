"""Human output: safe text, times, tables and copy-paste commands."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

# Text from other agents reaches a terminal: control characters (ANSI escapes, carriage
# returns) could rewrite what the person sees, so they are shown escaped.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: object) -> str:
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", "" if text is None else str(text))


def one_line(text: object) -> str:
    return " ".join(clean(text).split())


def when(value: object) -> str:
    """ISO strings and epoch seconds as 'YYYY-MM-DD HH:MM:SS UTC'; '-' for nothing."""
    if value is None or value == "":
        return "-"
    try:
        if isinstance(value, int | float):
            moment = datetime.fromtimestamp(float(value), tz=UTC)
        else:
            moment = datetime.fromisoformat(str(value)).astimezone(UTC)
    except (ValueError, OverflowError, OSError):
        return clean(value)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    cells = [[one_line(c) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = []
    for row in [list(headers), *cells]:
        lines.append("  ".join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip())
    return lines


def shell(words: Sequence[str]) -> str:
    return shlex.join(words)


def indent(text: object, prefix: str = "    ") -> list[str]:
    lines = clean(text).split("\n") or [""]
    return [prefix + line for line in lines]
