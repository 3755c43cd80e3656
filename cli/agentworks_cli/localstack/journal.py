"""An append-only file of records, each framed so a crash can only ever cut off the last one.

A record is `length (4 bytes) | CRC-32 of the payload (4 bytes) | payload` (big-endian). A
record is written whole and fsynced before the request that caused it is answered, so an
acknowledged write is on disk. Reading back tells two kinds of damage apart:

- a *torn tail*: the last record is incomplete or fails its CRC and nothing follows it.
  That is a write a crash cut off; its request was never answered, so dropping it loses
  nothing that was acknowledged. The file is cut back to the last whole record.
- *corruption*: a bad record with more data after it. Something other than a crash changed
  the file; nothing is repaired or overwritten, and `JournalDamaged` says where.
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

_HEADER = struct.Struct(">II")
# No record is this big (API Gateway caps a request at 10 MiB): a larger length is damage.
MAX_RECORD_BYTES = 64 * 1024 * 1024


class JournalDamaged(Exception):
    """The file is damaged somewhere other than its tail."""


@dataclass(frozen=True)
class ReadResult:
    records: list[bytes]
    good_bytes: int  # where the last whole record ends
    torn_bytes: int  # bytes after it (a cut-off final write), 0 when the file is whole


def encode(payload: bytes) -> bytes:
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def read_records(path: Path) -> ReadResult:
    """Every whole record of the file, and how many bytes of torn tail follow them."""
    data = path.read_bytes() if path.exists() else b""
    records: list[bytes] = []
    offset = 0
    while offset < len(data):
        header_end = offset + _HEADER.size
        if header_end > len(data):
            break  # a header cut off: torn tail
        length, crc = _HEADER.unpack_from(data, offset)
        end = header_end + length
        if length > MAX_RECORD_BYTES:
            raise JournalDamaged(f"{path.name}: impossible record length at byte {offset}")
        if end > len(data):
            break  # the payload cut off: torn tail
        payload = data[header_end:end]
        if zlib.crc32(payload) != crc:
            if end == len(data):
                break  # the last record, half written before the crash
            raise JournalDamaged(
                f"{path.name}: record {len(records) + 1} (byte {offset}) fails its checksum "
                "and more records follow it"
            )
        records.append(payload)
        offset = end
    return ReadResult(records, offset, len(data) - offset)


class Journal:
    """Appends records durably (write + fsync); not thread-safe: callers serialize appends."""

    def __init__(self, path: Path, good_bytes: int | None = None) -> None:
        self.path = path
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        if good_bytes is not None:
            os.ftruncate(fd, good_bytes)  # drop a torn tail before appending after it
        os.lseek(fd, 0, os.SEEK_END)
        self._fd = fd
        self.appended = 0  # records since the file was last emptied

    def append(self, payload: bytes) -> None:
        frame = encode(payload)
        written = os.write(self._fd, frame)
        while written < len(frame):
            written += os.write(self._fd, frame[written:])
        os.fsync(self._fd)
        self.appended += 1

    def truncate(self) -> None:
        """Empties the file (after a snapshot has taken in everything it held)."""
        os.ftruncate(self._fd, 0)
        os.lseek(self._fd, 0, os.SEEK_SET)
        os.fsync(self._fd)
        self.appended = 0

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def write_atomically(path: Path, data: bytes) -> None:
    """Replaces `path` with `data` so a crash leaves either the old file or the new one."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself is durable
    finally:
        os.close(directory)
