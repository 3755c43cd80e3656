"""Pruning a function's old published versions (`agentworks ops prune-versions`).

McpFunction publishes a version on every deploy that changes it (AutoPublishAlias, with
SnapStart). SAM keeps each one when the next replaces it (`DeletionPolicy: Retain` on the
Version), and a SnapStart version is billed for its cached snapshot while it exists. This
keeps the newest `keep` versions and every version an alias points to (the `live` alias,
or a weighted routing of it), and deletes the rest.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

KEEP = 3  # the newest versions kept by default: room to roll the alias back


@dataclass(frozen=True)
class VersionFate:
    version: str
    outcome: str  # "kept (newest)", "kept (alias NAME)", "deleted", "would delete", "failed"
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _versions(client: Any, function: str) -> list[str]:
    found: list[str] = []
    for page in client.get_paginator("list_versions_by_function").paginate(FunctionName=function):
        found += [v["Version"] for v in page["Versions"] if v["Version"] != "$LATEST"]
    return sorted(found, key=int)


def _aliased(client: Any, function: str) -> dict[str, str]:
    """version -> the alias that serves it (its main version and any weighted one)."""
    served: dict[str, str] = {}
    for page in client.get_paginator("list_aliases").paginate(FunctionName=function):
        for alias in page["Aliases"]:
            served[alias["FunctionVersion"]] = alias["Name"]
            weights = (alias.get("RoutingConfig") or {}).get("AdditionalVersionWeights") or {}
            for version in weights:
                served[version] = alias["Name"]
    return served


def prune_versions(
    client: Any, function: str, keep: int = KEEP, dry_run: bool = False
) -> list[VersionFate]:
    """Deletes `function`'s published versions but the newest `keep` and the aliased ones;
    what became of each version, oldest first."""
    from botocore.exceptions import ClientError

    if keep < 1:
        raise ValueError("keep at least one version")
    versions = _versions(client, function)
    served = _aliased(client, function)
    newest = set(versions[-keep:])
    fates = []
    for version in versions:
        if version in served:
            fates.append(VersionFate(version, f"kept (alias {served[version]})"))
        elif version in newest:
            fates.append(VersionFate(version, "kept (newest)"))
        elif dry_run:
            fates.append(VersionFate(version, "would delete"))
        else:
            try:
                client.delete_function(FunctionName=function, Qualifier=version)
                fates.append(VersionFate(version, "deleted"))
            except ClientError as error:  # e.g. still referenced elsewhere: leave it
                fates.append(VersionFate(version, "failed", str(error)))
    return fates
