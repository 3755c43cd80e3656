"""A2A push notification configs of a call task (issue 30 §1): checked, stored next to the
call (push.a2a_config_store) and shown back without their secret.

The handler authorizes first, exactly as GetTask does; what is here only reads and writes
the configs of a task the caller may see. As the SDK's stores do, a config without an id
takes the task's id and one with an existing id replaces it. Unlike the SDK's in-memory
store, `authentication.credentials` is never shown again (the scheme is): it is a secret
the notifier sends, and whoever may read the task need not read the receiver's password.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from a2a.types.a2a_pb2 import AuthenticationInfo, TaskPushNotificationConfig
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError

from agentworks import limits
from agentworks.outbound.urls import RefusedUrl, check_on_save
from agentworks.push.a2a_config_store import A2aPushConfigStore, PushConfig

_CONFIG_ID = re.compile(r"^[A-Za-z0-9._:-]+$")
# What an HTTP header value may not carry (the token and credentials are sent in one).
_UNSENDABLE = re.compile(r"[\x00-\x1f\x7f]")


class TaskPushConfigs:
    def __init__(self, store: A2aPushConfigStore, now_ms: Callable[[], int]) -> None:
        self._store = store
        self._now_ms = now_ms

    def create(
        self, account_id: str, task_id: str, asked: TaskPushNotificationConfig
    ) -> TaskPushNotificationConfig:
        config = _checked(account_id, task_id, asked, self._now_ms())
        stored = self._store.of_call(task_id)
        replaces = any(c.config_id == config.config_id for c in stored)
        if not replaces and len(stored) >= limits.A2A_PUSH_CONFIGS_PER_TASK:
            raise InvalidParamsError(
                f"A task has at most {limits.A2A_PUSH_CONFIGS_PER_TASK} push notification "
                "configs: delete one first."
            )
        self._store.put(config)
        return shown(config)

    def get(self, task_id: str, config_id: str) -> TaskPushNotificationConfig:
        wanted = config_id or task_id  # the SDK's default id
        for config in self._store.of_call(task_id):
            if config.config_id == wanted:
                return shown(config)
        raise TaskNotFoundError()  # what the SDK's handler answers for an unknown config

    def list(self, task_id: str) -> list[TaskPushNotificationConfig]:
        return [shown(c) for c in self._store.of_call(task_id)]

    def delete(self, task_id: str, config_id: str) -> None:
        """Deleting a config that is not there succeeds, as in the SDK's stores."""
        self._store.delete(task_id, config_id or task_id)


def shown(config: PushConfig) -> TaskPushNotificationConfig:
    """The config as A2A shows it: everything but the credentials."""
    found = TaskPushNotificationConfig(
        id=config.config_id, task_id=config.call_id, url=config.url, token=config.token
    )
    if config.auth_scheme:
        found.authentication.CopyFrom(AuthenticationInfo(scheme=config.auth_scheme))
    return found


def check(asked: TaskPushNotificationConfig) -> None:
    """Refuses what could never be stored (InvalidParams), before a task exists to store it
    on (SendMessage's configuration): a task's own id is always a valid config id."""
    if asked.id:
        _check_id(asked.id)
    _check_fields(asked)


def _check_id(config_id: str) -> None:
    if len(config_id) > limits.A2A_PUSH_CONFIG_ID_MAX_CHARS or not _CONFIG_ID.match(config_id):
        raise InvalidParamsError(
            f"id: at most {limits.A2A_PUSH_CONFIG_ID_MAX_CHARS} letters, digits and . _ : -"
        )


def _checked(
    account_id: str, task_id: str, asked: TaskPushNotificationConfig, now_ms: int
) -> PushConfig:
    config_id = asked.id or task_id
    _check_id(config_id)
    _check_fields(asked)
    auth = asked.authentication
    return PushConfig(
        call_id=task_id,
        config_id=config_id,
        account_id=account_id,
        url=asked.url,
        token=asked.token,
        auth_scheme=auth.scheme,
        auth_credentials=auth.credentials,
        created_at=now_ms,
    )


def _check_fields(asked: TaskPushNotificationConfig) -> None:
    if len(asked.url) > limits.A2A_PUSH_URL_MAX_CHARS:
        raise InvalidParamsError(f"url: at most {limits.A2A_PUSH_URL_MAX_CHARS} characters.")
    try:
        # The outbound rules (docs/outbound.md); checked again at every send.
        check_on_save(asked.url)
    except RefusedUrl as refused:
        raise InvalidParamsError(f"url: {refused}") from None
    auth = asked.authentication
    for name, value in (
        ("token", asked.token),
        ("authentication.scheme", auth.scheme),
        ("authentication.credentials", auth.credentials),
    ):
        if len(value) > limits.A2A_PUSH_SECRET_MAX_CHARS or _UNSENDABLE.search(value):
            raise InvalidParamsError(
                f"{name}: at most {limits.A2A_PUSH_SECRET_MAX_CHARS} characters, no control "
                "characters (it is sent in a header)."
            )
    if bool(auth.scheme) != bool(auth.credentials):
        raise InvalidParamsError("authentication needs both a scheme and credentials.")
    if " " in auth.scheme:
        raise InvalidParamsError("authentication.scheme: one word (Bearer, Basic …).")
