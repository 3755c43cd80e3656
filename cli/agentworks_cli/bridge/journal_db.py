"""The bridge's SQLite file: private (a 0700 folder, a 0600 file), WAL, every write synced
before it returns, and one connection serving the socket's and the listeners' threads one
call at a time. The journal's parts (journal.py, chats_seen.py, outbox.py) share it.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

_T = TypeVar("_T", bound=Callable[..., Any])


def locked(method: _T) -> _T:
    """One connection serves every thread: one call at a time."""

    @functools.wraps(method)
    def call(self: Database, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return call  # type: ignore[return-value]


class Database:
    def __init__(self, path: Path, schema: str, clock: Any = time.time) -> None:
        self.path = path
        self._clock = clock
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        if not path.exists():
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
        os.chmod(path, 0o600)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")  # an offer is on disk before it is emitted
        self._db.executescript(schema)

    def now(self) -> float:
        return float(self._clock())

    @locked
    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")
