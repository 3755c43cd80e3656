"""An import-linter contract the built-in types can't say: stores sit below the services that
use them (pyproject.toml, [tool.importlinter]).

A store is a module named `*_store`: a table's items and the requests that read and write
them. A service is any other module that uses a store, directly or through other modules.
A store may use other stores and whatever uses none (records, keys, primitives), never a
service: data access does not reach back up into the rules built on it. Stores live in their
concept's package, beside its services, so no list of packages can draw this line.
"""

from __future__ import annotations

from typing import Any

import grimp
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck

STORE_SUFFIX = "_store"


def is_store(module: str) -> bool:
    return module.rsplit(".", 1)[-1].endswith(STORE_SUFFIX)


def _shortest_chain_to_a_store(
    graph: grimp.ImportGraph, service: str, stores: set[str]
) -> tuple[str, ...]:
    """How `service` uses a store, by the fewest imports (what the report shows)."""
    chains = (
        graph.find_shortest_chain(importer=service, imported=store)
        for store in sorted(graph.find_upstream_modules(service) & stores)
    )
    return min((c for c in chains if c), key=len)


class StoresBelowServices(Contract):
    """Options: `container`, the package whose modules are checked."""

    container = fields.StringField()

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        container = str(self.container)
        modules = graph.find_descendants(container) | {container}
        stores = {m for m in modules if is_store(m)}
        services = {m for m in modules - stores if graph.find_upstream_modules(m) & stores}
        # A store reaching a service through others means some store imports one directly.
        breaches: list[dict[str, Any]] = []
        for store in sorted(stores):
            for service in sorted(graph.find_modules_directly_imported_by(store) & services):
                chain = _shortest_chain_to_a_store(graph, service, stores)
                lines = sorted(
                    d["line_number"]
                    for d in graph.get_import_details(importer=store, imported=service)
                )
                breaches.append(
                    {"store": store, "service": service, "lines": lines, "chain": chain}
                )
        return ContractCheck(kept=not breaches, metadata={"breaches": breaches})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for breach in check.metadata["breaches"]:
            lines = ", ".join(f"l.{n}" for n in breach["lines"])
            output.print_error(
                f"{breach['store']} imports {breach['service']} ({lines}), which uses a "
                f"store: {' -> '.join(breach['chain'])}",
                bold=False,
            )
            output.new_line()
