"""Issue 12 (operate it): on SAM's translation of template.yaml, every function, state
machine, table and queue has its alarms; every asynchronous path has a retry policy and a
failure destination its sender may write to; alarms notify only when a topic is given; the
dashboard names only metrics the code emits (found by reading the source) or AWS publishes.

The checks iterate over the template's resources: a function, machine, table, queue or
schedule added without its alarms or destination fails them.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from agentworks_local.template import load_template, resources_of_type
from tests.support.iam import role_of_function, stack_resolver
from tests.support.sam import translate, translated_template

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "layers/agentworks/agentworks", ROOT / "functions"]
ALARM = "AWS::CloudWatch::Alarm"
NOTIFY = {"Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]}
# What AWS publishes that the dashboard and alarms may name, by namespace (AWS's docs).
AWS_METRICS = {
    "AWS/Lambda": {"Invocations", "Errors", "Throttles", "Duration", "IteratorAge"},
    "AWS/States": {
        "ExecutionsStarted",
        "ExecutionsSucceeded",
        "ExecutionsFailed",
        "ExecutionsTimedOut",
        "ExecutionsAborted",
    },
    "AWS/ApiGateway": {"Count", "4xx", "5xx", "Latency", "IntegrationLatency"},
    "AWS/DynamoDB": {"ThrottledRequests", "SystemErrors"},
    "AWS/SQS": {"ApproximateNumberOfMessagesVisible"},
}


@pytest.fixture(scope="module")
def translated() -> dict[str, Any]:
    return translated_template()


def emitted_metrics() -> set[str]:
    """The AgentWorks namespace as the code writes it: `count("X")`, `count_outcome("X", …)`
    and `<operation>Refused` for every operation refusals are counted under."""
    names: set[str] = set()
    for folder in SOURCES:
        for path in folder.rglob("*.py"):
            text = path.read_text()
            names.update(re.findall(r"\bcount(?:_outcome)?\(\s*\"(\w+)\"", text))
            operations = re.findall(r"\bcount_refusal\(\s*\"(\w+)\"", text)
            operations += re.findall(r"\boperation=\"(\w+)\"", text)
            names.update(f"{operation}Refused" for operation in operations)
    return names


def alarms(translated: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: r["Properties"] for k, r in resources_of_type(translated, ALARM).items()}


def watched(alarm: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(namespace, metric, dimensions) of every metric an alarm reads."""
    if "MetricName" in alarm:
        dims = {d["Name"]: d["Value"] for d in alarm.get("Dimensions", [])}
        return [(alarm["Namespace"], alarm["MetricName"], dims)]
    found = []
    for query in alarm.get("Metrics", []):
        if "MetricStat" in query:
            metric = query["MetricStat"]["Metric"]
            dims = {d["Name"]: d["Value"] for d in metric.get("Dimensions", [])}
            found.append((metric["Namespace"], metric["MetricName"], dims))
    return found


def alarm_gaps(translated: dict[str, Any]) -> list[str]:
    """Every function, state machine, table and queue of the stack without its alarms."""
    have, expressions = set(), []
    for alarm in alarms(translated).values():
        have |= {(ns, name, json.dumps(dims, sort_keys=True)) for ns, name, dims in watched(alarm)}
        expressions += [query.get("Expression") for query in alarm.get("Metrics", [])]

    def has(namespace: str, metric: str, **dims: Any) -> bool:
        return (namespace, metric, json.dumps(dims, sort_keys=True)) in have

    gaps = []
    for fn in resources_of_type(translated, "AWS::Lambda::Function"):
        for metric in ("Errors", "Throttles"):
            if not has("AWS/Lambda", metric, FunctionName={"Ref": fn}):
                gaps.append(f"{fn}: no {metric} alarm")
    for machine in resources_of_type(translated, "AWS::StepFunctions::StateMachine"):
        for metric in ("ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted"):
            if not has("AWS/States", metric, StateMachineArn={"Ref": machine}):
                gaps.append(f"{machine}: no {metric} alarm")
    for table in resources_of_type(translated, "AWS::DynamoDB::Table"):
        for metric in ("ThrottledRequests", "SystemErrors"):
            wanted = f"SUM({metric})"
            if not any(
                isinstance(e, dict) and wanted in e["Fn::Sub"] and f"'${{{table}}}'" in e["Fn::Sub"]
                for e in expressions
            ):
                gaps.append(f"{table}: no {metric} alarm")
    for queue in resources_of_type(translated, "AWS::SQS::Queue"):
        name = {"Fn::GetAtt": [queue, "QueueName"]}
        if not has("AWS/SQS", "ApproximateNumberOfMessagesVisible", QueueName=name):
            gaps.append(f"{queue}: no depth alarm")
    return gaps


