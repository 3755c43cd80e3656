"""What the local stack keeps across restarts, and how it keeps it.

The embedded AWS (moto) lives in memory. To survive a clean stop and a `kill -9` alike,
every write to a service whose data is the user's (DynamoDB, S3, Secrets Manager) passes
through `JournalingApp` on its way into moto: the request is applied, written to the
journal and fsynced, and only then answered. A write that was acknowledged is therefore on
disk; one cut off by a crash was never acknowledged. Writes are applied and journaled one
at a time (DynamoDB applies each request atomically anyway), so replaying the journal in
order rebuilds exactly the state that was served.

Everything else moto holds (IAM, Lambda, Step Functions definitions) is made again from
template.yaml at every start, so it is not journaled.

The journal is folded into a snapshot (snapshot.py) at a clean stop and whenever it grows
past `COMPACT_AFTER_RECORDS`, so a restart reads one snapshot and at most that many
journaled writes. The data folder:

    lock            held (flock) by the running stack: two stacks never share a folder
    snapshot        the state when the journal was last folded in
    journal         the writes since, each fsynced before it was answered
    local-admin.json  the local account's admin credentials (mode 0600)
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import gc
import io
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworks_local import snapshot as snapshots
from agentworks_local.journal import Journal, JournalDamaged, read_records

DEFAULT_DATA_DIR = Path("~/.agentworks/dev")
# Bounds a crash restart (replay is ~2 ms a write) against a fold's pause (~2.6 s at 100,000
# items, all writes wait for it).
COMPACT_AFTER_RECORDS = 5_000
PERSISTED_SERVICES = frozenset({"dynamodb", "s3", "secretsmanager"})
# DynamoDB writes of items: folded into the snapshot's items rather than carried.
ITEM_WRITES = frozenset(
    {"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}
)
_READ_PREFIXES = ("Get", "BatchGet", "List", "Describe", "Query", "Scan", "TransactGet")
_CREDENTIAL = re.compile(r"Credential=[^/,\s]+/\d{8}/[^/]+/([a-z0-9-]+)/aws4_request")
_QUERY_CREDENTIAL = re.compile(r"X-Amz-Credential=[^&]*?%2F([a-z0-9-]+)%2Faws4_request", re.I)


class DataDirError(Exception):
    """The data folder cannot be used; the message says why and what to do."""


class DataDir:
    """The folder that holds the state; `lock()` makes it this process's alone."""

    def __init__(self, path: Path) -> None:
        self.path = path.expanduser().absolute()
        self._lock_fd = -1

    @property
    def snapshot(self) -> Path:
        return self.path / "snapshot"

    @property
    def journal(self) -> Path:
        return self.path / "journal"

    @property
    def admin(self) -> Path:
        return self.path / "local-admin.json"

    def lock(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path / "lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise DataDirError(
                f"another local stack (pid {holder}) is using {self.path}; stop it first, "
                "or give this one its own folder with --data-dir PATH"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd  # the kernel lets go of it if this process dies

    def unlock(self) -> None:
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    def holds_state(self) -> bool:
        return any(p.exists() for p in (self.snapshot, self.journal, self.admin))

    def reset(self) -> None:
        """Empties the folder (the caller holds the lock, so no stack is using it)."""
        for path in (self.snapshot, self.journal, self.admin):
            path.unlink(missing_ok=True)
        for leftover in self.path.glob(".*.tmp"):
            leftover.unlink(missing_ok=True)


# -- which requests are journaled ------------------------------------------------------


def _service_of(environ: dict[str, Any]) -> str | None:
    found = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
    if found is None:
        found = _QUERY_CREDENTIAL.search(environ.get("QUERY_STRING", ""))
    return found.group(1) if found else None


def _json_action(environ: dict[str, Any]) -> str:
    return str(environ.get("HTTP_X_AMZ_TARGET", "")).rpartition(".")[2]


def written_service(environ: dict[str, Any]) -> str | None:
    """The persisted service whose data the request changes; None for anything else."""
    service = _service_of(environ)
    if service not in PERSISTED_SERVICES:
        return None
    if service == "s3":
        writes = environ.get("REQUEST_METHOD") in ("PUT", "POST", "DELETE")
    else:
        action = _json_action(environ)
        writes = bool(action) and not action.startswith(_READ_PREFIXES)
    return service if writes else None


def _read_body(environ: dict[str, Any]) -> bytes:
    stream = environ["wsgi.input"]
    length = environ.get("CONTENT_LENGTH")
    body = stream.read(int(length)) if length else stream.read()
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    return bytes(body)


def _request_record(environ: dict[str, Any], body: bytes, service: str, seq: int) -> dict[str, Any]:
    headers = {
        key[5:].replace("_", "-").title(): value
        for key, value in environ.items()
        if key.startswith("HTTP_") and key != "HTTP_CONTENT_LENGTH"
    }
    if environ.get("CONTENT_TYPE"):
        headers["Content-Type"] = environ["CONTENT_TYPE"]
    record: dict[str, Any] = {
        "seq": seq,
        "service": service,
        "action": _json_action(environ),
        "method": environ["REQUEST_METHOD"],
        "path": environ.get("PATH_INFO", "/"),
        "query": environ.get("QUERY_STRING", ""),
        "headers": headers,
    }
    try:
        record["text"] = body.decode("utf-8")
    except UnicodeDecodeError:
        record["base64"] = base64.b64encode(body).decode()
    return record


def _record_body(record: dict[str, Any]) -> bytes:
    if "base64" in record:
        return base64.b64decode(record["base64"])
    return str(record.get("text", "")).encode("utf-8")


def is_item_write(record: dict[str, Any]) -> bool:
    return record.get("service") == "dynamodb" and record.get("action") in ITEM_WRITES


# -- restore ---------------------------------------------------------------------------


@dataclass
class RestoreReport:
    items: int = 0  # DynamoDB items loaded from the snapshot
    carried: int = 0  # table, bucket, object and secret requests replayed from the snapshot
    replayed: int = 0  # journal records replayed
    torn_bytes: int = 0  # a final record a crash cut off (never acknowledged)
    seconds: float = 0.0

    @property
    def empty(self) -> bool:
        return not (self.items or self.carried or self.replayed)

    def describe(self) -> str:
        if self.empty:
            return "no saved state: starting empty"
        parts = [
            f"restored {self.items:,} items and {self.carried:,} table, file and secret "
            f"writes from the snapshot and {self.replayed:,} writes from the journal "
            f"in {self.seconds:.1f} s"
        ]
        if self.torn_bytes:
            parts.append(
                f"dropped a final write of {self.torn_bytes} bytes that a crash cut off "
                "before it was answered (nothing acknowledged is lost)"
            )
        return "; ".join(parts)


def replay(app: Callable[..., Iterable[bytes]], record: dict[str, Any]) -> None:
    """Applies one journaled request to the moto app, as it was first applied."""
    from agentworks_local.in_process import call_app, wsgi_environ

    headers = record["headers"]
    environ = wsgi_environ(
        record["method"], record["path"], record["query"], headers, _record_body(record),
        headers.get("Host", "localhost"),
    )  # fmt: skip
    code, _, body = call_app(app, environ)
    if not 200 <= code < 300:
        raise DataDirError(
            f"journaled write {record['seq']} ({record['service']} "
            f"{record['action'] or record['method']}) does not apply again: "
            f"{code} {body[:300]!r}"
        )


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# A write reaches the journal file before it is answered (a killed process loses nothing)
# and the disk within a second (a power cut loses at most that second): `--fsync-every 0`
# waits for the disk on every write (~8% of the rate on a quiet disk, ~half on a busy one).
DEFAULT_SYNC_EVERY_SECONDS = 1.0


class DurableState:
    """Restores the state into moto's app at start and journals its writes afterwards."""

    def __init__(
        self,
        data_dir: DataDir,
        compact_after: int = COMPACT_AFTER_RECORDS,
        sync_every: float = DEFAULT_SYNC_EVERY_SECONDS,
    ) -> None:
        self.data_dir = data_dir
        self.compact_after = compact_after
        self.sync_every = sync_every  # the journal's fsync policy (journal.Journal)
        self.write_lock = threading.Lock()  # writes are applied and journaled in one order
        self._journal: Journal | None = None
        self._carried: list[bytes] = []
        self._seq = 0
        self.compactions = 0

    def restore(self, app: Callable[..., Iterable[bytes]]) -> RestoreReport:
        """Loads the snapshot and replays the journal; DataDirError when either is damaged
        (nothing is changed then)."""
        started = time.monotonic()
        # A restore makes millions of objects that all live on: the cyclic GC would walk the
        # growing heap again and again while they are made (a third of the time), for nothing.
        with _collector_paused():
            report = self._restore(app, started)
            # What was restored lives as long as the process: out of the collector's sight
            # (deleted items are still freed, by reference counting).
            gc.freeze()
            return report

    def _restore(self, app: Callable[..., Iterable[bytes]], started: float) -> RestoreReport:
        report = RestoreReport()
        try:
            saved = snapshots.read_snapshot(self.data_dir.snapshot)
            journal = read_records(self.data_dir.journal)
        except (snapshots.SnapshotDamaged, JournalDamaged) as damage:
            raise DataDirError(
                f"the saved state in {self.data_dir.path} is damaged ({damage}); nothing was "
                "changed. Move the folder aside to keep it, or start afresh with "
                "`agentworks dev --reset`"
            ) from None
        last_seq = 0
        if saved is not None:
            last_seq = saved.last_seq
            for payload in saved.carried:
                replay(app, json.loads(payload))
            self._carried = list(saved.carried)
            snapshots.load_items(saved)
            snapshots.index_tables(saved)
            report.items, report.carried = saved.item_count, len(saved.carried)
        for payload in journal.records:
            record = json.loads(payload)
            if record["seq"] <= last_seq:
                continue  # already in the snapshot (a stop between its rename and truncate)
            replay(app, record)
            last_seq = record["seq"]
            if not is_item_write(record):
                self._carried.append(payload)
            report.replayed += 1
        self._seq = last_seq
        report.torn_bytes = journal.torn_bytes
        self._journal = Journal(
            self.data_dir.journal, good_bytes=journal.good_bytes, sync_every=self.sync_every
        )
        # The records kept count towards the next fold, which is not done here: the stack
        # should serve as soon as it can, and a fold of a large state takes seconds.
        self._journal.appended = len(journal.records)
        report.seconds = time.monotonic() - started
        return report

    def record(self, environ: dict[str, Any], body: bytes, service: str) -> None:
        """Journals one applied write (the caller holds `write_lock`)."""
        assert self._journal is not None, "restore() first"
        self._seq += 1
        record = _request_record(environ, body, service, self._seq)
        payload = json.dumps(record, separators=(",", ":")).encode()
        self._journal.append(payload)
        if not is_item_write(record):
            self._carried.append(payload)
        if self._journal.appended >= self.compact_after:
            self._compact_locked()

    def compact(self) -> None:
        with self.write_lock:
            self._compact_locked()

    def _compact_locked(self) -> None:
        if self._journal is None:
            return
        snapshots.write_snapshot(self.data_dir.snapshot, self._carried, self._seq)
        self._journal.truncate()
        self.compactions += 1

    def close(self, fold: bool = True) -> None:
        """Folds the journal in (a clean stop) and lets go of the files; `fold=False` leaves
        them as a crash would (the tests' and the benchmark's crash)."""
        if self._journal is None:
            return
        if fold:
            with contextlib.suppress(OSError):  # the journal still holds every write
                self.compact()
        self._journal.close()
        self._journal = None
        gc.unfreeze()  # the state goes with the stop (a test process restores again)


class JournalingApp:
    """WSGI middleware in front of moto: persisted writes are applied, journaled and fsynced
    before their answer leaves."""

    def __init__(self, app: Callable[..., Iterable[bytes]], state: DurableState) -> None:
        self.app = app
        self.state = state

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        service = written_service(environ)
        if service is None:
            return self.app(environ, start_response)
        body = _read_body(environ)
        answer: dict[str, Any] = {}

        def capture(status: str, headers: Any, exc_info: Any = None) -> None:
            answer.update(status=status, headers=headers, exc_info=exc_info)

        with self.state.write_lock:
            content = b"".join(self.app(environ, capture))
            if str(answer.get("status", "")).startswith("2"):
                self.state.record(environ, body, service)
        start_response(answer["status"], answer["headers"], answer.get("exc_info"))
        return [content]
