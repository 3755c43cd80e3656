"""A workflow run's definition: the seed's workflow_start JSON, checked (W1–W3, W6, W8, W9).

The JSON is the contract and keeps the seed's camelCase names (`workflowId`, `sessionRef`,
`cacheKey`, `maxTotalCostUsd`, …); the models read and write those names. A definition is
refused before any work with every problem it has, each naming where it is (InvalidInput's
`problems`, the first one's wording leading the message): a step's kind
follows from what it names (`adapter` or `sessionRef`: an agent session; `crew`: that Crew's
function), labels are unique, a `sessionRef` names a step of an earlier stage, and a stage's
label defaults to `stage-N`.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from agentworks import limits
from agentworks.errors import InvalidInput
from agentworks.outbound.urls import RefusedUrl, check_on_save

Policy = Literal["auto-allow", "escalate", "fail"]
# W9: agent and scripted steps run a session (scripted: a profile of type `scripted`);
# routing is an agent step whose final answer picks one of its routes; a branch waits for a
# person's choice (routeSource "human"); crew calls a Crew's function.
StepKind = Literal["agent", "scripted", "routing", "branch", "crew"]
SESSION_KINDS = frozenset({"agent", "scripted", "routing"})
VariableValue = str | int | float | bool

LABEL = re.compile(rf"^[A-Za-z0-9][A-Za-z0-9._-]{{0,{limits.WORKFLOW_LABEL_MAX_CHARS - 1}}}$")
VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# The validation context under which `notifyUrl` is checked (agentworks.outbound).
CHECK_URLS = "check_outbound_urls"


def _label_problem(what: str) -> str:
    return (
        f"{what} is 1–{limits.WORKFLOW_LABEL_MAX_CHARS} letters, digits, '.', '_' or '-', "
        "from a letter or digit"
    )


def _label(value: str, what: str) -> str:
    if not LABEL.match(value):
        raise ValueError(_label_problem(what))
    return value


class Problems(ValueError):
    """Several problems from one validator; `describe` reports each on its own."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


class _Model(BaseModel):
    # The seed's names on the wire; Python names inside.
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Step(_Model):
    # What is wrong with how the step's fields fit together, every problem (not only the
    # first): the workflow reports them with its own (WorkflowStart._whole_run), a step read
    # on its own with `problems()`.
    _problems: list[str] = PrivateAttr(default_factory=list)

    label: str
    kind: StepKind | None = None  # follows from `adapter`/`sessionRef` or `crew` when left out
    # Names, when given, are never empty: an empty one would only fail when the step runs.
    adapter: str | None = Field(None, min_length=1, description="An adapter profile of the account")
    session_ref: str | None = Field(None, alias="sessionRef", min_length=1)
    crew: str | None = Field(None, min_length=1)
    # W10: a crew step may call a registered workflow's function instead of a Crew's.
    workflow: str | None = Field(None, min_length=1)
    function: str | None = Field(None, min_length=1)
    args: dict[str, Any] | None = None
    prompt: str = Field("", max_length=limits.WORKFLOW_PROMPT_MAX_CHARS)
    policy: Policy = "fail"
    cacheable: bool = False
    output_schema: dict[str, Any] | None = Field(None, alias="outputSchema")
    human_inputs: list[str] = Field(
        default_factory=list, alias="humanInputs", max_length=limits.WORKFLOW_VARIABLES_MAX
    )
    route_source: Literal["human", "agent"] | None = Field(None, alias="routeSource")
    # routing/branch: route name -> the labels of later steps that run only on that route
    routes: dict[str, list[str]] | None = Field(None, max_length=limits.WORKFLOW_ROUTES_MAX)

    @field_validator("label")
    @classmethod
    def _step_label(cls, value: str) -> str:
        return _label(value, "a step label")

    @field_validator("human_inputs")
    @classmethod
    def _human_inputs(cls, value: list[str]) -> list[str]:
        for name in value:
            if not VARIABLE.match(name):
                raise ValueError(f"human input {name!r}: letters, digits and '_', 1–64")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> Step:
        self._problems = self._source_problems()
        return self

    def problems(self) -> list[str]:
        return list(self._problems)

    def _source_problems(self) -> list[str]:
        """Every way the step's fields disagree with its kind; sets the kind."""
        problems: list[str] = []
        named = [
            k
            for k in ("adapter", "session_ref", "crew", "workflow")
            if getattr(self, k) is not None
        ]
        kind = self.kind or ("crew" if {"crew", "workflow"} & set(named) else "agent")
        if kind in SESSION_KINDS:
            if len(named) != 1 or self.crew is not None:
                problems.append(f"{_a(kind)} step names exactly one of 'adapter' or 'sessionRef'")
            if self.function is not None or self.args is not None:
                problems.append("'function' and 'args' belong to a step with 'crew'")
            if not self.prompt.strip():
                problems.append(f"{_a(kind)} step needs a 'prompt'")
        elif kind == "branch":
            if named:
                problems.append("a branch step runs no session: no 'adapter', 'sessionRef', 'crew'")
            if self.route_source not in (None, "human"):
                problems.append("a branch step's routeSource is 'human' (a person's choice)")
            else:
                self.route_source = "human"
        elif named not in (["crew"], ["workflow"]) or not self.function:
            problems.append(
                "a crew step names 'crew' (or 'workflow') and 'function' (and 'args'), no more"
            )
        if kind == "routing":
            if self.route_source not in (None, "agent"):
                problems.append("a routing step's routeSource is 'agent' (its answer picks)")
            else:
                self.route_source = "agent"
        if kind in ("routing", "branch"):
            if not self.routes or len(self.routes) < 2:
                problems.append(f"a {kind} step has 'routes': at least 2, each a list of steps")
            for route in self.routes or {}:
                if not LABEL.match(route):
                    problems.append(_label_problem("a route name"))
        elif self.routes is not None or self.route_source is not None:
            problems.append("'routes' and 'routeSource' belong to a routing or branch step")
        self.kind = kind
        return problems


