"""Write each coding CLI's copy of the messaging skill from its one source,
skills/agent-messages/SKILL.md, or (--check) report the copies that no longer match it.

    python skills/sync.py            # regenerate the copies
    python skills/sync.py --check    # exit 1 naming every stale or missing copy (CI, make lint)

The source's front matter gives `name` and `description`; its body is copied unchanged
under a provider's own front matter and a "generated, do not edit" line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SOURCE = "skills/agent-messages/SKILL.md"
GENERATED_NOTE = f"<!-- generated from {SOURCE} by skills/sync.py; do not edit -->"
REPOSITORY_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str


@dataclass(frozen=True)
class ProviderCopy:
    """Where one CLI looks for the skill and how its file is laid out."""

    relative_path: str
    front_matter: Callable[[Skill], dict[str, str]]


def _skill_front_matter(skill: Skill) -> dict[str, str]:
    return {"name": skill.name, "description": skill.description}


def _cursor_rule_front_matter(skill: Skill) -> dict[str, str]:
    # Not always applied: Cursor's agent pulls the rule in when the description fits.
    return {"description": skill.description, "alwaysApply": "false"}


COPIES = (
    ProviderCopy("plugins/claude/skills/agent-messages/SKILL.md", _skill_front_matter),
    ProviderCopy("plugins/codex/skills/agent-messages/SKILL.md", _skill_front_matter),
    ProviderCopy("plugins/cursor/rules/agent-messages.mdc", _cursor_rule_front_matter),
)


class SkillSourceError(Exception):
    """The source skill cannot be turned into copies."""


def read_skill(root: Path) -> Skill:
    text = (root / SOURCE).read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines[0] != "---" or "---" not in lines[1:]:
        raise SkillSourceError(f"{SOURCE}: it must start with a --- front matter block ---")
    end = lines.index("---", 1)
    fields = dict(_field(line) for line in lines[1:end] if line.strip())
    missing = {"name", "description"} - fields.keys()
    if missing:
        raise SkillSourceError(f"{SOURCE}: front matter lacks {', '.join(sorted(missing))}")
    body = "\n".join(lines[end + 1 :]).lstrip("\n")
    return Skill(fields["name"], fields["description"], body)


def _field(line: str) -> tuple[str, str]:
    key, colon, value = line.partition(":")
    value = value.strip()
    # Values are copied unquoted into every provider's front matter (Cursor's parser is
    # not full YAML), so they must read the same as plain YAML scalars.
    if not colon or not value or ": " in value or " #" in value or value[0] in "\"'[]{}>|*&!%@`#":
        raise SkillSourceError(
            f"{SOURCE}: front matter line {line!r} must be `key: plain text` "
            "(no quotes, no ': ' or ' #' inside the text)"
        )
    return key.strip(), value


def render(skill: Skill, copy: ProviderCopy) -> str:
    front_matter = "".join(f"{key}: {value}\n" for key, value in copy.front_matter(skill).items())
    return f"---\n{front_matter}---\n\n{GENERATED_NOTE}\n\n{skill.body}"


def expected_copies(root: Path) -> dict[Path, str]:
    """Each copy's path under `root` and the text it should hold."""
    skill = read_skill(root)
    return {root / copy.relative_path: render(skill, copy) for copy in COPIES}


def stale_copies(root: Path) -> list[Path]:
    """Copies that are missing or differ from what the source generates."""
    return [path for path, text in expected_copies(root).items() if not _holds(path, text)]


def write_copies(root: Path) -> list[Path]:
    """Bring every copy up to date; returns the ones rewritten."""
    written = []
    for path, text in expected_copies(root).items():
        if not _holds(path, text):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", newline="\n")
            written.append(path)
    return written


def _holds(path: Path, text: str) -> bool:
    return path.is_file() and path.read_text(encoding="utf-8") == text


def main(argv: list[str] | None = None, root: Path = REPOSITORY_ROOT) -> int:
    parser = argparse.ArgumentParser(description="Generate the messaging skill's copies.")
    parser.add_argument("--check", action="store_true", help="report stale copies, write none")
    args = parser.parse_args(argv)
    try:
        if not args.check:
            for path in write_copies(root):
                print(f"wrote {path.relative_to(root)}")
            return 0
        stale = stale_copies(root)
    except SkillSourceError as error:
        print(error, file=sys.stderr)
        return 2
    for path in stale:
        state = "stale" if path.exists() else "missing"
        print(f"{path.relative_to(root)}: {state}", file=sys.stderr)
    if stale:
        print("regenerate the copies with: python skills/sync.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
