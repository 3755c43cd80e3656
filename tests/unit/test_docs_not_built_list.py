"""What is not built is listed once, in the README's "Not built yet": no guide keeps a
"Not yet" section or a "Status:" note of its own, which go stale as the code moves on."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STALE = re.compile(r"^(#+ Not yet\b|> Status:|.*\barrives next\b)", re.M | re.I)


def test_no_guide_keeps_a_not_yet_list_of_its_own() -> None:
    found = {
        path.name: STALE.findall(path.read_text())
        for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    }
    assert {name: lines for name, lines in found.items() if lines} == {}


def test_the_readme_has_the_one_list() -> None:
    readme = (ROOT / "README.md").read_text()
    assert readme.count("\n## Not built yet\n") == 1
