"""W6/W7: where a step's replay comes from — the original run's step (a retry keeps the
original's stages and steps, so its step is at the same place) or the resume cache — when
its resolved inputs hash the same as a journaled success."""

from __future__ import annotations

from agentworks.workflows.definition import Step, WorkflowStart
from agentworks.workflows.records import RunRecord, StepRecord
from agentworks.workflows.run_store import CachedStep, RunStore


def journaled(
    runs: RunStore,
    run: RunRecord,
    start: WorkflowStart,
    step: Step,
    record: StepRecord,
    now_s: int,
) -> CachedStep | None:
    """The journaled success `record` replays, or None (it runs)."""
    if run.retry_of:
        found = runs.get_step(run.retry_of, record.position)
        earlier = found[0] if found else None
        if (
            earlier is not None
            and earlier.label == step.label
            and earlier.status == "succeeded"
            and earlier.input_hash == record.input_hash
        ):
            if earlier.runner is None:
                return CachedStep(earlier.output, earlier.turns)
            return CachedStep(
                earlier.output,
                earlier.turns,
                earlier.session_id,
                earlier.runner,
                earlier.runner_name,
            )
    if step.cacheable and start.cache_key:
        return runs.cached(
            run.account_id, start.cache_key, step.label, record.input_hash or "", now_s
        )
    return None