def test_every_function_machine_table_and_queue_has_its_alarms(translated):
    assert alarm_gaps(translated) == []
    assert len(resources_of_type(translated, "AWS::Lambda::Function")) == 11


def test_a_function_added_without_alarms_is_reported():
    template = copy.deepcopy(load_template())
    template["Resources"]["ReportFunction"] = {
        "Type": "AWS::Serverless::Function",
        "Properties": {"CodeUri": "functions/api", "Handler": "app.handler"},
    }
    assert alarm_gaps(translate(template)) == [
        "ReportFunction: no Errors alarm",
        "ReportFunction: no Throttles alarm",
    ]


def test_the_tick_not_running_for_3_minutes_alarms(translated):
    [tick] = [
        a
        for a in alarms(translated).values()
        if watched(a) == [("AWS/Lambda", "Invocations", {"FunctionName": {"Ref": "TickFunction"}})]
    ]
    assert tick["TreatMissingData"] == "breaching"  # no data at all is the failure
    assert (tick["ComparisonOperator"], tick["Threshold"]) == ("LessThanThreshold", 1)
    assert (
        tick["Period"] * tick["EvaluationPeriods"]
        == 180
        == tick["Period"] * tick.get("DatapointsToAlarm", tick["EvaluationPeriods"])
    )


def test_the_api_alarms_on_its_5xx_rate_and_p99_latency(translated):
    api = {"ApiId": {"Ref": "HttpApi"}, "Stage": "$default"}
    found = {}
    for alarm in alarms(translated).values():
        found.update({name: alarm for _, name, dims in watched(alarm) if dims == api})
    assert found["Latency"]["ExtendedStatistic"] == "p99"
    rate = found["5xx"]
    assert {name for _, name, _ in watched(rate)} == {"5xx", "Count"}
    [returned] = [q for q in rate["Metrics"] if q.get("ReturnData")]
    assert "100 * errors / requests" in returned["Expression"]


def test_alarms_on_the_codes_own_metrics_name_metrics_it_emits(translated):
    """Push notices that failed to post and webhooks (workflow and conversation ones) that
    failed every attempt; the stream readers' iterator age."""
    metrics = [metric for alarm in alarms(translated).values() for metric in watched(alarm)]
    ours = {name for namespace, name, _ in metrics if namespace == "AgentWorks"}
    assert ours == {"PushNoticesFailed", "WebhookDeliveriesFailed", "ConversationWebhooksFailed"}
    assert ours <= emitted_metrics()
    for reader in ("NotifierFunction", "WebhooksFunction"):
        assert ("AWS/Lambda", "IteratorAge", {"FunctionName": {"Ref": reader}}) in metrics


def _evaluate(value: Any, conditions: dict[str, bool]) -> Any:
    """Fn::If under the given conditions, AWS::NoValue removed, as CloudFormation does."""
    if isinstance(value, list):
        return [_evaluate(v, conditions) for v in value]
    if isinstance(value, dict) and set(value) == {"Fn::If"}:
        name, then, otherwise = value["Fn::If"]
        return _evaluate(then if conditions[name] else otherwise, conditions)
    if isinstance(value, dict):
        kept = {k: _evaluate(v, conditions) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v != {"Ref": "AWS::NoValue"}}
    return value


