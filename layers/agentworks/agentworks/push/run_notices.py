"""From the work table's stream to the web console's notices (C5): "these runs of your
account changed" (functions/notifier, its second event source).

A function call's record, a workflow run's record or one of its steps, a Relay run or one
of its durable steps: every write of one is a change a run page shows (state, a turn, a
cost, an answer). A notice names only the runs' ids; the page reads them through the API,
which authorizes the read, so a lost, late or repeated notice costs a read, never a state.
One notice per account and batch to each console listener of the account (`console=runs`),
whose connection is read again before it is posted, as for message notices.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.messaging.stream_usage import AccountCache
from agentworks.push.listener_store import ListenerStore
from agentworks.push.notifier import NoticeReport, Notifier
from agentworks.push.subjects import console

# The partitions of the runs a console page shows, each `<prefix><run id>`.
RUN_PARTITIONS = ("CALL#", "WFRUN#", "RRUN#")


@dataclass(frozen=True)
class ChangedRun:
    run_id: str
    account_id: str | None  # when the item names it (a step's does not)


def _text(image: Mapping[str, Any], name: str) -> str:
    return str((image.get(name) or {}).get("S", ""))


def _account_in(image: Mapping[str, Any]) -> str | None:
    """A call's and a workflow run's record carry `account_id`; a Relay run's is inside its
    record's JSON; a step's item names none."""
    if named := _text(image, "account_id"):
        return named
    try:
        record = json.loads(_text(image, "record") or "{}")
    except ValueError:
        return None
    inside = record.get("account_id") if isinstance(record, dict) else None
    return inside if isinstance(inside, str) and inside else None


def changed_runs(records: Iterable[Mapping[str, Any]]) -> list[ChangedRun]:
    """The runs a batch of the work table's stream records wrote (inserts and changes of
    their items; a removal — TTL — changes nothing a page shows), each once, oldest first."""
    found: dict[str, ChangedRun] = {}
    for record in records:
        if record.get("eventName") not in ("INSERT", "MODIFY"):
            continue
        image = (record.get("dynamodb") or {}).get("NewImage") or {}
        pk = _text(image, "pk")
        prefix = next((p for p in RUN_PARTITIONS if pk.startswith(p)), None)
        if prefix is None or len(pk) == len(prefix):
            continue
        run = ChangedRun(pk.removeprefix(prefix), _account_in(image))
        known = found.get(run.run_id)
        if known is None or (known.account_id is None and run.account_id is not None):
            found[run.run_id] = run
    return list(found.values())


def run_notice(run_ids: list[str]) -> bytes:
    """`{"type": "runs", "run_ids": [...], "more": false}`: at most RUN_NOTICE_IDS_MAX ids;
    `more` says others changed too (a page then re-reads whatever it shows)."""
    shown = run_ids[: limits.RUN_NOTICE_IDS_MAX]
    return json.dumps(
        {"type": "runs", "run_ids": shown, "more": len(run_ids) > len(shown)},
        separators=(",", ":"),
    ).encode()


class RunNotices:
    def __init__(
        self,
        listeners: ListenerStore,
        notifier: Notifier,
        account_of_run: Callable[[str], str | None],
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._listeners = listeners
        self._notifier = notifier
        # A run's account never changes: remembered, so a run costs one read a process.
        self._account_of = AccountCache(account_of_run, limits.RUN_ACCOUNTS_REMEMBERED)
        self._clock = clock

    def notify(self, changed: Iterable[ChangedRun], report: NoticeReport) -> None:
        """One notice per account with the runs of it that changed, to its console."""
        by_account: dict[str, list[str]] = {}
        for run in changed:
            account = run.account_id or self._account_of(run.run_id)
            if account is not None:  # a run no longer stored: nobody to tell
                by_account.setdefault(account, []).append(run.run_id)
        for account, run_ids in by_account.items():
            partition = console(account).partition
            found = self._listeners.of_partition(
                partition, self._clock.now(), limits.PUSH_LISTENERS_PER_SUBJECT
            )
            self._notifier.post(found, run_notice(run_ids), report)