class Stage(_Model):
    label: str | None = None  # `stage-N` when left out
    steps: list[Step] = Field(min_length=1, max_length=limits.WORKFLOW_STEPS_PER_STAGE_MAX)

    @field_validator("label")
    @classmethod
    def _stage_label(cls, value: str | None) -> str | None:
        return None if value is None else _label(value, "a stage label")


class WorkflowStart(_Model):
    """What workflow_start takes (and what a WORKFLOW.md file is read into)."""

    workflow_id: str = Field(alias="workflowId")
    stages: list[Stage] = Field(min_length=1, max_length=limits.WORKFLOW_STAGES_MAX)
    cache_key: str | None = Field(None, alias="cacheKey")
    notify_url: str | None = Field(None, alias="notifyUrl", max_length=2_048)
    max_total_cost_usd: float | None = Field(
        None, alias="maxTotalCostUsd", gt=0, le=limits.WORKFLOW_COST_MAX_USD
    )
    input: dict[str, VariableValue] = Field(
        default_factory=dict, max_length=limits.WORKFLOW_VARIABLES_MAX
    )
    required_variables: list[str] = Field(
        default_factory=list, alias="requiredVariables", max_length=limits.WORKFLOW_VARIABLES_MAX
    )
    # W12: a pipeline — each item flows through the stages on its own ({{ITEM}}).
    items: list[VariableValue | dict[str, VariableValue]] | None = Field(
        None, min_length=1, max_length=limits.WORKFLOW_ITEMS_MAX
    )

    @field_validator("workflow_id", "cache_key")
    @classmethod
    def _ids(cls, value: str | None) -> str | None:
        return None if value is None else _label(value, "an id or cache key")

    @field_validator("notify_url")
    @classmethod
    def _webhook(cls, value: str | None, info: ValidationInfo) -> str | None:
        # Checked when a definition comes in (parse_workflow); a stored run's definition is
        # read as it was saved, and each delivery checks the URL again anyway.
        if value is None or not (info.context or {}).get(CHECK_URLS):
            return value
        try:
            return check_on_save(value)
        except RefusedUrl as refused:
            raise ValueError(f"refused: {refused}") from None

    @field_validator("input")
    @classmethod
    def _variables(cls, value: dict[str, VariableValue]) -> dict[str, VariableValue]:
        for name, variable in value.items():
            if not VARIABLE.match(name):
                raise ValueError(f"variable name {name!r}: letters, digits and '_', 1–64")
            if len(str(variable)) > limits.WORKFLOW_VARIABLE_MAX_CHARS:
                raise ValueError(
                    f"variable {name}: at most {limits.WORKFLOW_VARIABLE_MAX_CHARS:,} characters"
                )
        return value

    @field_validator("required_variables")
    @classmethod
    def _required(cls, value: list[str]) -> list[str]:
        for name in value:
            if not VARIABLE.match(name):
                raise ValueError(f"required variable {name!r}: letters, digits and '_', 1–64")
        return value

    @model_validator(mode="after")
    def _whole_run(self) -> WorkflowStart:
        problems: list[str] = []
        stage_labels: set[str] = set()
        earlier: dict[str, Step] = {}  # steps of the stages before the one being read
        total = 0
        for number, stage in enumerate(self.stages, start=1):
            for index, step in enumerate(stage.steps):
                problems.extend(f"stages.{number - 1}.steps.{index}: {p}" for p in step.problems())
            stage.label = stage.label or f"stage-{number}"
            if stage.label in stage_labels:
                problems.append(f"stage label {stage.label!r} is used twice")
            stage_labels.add(stage.label)
            here: dict[str, Step] = {}
            for step in stage.steps:
                total += 1
                if step.label in earlier or step.label in here:
                    problems.append(f"step label {step.label!r} is used twice")
                ref = step.session_ref
                if ref is not None and ref not in earlier:
                    where = "this stage" if ref in here else "no earlier stage"
                    problems.append(
                        f"step {step.label!r}: sessionRef {ref!r} names a step of {where}; "
                        "it can reuse the session of a step of an earlier stage"
                    )
                elif ref is not None and earlier[ref].kind not in SESSION_KINDS:
                    problems.append(f"step {step.label!r}: sessionRef {ref!r} has no session")
                here[step.label] = step
            earlier.update(here)
        problems.extend(self._route_problems())
        if total > limits.WORKFLOW_STEPS_MAX:
            problems.append(f"{total} steps; at most {limits.WORKFLOW_STEPS_MAX} in a workflow")
        runs = total * len(self.items or [None])
        if runs > limits.WORKFLOW_PIPELINE_STEP_RUNS_MAX:
            problems.append(
                f"{len(self.items or [])} items × {total} steps = {runs} step runs; at most "
                f"{limits.WORKFLOW_PIPELINE_STEP_RUNS_MAX}"
            )
        for number, item in enumerate(self.items or []):
            if isinstance(item, dict) and not all(VARIABLE.match(k) for k in item):
                problems.append(f"item {number}: field names are letters, digits and '_'")
        if problems:
            raise Problems(problems)
        return self

    def _route_problems(self) -> list[str]:
        """Each route names steps of later stages, and a step is on one route at most."""
        problems: list[str] = []
        stage_of = {step.label: n for n, stage in enumerate(self.stages) for step in stage.steps}
        routed: dict[str, str] = {}
        for _, step in self.steps():
            for route, labels in (step.routes or {}).items():
                for label in labels:
                    if stage_of.get(label, -1) <= stage_of[step.label]:
                        problems.append(
                            f"step {step.label!r}: route {route!r} names {label!r}, which is "
                            "not a step of a later stage"
                        )
                    elif label in routed:
                        problems.append(f"step {label!r} is on two routes ({routed[label]})")
                    routed[label] = f"{step.label}:{route}"
        return problems

    def routes_to(self, label: str) -> tuple[str, str] | None:
        """(branch or routing step, route) whose choice decides whether `label` runs."""
        for _, step in self.steps():
            for route, labels in (step.routes or {}).items():
                if label in labels:
                    return step.label, route
        return None

    def steps(self) -> list[tuple[Stage, Step]]:
        return [(stage, step) for stage in self.stages for step in stage.steps]

    def to_json(self) -> dict[str, Any]:
        """The definition as the seed writes it (camelCase, nothing left out that was set)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def parse_workflow(data: Any) -> WorkflowStart:
    """workflow_start's JSON → a checked definition, or InvalidInput listing what's wrong:
    every problem in `problems`, the message naming how many and leading with the first."""
    size = len(json.dumps(data, ensure_ascii=False).encode())
    if size > limits.WORKFLOW_DEFINITION_MAX_BYTES:
        raise InvalidInput(
            f"Invalid workflow: it takes {size:,} bytes as JSON; at most "
            f"{limits.WORKFLOW_DEFINITION_MAX_BYTES:,}."
        )
    try:
        return WorkflowStart.model_validate(data, context={CHECK_URLS: True})
    except ValidationError as error:
        # dict.fromkeys: a step's problems are in both when the workflow's checks ran.
        found = list(dict.fromkeys(problems(error) + _step_problems(data)))
        raise refused("Invalid workflow", found) from None


def _step_problems(data: Any) -> list[str]:
    """The problems of the steps whose fields are fine, when something else failed first
    (the workflow's own checks, which report them, never ran)."""
    found: list[str] = []
    stages = data.get("stages") if isinstance(data, dict) else None
    for number, stage in enumerate(stages if isinstance(stages, list) else []):
        steps = stage.get("steps") if isinstance(stage, dict) else None
        for index, step in enumerate(steps if isinstance(steps, list) else []):
            try:
                own = Step.model_validate(step).problems()
            except ValidationError:
                continue  # its field errors are reported already
            found.extend(f"stages.{number}.steps.{index}: {p}" for p in own)
    return found


def refused(what: str, found: list[str]) -> InvalidInput:
    """InvalidInput with every problem: one reads `what: PROBLEM` as before; several
    `what (N problems): FIRST; SECOND; …`, all of them in `problems` (the message is cut at
    1,500 characters, the list at PROBLEMS_LISTED)."""
    found = found[: limits.WORKFLOW_PROBLEMS_LISTED]
    head = what if len(found) == 1 else f"{what} ({len(found)} problems)"
    return InvalidInput(f"{head}: " + "; ".join(found)[:1500], problems=found)


def problems(error: ValidationError) -> list[str]:
    """pydantic's errors as `stages.1.steps.0.prompt: …`, with the seed's field names; a
    validator's Problems each on its own."""
    found: list[str] = []
    for problem in error.errors():
        where = ".".join(str(p) for p in problem["loc"])
        cause = (problem.get("ctx") or {}).get("error")
        messages = (
            cause.problems
            if isinstance(cause, Problems)
            else [str(problem["msg"]).removeprefix("Value error, ")]
        )
        found.extend(f"{where}: {m}" if where else m for m in messages)
    return found


def describe(error: ValidationError) -> str:
    """The problems of `error` on one line."""
    return "; ".join(problems(error))
