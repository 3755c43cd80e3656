"""A small IAM evaluator over the SAM-translated template: each function's role statements
with intrinsics resolved to the test stack's resources, and whether they allow an action
on a resource. Enough for identity policies as this template writes them: Allow and Deny
statements with Action/Resource lists and `*`/`?` wildcards, and two conditions: a
`dynamodb:LeadingKeys` list under ForAllValues:StringLike (which partition keys an item
request may touch) and `Null: {aws:ResourceTag/KEY: "false"}` (the resource must carry the
tag KEY). NotAction, NotResource and other conditions are refused (add them here if the
template starts using them).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any

from tests.support.aws_calls import ACCOUNT, REGION, Permission

PSEUDO = {
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
}


class Unresolvable(Exception):
    """An intrinsic the resolver has no value for (name it in `Resolver` below)."""


class Resolver:
    """Values of Ref / Fn::GetAtt / Fn::Sub / Fn::Join for the resources of one stack.

    `refs` maps a logical id to what `Ref` returns, `attributes` maps (logical id,
    attribute) to what `Fn::GetAtt` returns."""

    def __init__(self, refs: dict[str, str], attributes: dict[tuple[str, str], str]) -> None:
        self.refs = {**PSEUDO, **refs}
        self.attributes = attributes

    def __call__(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self(item) for item in value]
        if not isinstance(value, dict):
            return value
        if set(value) == {"Ref"}:
            return self._ref(value["Ref"])
        if set(value) == {"Fn::GetAtt"}:
            target = value["Fn::GetAtt"]
            logical_id, attribute = target.split(".", 1) if isinstance(target, str) else target
            return self._attribute(logical_id, attribute)
        if set(value) == {"Fn::Sub"}:
            return self._sub(value["Fn::Sub"])
        if set(value) == {"Fn::Join"}:
            separator, parts = value["Fn::Join"]
            return separator.join(str(self(part)) for part in parts)
        return {key: self(item) for key, item in value.items()}

    def _ref(self, name: str) -> str:
        if name not in self.refs:
            raise Unresolvable(f"Ref {name}")
        return self.refs[name]

    def _attribute(self, logical_id: str, attribute: str) -> str:
        if (logical_id, attribute) not in self.attributes:
            raise Unresolvable(f"Fn::GetAtt {logical_id}.{attribute}")
        return self.attributes[(logical_id, attribute)]

    def _sub(self, spec: Any) -> str:
        text, variables = (spec, {}) if isinstance(spec, str) else spec
        local = {name: str(self(item)) for name, item in variables.items()}

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in local:
                return local[name]
            if "." in name:
                return self._attribute(*name.split(".", 1))
            return self._ref(name)

        return re.sub(r"\$\{([^}!]+)\}", replace, text)


@dataclass(frozen=True)
class Statement:
    effect: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    sid: str
    # Patterns of a dynamodb:LeadingKeys condition (None: the statement has no such one).
    leading_keys: tuple[str, ...] | None = None
    # Tag keys a `Null … "false"` condition requires on the resource.
    required_tags: tuple[str, ...] = ()

    def matches(self, permission: Permission) -> bool:
        # Actions are case-insensitive in IAM; resource ARNs are case-sensitive.
        action = any(
            fnmatch.fnmatchcase(permission.action.lower(), _wildcard(pattern.lower()))
            for pattern in self.actions
        )
        return (
            action
            and any(
                fnmatch.fnmatchcase(permission.resource, _wildcard(pattern))
                for pattern in self.resources
            )
            and self._keys_match(permission)
            and self._tags_match(permission)
        )

    def _tags_match(self, permission: Permission) -> bool:
        """Every required tag is on the resource; unknown tags are taken not to match."""
        if not self.required_tags:
            return True
        present = {key for key, _ in permission.resource_tags or ()}
        return permission.resource_tags is not None and set(self.required_tags) <= present

    def _keys_match(self, permission: Permission) -> bool:
        """ForAllValues over the request's partition keys; a request whose keys are not
        known here (a Query) is not taken to match, though IAM's empty set would."""
        if self.leading_keys is None:
            return True
        return bool(permission.leading_keys) and all(
            any(fnmatch.fnmatchcase(key, _wildcard(p)) for p in self.leading_keys)
            for key in permission.leading_keys
        )


