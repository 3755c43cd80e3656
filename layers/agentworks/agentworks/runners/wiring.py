"""Wiring of local runners' jobs (issue 10 item 6): the runner-facing rules and waking
steps. What the workflow runner's tasks do with a cli step's turns (workflows.runner_steps)
is built with the workflows, on the same job store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from agentworks.runners.delivery import JobDelivery
    from agentworks.runners.jobs import RunnerJobs


@dataclass(frozen=True)
class Runners:
    jobs: RunnerJobs  # claim, renew, finish (the API)
    delivery: JobDelivery  # the tick's round over expired and undelivered jobs


def build_runners(
    settings: Settings,
    client: DynamoDBClient,
    clock: Clock = SYSTEM_CLOCK,
    stepfunctions: Any = None,
) -> Runners:
    from agentworks.crews.execution import Executions
    from agentworks.runners.delivery import JobDelivery
    from agentworks.runners.job_store import RunnerJobStore
    from agentworks.runners.jobs import RunnerJobs

    store = RunnerJobStore(client, settings.work_table)
    # Waking a step needs only its task token: no state machine of its own.
    delivery = JobDelivery(store, Executions("", stepfunctions), clock)
    return Runners(RunnerJobs(store, delivery, clock), delivery)