def test_alarms_notify_the_topic_only_when_it_is_set(translated):
    template = load_template()
    assert template["Parameters"]["AlarmTopicArn"]["Default"] == ""
    assert template["Conditions"]["HasAlarmTopic"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "AlarmTopicArn"}, ""]}]
    }
    for name, alarm in alarms(translated).items():
        assert alarm["AlarmActions"] == alarm["OKActions"] == NOTIFY, name
        with_topic = _evaluate(alarm, {"HasAlarmTopic": True})
        without = _evaluate(alarm, {"HasAlarmTopic": False})
        assert with_topic["AlarmActions"] == [{"Ref": "AlarmTopicArn"}], name
        assert "AlarmActions" not in without and "OKActions" not in without, name


def test_alarm_thresholds_are_parameters(translated):
    parameters = load_template()["Parameters"]
    for name, alarm in alarms(translated).items():
        threshold = alarm["Threshold"]
        if name == "TickNotRunningAlarm":
            continue  # "fewer than one invocation" is the definition, not a tuning knob
        assert set(threshold) == {"Ref"} and threshold["Ref"] in parameters, name


def _queue_of(destination: Any) -> str:
    assert isinstance(destination, dict) and "Fn::GetAtt" in destination, destination
    queue, attribute = destination["Fn::GetAtt"]
    assert attribute == "Arn"
    return str(queue)


def _async_targets(translated: dict[str, Any]) -> set[str]:
    """Functions invoked asynchronously: EventBridge rule targets, and what a role that
    EventBridge Scheduler assumes may invoke."""
    resources = translated["Resources"]
    targets = set()
    for rule in resources_of_type(translated, "AWS::Events::Rule").values():
        for target in rule["Properties"]["Targets"]:
            targets.add(target["Arn"]["Fn::GetAtt"][0])
    for role in resources_of_type(translated, "AWS::IAM::Role").values():
        trust = json.dumps(role["Properties"]["AssumeRolePolicyDocument"])
        if "scheduler.amazonaws.com" not in trust:
            continue
        for policy in role["Properties"].get("Policies", []):
            for statement in policy["PolicyDocument"]["Statement"]:
                if statement["Action"] == "lambda:InvokeFunction":
                    targets.add(statement["Resource"]["Fn::GetAtt"][0])
    assert targets <= set(resources)
    return targets


def test_every_async_invocation_has_retries_and_a_failure_queue(translated):
    queues = set(resources_of_type(translated, "AWS::SQS::Queue"))
    configs = {
        c["Properties"]["FunctionName"]["Ref"]: c["Properties"]
        for c in resources_of_type(translated, "AWS::Lambda::EventInvokeConfig").values()
    }
    targets = _async_targets(translated)
    assert targets == {"TickFunction"}
    for function in targets:
        config = configs[function]
        assert 0 <= config["MaximumRetryAttempts"] <= 2 and config["MaximumEventAgeInSeconds"]
        assert _queue_of(config["DestinationConfig"]["OnFailure"]["Destination"]) in queues
    for rule_id, rule in resources_of_type(translated, "AWS::Events::Rule").items():
        for target in rule["Properties"]["Targets"]:
            assert target["RetryPolicy"]["MaximumRetryAttempts"] >= 1, rule_id
            assert _queue_of(target["DeadLetterConfig"]["Arn"]) in queues, rule_id
    mappings = resources_of_type(translated, "AWS::Lambda::EventSourceMapping")
    assert mappings
    for mapping_id, mapping in mappings.items():
        props = mapping["Properties"]
        assert props["MaximumRetryAttempts"] >= 1, mapping_id
        assert props["BisectBatchOnFunctionError"] is True, mapping_id
        assert props["MaximumRecordAgeInSeconds"] > 0, mapping_id
        assert _queue_of(props["DestinationConfig"]["OnFailure"]["Destination"]) in queues