def _leading_key_patterns(role: str, condition: dict[str, Any] | None) -> tuple[str, ...] | None:
    if condition is None or "ForAllValues:StringLike" not in condition:
        return None
    tests = condition["ForAllValues:StringLike"]
    if set(tests or {}) != {"dynamodb:LeadingKeys"}:
        raise NotImplementedError(f"{role}: condition {condition}")
    return _as_tuple(tests["dynamodb:LeadingKeys"])


def _required_tags(role: str, condition: dict[str, Any] | None) -> tuple[str, ...]:
    """Tag keys of `Null: {aws:ResourceTag/KEY: "false"}` (the tag must be present)."""
    if condition is None:
        return ()
    unknown = set(condition) - {"ForAllValues:StringLike", "Null"}
    if unknown:
        raise NotImplementedError(f"{role}: condition {condition}")
    required = []
    for key, value in (condition.get("Null") or {}).items():
        if not key.startswith("aws:ResourceTag/") or str(value).lower() != "false":
            raise NotImplementedError(f"{role}: condition {condition}")
        required.append(key.removeprefix("aws:ResourceTag/"))
    return tuple(required)


def _wildcard(pattern: str) -> str:
    """IAM knows only `*` and `?`; fnmatch's `[` classes must stay literal."""
    return pattern.replace("[", "[[]")


def _as_tuple(value: Any) -> tuple[str, ...]:
    return tuple(value) if isinstance(value, list) else (value,)


def role_of_function(translated: dict[str, Any], function: str) -> str:
    """The logical id of the role the translated function runs with."""
    role = translated["Resources"][function]["Properties"]["Role"]
    assert isinstance(role, dict) and "Fn::GetAtt" in role, f"{function} has no template role"
    return str(role["Fn::GetAtt"][0])


def role_statements(translated: dict[str, Any], role: str, resolve: Resolver) -> list[Statement]:
    """Every statement of the role's inline policies and of the managed policies the
    template defines and attaches, resolved. (The other managed policies are AWS's logging
    and X-Ray ones, which no recorded call needs.)"""
    resources = translated["Resources"]
    properties = resources[role]["Properties"]
    documents = [(p["PolicyName"], p["PolicyDocument"]) for p in properties.get("Policies", [])]
    for arn in properties.get("ManagedPolicyArns", []):
        name = arn.get("Ref") if isinstance(arn, dict) else None
        if name in resources and resources[name]["Type"] == "AWS::IAM::ManagedPolicy":
            documents.append((name, resources[name]["Properties"]["PolicyDocument"]))
    statements = []
    for policy_name, document in documents:
        for number, raw in enumerate(document["Statement"]):
            unsupported = {"NotAction", "NotResource", "NotPrincipal"} & set(raw)
            if unsupported:
                raise NotImplementedError(f"{role}: statement uses {sorted(unsupported)}")
            statements.append(
                Statement(
                    effect=raw["Effect"],
                    actions=_as_tuple(raw["Action"]),
                    resources=_as_tuple(resolve(raw["Resource"])),
                    sid=raw.get("Sid", f"{policy_name}[{number}]"),
                    leading_keys=_leading_key_patterns(role, raw.get("Condition")),
                    required_tags=_required_tags(role, raw.get("Condition")),
                )
            )
    return statements


def allowed(statements: list[Statement], permission: Permission) -> bool:
    """IAM's rule for one identity policy set: some Allow matches and no Deny does."""
    matching = [s for s in statements if s.matches(permission)]
    return any(s.effect == "Allow" for s in matching) and not any(
        s.effect == "Deny" for s in matching
    )


