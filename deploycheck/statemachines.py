"""Every state machine of the source template, its definition as deployed: the file its
DefinitionUri names (or its inline Definition), with its DefinitionSubstitutions filled
by plausible values. Read from template.yaml, so a new machine is checked without a list
to keep."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deploycheck.plausible import Values

MAX_DEFINITION_BYTES = 1_048_576  # Step Functions: one definition
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_.]+)\}")


@dataclass(frozen=True)
class Definition:
    logical_id: str
    source: str  # the DefinitionUri, or "inline"
    text: str  # after substitution
    unfilled: tuple[str, ...]  # placeholders no substitution names

    @property
    def size(self) -> int:
        return len(self.text.encode())


def definitions(template: dict[str, Any], root: Path) -> list[Definition]:
    """Each AWS::Serverless::StateMachine's definition; DefinitionUri is read from `root`."""
    values = Values(template)
    found = []
    for logical_id, resource in sorted(template.get("Resources", {}).items()):
        if resource.get("Type") != "AWS::Serverless::StateMachine":
            continue
        props = resource.get("Properties") or {}
        if isinstance(props.get("DefinitionUri"), str):
            source = props["DefinitionUri"]
            text = (root / source).read_text()
        else:
            source, text = "inline", json.dumps(props.get("Definition", {}), indent=1)
        substitutions = {
            name: str(values.resolve(value))
            for name, value in (props.get("DefinitionSubstitutions") or {}).items()
        }
        unfilled = sorted({n for n in _PLACEHOLDER.findall(text) if n not in substitutions})
        found.append(Definition(logical_id, source, _fill(text, substitutions), tuple(unfilled)))
    return found


def _fill(text: str, substitutions: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: substitutions.get(m.group(1), m.group(0)), text)
