"""The journal's framing: a crash can only cut off the last record, and anything else that
damages the file is refused, never repaired."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentworks_local.journal import (
    Journal,
    JournalDamaged,
    encode,
    read_records,
    write_atomically,
)

PAYLOADS = [b'{"seq":1}', b"", b"x" * 1000, '{"text":"héllo"}'.encode()]


def _write(path: Path, payloads: list[bytes]) -> None:
    journal = Journal(path)
    for payload in payloads:
        journal.append(payload)
    journal.close()


def test_records_read_back_in_order(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    _write(path, PAYLOADS)
    found = read_records(path)
    assert found.records == PAYLOADS
    assert found.torn_bytes == 0
    assert found.good_bytes == path.stat().st_size


def test_a_missing_file_is_an_empty_journal(tmp_path: Path) -> None:
    found = read_records(tmp_path / "none")
    assert (found.records, found.good_bytes, found.torn_bytes) == ([], 0, 0)


@settings(max_examples=60, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=64), min_size=1, max_size=6),
    cut=st.integers(min_value=1),
)
def test_a_write_cut_off_anywhere_loses_only_the_last_record(
    tmp_path_factory: pytest.TempPathFactory, payloads: list[bytes], cut: int
) -> None:
    path = tmp_path_factory.mktemp("torn") / "journal"
    _write(path, payloads)
    data = path.read_bytes()
    last = len(encode(payloads[-1]))
    cut_at = len(data) - 1 - (cut % last)  # somewhere inside the last frame
    path.write_bytes(data[:cut_at])
    found = read_records(path)
    assert found.records == payloads[:-1]
    assert found.good_bytes == len(data) - last
    assert found.torn_bytes == cut_at - found.good_bytes


def test_a_garbled_last_record_is_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    _write(path, PAYLOADS)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # the crash left garbage in the last write's final block
    path.write_bytes(bytes(data))
    found = read_records(path)
    assert found.records == PAYLOADS[:-1]
    assert found.torn_bytes == len(encode(PAYLOADS[-1]))


def test_damage_before_the_last_record_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    _write(path, PAYLOADS)
    data = bytearray(path.read_bytes())
    data[len(encode(PAYLOADS[0])) - 1] ^= 0xFF  # inside the first record
    path.write_bytes(bytes(data))
    with pytest.raises(JournalDamaged, match=r"record 1 .*fails its checksum"):
        read_records(path)


def test_an_impossible_length_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    path.write_bytes(b"\xff\xff\xff\xff\x00\x00\x00\x00" + b"x" * 100)
    with pytest.raises(JournalDamaged, match="impossible record length"):
        read_records(path)


def test_reopening_drops_a_torn_tail_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    _write(path, PAYLOADS)
    path.write_bytes(path.read_bytes()[:-3])
    found = read_records(path)
    journal = Journal(path, good_bytes=found.good_bytes)
    journal.append(b"after the crash")
    journal.close()
    assert read_records(path).records == [*PAYLOADS[:-1], b"after the crash"]


def test_truncate_empties_the_journal(tmp_path: Path) -> None:
    path = tmp_path / "journal"
    journal = Journal(path)
    journal.append(b"one")
    journal.truncate()
    journal.append(b"two")
    journal.close()
    assert read_records(path).records == [b"two"]


def test_an_atomic_write_replaces_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "snapshot"
    write_atomically(path, b"old")
    write_atomically(path, b"new")
    assert path.read_bytes() == b"new"
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind
    assert path.stat().st_mode & 0o777 == 0o600


def test_every_record_is_fsynced_before_append_returns_with_sync_every_0(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j", sync_every=0)
    for payload in PAYLOADS:
        journal.append(payload)
    assert journal.syncs == len(PAYLOADS)
    journal.close()


def test_with_sync_every_records_are_written_at_once_and_fsynced_in_the_background(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j"
    journal = Journal(path, sync_every=0.05)
    for payload in PAYLOADS:
        journal.append(payload)
    assert journal.syncs == 0  # no append waited for the disk
    # Written before append returned: another process (a restart after kill -9) reads them.
    assert read_records(path).records == PAYLOADS
    deadline = time.monotonic() + 5
    while journal.syncs == 0:  # one fsync covers what the interval gathered
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert journal.syncs == 1
    looked = journal.intervals
    while journal.intervals < looked + 2:  # two more intervals ended with nothing to sync
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert journal.syncs == 1  # nothing new: no fsync for nothing
    journal.append(b"later")
    journal.close()  # a clean stop syncs what is pending
    assert journal.syncs == 2 and read_records(path).records == [*PAYLOADS, b"later"]
