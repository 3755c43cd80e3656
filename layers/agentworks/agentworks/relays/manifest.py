"""A Relay's folder (R1, issue 9 "Format"): `relay.yaml` and its Python modules.

    name: summarize
    description: Summarize texts
    functions:
      - name: summarize
        entrypoint: summarize:run          # module:function, a .py file of the folder
        description: One summary per text
        input_schema: {type: object, properties: {text: {type: string}}, required: [text]}
    mcp_tools:                             # issue 28: attached MCP servers' tools it may call
      - {server: github, tools: [search_issues]}

A malformed folder is refused with the file and the line: `relay.yaml line 4: …`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

import yaml

from agentworks import limits
from agentworks.errors import InvalidInput
from agentworks.mcp_servers.declarations import declaration_json, parse_declaration

MANIFEST = "relay.yaml"
NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
FUNCTION = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
ENTRYPOINT = re.compile(r"^([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*):([A-Za-z_]\w*)$")
_KEYS = {"name", "description", "functions", "mcp_tools"}
_FUNCTION_KEYS = {"name", "entrypoint", "description", "input_schema"}


class RelayFolderError(InvalidInput):
    """The folder is not a Relay; says which file and line."""

    def __init__(self, file: str, line: int | None, message: str) -> None:
        where = f"{file} line {line}" if line else file
        super().__init__(f"{where}: {message}", file=file, line=line)


@dataclass(frozen=True)
class RelayFunction:
    name: str
    module: str  # dotted, inside the folder
    attribute: str
    description: str
    input_schema: dict[str, Any]

    @property
    def entrypoint(self) -> str:
        return f"{self.module}:{self.attribute}"


@dataclass(frozen=True)
class RelayManifest:
    name: str
    description: str
    functions: list[RelayFunction] = field(default_factory=list)
    # Issue 28: [{server, tools}] as declared (checked), the MCP tools its code may call.
    mcp_tools: list[dict[str, Any]] = field(default_factory=list)

    def function(self, name: str) -> RelayFunction | None:
        return next((f for f in self.functions if f.name == name), None)


class _Loader(yaml.SafeLoader):
    """Keeps each mapping's line, so a problem can name it."""


def _mapping_with_line(loader: _Loader, node: yaml.MappingNode) -> dict[str, Any]:
    data = {str(k): v for k, v in loader.construct_mapping(node, deep=True).items()}
    data["__line__"] = node.start_mark.line + 1
    return data


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_with_line)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "__line__"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def parse_manifest(text: str, modules: set[str]) -> RelayManifest:
    """`relay.yaml`'s text → the manifest; `modules` are the folder's importable modules
    (dotted), which every entrypoint must name."""
    try:
        data = yaml.load(text, Loader=_Loader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as error:
        line = error.problem_mark.line + 1 if error.problem_mark else None
        raise RelayFolderError(MANIFEST, line, f"not valid YAML: {error.problem}") from None
    if not isinstance(data, dict):
        raise RelayFolderError(MANIFEST, 1, "holds one mapping: name, description, functions")
    line = int(data.get("__line__", 1))
    unknown = sorted(set(data) - _KEYS - {"__line__"})
    if unknown:
        raise RelayFolderError(
            MANIFEST,
            line,
            f"unknown key {unknown[0]}; known: name, description, functions, mcp_tools",
        )
    name = data.get("name")
    if not isinstance(name, str) or not NAME.match(name):
        raise RelayFolderError(
            MANIFEST, line, "name: 1–63 lower-case letters, digits and '-', from a letter"
        )
    functions = data.get("functions")
    if not isinstance(functions, list) or not functions:
        raise RelayFolderError(MANIFEST, line, "functions: a list of at least one function")
    if len(functions) > limits.RELAY_FUNCTIONS_MAX:
        raise RelayFolderError(MANIFEST, line, f"at most {limits.RELAY_FUNCTIONS_MAX} functions")
    parsed = [_function(item, modules, line) for item in functions]
    names = [f.name for f in parsed]
    if len(set(names)) != len(names):
        raise RelayFolderError(MANIFEST, line, "each function needs a name of its own")
    description = data.get("description", "")
    try:
        mcp_tools = declaration_json(parse_declaration(_plain(data.get("mcp_tools"))))
    except InvalidInput as invalid:
        raise RelayFolderError(MANIFEST, line, invalid.message) from None
    return RelayManifest(name, str(description), parsed, mcp_tools)


def _function(item: Any, modules: set[str], parent_line: int) -> RelayFunction:
    if not isinstance(item, dict):
        raise RelayFolderError(MANIFEST, parent_line, "each function is a mapping")
    line = int(item.get("__line__", parent_line))
    unknown = sorted(set(item) - _FUNCTION_KEYS - {"__line__"})
    if unknown:
        raise RelayFolderError(
            MANIFEST,
            line,
            f"unknown function key {unknown[0]}; known: "
            "name, entrypoint, description, input_schema",
        )
    name = item.get("name")
    if not isinstance(name, str) or not FUNCTION.match(name):
        raise RelayFolderError(
            MANIFEST, line, "a function's name is 1–64 letters, digits, '_' or '-', from a letter"
        )
    found = ENTRYPOINT.match(str(item.get("entrypoint", "")))
    if found is None:
        raise RelayFolderError(MANIFEST, line, f"function {name}: entrypoint is module:function")
    module, attribute = found.group(1), found.group(2)
    if module not in modules:
        raise RelayFolderError(
            MANIFEST,
            line,
            f"function {name}: no module {module} in the folder ({module.replace('.', '/')}.py)",
        )
    schema = _plain(item.get("input_schema", {"type": "object"}))
    from agentworks.crews.schema_check import schema_error

    problem = schema_error(schema) if isinstance(schema, dict) else "not a mapping"
    if problem:
        raise RelayFolderError(MANIFEST, line, f"function {name}: input_schema: {problem}")
    return RelayFunction(name, module, attribute, str(item.get("description", "")), schema)


def module_name(relative: PurePath) -> str | None:
    """`pkg/mod.py` → `pkg.mod`, `pkg/__init__.py` → `pkg`; None for other files."""
    if relative.suffix != ".py":
        return None
    parts = list(relative.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) if parts else None
