"""The relay run store's step rules, on the store itself: a checkpoint reads back as it was
written, a step is finished or forgotten only by the attempt that started it (a write by any
other is refused and changes nothing), forgetting gives the step's place in the count back,
and the reconcile tick's page of open runs holds at most what it asked for. Written to kill
the mutants `make mutate` found alive in relays/run_store.py (docs/benchmarks.md)."""

from __future__ import annotations

import pytest

from agentworks import limits
from agentworks.relays.records import Checkpoint, RelayRun
from agentworks.relays.run_store import RelayRunStore, StepLimitReached


@pytest.fixture
def store(stack) -> RelayRunStore:
    return RelayRunStore(stack.client, stack.settings.work_table)


def _run(run_id: str) -> RelayRun:
    return RelayRun(
        run_id=run_id,
        account_id="acct_rules",
        relay="tools",
        function="main",
        version=1,
        input_json="{}",
        idempotency_key=f"key-{run_id}",
        fingerprint="f",
        caller="conn_1",
        caller_connection_id="conn_1",
        created_at=1_000,
    )


def _started(name: str, attempt: int = 1, safe: bool = False) -> Checkpoint:
    return Checkpoint(name=name, status="started", attempt=attempt, safe=safe, started_at=5_000)


def test_a_checkpoint_reads_back_as_written_and_finishes_by_its_attempt(store):
    assert store.start_step("run_a", _started("fetch", attempt=2, safe=True)) is None
    assert store.step("run_a", "fetch") == _started("fetch", attempt=2, safe=True)
    assert not store.finish_step("run_a", "fetch", 1, 6_000, '{"n": 1}')  # not its attempt
    assert store.step("run_a", "fetch") == _started("fetch", attempt=2, safe=True)
    assert store.finish_step("run_a", "fetch", 2, 6_000, '{"n": 1}')
    done = Checkpoint("fetch", "completed", 2, True, 5_000, 6_000, '{"n": 1}')
    assert store.step("run_a", "fetch") == done
    assert store.steps("run_a") == [done]
    # Starting it again answers with the one it has.
    assert store.start_step("run_a", _started("fetch", attempt=3)) == done


def test_an_unsafe_step_reads_back_unsafe(store):
    store.start_step("run_b", _started("charge"))
    found = store.step("run_b", "charge")
    assert found is not None and found.safe is False and found.completed_at is None


def test_a_restart_needs_the_attempt_that_saw_the_step(store):
    store.start_step("run_c", _started("send", attempt=1, safe=True))
    assert not store.restart_step("run_c", _started("send", attempt=3, safe=True), 2)
    assert store.step("run_c", "send") == _started("send", attempt=1, safe=True)
    assert store.restart_step("run_c", _started("send", attempt=3, safe=True), 1)
    assert store.step("run_c", "send") == _started("send", attempt=3, safe=True)


def test_only_the_starting_attempt_abandons_a_step_and_its_place_comes_back(store, monkeypatch):
    monkeypatch.setattr(limits, "RELAY_STEPS_MAX", 2)
    store.start_step("run_d", _started("one"))
    store.start_step("run_d", _started("two"))
    with pytest.raises(StepLimitReached):
        store.start_step("run_d", _started("three"))
    store.abandon_step("run_d", "two", attempt=9)  # not its attempt: nothing happens
    assert [c.name for c in store.steps("run_d")] == ["one", "two"]
    with pytest.raises(StepLimitReached):
        store.start_step("run_d", _started("three"))
    store.abandon_step("run_d", "two", attempt=1)
    assert [c.name for c in store.steps("run_d")] == ["one"]
    assert store.start_step("run_d", _started("three")) is None  # its place came back
    store.drop_step("run_d", "missing")  # dropping nothing changes nothing
    with pytest.raises(StepLimitReached):
        store.start_step("run_d", _started("four"))


def test_the_open_runs_page_holds_at_most_the_limit_longest_unchecked_first(store):
    for n in range(3):
        assert store.create(_run(f"run_open_{n}"))
    store.recheck("run_open_0", 9_000_000)
    everything = store.open_runs(None, 10)
    assert sorted(everything) == ["run_open_0", "run_open_1", "run_open_2"]
    assert everything[-1] == "run_open_0"  # rechecked last, asked last
    assert len(store.open_runs(None, 2)) == 2
    assert sorted(store.open_runs(8_999_999, 10)) == ["run_open_1", "run_open_2"]
    assert sorted(store.open_runs(9_000_000, 10)) == ["run_open_0", "run_open_1", "run_open_2"]
    store.recheck("run_never_open", 1)  # a run outside the index stays out of it
    assert "run_never_open" not in store.open_runs(None, 10)


def test_a_recheck_moves_the_runs_index_entry_and_writes_nothing_else(stack, store):
    """The entry is `<ms:013d>#<run_id>` (ties between runs asked at one instant are
    broken by id); a run that is not in the index, or not at all, is left as it is."""
    from agentworks.dynamo import from_item

    def item(run_id: str) -> dict | None:
        key = {"pk": {"S": f"RRUN#{run_id}"}, "sk": {"S": "RUN"}}
        found = stack.client.get_item(TableName=stack.settings.work_table, Key=key)
        return from_item(found.get("Item"))

    assert store.create(_run("run_b"))
    assert store.create(_run("run_a"))
    store.recheck("run_b", 7_000)
    store.recheck("run_a", 7_000)
    assert item("run_a")["open_check"] == "0000000007000#run_a"  # type: ignore[index]
    assert store.open_runs(None, 10) == ["run_a", "run_b"]
    store.recheck("run_unknown", 7_000)
    assert item("run_unknown") is None


def test_a_runs_state_is_read_strongly(stack, store):
    """The cancel watch asks often whether the run still runs: a replica that has not
    seen the run must not answer that it is gone."""
    from tests.support import stale_reads

    assert store.create(_run("run_watched"))
    replica = stale_reads.install(stack.client, reads=("Query", "GetItem"))
    replica.missing()
    assert store.state("run_watched") == (_run("run_watched").status, 0)
    assert replica.stale_answers == 0


def test_a_run_an_earlier_release_wrote_without_attempts_reads_as_attempt_zero(stack, store):
    import json

    record = {"status": "running", "run_id": "run_old"}  # no "attempt" yet
    stack.client.put_item(
        TableName=stack.settings.work_table,
        Item={"pk": {"S": "RRUN#run_old"}, "sk": {"S": "RUN"}, "record": {"S": json.dumps(record)}},
    )
    assert store.state("run_old") == ("running", 0)
