"""A Relay folder as a release's content (R1): its files, a deterministic archive and the
content hash that names the release, so publishing identical source is recognised as such.

Only source travels: Python modules and text files (`.py`, `.yaml`, `.yml`, `.json`,
`.txt`, `.md`); hidden entries and `__pycache__` are left out. The hash covers each file's
path and bytes in path order, not the archive's (zip metadata must not change a release).
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agentworks import limits
from agentworks.relays.manifest import MANIFEST, RelayFolderError, RelayManifest, module_name
from agentworks.relays.manifest import parse_manifest as _parse

SOURCE_SUFFIXES = frozenset({".py", ".yaml", ".yml", ".json", ".txt", ".md"})
_EPOCH = (1980, 1, 1, 0, 0, 0)  # zip's earliest time: every archive of one source is equal


@dataclass(frozen=True)
class RelayPackage:
    manifest: RelayManifest
    files: dict[str, bytes]  # POSIX relative path -> content
    content_hash: str  # sha256 hex of the files

    def archive(self) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(self.files):
                info = zipfile.ZipInfo(path, date_time=_EPOCH)
                info.external_attr = 0o644 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, self.files[path])
        return buffer.getvalue()


def content_hash(files: dict[str, bytes]) -> str:
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + files[path] + b"\0")
    return digest.hexdigest()


def package_files(files: dict[str, bytes]) -> RelayPackage:
    """A Relay from its files (relative POSIX paths); RelayFolderError naming what is wrong."""
    if len(files) > limits.RELAY_FILES_MAX:
        raise RelayFolderError(".", None, f"at most {limits.RELAY_FILES_MAX} files in a Relay")
    total = sum(len(content) for content in files.values())
    if total > limits.RELAY_SOURCE_MAX_BYTES:
        raise RelayFolderError(
            ".", None, f"{total:,} bytes of source; at most {limits.RELAY_SOURCE_MAX_BYTES:,}"
        )
    for path, content in files.items():
        pure = PurePosixPath(path)
        if pure.is_absolute() or ".." in pure.parts or pure.suffix not in SOURCE_SUFFIXES:
            raise RelayFolderError(path, None, "not a source file of the Relay")
        try:
            content.decode("utf-8")
        except UnicodeDecodeError as error:
            line = content[: error.start].count(b"\n") + 1
            raise RelayFolderError(path, line, "not UTF-8 text") from None
    if MANIFEST not in files:
        raise RelayFolderError(MANIFEST, None, "missing: a Relay folder holds relay.yaml")
    modules = {name for p in files if (name := module_name(PurePosixPath(p))) is not None}
    for path in files:
        if path.endswith(".py"):
            _check_syntax(path, files[path])
    manifest = _parse(files[MANIFEST].decode("utf-8"), modules)
    return RelayPackage(manifest, dict(files), content_hash(files))


def package_folder(folder: Path) -> RelayPackage:
    """The Relay in `folder` (the CLI's `relays publish DIR`)."""
    if not folder.is_dir():
        raise RelayFolderError(str(folder), None, "not a folder")
    files: dict[str, bytes] = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(part.startswith(".") or part == "__pycache__" for part in relative.parts):
            continue
        if path.is_file() and path.suffix in SOURCE_SUFFIXES:
            files[relative.as_posix()] = path.read_bytes()
    return package_files(files)


def _check_syntax(path: str, content: bytes) -> None:
    """A module that does not compile is refused at publish, with its line."""
    try:
        compile(content, path, "exec", dont_inherit=True)
    except SyntaxError as error:
        raise RelayFolderError(path, error.lineno, f"Python syntax: {error.msg}") from None
