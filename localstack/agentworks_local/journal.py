"""An append-only file of records, each framed so a crash can only ever cut off the last one.

A record is `length (4 bytes) | CRC-32 of the payload (4 bytes) | payload` (big-endian). A
record is written whole before the request that caused it is answered, so an acknowledged
write outlives the process; it is fsynced before the answer, or within `sync_every`
seconds (`Journal`). Reading back tells two kinds of damage apart:

- a *torn tail*: the last record is incomplete or fails its CRC and nothing follows it.
  That is a write a crash cut off; its request was never answered, so dropping it loses
  nothing that was acknowledged. The file is cut back to the last whole record.
- *corruption*: a bad record with more data after it. Something other than a crash changed
  the file; nothing is repaired or overwritten, and `JournalDamaged` says where.
"""

from __future__ import annotations

import contextlib
import os
import struct
import threading
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
    """Appends records durably; not thread-safe: callers serialize appends.

    Every record is written to the file before `append` returns, so a process that dies
    (a crash, `kill -9`) loses nothing it acknowledged: the kernel holds the bytes. What
    the machine itself keeps through a power cut depends on `sync_every`: 0 fsyncs each
    record before returning; N > 0 fsyncs in the background at most N seconds after a
    record (what Redis' `appendfsync everysec` does), so a power cut or kernel crash can
    lose the last N seconds of writes, and a write does not wait for the disk.
    """

    def __init__(self, path: Path, good_bytes: int | None = None, sync_every: float = 0) -> None:
        self.path = path
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        if good_bytes is not None:
            os.ftruncate(fd, good_bytes)  # drop a torn tail before appending after it
        os.lseek(fd, 0, os.SEEK_END)
        self._fd = fd
        self.appended = 0  # records since the file was last emptied
        self.sync_every = sync_every
        self.syncs = 0  # fsyncs made (tests and the banner's figures)
        self.intervals = 0  # background intervals that ended (tests: proof the syncer looked)
        self._unsynced = False
        self._closing = threading.Event()
        self._syncer: threading.Thread | None = None
        if sync_every > 0:
            self._syncer = threading.Thread(
                target=self._sync_in_background, name="journal-fsync", daemon=True
            )
            self._syncer.start()

    def append(self, payload: bytes) -> None:
        frame = encode(payload)
        written = os.write(self._fd, frame)
        while written < len(frame):
            written += os.write(self._fd, frame[written:])
        if self.sync_every > 0:
            self._unsynced = True
        else:
            self._sync()
        self.appended += 1

    def _sync(self) -> None:
        os.fsync(self._fd)
        self.syncs += 1

    def _sync_in_background(self) -> None:
        while not self._closing.wait(self.sync_every):
            if self._unsynced:
                self._unsynced = False
                with contextlib.suppress(OSError):  # closed meanwhile: close() synced
                    self._sync()
            self.intervals += 1

    def truncate(self) -> None:
        """Empties the file (after a snapshot has taken in everything it held)."""
        os.ftruncate(self._fd, 0)
        os.lseek(self._fd, 0, os.SEEK_SET)
        self._sync()
        self._unsynced = False
        self.appended = 0

    def close(self) -> None:
        self._closing.set()
        if self._syncer is not None:
            self._syncer.join()
        if self._fd >= 0:
            self._sync()
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
