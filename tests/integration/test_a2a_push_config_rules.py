"""A task's push notification configs against the real table (issue 30 §1): the SDK's
rules for ids (none → the task's own; the same id replaces), the bound of configs per task
(a replacement at the bound is no new config), what Get, List and Delete answer, and that
each is read from its own task only. The handler's authorization is driven end to end in
tests/e2e/test_a2a_push.py; these are the rules beneath it."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.types.a2a_pb2 import AuthenticationInfo, TaskPushNotificationConfig
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError

from agentworks import limits
from agentworks.a2a_server.push_configs import TaskPushConfigs
from agentworks.push.a2a_config_store import A2aPushConfigStore, PushConfig

TASK = "call_01PUSHCONFIGRULES000000000"
OTHER_TASK = "call_01PUSHCONFIGRULESOTHER000"
HOOK = "https://hooks.example.com/a2a"
NOW_MS = 1_700_000_000_123


def _configs(stack: Any) -> tuple[TaskPushConfigs, A2aPushConfigStore]:
    store = A2aPushConfigStore(stack.client, stack.settings.work_table)
    return TaskPushConfigs(store, lambda: NOW_MS), store


def _asked(**fields: Any) -> TaskPushNotificationConfig:
    return TaskPushNotificationConfig(**{"url": HOOK, **fields})


def test_a_config_is_stored_whole_and_shown_without_its_credentials(stack: Any) -> None:
    configs, store = _configs(stack)
    shown = configs.create(
        "acct_a",
        TASK,
        _asked(
            id="ops",
            token="tok-1",
            authentication=AuthenticationInfo(scheme="Bearer", credentials="s3cret"),
        ),
    )
    assert store.of_call(TASK) == [
        PushConfig(
            call_id=TASK,
            config_id="ops",
            account_id="acct_a",
            url=HOOK,
            token="tok-1",
            auth_scheme="Bearer",
            auth_credentials="s3cret",
            created_at=NOW_MS,
        )
    ]
    expected = TaskPushNotificationConfig(
        id="ops",
        task_id=TASK,
        url=HOOK,
        token="tok-1",
        authentication=AuthenticationInfo(scheme="Bearer"),
    )
    assert shown == expected
    assert configs.get(TASK, "ops") == expected
    assert configs.list(TASK) == [expected]


def test_a_config_without_an_id_takes_the_tasks_and_get_and_delete_default_to_it(
    stack: Any,
) -> None:
    configs, store = _configs(stack)
    assert configs.create("acct_a", TASK, _asked()).id == TASK
    assert configs.get(TASK, "").id == TASK
    configs.delete(TASK, "")
    assert store.of_call(TASK) == []


def test_the_same_id_replaces_and_other_ids_add(stack: Any) -> None:
    configs, store = _configs(stack)
    configs.create("acct_a", TASK, _asked(id="a", token="first"))
    configs.create("acct_a", TASK, _asked(id="b"))
    configs.create("acct_a", TASK, _asked(id="a", token="second"))
    assert [(c.config_id, c.token) for c in store.of_call(TASK)] == [("a", "second"), ("b", "")]


def test_a_task_holds_its_bound_of_configs_and_a_replacement_at_the_bound(stack: Any) -> None:
    configs, store = _configs(stack)
    for n in range(limits.A2A_PUSH_CONFIGS_PER_TASK):
        configs.create("acct_a", TASK, _asked(id=f"c{n}"))
    configs.create("acct_a", TASK, _asked(id="c0", token="again"))  # replaces: no new one
    with pytest.raises(InvalidParamsError) as refused:
        configs.create("acct_a", TASK, _asked(id="one-more"))
    assert refused.value.message == (
        f"A task has at most {limits.A2A_PUSH_CONFIGS_PER_TASK} push notification "
        "configs: delete one first."
    )
    held = store.of_call(TASK)
    assert len(held) == limits.A2A_PUSH_CONFIGS_PER_TASK
    assert "one-more" not in {c.config_id for c in held}
    assert next(c.token for c in held if c.config_id == "c0") == "again"


def test_configs_are_read_and_deleted_on_their_own_task_only(stack: Any) -> None:
    configs, store = _configs(stack)
    configs.create("acct_a", TASK, _asked(id="mine"))
    configs.create("acct_a", OTHER_TASK, _asked(id="theirs"))
    assert [c.id for c in configs.list(TASK)] == ["mine"]
    with pytest.raises(TaskNotFoundError):
        configs.get(TASK, "theirs")
    with pytest.raises(TaskNotFoundError):
        configs.get(TASK, "nobody")
    configs.delete(TASK, "theirs")  # not this task's: nothing happens, as for an unknown id
    configs.delete(TASK, "nobody")
    assert [c.config_id for c in store.of_call(OTHER_TASK)] == ["theirs"]
    configs.delete(TASK, "mine")
    assert configs.list(TASK) == []
    assert [c.config_id for c in store.of_call(OTHER_TASK)] == ["theirs"]


def test_a_refused_config_stores_nothing(stack: Any) -> None:
    configs, store = _configs(stack)
    with pytest.raises(InvalidParamsError):
        configs.create("acct_a", TASK, _asked(id="bad/id"))
    with pytest.raises(InvalidParamsError):
        configs.create("acct_a", TASK, _asked(url="https://10.0.0.1/hook"))
    assert store.of_call(TASK) == []
