"""Scheduler tick (EventBridge rate(1 minute)): retention sweeps, due wakeups, due workflow
schedules, and calls and relay runs whose execution ended without recording an outcome
(M9, M11, W11, F5, R5); runner jobs of cli steps nobody claimed or renewed (issue 10);
external agents' tasks calls and steps wait for (issue 30)."""

from __future__ import annotations

from typing import Any

from agentworks.observability import count, logger, observed_handler
from agentworks.runtime import tick_services


@observed_handler()
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    tick = tick_services()
    if "trigger_id" in event:  # EventBridge Scheduler: one workflow schedule is due (W11)
        fired = tick.schedules.fire_one(str(event["trigger_id"]))
        count("SchedulesFired", fired["schedules_fired"])
        return fired
    report = tick.lifecycle.sweep()
    count("InboxesRetired", report.retired_idle)
    count("RetiredForgotten", report.forgotten)
    wakeups = tick.wakeups.fire_due()
    count("WakeupsFired", wakeups["wakeups_fired"])
    count("WakeupsInterrupted", wakeups["wakeups_interrupted"])
    calls = tick.reconciler.reconcile()
    count("CallsReconciled", calls["calls_reconciled"])
    schedules = tick.schedules.fire_due()
    count("SchedulesFired", schedules["schedules_fired"])
    relay_runs = tick.relay_runs.reconcile()
    conversations = {
        "requests_expired": tick.requests.expire_due(),  # counted by the service
        "asked_runs_started": tick.asked_starts.start_due(),
    }
    runner_jobs = tick.runner_jobs.settle_due()  # cli steps nobody claimed or renewed
    count("RunnerJobsExpired", runner_jobs["runner_jobs_expired"])
    # a2a agents' tasks calls and steps wait for: last, reading while the tick has time
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    external = tick.external_tasks.follow_due(
        None if remaining is None else lambda: remaining() / 1000
    )
    count("ExternalTasksRead", external["external_tasks_read"])
    done = {
        **report.as_dict(),
        **wakeups,
        **calls,
        **schedules,
        **relay_runs,
        **conversations,
        **runner_jobs,
        **external,
    }
    logger.info("tick", extra=done)
    return done
