"""Wiring of workflow runs (SPEC §6): what callers do with them, what their executions
run, registered workflows and their triggers. `runtime` builds it for each function."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from agentworks.clock import SYSTEM_CLOCK, Clock
from agentworks.runners.wiring import build_runners
from agentworks.settings import Settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

    from agentworks.crews.adapters.registry import AdapterClients
    from agentworks.crews.calls import FunctionCalls
    from agentworks.mcp_servers.service import McpServers
    from agentworks.mcp_servers.token_calls import TokenCalls
    from agentworks.runners.wiring import Runners
    from agentworks.signing import Signer
    from agentworks.workflows.call_waits import CallWaits
    from agentworks.workflows.engine import WorkflowEngine
    from agentworks.workflows.functions import WorkflowFunctions
    from agentworks.workflows.registry import WorkflowRegistry
    from agentworks.workflows.runs import WorkflowRuns


@dataclass(frozen=True)
class Workflows:
    """Workflow runs (SPEC §6): what callers do with them, and what their executions run."""

    runs: WorkflowRuns
    engine: WorkflowEngine
    registry: WorkflowRegistry  # registered workflows and their triggers (W11)
    functions: WorkflowFunctions  # their function triggers, on the functions surface (W10)
    calls: FunctionCalls  # the functions surface their steps call through
    runners: Runners  # cli steps' jobs, which local runners claim (issue 10 item 6)


def build_workflows(
    settings: Settings,
    client: DynamoDBClient,
    signer: Signer | None,
    clock: Clock = SYSTEM_CLOCK,
    s3: Any = None,
    stepfunctions: Any = None,
    adapter_clients: AdapterClients | None = None,
    scheduler: Any = None,
    mcp_servers: McpServers | None = None,
    mcp_token_calls: TokenCalls | None = None,
) -> Workflows:
    from agentworks.aws_clients import s3 as default_s3
    from agentworks.aws_clients import scheduler as default_scheduler
    from agentworks.crews.adapter_profile_store import AdapterProfileStore
    from agentworks.crews.adapters.registry import AdapterClients, build_adapter, task_reader
    from agentworks.crews.call_store import CallStore
    from agentworks.crews.calls import FunctionCalls
    from agentworks.crews.crew_store import CrewStore
    from agentworks.crews.execution import Executions
    from agentworks.crews.outputs import OutputStore
    from agentworks.external_tasks.wait_store import ExternalWaitStore
    from agentworks.external_tasks.waits import ExternalWaits
    from agentworks.identity.connection_store import ConnectionStore
    from agentworks.platform_url import PlatformUrl
    from agentworks.runners.job_store import RunnerJobStore
    from agentworks.usage.recorder import UsageRecorder
    from agentworks.usage.usage_store import UsageStore
    from agentworks.workflows.crew_steps import CrewSteps
    from agentworks.workflows.engine import WorkflowEngine
    from agentworks.workflows.function_call_store import WorkflowCallStore
    from agentworks.workflows.functions import WorkflowFunctions
    from agentworks.workflows.registry import WorkflowRegistry
    from agentworks.workflows.registry_store import RegistryStore
    from agentworks.workflows.run_store import RunStore
    from agentworks.workflows.runner_steps import RunnerSteps
    from agentworks.workflows.runs import WorkflowRuns
    from agentworks.workflows.schedules import EventBridgeSchedules
    from agentworks.workflows.step_tools import StepTools

    runners = build_runners(settings, client, clock, stepfunctions)
    # A cli step's turns as runner jobs, in the job store the runners claim from.
    runner_steps = RunnerSteps(RunnerJobStore(client, settings.work_table), clock)

    runs = RunStore(
        client,
        settings.work_table,
        (lambda: s3) if s3 is not None else default_s3,
        settings.outputs_bucket,
    )
    profiles = AdapterProfileStore(client, settings.work_table)
    clients = adapter_clients or AdapterClients(
        clock=clock, a2a_secret_prefix=settings.a2a_secret_prefix
    )
    outputs = OutputStore((lambda: s3) if s3 is not None else default_s3, settings.outputs_bucket)
    # A crew step calls through the same path as any caller, as the run's starter.
    calls = FunctionCalls(
        CrewStore(client, settings.work_table),
        CallStore(client, settings.work_table),
        Executions(settings.function_call_state_machine_arn, stepfunctions),
        outputs,
        clock,
    )
    connections = ConnectionStore(client, settings.identity_table)
    workflow_calls = WorkflowCallStore(client, settings.work_table)
    call_executions = Executions(settings.function_call_state_machine_arn, stepfunctions)
    waits = call_waits(settings, client, clock, stepfunctions)
    starts = WorkflowRuns(
        runs,
        profiles,
        Executions(settings.workflow_state_machine_arn, stepfunctions),
        signer,
        clock,
        call_executions=call_executions,
        workflow_calls=workflow_calls,
        runner_steps=runner_steps,
        usage=UsageRecorder(UsageStore(client, settings.work_table), clock),
        waits=waits,
    )
    registry = RegistryStore(client, settings.work_table)
    functions = WorkflowFunctions(registry, starts, workflow_calls, clock)
    route_workflows(calls, functions)
    crew_steps = CrewSteps(calls, connections, clock)
    return Workflows(
        runs=starts,
        registry=WorkflowRegistry(
            registry,
            starts,
            connections,
            clock,
            EventBridgeSchedules(
                (lambda: scheduler) if scheduler is not None else default_scheduler,
                settings.scheduler_role_arn,
                settings.tick_function_arn,
                settings.tick_dead_letter_queue_arn,
                settings.schedule_group,
            ),
        ),
        functions=functions,
        calls=calls,
        engine=WorkflowEngine(
            runs,
            profiles,
            lambda adapter: build_adapter(adapter, clients),
            signer,
            crew_steps,
            runner_steps,
            clock,
            # Its own execution's ARN comes with each Finish: no state machine ARN needed.
            history=Executions("", stepfunctions),
            waits=waits,
            tools=(
                StepTools(mcp_servers, runs, crew_steps, mcp_token_calls)
                if mcp_servers is not None
                else None
            ),
            external_waits=ExternalWaits(
                ExternalWaitStore(client, settings.work_table),
                partial(task_reader, clients=clients),
                PlatformUrl(settings.platform_api_url, settings.platform_api_url_parameter),
                clock,
            ),
        ),
        runners=runners,
    )


def call_waits(
    settings: Settings, client: DynamoDBClient, clock: Clock, stepfunctions: Any
) -> CallWaits:
    """Crew steps waiting for their calls' ends: the workflow runner stores the tokens; the
    step runner, the tick and cancel answer them."""
    from agentworks.crews.execution import Executions
    from agentworks.workflows.call_waits import CallWaits
    from agentworks.workflows.function_call_store import WorkflowCallStore

    # A token is answered whatever machine waits on it: no state machine ARN needed.
    return CallWaits(
        client,
        settings.work_table,
        Executions("", stepfunctions).resume_if_waiting,
        WorkflowCallStore(client, settings.work_table),
        clock,
    )


def route_workflows(calls: FunctionCalls, functions: WorkflowFunctions) -> None:
    """Calls to `workflow:NAME` targets (W10) start runs of registered workflows."""
    from agentworks.workflows.function_call_store import CALL_PREFIX

    calls.route("workflow", CALL_PREFIX, functions)
