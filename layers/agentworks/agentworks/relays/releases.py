"""Publishing Relays and reading their releases (R1).

Publishing needs `admin` (the code runs with its callers' authority, so who may put code
there is an administrator's call, as registering a workflow is); reading releases needs
`relays:run`. A connection bounded to other targets sees no Relay (`relay:NAME` bounds).
"""

from __future__ import annotations

from dataclasses import replace

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.errors import Conflict, InvalidInput, Unavailable
from agentworks.identity.models import RELAYS_RUN, Principal
from agentworks.observability import count
from agentworks.relays.manifest import NAME
from agentworks.relays.package import RelayPackage, package_files
from agentworks.relays.records import RelayHead, Release, ReleaseFunction
from agentworks.relays.release_store import PublishRaced, ReleaseStore, archive_key
from agentworks.relays.views import PublishRelay, RelayList, RelaySummary, ReleaseList, ReleaseView


def relay_target(relay: str) -> str:
    return f"relay:{relay}"


class RelayReleases:
    def __init__(self, store: ReleaseStore, clock: Clock = SYSTEM_CLOCK) -> None:
        self._store = store
        self._clock = clock

    def publish(self, principal: Principal, request: PublishRelay) -> ReleaseView:
        principal.require_account_admin()
        principal.require_own_token()  # its code runs later with its callers' authority
        package = _package(request)
        relay = request.name or package.manifest.name
        if not NAME.match(relay):
            raise InvalidInput(
                "name: 1–63 lower-case letters, digits and '-', from a letter", field="name"
            )
        head = self._store.head(principal.account_id, relay)
        found = self._existing(principal, relay, package.content_hash, head)
        if found is not None:
            return found
        archive = package.archive()  # compressed source: within the bound package_files kept
        release = Release(
            account_id=principal.account_id,
            relay=relay,
            version=(head.latest_version if head else 0) + 1,
            content_hash=package.content_hash,
            archive_key=archive_key(principal.account_id, relay, package.content_hash),
            functions=[
                ReleaseFunction(f.name, f.entrypoint, f.description, f.input_schema)
                for f in package.manifest.functions
            ],
            description=package.manifest.description,
            published_at=int(self._clock.now() * 1000),
            published_by=principal.connection_id,
            mcp_tools=package.manifest.mcp_tools,
        )
        self._store.put_archive(release.archive_key, archive)
        try:
            self._store.publish(release, head)
        except PublishRaced:
            # An identical publish that won the race is this publish's answer too.
            raced = self._existing(
                principal,
                relay,
                package.content_hash,
                self._store.head(principal.account_id, relay),
            )
            if raced is not None:
                return raced
            raise Conflict(
                f"Relay {relay} was published concurrently; publish again to make this "
                "source the active release."
            ) from None
        count("RelayReleasesPublished")
        return ReleaseView.of(release, release.version)

    def _existing(
        self, principal: Principal, relay: str, content_hash: str, head: RelayHead | None
    ) -> ReleaseView | None:
        """The release of identical source, if one was published: publishing it is a no-op."""
        if head is None:
            return None
        version = self._store.version_of_hash(principal.account_id, relay, content_hash)
        if version is None:
            return None
        release = self._store.release(principal.account_id, relay, version)
        if release is None:
            return None
        return ReleaseView.of(release, head.active_version, created=False)

    def visible_head(self, principal: Principal, relay: str) -> RelayHead:
        """The Relay, if this connection may run it; unknown and out of bounds look alike."""
        principal.require(RELAYS_RUN)
        head = self._store.head(principal.account_id, relay) if NAME.match(relay) else None
        if head is None or not principal.may_target(relay_target(relay)):
            raise Unavailable()
        return head

    def releases(self, principal: Principal, relay: str) -> ReleaseList:
        head = self.visible_head(principal, relay)
        found = self._store.releases(principal.account_id, relay, limits.RELAY_RELEASES_LISTED)
        return ReleaseList(
            relay=relay,
            active_version=head.active_version,
            releases=[ReleaseView.of(r, head.active_version) for r in found],
        )

    def relays(self, principal: Principal) -> RelayList:
        principal.require(RELAYS_RUN)
        heads = self._store.heads(principal.account_id)
        return RelayList(
            relays=[
                RelaySummary.of(h) for h in heads if principal.may_target(relay_target(h.relay))
            ]
        )

    def pinned(self, principal: Principal, relay: str, version: int | None) -> Release:
        """The release a run admitted now is pinned to: `version`, or the active one."""
        head = self.visible_head(principal, relay)
        wanted = version or head.active_version
        release = self._store.release(principal.account_id, relay, wanted)
        if release is None:
            raise InvalidInput(
                f"Relay {relay} has no release {wanted}; see them with: agentworks relays "
                f"releases {relay}",
                field="version",
            )
        return release

    def release(self, account_id: str, relay: str, version: int) -> Release | None:
        return self._store.release(account_id, relay, version)

    def archive(self, release: Release) -> bytes:
        return self._store.archive(release.archive_key)


def _package(request: PublishRelay) -> RelayPackage:
    files = {path: text.encode("utf-8") for path, text in request.files.items()}
    package = package_files(files)  # RelayFolderError names the file and line
    if request.name:
        # The manifest's own name is replaced; everything else of it stays as written.
        package = replace(package, manifest=replace(package.manifest, name=request.name))
    return package