def _send_grants(role: dict[str, Any], resolve: Any) -> list[str]:
    """Queues a role's inline policies allow sqs:SendMessage on (unconditionally)."""
    queues = []
    for policy in role["Properties"].get("Policies", []):
        for statement in policy["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            actions = actions if isinstance(actions, list) else [actions]
            if statement["Effect"] == "Allow" and "sqs:SendMessage" in actions:
                assert "Condition" not in statement
                resources = resolve(statement["Resource"])
                queues += resources if isinstance(resources, list) else [resources]
    return queues


def test_each_sender_may_write_to_its_failure_queue(translated):
    """Lambda writes on-failure records with the function's role, Scheduler with its role,
    EventBridge with its own principal (the queue's policy must allow that rule)."""
    resolve = stack_resolver(translated)
    resources = translated["Resources"]
    sends = []
    for config in resources_of_type(translated, "AWS::Lambda::EventInvokeConfig").values():
        props = config["Properties"]
        sends.append((props["FunctionName"]["Ref"], props["DestinationConfig"]["OnFailure"]))
    for mapping in resources_of_type(translated, "AWS::Lambda::EventSourceMapping").values():
        props = mapping["Properties"]
        sends.append((props["FunctionName"]["Ref"], props["DestinationConfig"]["OnFailure"]))
    for function, on_failure in sends:
        role = resources[role_of_function(translated, function)]
        assert resolve(on_failure["Destination"]) in _send_grants(role, resolve), function
    scheduler_dlq = resolve({"Fn::GetAtt": ["TickDeadLetterQueue", "Arn"]})
    assert _send_grants(resources["WorkflowSchedulerRole"], resolve) == [scheduler_dlq]
    rules = resources_of_type(translated, "AWS::Events::Rule")
    policies = resources_of_type(translated, "AWS::SQS::QueuePolicy").values()
    for rule_id, rule in rules.items():
        for target in rule["Properties"]["Targets"]:
            queue = target["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0]
            statements = [
                statement
                for policy in policies
                if {"Ref": queue} in policy["Properties"]["Queues"]
                for statement in policy["Properties"]["PolicyDocument"]["Statement"]
            ]
            assert any(
                s["Principal"] == {"Service": "events.amazonaws.com"}
                and s["Action"] == "sqs:SendMessage"
                and s["Condition"]["ArnEquals"]["aws:SourceArn"] == {"Fn::GetAtt": [rule_id, "Arn"]}
                for s in statements
            ), rule_id


def test_every_table_can_be_restored_to_a_point_in_time():
    for name, table in resources_of_type(load_template(), "AWS::DynamoDB::Table").items():
        spec = table["Properties"].get("PointInTimeRecoverySpecification")
        assert spec == {"PointInTimeRecoveryEnabled": True}, name


def test_long_running_tenant_work_has_a_concurrency_cap_that_0_removes(translated):
    capped = {
        name: fn["Properties"]["ReservedConcurrentExecutions"]
        for name, fn in resources_of_type(translated, "AWS::Lambda::Function").items()
        if "ReservedConcurrentExecutions" in fn["Properties"]
    }
    assert set(capped) == {
        "RelayRunnerFunction",
        "RelayCodeFunction",
        "StepRunnerFunction",
        "WorkflowRunnerFunction",
    }
    conditions = load_template()["Conditions"]
    for name, value in capped.items():
        condition, cap, none = value["Fn::If"]
        assert none == {"Ref": "AWS::NoValue"}, name
        assert conditions[condition] == {"Fn::Not": [{"Fn::Equals": [cap, "0"]}]}, name


def _dashboard(translated: dict[str, Any]) -> dict[str, Any]:
    [board] = resources_of_type(translated, "AWS::CloudWatch::Dashboard").values()
    return dict(json.loads(stack_resolver(translated)(board["Properties"]["DashboardBody"])))


def dashboard_metrics(body: dict[str, Any]) -> list[tuple[str, str, dict[str, str]]]:
    """(namespace, metric, dimensions) of every graphed metric ("." repeats the line above)."""
    found: list[tuple[str, str, dict[str, str]]] = []
    for widget in body["widgets"]:
        previous: list[Any] = []
        for line in widget["properties"]["metrics"]:
            fields = [f for f in line if not isinstance(f, dict)]
            fields = [previous[i] if f == "." else f for i, f in enumerate(fields)]
            previous = fields
            found.append((fields[0], fields[1], dict(zip(fields[2::2], fields[3::2], strict=True))))
    return found


def test_the_dashboard_names_only_metrics_the_code_emits_or_aws_publishes(translated):
    graphed = dashboard_metrics(_dashboard(translated))
    ours = {name for namespace, name, _ in graphed if namespace == "AgentWorks"}
    assert ours <= emitted_metrics(), ours - emitted_metrics()
    for namespace, name, dims in graphed:
        if namespace == "AgentWorks":
            # Powertools adds the service dimension (POWERTOOLS_SERVICE_NAME) to each metric.
            assert (
                dims["service"]
                == load_template()["Globals"]["Function"]["Environment"]["Variables"][
                    "POWERTOOLS_SERVICE_NAME"
                ]
            )
        else:
            assert name in AWS_METRICS[namespace], (namespace, name)


def test_the_dashboard_shows_what_the_issue_asks_for(translated):
    graphed = dashboard_metrics(_dashboard(translated))
    names = {name for _, name, _ in graphed}
    assert {"MessagesSent", "MessagesRead", "WakeupsFired", "Errors", "Latency"} <= names
    by_outcome = {dims.get("outcome") for _, name, dims in graphed if name == "FunctionCallsEnded"}
    assert by_outcome == {"succeeded", "failed", "interrupted"}
    statuses = {dims.get("outcome") for _, name, dims in graphed if name == "WorkflowRunsEnded"}
    assert statuses == {"succeeded", "failed", "cancelled"}
    assert {name for _, name, dims in graphed if dims.get("reason") == "busy"} == {
        "RequestRefused",
        "CallRefused",
    }  # HTTP and MCP refusals of a busy Crew
    functions = {d["FunctionName"] for _, name, d in graphed if name == "Errors"}
    assert len(functions) == len(resources_of_type(translated, "AWS::Lambda::Function"))


def test_the_metric_grep_sees_refusals_outcomes_and_counts():
    """The list the dashboard is checked against comes from the source, not from a copy."""
    emitted = emitted_metrics()
    assert {"MessagesSent", "SendRefused", "RequestRefused", "CallRefused"} <= emitted
    assert {"FunctionCallsEnded", "WorkflowRunsEnded", "PushNoticesFailed"} <= emitted
    assert "NoSuchMetric" not in emitted


def _lambda_tasks(states: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for name, state in states.items():
        resource = str(state.get("Resource", ""))
        if state["Type"] == "Task" and (
            resource.startswith("${") or ":::lambda:invoke" in resource
        ):
            found.append((name, state))
        for branch in state.get("Branches", []):
            found += _lambda_tasks(branch["States"])
        if "ItemProcessor" in state:
            found += _lambda_tasks(state["ItemProcessor"]["States"])
    return found


def test_tasks_wait_out_a_capped_functions_throttling_for_a_minute_or_more():
    """At the concurrency cap Lambda answers TooManyRequests: a task that gave up after a
    few seconds would fail the call or run instead of waiting its turn."""
    for machine in resources_of_type(load_template(), "AWS::Serverless::StateMachine").values():
        asl = json.loads((ROOT / machine["Properties"]["DefinitionUri"]).read_text())
        tasks = _lambda_tasks(asl["States"])
        assert tasks
        for name, state in tasks:
            throttled = [
                r for r in state["Retry"] if "Lambda.TooManyRequestsException" in r["ErrorEquals"]
            ]
            assert state["Retry"][0] is throttled[0], name  # before any States.ALL
            [retry] = throttled
            waits = [
                retry["IntervalSeconds"] * retry["BackoffRate"] ** n
                for n in range(retry["MaxAttempts"])
            ]
            assert sum(waits) >= 60, name
