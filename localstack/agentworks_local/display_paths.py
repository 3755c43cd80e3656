"""How the local stack shows a path to a person: the banner, the restore notice and
`agentworks dev`'s messages say the same."""

from __future__ import annotations

from pathlib import Path


def home_relative(path: Path) -> str:
    """~/… when the path is under the home directory: shorter and copy-pasteable."""
    try:
        return "~/" + str(path.relative_to(Path.home()))
    except ValueError:
        return str(path)