def stack_resolver(
    translated: dict[str, Any], local: Any = None, prefix: str = "agentworks"
) -> Resolver:
    """Ref/GetAtt values of the translated stack's resources: the local stack's physical
    names where it created them (`LocalResources`), `<prefix>-<logical id>` otherwise; the
    prefix is the stack's name (samconfig.toml's default unless said)."""
    if local is not None:
        prefix = local.stack_name
    created: dict[str, str] = {}
    arns: dict[str, str] = {}
    if local is not None:
        created = {**local.tables, **local.buckets, **local.functions, **local.schedule_groups}
        created.update({q: url.rsplit("/", 1)[1] for q, url in local.queues.items()})
        arns = {**local.secrets, **local.state_machines}
    refs: dict[str, str] = {}
    attributes: dict[tuple[str, str], str] = {}
    resources = translated["Resources"]
    for logical_id, resource in resources.items():
        kind = resource["Type"]
        name = created.get(logical_id, f"{prefix}-{logical_id}")
        if kind == "AWS::DynamoDB::Table":
            refs[logical_id] = name
            attributes[(logical_id, "Arn")] = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}"
            attributes[(logical_id, "StreamArn")] = (
                f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}/stream/2026-01-01T00:00:00.000"
            )
        elif kind == "AWS::S3::Bucket":
            refs[logical_id] = name.lower()
            attributes[(logical_id, "Arn")] = f"arn:aws:s3:::{name.lower()}"
        elif kind == "AWS::SecretsManager::Secret":
            refs[logical_id] = arns.get(
                logical_id, f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:{name}-AbCdEf"
            )
        elif kind == "AWS::StepFunctions::StateMachine":
            arn = arns.get(logical_id, f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{name}")
            refs[logical_id] = arn
            attributes[(logical_id, "Name")] = arn.rsplit(":", 1)[1]
            attributes[(logical_id, "Arn")] = arn
        elif kind == "AWS::Lambda::Function":
            refs[logical_id] = name
            attributes[(logical_id, "Arn")] = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
        elif kind == "AWS::Events::Rule":
            attributes[(logical_id, "Arn")] = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/{name}"
        elif kind == "AWS::ApiGatewayV2::Api":
            refs[logical_id] = "localapi"
        elif kind == "AWS::ApiGatewayV2::Stage":
            refs[logical_id] = resource["Properties"]["StageName"]
        elif kind == "AWS::ApiGatewayV2::Integration":
            refs[logical_id] = f"integ-{logical_id}"
        elif kind == "AWS::SQS::Queue":
            refs[logical_id] = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/{name}"
            attributes[(logical_id, "Arn")] = f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"
            attributes[(logical_id, "QueueName")] = name
        elif kind == "AWS::Scheduler::ScheduleGroup":
            refs[logical_id] = name
        elif kind == "AWS::IAM::Role":
            attributes[(logical_id, "Arn")] = f"arn:aws:iam::{ACCOUNT}:role/{name}"
    for logical_id, resource in resources.items():
        if resource["Type"] == "AWS::Lambda::Alias":
            function = resource["Properties"]["FunctionName"]["Ref"]
            alias = resource["Properties"]["Name"]
            refs[logical_id] = f"{attributes[(function, 'Arn')]}:{alias}"
    # The local stack names resources `<prefix>-<logical id>`; the template names its state
    # machines `${AWS::StackName}-<logical id>`: the prefix stands for the stack's name.
    refs["AWS::StackName"] = prefix
    return Resolver(refs, attributes)


_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")


def _example_path(path: str) -> str:
    """A concrete request path for an HTTP API route path (`{proxy+}` spans segments)."""
    return re.sub(r"\{[^}]+\}", "x", path.replace("{proxy+}", "a/b"))


def _invoked_function(resolve: Resolver, uri: Any) -> str:
    """The function ARN of an integration or authorizer URI (`…/functions/<arn>/invocations`)."""
    match = re.search(r"/functions/(.+)/invocations$", str(resolve(uri)))
    assert match, f"unexpected integration uri {uri}"
    return match.group(1)


def _permission_targets(translated: dict[str, Any], principal: str) -> list[dict[str, Any]]:
    return [
        r["Properties"]
        for r in translated["Resources"].values()
        if r["Type"] == "AWS::Lambda::Permission"
        and r["Properties"].get("Principal") == principal
        and r["Properties"].get("Action") == "lambda:InvokeFunction"
    ]


def invoke_gaps(translated: dict[str, Any]) -> list[str]:
    """Every HTTP API route, authorizer and schedule whose Lambda has no invoke permission
    (resource policy) for that source; empty when API Gateway and EventBridge can call all.
    """
    resolve = stack_resolver(translated)
    gaps: list[str] = []
    gateway = _permission_targets(translated, "apigateway.amazonaws.com")
    for api_id, api in translated["Resources"].items():
        if api["Type"] != "AWS::ApiGatewayV2::Api":
            continue
        sources: list[tuple[str, str, list[str]]] = []  # (what, target, request ARNs)
        if api["Properties"].get("ProtocolType") == "WEBSOCKET":
            sources += _websocket_routes(translated, api_id, resolve)
        body = api["Properties"].get("Body", {})
        for path, methods in body.get("paths", {}).items():
            for method, operation in methods.items():
                integration = operation.get("x-amazon-apigateway-integration")
                if not integration:
                    continue
                verbs = _METHODS if method == "x-amazon-apigateway-any-method" else (method,)
                requests = [
                    f"arn:aws:execute-api:{REGION}:{ACCOUNT}:localapi/$default/"
                    f"{verb.upper()}{_example_path(path)}"
                    for verb in verbs
                ]
                sources.append((f"route {method} {path}", integration["uri"], requests))
        schemes = body.get("components", {}).get("securitySchemes", {})
        for name, scheme in schemes.items():
            authorizer = scheme.get("x-amazon-apigateway-authorizer")
            if authorizer and "authorizerUri" in authorizer:
                request = f"arn:aws:execute-api:{REGION}:{ACCOUNT}:localapi/authorizers/x"
                sources.append((f"authorizer {name}", authorizer["authorizerUri"], [request]))
        for what, uri, requests in sources:
            wanted = _invoked_function(resolve, uri)
            granted = [
                str(resolve(p.get("SourceArn", "*")))
                for p in gateway
                if _function_reference(resolve, p["FunctionName"]) == wanted
            ]
            for request in requests:
                if not any(fnmatch.fnmatchcase(request, _wildcard(s)) for s in granted):
                    gaps.append(f"{api_id} {what}: no permission for {request} to invoke {wanted}")
                    break
    events = _permission_targets(translated, "events.amazonaws.com")
    for rule_id, rule in translated["Resources"].items():
        if rule["Type"] != "AWS::Events::Rule":
            continue
        rule_arn = resolve({"Fn::GetAtt": [rule_id, "Arn"]})
        for target in rule["Properties"].get("Targets", []):
            wanted = resolve(target["Arn"])
            if not any(
                _function_reference(resolve, p["FunctionName"]) == wanted
                and resolve(p.get("SourceArn", rule_arn)) == rule_arn
                for p in events
            ):
                gaps.append(f"{rule_id}: no permission for the rule to invoke {wanted}")
    return gaps


def _websocket_routes(
    translated: dict[str, Any], api_id: str, resolve: Resolver
) -> list[tuple[str, str, list[str]]]:
    """A WebSocket API's routes (their own resources, no OpenAPI body): each invokes its
    integration's function for requests `<api>/<stage>/<route key>` of every stage."""
    resources = translated["Resources"]
    stages = [
        r["Properties"]["StageName"]
        for r in resources.values()
        if r["Type"] == "AWS::ApiGatewayV2::Stage" and r["Properties"]["ApiId"] == {"Ref": api_id}
    ]
    integrations = {
        f"integrations/{resolve({'Ref': i})}": r["Properties"]["IntegrationUri"]
        for i, r in resources.items()
        if r["Type"] == "AWS::ApiGatewayV2::Integration"
    }
    found = []
    for route in resources.values():
        props = route["Properties"]
        if route["Type"] != "AWS::ApiGatewayV2::Route" or props["ApiId"] != {"Ref": api_id}:
            continue
        requests = [
            f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{resolve({'Ref': api_id})}/{stage}/"
            f"{props['RouteKey']}"
            for stage in stages
        ]
        uri = integrations[str(resolve(props["Target"]))]
        found.append((f"route {props['RouteKey']}", uri, requests))
    return found


def _function_reference(resolve: Resolver, value: Any) -> str:
    """A permission's FunctionName as an ARN (a bare name means the unqualified function)."""
    resolved = str(resolve(value))
    if resolved.startswith("arn:"):
        return resolved
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{resolved}"
