"""Dependency cycles of a (translated) template, each printed as a path of named edges,
with the edge to cut.

An edge is one reference from a resource to another: `Ref`, `Fn::GetAtt`, a `${X}` or
`${X.Attr}` in `Fn::Sub`, or `DependsOn`; it is named by where it comes from
(`RelayRunnerFunction.Properties.Environment.Variables.PLATFORM_API_URL → HttpApi`).
CloudFormation rejects a template whose references loop. The edges cheapest to cut are
those a function can do without: an environment variable (learn the value at run time),
a policy (grant by a name built from pseudo parameters), a state machine's substitution.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_SUB = re.compile(r"\$\{([^}!][^}]*)\}")
MAX_CYCLES = 200  # enough to rank edges; a tangled template has many more


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    path: str  # where in `source` the reference is

    def __str__(self) -> str:
        return f"{self.path} → {self.target}"

    @property
    def kind(self) -> str:
        """What the reference is for, which says how it can be cut."""
        if ".Environment.Variables." in self.path:
            return "environment"
        if ".Policies" in self.path or ".PolicyDocument" in self.path:
            return "policy"
        if ".DefinitionSubstitutions." in self.path:
            return "substitution"
        return "other"


@dataclass(frozen=True)
class Link:
    """Every reference from one resource to another: a cut must remove them all."""

    source: str
    target: str
    edges: tuple[Edge, ...]

    def __str__(self) -> str:
        more = len(self.edges) - 1
        return str(self.edges[0]) + (f"  (+{more} more references)" if more else "")

    @property
    def kind(self) -> str:
        """The costliest kind among its references (the one that decides the cut)."""
        return max((e.kind for e in self.edges), key=_PREFERENCE.index)


_HOW = {
    "environment": "learn the value at run time (an SSM parameter named from pseudo "
    "parameters, or the request's own host) instead of referencing the resource",
    "policy": "grant by a name or ARN built with !Sub from pseudo parameters (give the "
    "resource an explicit name) instead of referencing it",
    "substitution": "pass the value in the execution's input instead of substituting it",
    "other": "restructure so one of these resources no longer references the other",
}
_PREFERENCE = ("environment", "policy", "substitution", "other")


@dataclass(frozen=True)
class Cut:
    edge: Link
    cycles_broken: int
    all_broken: bool

    @property
    def how(self) -> str:
        return _HOW[self.edge.kind]


@dataclass(frozen=True)
class Component:
    """One strongly connected set of resources: every cycle among them, or the first few."""

    resources: tuple[str, ...]
    cycles: tuple[tuple[Link, ...], ...]
    cuts: tuple[Cut, ...]  # best first


def edges(template: dict[str, Any]) -> list[Edge]:
    """Every reference from one resource of `template` to another."""
    resources = template.get("Resources", {})
    found: list[Edge] = []
    for logical_id, resource in resources.items():
        depends = resource.get("DependsOn", [])
        for target in [depends] if isinstance(depends, str) else depends:
            found.append(Edge(logical_id, target, f"{logical_id}.DependsOn"))
        for key in ("Properties", "Metadata"):
            if key in resource and key == "Properties":
                for target, path in _references(resource[key], f"{logical_id}.{key}"):
                    if target in resources and target != logical_id:
                        found.append(Edge(logical_id, target, path))
    return sorted(set(found), key=lambda e: (e.source, e.path, e.target))


def _references(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from _references(item, f"{path}[{index}]")
    elif isinstance(value, dict):
        if set(value) == {"Ref"} and isinstance(value["Ref"], str):
            yield value["Ref"], path
        elif set(value) == {"Fn::GetAtt"}:
            target = value["Fn::GetAtt"]
            yield (target.split(".", 1)[0] if isinstance(target, str) else target[0]), path
        elif set(value) == {"Fn::Sub"}:
            argument = value["Fn::Sub"]
            text, variables = (argument, {}) if isinstance(argument, str) else argument
            for name in _SUB.findall(text):
                if name not in variables:
                    yield name.split(".", 1)[0], path
            for name, item in variables.items():
                yield from _references(item, f"{path}.{name}")
        else:
            for key, item in value.items():
                yield from _references(item, f"{path}.{key}")


def _components(nodes: set[str], graph: dict[str, list[Link]]) -> list[set[str]]:
    """Tarjan's strongly connected components that hold a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for edge in graph.get(node, []):
            if edge.target not in index:
                visit(edge.target)
                low[node] = min(low[node], low[edge.target])
            elif edge.target in on_stack:
                low[node] = min(low[node], index[edge.target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(nodes):
        if node not in index:
            visit(node)
    return found


def _simple_cycles(members: set[str], graph: dict[str, list[Link]]) -> list[tuple[Link, ...]]:
    """Elementary cycles within one component (each once: from its smallest resource)."""
    cycles: list[tuple[Link, ...]] = []
    order = sorted(members)
    for start_at, start in enumerate(order):
        _walk(start, start, set(order[start_at:]), graph, [], {start}, cycles)
    return sorted(cycles, key=len)


def _walk(
    node: str,
    start: str,
    allowed: set[str],
    graph: dict[str, list[Link]],
    path: list[Link],
    visited: set[str],
    cycles: list[tuple[Link, ...]],
) -> None:
    for link in graph.get(node, []):
        if len(cycles) >= MAX_CYCLES:
            return
        if link.target == start:
            cycles.append((*path, link))
        elif link.target in allowed and link.target not in visited:
            visited.add(link.target)
            path.append(link)
            _walk(link.target, start, allowed, graph, path, visited, cycles)
            path.pop()
            visited.discard(link.target)


def find(template: dict[str, Any]) -> list[Component]:
    """Each set of resources whose references loop, its cycles, and the edges to cut."""
    grouped: dict[tuple[str, str], list[Edge]] = {}
    for edge in edges(template):
        grouped.setdefault((edge.source, edge.target), []).append(edge)
    graph: dict[str, list[Link]] = {}
    for (source, target), references in sorted(grouped.items()):
        graph.setdefault(source, []).append(Link(source, target, tuple(references)))
    components = []
    for members in _components(set(template.get("Resources", {})), graph):
        inside = {node: [e for e in graph.get(node, []) if e.target in members] for node in members}
        cycles = _simple_cycles(members, inside)
        components.append(
            Component(tuple(sorted(members)), tuple(cycles), _cuts(members, inside, cycles))
        )
    return components


def _cuts(
    members: set[str], graph: dict[str, list[Link]], cycles: list[tuple[Link, ...]]
) -> tuple[Cut, ...]:
    """Edges ranked: those whose removal alone leaves no cycle, then by cycles broken,
    then by how cheaply they are cut (environment, policy, substitution, other)."""
    ranked = []
    for edge in {e for cycle in cycles for e in cycle}:
        without = {n: [e for e in es if e != edge] for n, es in graph.items()}
        all_broken = not _components(members, without)
        broken = sum(1 for cycle in cycles if edge in cycle)
        ranked.append(Cut(edge, broken, all_broken))
    ranked.sort(
        key=lambda c: (
            not c.all_broken,
            _PREFERENCE.index(c.edge.kind),
            -c.cycles_broken,
            str(c.edge),
        )
    )
    return tuple(ranked)


def describe(component: Component, shown: int = 5) -> list[str]:
    """Printable lines: the resources, the first cycles as edge paths, the cut."""
    count = len(component.cycles)
    more = "+" if count >= MAX_CYCLES else ""
    lines = [
        f"dependency cycle among {len(component.resources)} resources "
        f"({count}{more} cycles): {', '.join(component.resources)}"
    ]
    for number, cycle in enumerate(component.cycles[:shown], 1):
        lines.append(f"  cycle {number}: {cycle[0].source}")
        lines.extend(f"      {edge}" for edge in cycle)
    if count > shown:
        lines.append(f"  … and {count - shown}{more} more")
    best = component.cuts[0]
    if best.all_broken:
        lines.append(f"  cut: {best.edge}  (breaks every cycle here)")
    else:
        lines.append(f"  cut first: {best.edge}  (in {best.cycles_broken} of {count} cycles)")
    lines.append(f"    how: {best.how}")
    return lines
