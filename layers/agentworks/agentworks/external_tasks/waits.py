"""A call's or step's wait on an external agent's task begins (the AwaitTask state): the wait
is stored for the tick, and — when the agent's card offers push notifications — a push
notification config is registered with the agent, so its next change of the task calls the
platform back (`POST /a2a-callbacks/<account>/<owner>` with the wait's token) and the task
is read at once instead of at the tick's next round."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from agentworks import limits
from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.external_tasks.following import TaskReader
from agentworks.external_tasks.wait_store import ExternalWait, ExternalWaitStore

logger = logging.getLogger(__name__)
CALLBACK_PATH = "/a2a-callbacks"


class ExternalWaits:
    def __init__(
        self,
        store: ExternalWaitStore,
        readers: Callable[[dict[str, Any]], TaskReader],
        base_url: Callable[[], str],
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._store = store
        self._readers = readers  # the adapter of the wait's settings
        self._base_url = base_url  # the HTTP API's URL ("" where none is known)
        self._clock = clock

    def begin(
        self,
        account_id: str,
        owner: str,
        settings: dict[str, Any],
        task_id: str,
        deadline_ms: int,
        task_token: str,
    ) -> ExternalWait:
        """Stores the wait (its task first read A2A_WAIT_POLL_FIRST_SECONDS from now) and
        asks the agent to call back; an agent that cannot is read by the tick alone."""
        now = int(self._clock.now() * 1000)
        pause = limits.A2A_WAIT_POLL_FIRST_SECONDS
        wait = ExternalWait(
            account_id,
            owner,
            settings,
            task_id,
            deadline_ms,
            task_token,
            due_ms=min(now + pause * 1000, deadline_ms),
            pause_s=pause,
            watch_token=secrets.token_urlsafe(24),
        )
        self._store.put(wait)
        try:
            base = self._base_url()  # the parameter's read may fail too: the tick reads it
            if base:
                url = f"{base}{CALLBACK_PATH}/{quote(account_id)}/{quote(owner)}"  # ':' → %3A
                self._readers(settings).watch_task(account_id, task_id, url, wait.watch_token)
        except Exception as error:  # the tick reads the task regardless
            logger.warning("push notifications not registered", extra={"error": str(error)})
        return wait
